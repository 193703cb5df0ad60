"""Seconds and peak memory each command takes for the same question, before and after a change.

    python benchmarks/commands.py                    # this checkout only
    python benchmarks/commands.py --before REF       # also the commit REF (a git worktree in a temp dir)
    python benchmarks/commands.py --max-seconds 10   # also: does any command run past its budget + 1 s?
    python benchmarks/commands.py --only report      # only the cases whose name holds this

Each case is one fresh process (``python -m spn.cli ...``), timed wall-clock and in CPU seconds (user +
system: what other work on the machine changes least), with the peak resident memory of the process tree
(``resource.getrusage(RUSAGE_CHILDREN)``: the largest child so far, so every case runs in its own
``python benchmarks/commands.py --one`` parent). The compiled kernels of
each version are compiled first (``python -m spn.kernels``), so that no case pays for a compilation.
Run it on an idle machine: a process competing for the two cores makes every number larger.

The cases are the questions of the one-pipeline issue: a join and two MapReduce models whose fifo
chains are past 2,000,000 states (``benchmarks/models``), percentiles of a model fitted from a
lundstrom log, a 3 x 2 sweep of it (before: the fitted model's containers; after: Spark's
executors through the what-if rules, as a user would ask), and ``spn report`` of the two 704-task Q52 logs
at 3 executors (its defaults: what-if curves, users, the page). A case that fails prints its last line.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LUNDSTROM = ROOT.parent / "shared" / "data" / "lundstrom"
PILOT = sorted(LUNDSTROM.glob("q52_e3_*.json.gz"))
LOG = next(iter(PILOT), None)


def cases(fitted: str, *, after: bool) -> list[tuple[str, list[str]]]:
    """(name, spn arguments) of every case; ``fitted`` is a description fitted from LOG."""
    out = [
        ("solve join (fifo, 3 users)", ["solve", "benchmarks/models/join.yaml"]),
        ("solve mapreduce 20x10 (fifo, 3 users)", ["solve", "benchmarks/models/mapreduce-20x10.yaml"]),
        ("solve mapreduce 20x10 (fifo, 15 users)", ["solve", "benchmarks/models/mapreduce-20x10.yaml",
                                                    "--set", "workload.users=15"]),
        ("solve README example", ["solve", "models/mapreduce.yaml"]),
    ]
    if LOG is None:
        return out
    out.append(("percentiles 50,95,99 of a fitted Q52", ["solve", fitted, "--percentiles", "50,95,99"]))
    if after:
        sweep = ["sweep", str(LOG), "--grid", "spark.executor.instances=3,6,12", "--grid", "workload.users=1,5",
                 "--set", "workload.think_time=60"]
    else:
        sweep = ["sweep", fitted, "--grid", "cluster.containers=6,12,24", "--grid", "workload.users=1,5",
                 "--set", "workload.think_time=60"]
    out.append(("sweep 3 x 2 of a fitted Q52", sweep))
    out.append(("report of Q52 (2 logs of 704 tasks)", ["report", *map(str, PILOT)]))
    return out


def spn_command(python: str, path: str, module: str = "spn.cli") -> list[str]:
    """``python -m module`` with the package at ``path`` ahead of everything: ``-m`` itself would put the
    working folder first on the path, and the checkout measured would be this one, whatever ``path`` is."""
    return [python, "-c", f"import runpy, sys; sys.path.insert(0, {path!r}); "
                          f"runpy.run_module({module!r}, run_name='__main__', alter_sys=True)"]


def run_one(python: str, path: str, args: list[str], out_dir: str) -> tuple[float, float, float, int, str]:
    """Wall seconds, CPU seconds, peak MB and exit status of ``spn args`` with the package at ``path``."""
    env = dict(os.environ, PYTHONPATH=path)
    if args[0] == "sweep":
        target = os.path.join(out_dir, f"sweep-{time.monotonic_ns()}.csv")
        args = [*args, "--out", target]
    if args[0] == "report":
        args = [*args, "-o", os.path.join(out_dir, "report.html")]
    started = time.perf_counter()
    proc = subprocess.run([*spn_command(python, path), *args], cwd=ROOT, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    last = (proc.stderr.strip().splitlines() or proc.stdout.strip().splitlines() or [""])[-1]
    return seconds, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode, last


def measure(python: str, path: str, label: str, extra: list[str], *, after: bool, only: str = "") -> list[dict]:
    """Every case with the package at ``path`` (each in its own parent process, for its peak memory)."""
    subprocess.run(spn_command(python, path, "spn.kernels"), cwd=ROOT, env=dict(os.environ, PYTHONPATH=path),
                   capture_output=True)
    fitted = os.path.join(tempfile.mkdtemp(prefix="spn-bench-"), "q52.yaml")
    if LOG is not None:
        subprocess.run([*spn_command(python, path), "fit", str(LOG), "-o", fitted], cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=path), capture_output=True)
    rows = []
    for name, args in [(name, args) for name, args in cases(fitted, after=after) if only in name]:
        proc = subprocess.run([python, __file__, "--one", path, *args, *extra], capture_output=True, text=True)
        seconds, cpu, peak, code, last = proc.stdout.strip().split("\t", 4)
        rows.append({"version": label, "case": name, "seconds": float(seconds), "cpu_seconds": float(cpu),
                     "peak_mb": float(peak), "status": int(code), "last": last})
        print(f"{label:8}  {name:42}  {float(seconds):7.1f} s  {float(cpu):7.1f} s CPU  {float(peak):7.0f} MB  "
              f"exit {code}" + ("" if int(code) == 0 else f"  ({last[:100]})"), flush=True)
    return rows


@contextlib.contextmanager
def checkout(ref: str):
    """The commit ``ref`` as a git worktree in a temporary folder (its path), removed afterwards."""
    worktree = tempfile.mkdtemp(prefix="spn-before-")
    subprocess.run(["git", "worktree", "add", "--detach", worktree, ref], cwd=ROOT, check=True, capture_output=True)
    try:
        yield worktree
    finally:
        subprocess.run(["git", "worktree", "remove", "--force", worktree], cwd=ROOT, capture_output=True)
        shutil.rmtree(worktree, ignore_errors=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", metavar="REF", help="also measure this commit")
    parser.add_argument("--max-seconds", type=float, help="pass --max-seconds to every solve and sweep")
    parser.add_argument("--only", default="", metavar="TEXT", help="only the cases whose name holds TEXT")
    parser.add_argument("--one", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.one:
        path, *spn_args = args.one
        with tempfile.TemporaryDirectory() as out_dir:
            seconds, cpu, peak, code, last = run_one(sys.executable, path, spn_args, out_dir)
        print(f"{seconds}\t{cpu}\t{peak}\t{code}\t{last}")
        return 0
    extra = [] if args.max_seconds is None else ["--max-seconds", f"{args.max_seconds:g}"]
    rows = []
    if args.before:
        with checkout(args.before) as worktree:
            rows += measure(sys.executable, worktree, args.before[:10], extra, after=False, only=args.only)
    rows += measure(sys.executable, str(ROOT), "this", extra, after=True, only=args.only)
    if args.max_seconds is not None:
        # a sweep's --max-seconds bounds each point, so its budget is that times the points
        late = [r for r in rows if r["version"] == "this" and not r["case"].startswith("sweep")
                and r["seconds"] > args.max_seconds + 1]
        print(f"past --max-seconds {args.max_seconds:g} + 1 s (sweeps: per point): "
              f"{', '.join(r['case'] for r in late) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
