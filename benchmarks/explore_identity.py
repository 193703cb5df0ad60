"""Exploration rate of the job-identity nets (fifo), before and after a change, in one run.

    python benchmarks/explore_identity.py                  # this checkout only
    python benchmarks/explore_identity.py --before REF     # also the commit REF (a git worktree in a temp dir)
    python benchmarks/explore_identity.py --before REF --rounds 4    # each case 4 times per version, alternating

The cases: MapReduce under fifo with N = C = 6 (models/mapreduce.yaml: 4 maps and 4 reduces,
exponential; 988,702 states); the join of benchmarks/models/join.yaml under fifo (3 users), whose
chain is far larger than the default max_states, so it is explored up to that limit (2,000,000
states, where ``spn solve`` stops); and the paper's net, MapReduce N = C = 20 with 20 + 10 Erlang-2
tasks under gate (515,826 states), as a control: what speeds up the scheduler nets must not slow
the plain ones down. Each case runs in a fresh process, with the version's compiled kernels
compiled first (``python -m spn.kernels``) and loaded outside the timing. Runs of the same code
spread by up to 1.8 times on this 2-core machine even when idle, so the table gives the fastest and
the median CPU seconds of ``--rounds`` runs, the versions alternating. The two versions' chains are
checked to have the same states and transitions.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# this folder's coverage.py would shadow the coverage package (which Numba imports); and spn is the one
# on PYTHONPATH (the version measured), not necessarily this checkout's
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

#: (label, model file, overrides, policy, max_states)
CASES = [
    ("mapreduce fifo N=C=6", "models/mapreduce.yaml", ["workload.users=6", "cluster.containers=6"], "fifo",
     20_000_000),
    ("join fifo, 3 users (to max_states)", "benchmarks/models/join.yaml", [], "fifo", 2_000_000),
    ("paper's net N=C=20, Erlang-2 (gate)", "models/mapreduce.yaml", [
        "workload.users=20", "cluster.containers=20", "phases.map.tasks=20", "phases.map.shape=2",
        "phases.reduce.tasks=10", "phases.reduce.shape=2"], "gate", 20_000_000),
]


def run_case(label: str) -> dict:
    """Explore case ``label`` with the spn on sys.path: states, transitions, seconds (wall and CPU)."""
    from spn.description import load_description
    from spn.exceptions import StateSpaceLimitError
    from spn.models.jobs import application_net
    from spn.statespace import explore

    _, model, overrides, policy, limit = next(c for c in CASES if c[0] == label)
    desc = load_description(ROOT / model, [*overrides, f"scheduler.policy={policy}"])
    net = application_net(desc).net
    explore(application_net(load_description(ROOT / "models/mapreduce.yaml", [f"scheduler.policy={policy}"])).net,
            engine="compiled")                  # the kernel loaded (or compiled) outside the timing
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        ss = explore(net, engine="compiled", max_states=limit)
        states, transitions = ss.n_states, ss.n_transitions
    except StateSpaceLimitError:
        states, transitions = limit, None
    return {"states": states, "transitions": transitions, "wall": time.perf_counter() - wall,
            "cpu": time.process_time() - cpu, "limit": transitions is None,
            "spn": str(Path(sys.modules["spn"].__file__).resolve())}


def measure(path: str, version: str) -> list[dict]:
    """Every case with the package at ``path``, each in a fresh process."""
    env = dict(os.environ, PYTHONPATH=path)
    # (run in the version's folder: ``python -m`` puts the current folder before PYTHONPATH)
    subprocess.run([sys.executable, "-m", "spn.kernels", "explore"], cwd=path, env=env, capture_output=True)
    rows = []
    for label, *_ in CASES:
        proc = subprocess.run([sys.executable, __file__, "--one", label], cwd=ROOT, env=env, capture_output=True,
                              text=True)
        if proc.returncode:
            raise SystemExit(f"{version}, {label}: {proc.stderr.strip().splitlines()[-1]}")
        row = {"version": version, "case": label, **json.loads(proc.stdout.strip().splitlines()[-1])}
        if not row.pop("spn").startswith(str(Path(path).resolve())):
            raise SystemExit(f"{version}: measured another checkout's spn")
        rows.append(row)
        print(f"{version:10}  {label:38}  {row['states']:>10,}{'+' if row['limit'] else ' '}  "
              f"wall {row['wall']:7.2f} s  cpu {row['cpu']:7.2f} s  {row['states'] / row['wall']:>10,.0f} states/s",
              flush=True)
    return rows


def table(rows: list[dict]) -> str:
    """The markdown table: each case's runs per version (the fastest and the median of the CPU seconds) and
    the fastest's ratio to the first version's."""
    header = ["net", "states", "version", "runs", "CPU s, fastest", "CPU s, median", "states/CPU s (fastest)",
              "speed-up (fastest)"]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    first = {}
    groups = {}
    for row in rows:
        groups.setdefault((row["case"], row["version"]), []).append(row)
    for (case, version), runs in groups.items():
        cpu = sorted(r["cpu"] for r in runs)
        base = first.setdefault(case, cpu[0])
        states = f"{runs[0]['states']:,}" + (" (max_states)" if runs[0]["limit"] else "")
        lines.append(f"| {case} | {states} | {version} | {len(cpu)} | {cpu[0]:.2f} | {statistics.median(cpu):.2f} | "
                     f"{runs[0]['states'] / cpu[0]:,.0f} | {base / cpu[0]:.2f} |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REF", help="also measure this commit")
    parser.add_argument("--markdown", metavar="FILE", help="also write the table as markdown")
    parser.add_argument("--rounds", type=int, default=1, help="runs of every case per version, alternating")
    parser.add_argument("--one", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(run_case(args.one)))
        return 0
    rows = []
    if args.before:
        sys.path.insert(0, str(ROOT))
        from benchmarks.commands import checkout

        with checkout(args.before) as worktree:
            for _ in range(args.rounds):        # the versions alternate, so that a slow spell hits both
                rows += measure(worktree, args.before[:10])
                rows += measure(str(ROOT), "this")
    else:
        for _ in range(args.rounds):
            rows += measure(str(ROOT), "this")
    for label, *_ in CASES:
        chains = {(r["states"], r["transitions"]) for r in rows if r["case"] == label}
        if len(chains) > 1:
            raise SystemExit(f"{label}: the versions' chains differ: {sorted(chains, key=str)}")
    print(table(rows))
    if args.markdown:
        Path(args.markdown).write_text(table(rows) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
