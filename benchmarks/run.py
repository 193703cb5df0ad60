"""Speed and scale of spn, side by side with Storm on the same nets, in one run.

    python benchmarks/run.py                 # the ladder (a few minutes on 2 cores)
    python benchmarks/run.py --large         # also the multi-million-state rungs
    python benchmarks/run.py --largest       # and the largest MapReduce case solved (59M states, ~20 GB)
    python benchmarks/run.py --markdown out.md

For every model of the ladder, each tool runs in a fresh process (so that peak
memory is its own): spn explores the tangible state space and solves it
(``steady_state(method="auto", rtol=1e-10)``); Storm (stormpy, when installed)
loads the same net as a GreatSPN .pnpro file, builds its Markov automaton with
maximal progress and computes one long-run average, P(PJ >= 1), in floating
point, with its long-run-average precision set to 1e-12 (its default, 1e-6, is
too loose to compare results to 1e-8). The table gives states, times, states/s,
peak memory, the spn/Storm time ratio and the relative difference of P(PJ >= 1).
On the rungs small enough for it (``--exact-limit`` states) Storm also computes
P(PJ >= 1) in exact rational arithmetic, and the last column compares spn with
that. spn's exploration time includes loading its compiled engine (about 0.3 s,
once per process) on the rungs above 20,000 states. Times are seconds of
wall clock in this run; compare ratios, not absolute numbers, across machines.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing as mp
import resource
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# this folder's coverage.py would shadow the coverage package (which Numba imports)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))


def ladder(large: bool, largest: bool = False):
    """(label, how to build the net) from a few hundred states upwards."""
    mr = [(3, 4, 4, 4, 1), (5, 6, 8, 6, 1), (10, 10, 10, 10, 2), (15, 15, 15, 10, 2), (20, 20, 20, 10, 2)]
    if large or largest:
        mr += [(30, 30, 30, 20, 2), (50, 300, 500, 500, 1)]
    if largest:
        mr += [(140, 300, 1400, 1400, 1)]
    rungs = [(f"mapreduce N={n} C={c} M={m} R={r} k={k}", ("mr", n, c, m, r, k)) for n, c, m, r, k in mr]
    rungs += [(f"{name}.yaml", ("file", name)) for name in ("tez-tq3", "tez-tq1", "tez-tq2", "spark-sq2")]
    return sorted(rungs, key=lambda r: _size_hint(r[1]))


def _size_hint(spec):
    order = {"tez-tq3": 1.6e3, "tez-tq1": 1.4e4, "tez-tq2": 2.3e4, "spark-sq2": 2.6e5}
    if spec[0] == "file":
        return order[spec[1]]
    n, c, m, r, k = spec[1:]
    return n * c * m * r * k


def build_net(spec):
    from spn.description import load_description, parse_description
    from spn.models.dag import build

    if spec[0] == "file":
        return build(load_description(ROOT / "models" / f"{spec[1]}.yaml")).net
    _, n, c, m, r, k = spec
    return build(parse_description({
        "name": "mapreduce", "workload": {"users": n, "think_time": 10.0}, "cluster": {"containers": c},
        "phases": [{"name": "map", "tasks": m, "task_time": 2.0, "shape": k},
                   {"name": "reduce", "tasks": r, "task_time": 3.0, "shape": k}],
        "edges": [["map", "reduce"]]})).net


def run_spn(spec, out):
    from spn.measures import probability
    from spn.solvers import steady_state
    from spn.statespace import explore

    net = build_net(spec)
    t0 = time.perf_counter()
    ss = explore(net, max_states=100_000_000)
    t1 = time.perf_counter()
    result = steady_state(ss.generator(), method="auto", rtol=1e-10)
    t2 = time.perf_counter()
    out.put(dict(states=ss.n_states, transitions=ss.n_transitions, explore_s=t1 - t0, solve_s=t2 - t1,
                 method=result.method, converged=bool(result.converged), residual=float(result.residual),
                 value=probability(ss, result.x, lambda m: m["PJ"] >= 1),
                 peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))


def run_storm(spec, out, exact=False):
    from spn.io.storm import storm_expected_tokens

    net = build_net(spec)
    r = storm_expected_tokens(net, {"PJ": 1}, exact=exact)
    out.put(dict(states=r.markovian_states, all_states=r.states, build_s=r.build_s, solve_s=r.solve_s,
                 value=r.expected_tokens["PJ"],
                 peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))


def run_storm_exact(spec, out):
    run_storm(spec, out, exact=True)


def in_process(target, spec, timeout):
    out = mp.Queue()
    p = mp.get_context("fork").Process(target=target, args=(spec, out))
    p.start()
    p.join(timeout)
    if p.is_alive():
        p.kill()
        p.join()
        return {"error": f"over {timeout:.0f} s"}
    return out.get() if not out.empty() else {"error": f"exit code {p.exitcode}"}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--large", action="store_true", help="add the multi-million-state rungs")
    parser.add_argument("--largest", action="store_true", help="add the 59-million-state rung too (about 20 GB)")
    parser.add_argument("--exact-limit", type=int, default=60,
                        help="also ask Storm for exact values up to this many states (default 60: "
                             "Storm's rational arithmetic takes 1.5 s on 49 states, 17 s on 69)")
    parser.add_argument("--no-storm", action="store_true", help="spn only")
    parser.add_argument("--only", metavar="TEXT,...", help="only the rungs whose label contains one of these")
    parser.add_argument("--spn-only", metavar="TEXT,...", default="",
                        help="no Storm on the rungs whose label contains one of these (e.g. spark-sq2: "
                             "Storm did not finish it in 15 minutes)")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds per tool and model")
    parser.add_argument("--markdown", metavar="FILE", help="also write the table as markdown")
    parser.add_argument("--json", metavar="FILE", help="also write the raw numbers as JSON")
    args = parser.parse_args(argv)
    try:
        import stormpy  # noqa: F401
        storm = not args.no_storm
    except ImportError:
        storm = False
        print("stormpy is not installed: spn only (pip install stormpy)", file=sys.stderr)

    rows, raw = [], []
    header = ("model", "states", "transitions", "explore s", "states/s", "solve s", "method", "spn total s",
              "spn MB", "Storm s", "Storm MB", "spn/Storm", "rel. diff", "rel. diff, Storm exact")
    only = [t for t in (args.only or "").split(",") if t]
    spn_only = [t for t in args.spn_only.split(",") if t]
    for label, spec in ladder(args.large, args.largest):
        if only and not any(t in label for t in only):
            continue
        s = in_process(run_spn, spec, args.timeout)
        skip = not storm or any(t in label for t in spn_only)
        t = in_process(run_storm, spec, args.timeout) if not skip else {"error": "not run"}
        small = "error" not in s and s["states"] <= args.exact_limit
        e = in_process(run_storm_exact, spec, args.timeout) if not skip and small else {"error": "-"}
        raw.append({"model": label, "spn": s, "storm": t, "storm_exact": e})
        if "error" in s:
            rows.append((label, "-", "-", "-", "-", "-", "-", s["error"], "-", "-", "-", "-", "-", "-"))
            print(" | ".join(map(str, rows[-1])), flush=True)
            continue
        total = s["explore_s"] + s["solve_s"]
        exact_col = e["error"] if "error" in e else f"{abs(s['value'] - e['value']) / abs(e['value']):.1e}"
        if "error" in t:
            storm_cols = (t["error"], "-", "-", "-", exact_col)
        else:
            storm_total = t["build_s"] + t["solve_s"]
            same = "" if t["states"] == s["states"] else f" (Storm: {t['states']} states!)"
            storm_cols = (f"{storm_total:.2f}", f"{t['peak_mb']:.0f}", f"{total / storm_total:.2f}",
                          f"{abs(s['value'] - t['value']) / abs(t['value']):.1e}{same}", exact_col)
        rows.append((label, f"{s['states']:,}", f"{s['transitions']:,}", f"{s['explore_s']:.2f}",
                     f"{s['states'] / s['explore_s']:,.0f}", f"{s['solve_s']:.2f}",
                     s["method"] + ("" if s["converged"] else " (NOT converged)"), f"{total:.2f}",
                     f"{s['peak_mb']:.0f}", *storm_cols))
        print(" | ".join(rows[-1]), flush=True)

    table = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    table += ["| " + " | ".join(map(str, r)) + " |" for r in rows]
    print("\n".join(table))
    if args.markdown:
        Path(args.markdown).write_text("\n".join(table) + "\n")
    if args.json:
        Path(args.json).write_text(json.dumps(raw, indent=2))


if __name__ == "__main__":
    main()
