"""How close the state-count estimate (spn.analysis.state_count) lands to the chain's true size, and what it costs.

    python benchmarks/state_estimate.py            # prints a markdown table

For MapReduce models (maps of Erlang-2 tasks) and a four-stage join, under fifo, fair and gate, over
users and containers: the counts the estimate sampled, its projection, the true count (explored up to
TRUE_LIMIT; past it "more than"), their ratio, and the seconds the estimate and the exploration took.
Each case runs in this process after the compiled explorer is loaded, as in ``spn solve``.
"""

from __future__ import annotations

import itertools
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# this folder's coverage.py would shadow the coverage package (which Numba imports)
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]

#: the largest true chain explored
TRUE_LIMIT = 5_000_000
JOIN = {"name": "join", "framework": "spark", "workload": {"users": 3, "think_time": 4.0},
        "cluster": {"containers": 2},
        "phases": [{"name": "a", "tasks": 2, "task_time": 1.0, "shape": 2},
                   {"name": "b", "tasks": 3, "task_time": 1.5},
                   {"name": "join", "tasks": 2, "task_time": 2.0, "shape": 2},
                   {"name": "final", "tasks": 1, "task_time": 1.0}],
        "edges": [["a", "join"], ["b", "join"], ["join", "final"]]}


def cases():
    """(label, description) of every case."""
    from spn.description import load_description, parse_description

    mapreduce = ROOT / "models/mapreduce.yaml"
    grid = [(users, containers) for users in (3, 5, 7, 10) for containers in (2, 4)] + [(3, 6), (5, 6), (7, 6)]
    for policy, (users, containers) in itertools.product(("fifo", "fair", "gate"), grid):
        if policy == "fair" and (users, containers) == (7, 6):
            continue        # past TRUE_LIMIT, 4 minutes of exploring at the fair nets' rate
        yield (f"MapReduce 4+4 {policy} N={users} C={containers}",
               load_description(mapreduce, [f"scheduler.policy={policy}", f"workload.users={users}",
                                            f"cluster.containers={containers}", "phases.map.shape=2"]))
    for policy, users, containers in itertools.product(("fifo", "fair", "gate"), (3, 5, 8), (2, 3)):
        yield (f"join {policy} N={users} C={containers}",
               parse_description({**JOIN, "scheduler": {"policy": policy},
                                  "workload": {"users": users, "think_time": 4.0},
                                  "cluster": {"containers": containers}}))
    yield ("MapReduce 4+4 fifo N=C=6 (exponential)",
           load_description(mapreduce, ["scheduler.policy=fifo", "workload.users=6", "cluster.containers=6"]))
    yield ("MapReduce 20+10 Erlang-2 fifo N=3 C=10", load_description(mapreduce, [
        "scheduler.policy=fifo", "workload.users=3", "cluster.containers=10", "phases.map.tasks=20",
        "phases.reduce.tasks=10", "phases.map.shape=2", "phases.reduce.shape=2"]))
    yield ("paper's net 20+10 Erlang-2 gate N=C=20", load_description(mapreduce, [
        "scheduler.policy=gate", "workload.users=20", "cluster.containers=20", "phases.map.tasks=20",
        "phases.reduce.tasks=10", "phases.map.shape=2", "phases.reduce.shape=2"]))


def main() -> None:
    from spn.analysis.state_count import estimate_states
    from spn.exceptions import StateSpaceLimitError
    from spn.models.jobs import application_net
    from spn.statespace import explore

    explore(application_net(next(cases())[1]).net, engine="compiled")      # the compiled explorer loaded
    print("| case | counts sampled (1, 2, ... users) | estimate | true | estimate / true | estimate s | explore s |")
    print("|---|---|---|---|---|---|---|")
    ratios = []
    for label, desc in cases():
        began = time.perf_counter()
        estimate = estimate_states(desc)
        estimate_s = time.perf_counter() - began
        began = time.perf_counter()
        try:
            true, more = explore(application_net(desc).net, max_states=TRUE_LIMIT).n_states, ""
        except StateSpaceLimitError:
            true, more = TRUE_LIMIT, "> "
        explore_s = time.perf_counter() - began
        if estimate is None:
            print(f"| {label} | - | - | {more}{true:,} | - | {estimate_s:.2f} | {explore_s:.2f} |")
            continue
        ratio = estimate.states / true
        if not more:
            ratios.append((ratio, len(estimate.counts) >= 3))
        counts = ", ".join(f"{n:,}" for n in estimate.counts)
        if estimate.at_least > estimate.counts[-1]:
            counts += f", > {estimate.at_least:,}"
        print(f"| {label} | {counts} | {estimate.states:,.0f} | {more}{true:,} | "
              f"{'> ' if more and ratio < 1 else ''}{ratio:.2f}{'' if not more or ratio < 1 else ' (at most)'} | "
              f"{estimate_s:.2f} | {explore_s:.2f} |")
    settled = [r for r, seen in ratios if seen]
    print(f"\n{len(ratios)} cases with a true count; from three counts or more ({len(settled)}): estimate / true "
          f"from {min(settled):.2f} to {max(settled):.2f}; from fewer: "
          f"{min(r for r, seen in ratios if not seen):.2f} to {max(r for r, seen in ratios if not seen):.2f}")


if __name__ == "__main__":
    main()
