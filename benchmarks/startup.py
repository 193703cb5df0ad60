"""How quickly spn starts, and what a fresh installation pays for its compiled kernels.

    python benchmarks/startup.py                 # import, spn --help, spn solve, the paper's scale under
                                                 # fifo (the decomposition), Numba's fixed cost (best of 7 runs)
    python benchmarks/startup.py --fresh-venv    # also: a new virtual environment, first and second
                                                 # solve of a model explored by the compiled engine

Every number is the wall-clock time of a fresh process (``python -c ...`` or the
``spn`` script), the smallest of ``--repeat`` runs, with user+system CPU beside
it. Run it on an idle machine: a process that competes for the two cores makes
every number here larger.

The fresh-venv part installs this checkout into a temporary virtual environment
(not editable, with an empty Numba cache), then times, for a model past 20,000
tangible states (:data:`LARGE_MODEL`): the first ``spn solve`` (the kernels
are not compiled yet: the NumPy engine explores while a background process
compiles them), how long after it the background compilation is done, and the
second and third solves (the compiled engine, loaded from the cache).
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: a model whose chain is past explore()'s small-chain shortcut (261,635 tangible states)
LARGE_MODEL = ("models/spark-sq2.yaml",)
#: seconds to wait for the background compilation before giving up on it
PATIENCE = 300
#: the paper's scale (50 users, 500 + 500 tasks, 300 containers) under fifo: the decomposition answers
PAPERS_SCALE = ["models/mapreduce.yaml", *(x for s in ("workload.users=50", "cluster.containers=300",
                "phases.map.tasks=500", "phases.reduce.tasks=500", "scheduler.policy=fifo") for x in ("--set", s))]
#: what any process pays to call one cached Numba function (import, Numba's typing registries, the load)
NUMBA_FLOOR = "import numba, numpy\n\n@numba.njit(cache=True)\ndef f(a):\n    return a.sum()\n\nf(numpy.ones(3))\n"


def timed(command, *, env=None, cwd=ROOT) -> tuple[float, float, str]:
    """Wall seconds, CPU seconds (user+system of the child) and stdout of one run."""
    # as a user's Python runs: compiled modules written and read (a harness may have turned that off)
    env = {k: v for k, v in (env or os.environ).items() if k != "PYTHONDONTWRITEBYTECODE"}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, command))} failed:\n{done.stderr}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def best(command, repeat: int, env=None) -> tuple[float, float]:
    runs = [timed(command, env=env)[:2] for _ in range(repeat)]
    return min(runs)


def import_profile(python: str) -> list[tuple[int, str]]:
    """The ten slowest modules of ``import spn`` (cumulative microseconds)."""
    done = subprocess.run([python, "-X", "importtime", "-c", "import spn"], cwd=ROOT,
                          capture_output=True, text=True)
    rows = []
    for line in done.stderr.splitlines():
        match = re.match(r"import time:\s+\d+ \|\s+(\d+) \|(\s*)(\S+)", line)
        if match:
            rows.append((int(match.group(1)), match.group(3)))
    return sorted(rows, reverse=True)[:10]


def startup(repeat: int) -> None:
    spn = shutil.which("spn") or sys.exit("spn is not on PATH: install the checkout first")
    floor = Path(tempfile.mkdtemp(prefix="spn-numba-floor-")) / "floor.py"     # a file: Numba caches only those
    floor.write_text(NUMBA_FLOOR)
    print("| what | wall (s) | CPU (s) |\n|---|---|---|")
    for label, command in (
            ("python -c 'import spn'", [sys.executable, "-c", "import spn"]),
            ("spn --help", [spn, "--help"]),
            ("spn solve models/mapreduce.yaml", [spn, "solve", "models/mapreduce.yaml"]),
            ("`spn solve` at the paper's scale under fifo (the decomposition; its X(k) simulated)",
             [spn, "solve", *PAPERS_SCALE]),
            ("`spn solve` at the paper's scale under fifo, asked before (its X(k) read back)",
             [spn, "solve", *PAPERS_SCALE]),
            ("a cached Numba function called once", [sys.executable, str(floor)])):
        env = dict(os.environ, SPN_CACHE_DIR="off")     # nothing read back, but where the row says so
        if "read back" in label:
            env["SPN_CACHE_DIR"] = str(floor.parent / "replications")
            timed(command, env=env)                     # the replications kept
        wall, cpu = best(command, repeat, env=env)
        print(f"| `{label}` | {wall:.3f} | {cpu:.3f} |" if label.startswith(("python", "spn"))
              else f"| {label} | {wall:.3f} | {cpu:.3f} |")
    shutil.rmtree(floor.parent)
    print("\nslowest modules of `import spn` (cumulative ms):")
    for micro, name in import_profile(sys.executable):
        print(f"  {micro / 1000:8.1f}  {name}")


def fresh_venv() -> None:
    with tempfile.TemporaryDirectory(prefix="spn-fresh-") as tmp:
        venv = Path(tmp) / "venv"
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        python, spn = venv / "bin" / "python", venv / "bin" / "spn"
        started = time.perf_counter()
        subprocess.run([python, "-m", "pip", "install", "--quiet", str(ROOT)], check=True)
        print(f"\nfresh virtual environment: pip install {time.perf_counter() - started:.1f} s")
        env = dict(os.environ, NUMBA_CACHE_DIR=str(Path(tmp) / "numba-cache"))
        command = [spn, "solve", *LARGE_MODEL, "--json"]
        print("| run | wall (s) | CPU (s) | tangible states |\n|---|---|---|---|")
        ready = [python, "-c", "import sys, spn.kernels as k; sys.exit(0 if k.ready() else 1)"]
        for label in ("first solve (kernels not compiled yet)", "compiled in the background",
                      "second solve (compiled engine, cached kernels)", "third solve"):
            if label.startswith("compiled"):
                started = time.perf_counter()
                while subprocess.run(ready, env=env).returncode != 0:
                    if time.perf_counter() - started > PATIENCE:
                        raise SystemExit(f"the kernels were not compiled within {PATIENCE} s")
                    time.sleep(0.5)
                print(f"| {label}: ready after | {time.perf_counter() - started:.1f} | | |")
                continue
            wall, cpu, out = timed(command, env=env)
            states = re.search(r'"tangible_states": (\d+)', out)
            print(f"| {label} | {wall:.2f} | {cpu:.2f} | {states.group(1) if states else ''} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7, help="runs per command; the fastest counts")
    parser.add_argument("--fresh-venv", action="store_true", help="also time a fresh installation")
    args = parser.parse_args()
    startup(args.repeat)
    if args.fresh_venv:
        fresh_venv()


if __name__ == "__main__":
    main()
