"""Coverage of the simulation's confidence intervals, against exact answers (run by hand).

    python benchmarks/coverage.py                 # 200 seeds per row (about 5 minutes on one core)
    python benchmarks/coverage.py --seeds 100     # shorter
    python benchmarks/coverage.py --engines compiled   # the compiled cluster engine

For small models whose mean execution time R is known exactly (the CTMC of
:func:`spn.analysis.solve.solve_description`, exact for Erlang/exponential laws), it
simulates each model with seeds 0, 1, ..., S-1 and counts how often the 95 % interval
of R contains the exact value: with a fixed number of replications (10, no stopping
rule) and with the stopping rule (``rel_precision`` 1 %; 0.5 %, what ``spn solve``
asks when it simulates, with the faster cluster engine only). Both engines; the
cluster engine pools finished tasks (``pool_finished_tasks=True``) when N > 1, the
assumption the CTMC makes (docs/design.md §3.4).

Engine ``compiled``: the cluster engine run by
:class:`~spn.simulation.cluster_compiled.CompiledClusterSimulator` (same runner, seeds and
stopping rule). It does not pool finished tasks, so its cases with N > 1 are the two-user
cases whose exact R tests/test_scheduling_policies.py solves with sympy (one per policy),
instead of the CTMC's pooled value.

A correct 95 % interval covers in S·0.95 ± 1.96·sqrt(S·0.95·0.05) runs: the last
column flags rows outside that band (at S = 200, coverage in [0.920, 0.980]).
Also printed: the mean number of replications and the mean relative half-width.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# this file is named like the package "coverage", which Numba imports when it is installed: keep
# its folder off the path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from benchmarks.simulation import compiled_engine  # noqa: E402
from spn.analysis.solve import solve_description  # noqa: E402
from spn.description import load_description, parse_description  # noqa: E402
from spn.simulation import simulate_description  # noqa: E402


def cases():
    """(name, description, exact R or None: the CTMC's): small models with an exact answer."""
    one = parse_description({
        "name": "1 user, 1 phase", "workload": {"users": 1, "think_time": 5.0}, "cluster": {"containers": 2},
        "phases": [{"name": "p", "tasks": 4, "task_time": 1.0, "shape": 2}]})
    mr1 = load_description(ROOT / "models" / "mapreduce.yaml", ["workload.users=1"])
    mr2 = load_description(ROOT / "models" / "mapreduce.yaml", ["workload.users=2"])
    return [("1 user, 1 phase (Erlang-2)", one, None), ("MapReduce, 1 user", mr1, None),
            ("MapReduce, 2 users", mr2, None)] + policy_cases()


def policy_cases():
    """Two users, map (2 tasks, mean 1) then reduce (2 tasks, mean 2), C = 2, Z = 2, each policy,
    unpooled: exact R from the sympy CTMCs of tests/test_scheduling_policies.py."""
    exact = {"gate": 647 / 113, "fifo": 503 / 92, "fair": 3173 / 581}
    return [(f"2 users, map2+reduce2, {policy}", parse_description({
        "name": policy, "workload": {"users": 2, "think_time": 2.0}, "cluster": {"containers": 2},
        "scheduler": {"policy": policy},
        "phases": [{"name": "map", "tasks": 2, "task_time": 1.0, "distribution": "exponential"},
                   {"name": "reduce", "tasks": 2, "task_time": 2.0, "distribution": "exponential"}]}), R)
        for policy, R in exact.items()]


RULES = {"cluster": (("10 replications", None), ("rule 1 %", 0.01), ("rule 0.5 %", 0.005)),
         "compiled": (("10 replications", None), ("rule 1 %", 0.01), ("rule 0.5 %", 0.005)),
         "net": (("10 replications", None), ("rule 1 %", 0.01))}


def applies(engine: str, desc, exact) -> bool:
    """The CTMC's value (exact None) with N > 1 is the pooled one: the Python cluster engine pools,
    the compiled one cannot; the unpooled exact values (policy cases) are its cases for N > 1."""
    if exact is not None:
        return engine == "compiled"
    return not (engine == "compiled" and desc.workload.users > 1)


def coverage(desc, exact: float, engine: str, rel_precision, seeds: int, pooled: bool = False) -> dict:
    """Share of seeds whose interval of R contains ``exact``; mean replications and half-width."""
    covered = replications = 0
    width = 0.0
    for seed in range(seeds):
        if engine == "compiled":
            with compiled_engine():
                report = simulate_description(desc, engine="cluster", seed=seed, rel_precision=rel_precision)
        else:
            report = simulate_description(desc, engine=engine, seed=seed, rel_precision=rel_precision,
                                          pool_finished_tasks=pooled)
        r = report.mean_execution_time
        covered += r.contains(exact)
        replications += report.replications
        width += r.rel_half_width
    return {"coverage": covered / seeds, "replications": replications / seeds, "rel_half_width": width / seeds}


def band(seeds: int, level: float = 0.95) -> tuple[float, float]:
    """The binomial 95 % band of the observed coverage of a correct ``level`` interval."""
    sd = math.sqrt(level * (1 - level) / seeds)
    return level - 1.96 * sd, level + 1.96 * sd


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=200)
    parser.add_argument("--engines", default="cluster,net")
    args = parser.parse_args(argv)
    low, high = band(args.seeds)
    print(f"{args.seeds} seeds per row; a correct 95 % interval covers in [{low:.3f}, {high:.3f}]")
    print(f"{'case':<28} {'engine':<8} {'rule':<17} {'coverage':>8} {'reps':>7} {'rel hw':>8} {'s':>6}")
    started = time.perf_counter()
    for name, desc, known in cases():
        engines = [engine for engine in args.engines.split(",") if applies(engine, desc, known)]
        if not engines:
            continue
        exact = solve_description(desc).measures.mean_execution_time if known is None else known
        pooled = known is None and desc.workload.users > 1       # the CTMC's assumption
        for engine in engines:
            for rule, precision in RULES[engine]:
                t = time.perf_counter()
                row = coverage(desc, exact, engine, precision, args.seeds, pooled and engine == "cluster")
                flag = "" if low <= row["coverage"] <= high else ("  LOW" if row["coverage"] < low else "  high")
                print(f"{name:<28} {engine:<8} {rule:<17} {row['coverage']:8.3f} {row['replications']:7.1f} "
                      f"{100 * row['rel_half_width']:7.3f}% {time.perf_counter() - t:6.1f}{flag}", flush=True)
    print(f"total {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
