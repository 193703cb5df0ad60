"""The decomposition's time against the simulation's, on the same questions (run by hand).

    python benchmarks/decomposition.py            # the table
    python benchmarks/decomposition.py --quick    # the first two questions only

Each question is answered twice in one process through :func:`spn.pipeline.evaluate`, the path every
command takes: by ``method="decomposition"`` (asked for any precision), then by ``method="simulation"``
to the precision the decomposition stated (its interval's relative half-width, at least the default
0.5 %), with the default seed and no time limit. Numba's kernels are loaded by a first,
untimed answer, so both columns are the work of an answer in a warm process (a fresh ``spn solve``
adds about a second of imports and loads: ``benchmarks/startup.py``). Wall and CPU seconds are
reported with their ratio; run it on an idle machine. The two answers' intervals are both the
method's numerical error (the decomposition's also holds its model error), so the table also says
whether they overlap.

A second table times the decomposition on one core and on all the process may use (its simulated X(k),
and under fifo a job's execution-time laws, run side by side): each question, with p50/p90/p95 where
the policy is fifo, answered alternately with one core and with all, ``--rounds`` times; the fastest of
each.

The fitted lundstrom model (TPC-DS Q52 from a 3-executor Spark log of the shared data, never copied
into the repository) is skipped when the data is absent.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# benchmarks/coverage.py is named like the package "coverage", which Numba imports: keep this folder off the path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))
os.environ["SPN_CACHE_DIR"] = "off"     # every answer simulates its X(k): nothing is read back

import spn.threads as threads  # noqa: E402
from spn.limits import available_cores  # noqa: E402
from spn.pipeline import Budget, Question, evaluate  # noqa: E402

MAPREDUCE = str(ROOT / "models" / "mapreduce.yaml")
TEZ = str(ROOT / "models" / "tez-tq3.yaml")
LUNDSTROM = Path(os.environ.get("SPN_LUNDSTROM", ROOT.parent / "shared" / "data" / "lundstrom"))
Q52_LOG = "q52_e3_application_1481182872654_0046.json.gz"
PAPER = ["workload.users=50", "cluster.containers=300", "phases.map.tasks=500", "phases.reduce.tasks=500"]

#: (label, source, settings)
QUESTIONS = [
    ("paper's scale, fifo (50 users, 500 + 500 tasks, 300 containers)", MAPREDUCE, [*PAPER, "scheduler.policy=fifo"]),
    ("paper's scale, fair", MAPREDUCE, [*PAPER, "scheduler.policy=fair"]),
    ("paper's scale at 20 % utilisation, fifo (think time 2,000 s)", MAPREDUCE,
     [*PAPER, "scheduler.policy=fifo", "workload.think_time=2000"]),
    ("tez-tq3, 20 users, 24 containers, fifo", TEZ, ["workload.users=20", "cluster.containers=24",
                                                     "scheduler.policy=fifo"]),
    ("tez-tq3, 20 users, 24 containers, fair", TEZ, ["workload.users=20", "cluster.containers=24",
                                                     "scheduler.policy=fair"]),
]


def fitted_q52(folder: Path) -> str | None:
    """The description spn fit writes for the Q52 pilot, or None without the shared data."""
    log = LUNDSTROM / Q52_LOG
    if not log.exists():
        return None
    from spn.cli import main

    out = folder / "q52.yaml"
    with open(os.devnull, "w") as quiet:
        stdout, sys.stdout = sys.stdout, quiet
        try:
            main(["fit", str(log), "--out", str(out)])
        finally:
            sys.stdout = stdout
    return str(out)


def timed(source, settings, method, precision, question=None):
    wall, cpu = time.perf_counter(), time.process_time()
    result = evaluate(source, settings, budget=Budget(max_seconds=None, rel_precision=precision), method=method,
                      question=question)
    return result, time.perf_counter() - wall, time.process_time() - cpu


def cores_table(questions, rounds: int) -> None:
    """The decomposition's wall seconds on one core and on all, the fastest of ``rounds`` alternating runs."""
    cores = available_cores()
    print(f"\n| question | one core: wall s | {cores} cores: wall s | speed-up |\n|---|---|---|---|")
    for label, source, settings in questions:
        fifo = "scheduler.policy=fifo" in settings
        question = Question(percentiles=(50, 90, 95)) if fifo else None
        best = {1: float("inf"), cores: float("inf")}
        for _ in range(rounds):
            for n in best:
                threads.available_cores = (lambda n=n: n)
                best[n] = min(best[n], timed(source, settings, "decomposition", 1.0, question)[1])
        threads.available_cores = available_cores
        print(f"| {label}{' (p50, p90, p95)' if fifo else ''} | {best[1]:.2f} | {best[cores]:.2f} "
              f"| {best[1] / best[cores]:.2f}x |", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="the first two questions only")
    parser.add_argument("--rounds", type=int, default=3, help="runs per question and core count (default 3)")
    args = parser.parse_args()
    questions = QUESTIONS[:2] if args.quick else list(QUESTIONS)
    with tempfile.TemporaryDirectory() as tmp:
        q52 = None if args.quick else fitted_q52(Path(tmp))
        if q52:
            questions += [("TPC-DS Q52 fitted from a 3-executor log, 20 users thinking 600 s, fifo", q52,
                           ["workload.users=20", "workload.think_time=600", "scheduler.policy=fifo"])]
        timed(MAPREDUCE, [*PAPER, "scheduler.policy=fifo"], "decomposition", 1.0)   # loads the kernels
        print(f"load average at the start: {os.getloadavg()[0]:.2f}\n")
        print("| question | decomposition R (s) [interval] | its error | wall / CPU s | simulation R (s) "
              "[95 % interval] | wall / CPU s | CPU ratio | intervals overlap |")
        print("|---|---|---|---|---|---|---|---|")
        for label, source, settings in questions:
            d, dw, dc = timed(source, settings, "decomposition", 1.0)
            precision = max(d.report.error_bound, Budget().rel_precision)
            s, sw, sc = timed(source, settings, "simulation", precision)
            overlap = d.interval[0] <= s.interval[1] and s.interval[0] <= d.interval[1]
            print(f"| {label} | {d.mean_execution_time:.5g} [{d.interval[0]:.5g}, {d.interval[1]:.5g}] "
                  f"| ±{100 * d.report.error_bound:.2g} % | {dw:.2f} / {dc:.2f} "
                  f"| {s.mean_execution_time:.5g} [{s.interval[0]:.5g}, {s.interval[1]:.5g}] "
                  f"| {sw:.2f} / {sc:.2f} | {sc / max(dc, 1e-9):.2g}x | {'yes' if overlap else 'no'} |", flush=True)
        cores_table(questions, args.rounds)


if __name__ == "__main__":
    main()
