"""Seconds and peak memory of ``spn report`` (and ``spn fit``) as an event log grows to 200,000 tasks.

    python benchmarks/large_log.py                       # 2,000, 20,000 and 200,000 tasks
    python benchmarks/large_log.py --tasks 1000 10000    # other sizes

The logs are synthetic Spark logs (``tests/whatif_logs.py``'s pilot: 2 executors of 2 cores, an input
stage of N tasks in waves of 4, then a shuffle stage of 4), written to a temporary folder, about 1.3 kB
per task. Each command runs in a fresh process (``python -m spn.cli``), timed wall-clock and in CPU
seconds, with the peak resident memory of that process (``resource.getrusage(RUSAGE_CHILDREN)``, each
case in its own ``--one`` parent so that the peak is its own). The reader streams a log's events one
line at a time and keeps per task only what the model needs, so memory should grow far slower than
the log. Run it on an idle machine.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]


def write_log(folder: Path, tasks: int) -> Path:
    sys.path.insert(0, str(ROOT / "tests"))
    from whatif_logs import pilot_log

    return pilot_log(folder / f"synthetic-{tasks}.json", input_tasks=tasks)


def one(command: list[str]) -> dict:
    """Run ``command`` (spn's arguments) in a fresh process: seconds, CPU seconds, peak memory, status."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "spn.cli", *command], env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    last = (done.stderr.strip().splitlines() or [""])[-1]
    return {"wall_s": wall, "cpu_s": cpu, "peak_mb": after.ru_maxrss / 1024, "status": done.returncode, "last": last}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, nargs="+", default=[2_000, 20_000, 200_000])
    parser.add_argument("--one", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        print(json.dumps(one(args.one)))
        return 0
    print("| command | tasks | log (MB) | wall (s) | CPU (s) | peak memory (MB) | status |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory(prefix="spn-large-log-") as folder:
        folder = Path(folder)
        for tasks in args.tasks:
            log = write_log(folder, tasks)
            size = log.stat().st_size / 1e6
            cases = {"fit": ["fit", str(log), "-o", str(folder / "m.yaml"), "--force"],
                     "report": ["report", str(log), "-o", str(folder / "r.html"), "--force"]}
            for name, command in cases.items():
                out = subprocess.run([sys.executable, __file__, "--one", *command], capture_output=True, text=True)
                result = json.loads(out.stdout.strip().splitlines()[-1])
                status = "ok" if result["status"] == 0 else f"exit {result['status']}: {result['last']}"
                print(f"| spn {name} | {tasks:,} | {size:,.1f} | {result['wall_s']:.1f} | {result['cpu_s']:.1f} | "
                      f"{result['peak_mb']:,.0f} | {status} |", flush=True)
            log.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())
