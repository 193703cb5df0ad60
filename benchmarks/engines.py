"""The two exploration engines side by side on the scheduler nets (job identity: fifo, fair, queues).

    python benchmarks/engines.py                  # a few minutes on 2 cores
    python benchmarks/engines.py --markdown out.md

Each net is explored by the NumPy engine and by the compiled engine, each in a
fresh process (the compiled kernel is loaded from Numba's cache first, outside
the timing), and the two chains are checked to have the same size. ``fair`` and
several queues have choice gates (``spn.net.choice``); ``fifo`` is arcs only.
Times are seconds of wall clock in this run: compare the ratio column, not
absolute numbers, across machines.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# this folder's coverage.py would shadow the coverage package (which Numba imports)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from benchmarks.run import in_process  # noqa: E402 (a fresh process per net and engine)

#: (label, model file, overrides)
NETS = [
    ("mapreduce fifo N=5 C=5", "mapreduce", ["scheduler.policy=fifo", "workload.users=5", "cluster.containers=5"]),
    ("mapreduce fair N=5 C=5", "mapreduce", ["scheduler.policy=fair", "workload.users=5", "cluster.containers=5"]),
    ("mapreduce fifo N=6 C=6", "mapreduce", ["scheduler.policy=fifo", "workload.users=6", "cluster.containers=6"]),
    ("mapreduce fair N=6 C=6", "mapreduce", ["scheduler.policy=fair", "workload.users=6", "cluster.containers=6"]),
    ("two-queues C=5, 2+2 users", "two-queues", [
        "cluster.containers=5", "classes.etl.users=2", "classes.dashboard.users=2", "classes.etl.phases.map.tasks=4",
        "classes.etl.phases.reduce.tasks=2", "classes.dashboard.phases.scan.tasks=3"]),
    ("two-queues C=6, 2+2 users", "two-queues", [
        "cluster.containers=6", "classes.etl.users=2", "classes.dashboard.users=2", "classes.etl.phases.map.tasks=4",
        "classes.etl.phases.reduce.tasks=2", "classes.dashboard.phases.scan.tasks=3"]),
]


def build_net(model, overrides):
    from spn.description import load_description
    from spn.models.jobs import build_classes, build_jobs

    desc = load_description(ROOT / "models" / f"{model}.yaml", overrides)
    return build_classes(desc).net if desc.classes else build_jobs(desc).net


def run(spec, out):
    """Explore net ``spec = (engine, model, overrides)`` and put its size and time on ``out``."""
    from spn.statespace import explore

    engine, model, overrides = spec
    net = build_net(model, overrides)
    if engine == "compiled":
        from spn.statespace import compiled   # noqa: F401 (loads Numba and the cached kernel outside the timing)
    started = time.perf_counter()
    ss = explore(net, engine=engine, max_states=20_000_000)
    out.put({"states": ss.n_states, "transitions": ss.n_transitions, "seconds": time.perf_counter() - started})


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per engine and net")
    parser.add_argument("--markdown", metavar="FILE", help="also write the table as markdown")
    args = parser.parse_args(argv)
    from spn.statespace import explore
    explore(build_net(*NETS[1][1:]), engine="compiled")        # compile the kernel once, if it is not cached
    header = ("net", "states", "transitions", "NumPy s", "compiled s", "compiled states/s", "NumPy / compiled")
    rows = []
    for label, model, overrides in NETS:
        a = in_process(run, ("numpy", model, overrides), args.timeout)
        b = in_process(run, ("compiled", model, overrides), args.timeout)
        if "error" in a or "error" in b:
            rows.append((label, "-", "-", a.get("error", f"{a.get('seconds', 0):.2f}"),
                         b.get("error", f"{b.get('seconds', 0):.2f}"), "-", "-"))
        else:
            if (a["states"], a["transitions"]) != (b["states"], b["transitions"]):
                raise SystemExit(f"{label}: the engines disagree: {a} vs {b}")
            rows.append((label, f"{a['states']:,}", f"{a['transitions']:,}", f"{a['seconds']:.2f}",
                         f"{b['seconds']:.2f}", f"{b['states'] / b['seconds']:,.0f}",
                         f"{a['seconds'] / b['seconds']:.1f}"))
        print(" | ".join(rows[-1]), flush=True)
    table = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    table += ["| " + " | ".join(r) + " |" for r in rows]
    print("\n".join(table))
    if args.markdown:
        Path(args.markdown).write_text("\n".join(table) + "\n")


if __name__ == "__main__":
    main()
