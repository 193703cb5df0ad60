"""The command line against hostile input: every refusal is exit 2 and one ``spn: error:`` line.

Random strings go to every option of every command (in-process, with bounded
memory); then one test per kind of abuse: a simulation that must stop at
--max-seconds, a comparison past the state limit, grids and ranges too large to
list, a closed or broken standard output, output files that exist, --resume of a
sweep started otherwise, numbers that do not fit, and Ctrl-C on a Dask sweep.
Processes run through :func:`tests.hostile.run_spn` (1 GB of address space, a time limit).
"""

import argparse
import contextlib
import csv
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from spn.cli import _parser, main
from tests.hostile import MEMORY_LIMIT, ROOT, assert_refused, memory_headroom, run_spn

MODEL = str(ROOT / "models" / "mapreduce.yaml")
TEZ = str(ROOT / "models" / "tez-tq3.yaml")
SPARK = str(ROOT / "models" / "spark-sq2.yaml")

#: per command: arguments that make a valid run small (an option given again replaces its value)
BASE = {
    "solve": [MODEL, "--max-states", "5000"],
    "schema": [],
    "simulate": [MODEL, "--jobs", "20", "--replications", "2", "--rel-precision", "0", "--max-seconds", "0.5"],
    "compare": [MODEL, "--replications", "2", "--rel-precision", "0", "--max-seconds", "1"],
    "export": [MODEL],
    "draw": [MODEL, "-o", "net.svg"],
    "plan": [MODEL, "--vary", "cluster.containers=1..4", "--target", "mean<=12", "--probes", "1"],
    "sweep": [MODEL, "--grid", "cluster.containers=1..2", "--out", "r.csv", "--workers", "0"],
    "fit": ["missing-log.json"],
    "baseline": ["missing-log.json", "--no-san"],
}
#: options naming a file that spn writes: random names stay in the example's own folder
PATHS = {"-o", "--output", "--out", "--plot"}
HOSTILE = ["1e30", "10**20", "-1", "nan", "inf", "-inf", "0", "1", "2", "1e-320", "9" * 40, "1_000", " 5 ",
           "0x10", "\u0663", "1.5", "50,abc", "1..10", "1..1000000000000000000", "a=1", "mean<=1.2.3", "", "-",
           "--json", "p99.9999999<=1", "x" * 5000, "1" * 5000, "tcp://127.0.0.1:1", "\udcff"]


def options(command):
    """The options of ``command`` that take a value: (flag, argparse action)."""
    commands = next(a for a in _parser()._actions if isinstance(a, argparse._SubParsersAction))
    return [(action.option_strings[-1], action) for action in commands.choices[command]._actions
            if action.option_strings and action.nargs != 0 and action.dest != "help"]


def values(flag):
    if flag in PATHS:
        names = st.text(alphabet="abc._-", min_size=1, max_size=10)
        return st.tuples(names, st.sampled_from([".svg", ".png", ".csv", ".pdf", ".gif", ""])).map("".join)
    return st.one_of(st.sampled_from(HOSTILE), st.integers(-10 ** 30, 10 ** 30).map(str),
                     st.floats().map(repr), st.text(st.characters(blacklist_characters="\x00"), max_size=20))


@contextlib.contextmanager
def own_folder():
    """A fresh working folder for one example: whatever a command writes stays there."""
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as folder:
        os.chdir(folder)
        try:
            yield Path(folder)
        finally:
            os.chdir(here)


def check_outcome(code, err):
    """Exit 0, or 2 with exactly one error line; never 1, never a traceback."""
    assert "Traceback" not in err, err
    assert code in (0, 2), f"exit {code}: {err}"
    if code == 2:
        lines = [line for line in err.splitlines() if line.strip()]
        assert [line for line in lines if line.startswith("spn: error:")] == lines[-1:] and len(lines) >= 1, lines


@pytest.fixture
def no_dask(monkeypatch):
    """Sweeps that would start a Dask cluster are refused at once (the options are under test, not Dask)."""
    import spn.studies.sweep
    from spn.exceptions import SpnError

    def refuse(tasks, record, *, workers, scheduler):
        raise SpnError("no Dask cluster in this test")
    monkeypatch.setattr(spn.studies.sweep, "_run_dask", refuse)


# --------------------------------------------------------------------------- random strings, every option
@pytest.mark.parametrize("command", sorted(c for c in BASE if c != "schema"))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(data=st.data())
def test_random_strings_in_every_option(command, data, capsys, no_dask):
    flag, _ = data.draw(st.sampled_from(options(command)), label="option")
    value = data.draw(values(flag), label="value")
    with own_folder(), memory_headroom():
        code = main([command, *BASE[command], flag, value])
    check_outcome(code, capsys.readouterr().err)


def test_every_number_option_is_bounded():
    """Each option's own type either refuses a value or returns a number the engines can take."""
    checked = 0
    for command in BASE:
        for flag, action in options(command):
            if not callable(action.type) or action.type in (str,):
                continue
            for text in HOSTILE + ["10" * 30, str(2 ** 200), "1e308", "-0", "4.9e-324"]:
                try:
                    value = action.type(text)
                except argparse.ArgumentTypeError:
                    continue
                for number in value if isinstance(value, tuple) else [value]:
                    if isinstance(number, float):
                        assert number == number and abs(number) != float("inf"), (command, flag, text, value)
                    elif isinstance(number, int) and not isinstance(number, bool):
                        assert abs(number) < 2 ** 128, (command, flag, text, value)
                checked += 1
    assert checked > 20


@pytest.mark.parametrize("args, words", [
    (["solve", MODEL, "--max-states", "1e30"], ["--max-states", "integer"]),
    (["solve", MODEL, "--max-states", "1" + "0" * 30], ["--max-states", "<="]),
    (["simulate", MODEL, "--replications", "10**20"], ["--replications"]),
    (["simulate", MODEL, "--replications", "1" + "0" * 20], ["--replications", "1,000,000"]),
    (["simulate", MODEL, "--seed", "-1"], ["--seed"]),
    (["simulate", MODEL, "--seed", "9" * 5000], ["--seed"]),
    (["simulate", MODEL, "--max-seconds", "nan"], ["--max-seconds"]),
    (["sweep", MODEL, "--grid", "cluster.containers=1", "--out", "r.csv", "--workers", "1e9"], ["--workers"]),
    (["sweep", MODEL, "--grid", "cluster.containers=1", "--out", "r.csv", "--workers", "1000000000"],
     ["--workers"]),
    (["sweep", MODEL, "--grid", "cluster.containers=1", "--out", "r.csv", "--scheduler", "localhost"],
     ["--scheduler", "tcp://HOST:PORT"]),
    (["solve", MODEL, "--tol", "nan"], ["--tol"]),
    (["solve", MODEL, "--percentiles", "50,abc"], ["--percentiles", "abc"]),
    (["solve", MODEL, "--percentiles", ",".join(str(1 + q / 1000) for q in range(200))], ["--percentiles"]),
    (["solve", MODEL, "--deadline", "inf"], ["--deadline"]),
    (["plan", MODEL, "--vary", "cluster.containers=1..4", "--target", "mean<=1.2.3"], ["--target", "1.2.3"]),
    (["plan", MODEL, "--vary", "cluster.containers=1..4", "--target", "mean<=9", "--probes", "1000000000"],
     ["--probes"]),
    (["plan", MODEL, "--vary", "cluster.containers=1..1000000000000000000", "--target", "mean<=9"],
     ["--vary", "cluster.containers"]),
    (["plan", MODEL, "--vary", "cluster.containers=1..2000000", "--target", "mean<=9", "--exhaustive"],
     ["2,000,000", "--exhaustive"]),
    (["baseline", "log.json", "--cores-range", "1..1000000000000"], ["--cores-range"]),
    (["baseline", "log.json", "--scale", "1e300"], ["--scale"]),
    (["fit", "log.json", "--max-shape", "1000000"], ["--max-shape"]),
])
def test_numbers_that_do_not_fit_are_refused(capsys, tmp_path, monkeypatch, args, words):
    monkeypatch.chdir(tmp_path)
    with memory_headroom():
        assert main(args) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert_refused(subprocess.CompletedProcess(args, 2, "", captured.err), *words)


# --------------------------------------------------------------------------- time limits
@pytest.mark.parametrize("engine", ["net", "cluster"])
def test_max_seconds_stops_a_replication_that_would_run_for_hours(engine):
    from spn.description import load_description
    from spn.simulation import simulate_description
    from spn.simulation.distributions import SimulationTimeout

    started = time.perf_counter()
    with pytest.raises(SimulationTimeout, match="needs 2") as caught:
        simulate_description(load_description(MODEL), engine=engine, jobs=10 ** 7, max_seconds=0.5, seed=1)
    assert time.perf_counter() - started < 1.5 and caught.value.option == "max_seconds"


def test_max_seconds_bounds_the_replications_and_the_command():
    limit = 2.0
    started = time.perf_counter()
    done = run_spn("simulate", MODEL, "--engine", "cluster", "--jobs", "20", "--rel-precision", "0",
                   "--replications", "1000000", "--max-seconds", limit, "--json", "--seed", "1")
    elapsed = time.perf_counter() - started
    assert done.returncode == 0, done.stderr
    assert 2 <= json.loads(done.stdout)["replications"] < 1_000_000
    assert b"stopped by --max-seconds" in done.stderr
    assert elapsed < 3 * limit + 3, elapsed          # + the interpreter's start-up
    started = time.perf_counter()
    done = run_spn("simulate", MODEL, "--jobs", "10000000", "--max-seconds", limit)
    assert time.perf_counter() - started < 3 * limit + 3
    assert_refused(done, "--max-seconds", "replication")


@pytest.mark.compiled     # it explores to the state limit, which takes the compiled explorer to be quick
def test_compare_past_the_state_limit_stops_quickly():
    from spn.description import load_description
    from spn.studies.compare import compare_description

    desc = load_description(SPARK, ["workload.users=30"])
    started = time.perf_counter()
    comparison = compare_description(desc, engines=(), seed=1)
    assert time.perf_counter() - started < 20
    assert comparison.analytic is None and comparison.analytic_note.startswith("state space too large")
    limit = 6.0
    started = time.perf_counter()
    done = run_spn("compare", SPARK, "--set", "workload.users=30", "--max-seconds", limit, "--json")
    assert time.perf_counter() - started < 3 * limit + 3
    if done.returncode == 0:
        assert json.loads(done.stdout)["analytic_note"].startswith("state space too large")
    else:
        assert_refused(done, "--max-seconds", "compare")


def test_compare_gives_up_exploring_at_its_share_of_max_seconds():
    from spn.description import load_description
    from spn.studies.compare import compare_description

    desc = load_description(ROOT / "models" / "two-queues.yaml")     # millions of states
    started = time.perf_counter()
    comparison = compare_description(desc, engines=(), seed=1, max_seconds=1.0)
    assert time.perf_counter() - started < 10
    assert comparison.analytic is None
    assert comparison.analytic_note.startswith("exploring took too long")
    # the analytic part has half of max_seconds, building the net included, and exploring at most half
    # of what is left of it (the rest: solving the chain)
    import re

    explored = re.search(r"after ([0-9.]+) s \(max_seconds\)", comparison.analytic_note)
    assert explored and float(explored.group(1)) <= 0.25


def test_compare_does_not_build_a_job_net_of_thousands_of_places():
    started = time.perf_counter()
    done = run_spn("compare", str(ROOT / "models" / "two-queues.yaml"), "--set", "classes.dashboard.users=400",
                   "--max-seconds", "10", "--json")
    assert time.perf_counter() - started < 30
    assert done.returncode == 0, done.stderr
    assert "job-identity net would have at least" in json.loads(done.stdout)["analytic_note"]


def test_compare_help_states_its_own_bounds(capsys):
    from spn.studies.compare import COMPARE_MAX_STATES, COMPARE_SECONDS

    assert main(["compare", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"(default: {COMPARE_SECONDS:g})" in text and f"(default: {COMPARE_MAX_STATES})" in text


def test_running_out_of_memory_is_one_line_and_exit_2(capsys, monkeypatch):
    import spn.cli.solve

    def exhausted(args):
        raise MemoryError()
    monkeypatch.setattr(spn.cli.solve, "run_solve", exhausted)
    assert main(["solve", MODEL]) == 2
    assert_refused(subprocess.CompletedProcess([], 2, "", capsys.readouterr().err), "out of memory", "--max-states")


def test_a_chain_too_large_for_memory_is_a_refusal():
    """Asked for the exact chain, under 1 GB the exploration stops before memory runs out, or fails for memory:
    exit 2 either way (without --method exact, solve simulates instead)."""
    assert_refused(run_spn("solve", SPARK, "--set", "workload.users=30", "--method", "exact", timeout=120))


# --------------------------------------------------------------------------- too large to list
def test_huge_grids_and_ranges_are_refused_up_front(tmp_path):
    done = run_spn("sweep", MODEL, "--grid", "cluster.containers=1..1000", "--grid", "workload.users=1..1001",
                   "--out", "r.csv", cwd=tmp_path, timeout=20)
    assert_refused(done, "1,001,000 points", "1,000,000")
    done = run_spn("sweep", MODEL, "--grid", "cluster.containers=1..1000000000000000000", "--out", "r.csv",
                   cwd=tmp_path, timeout=20)
    assert_refused(done, "--grid", "cluster.containers")
    done = run_spn("plan", MODEL, "--vary", "cluster.containers=1..1000000000000000000", "--target", "mean<=9",
                   timeout=20)
    assert_refused(done, "--vary")
    assert list(tmp_path.iterdir()) == []


def test_a_grid_is_counted_and_generated_never_listed():
    from spn.studies.sweep import grid_point, grid_points, grid_size, parse_grid

    grid = parse_grid(["a=1..1000", "b=1..1000"])
    points = grid_points(grid)
    assert not isinstance(points, (list, tuple)) and next(points) == ("1", "1")
    assert grid_size(grid) == 10 ** 6 and grid_point(grid, 10 ** 6 - 1) == ("1000", "1000")


def test_a_range_of_10_to_the_15_is_bisected_without_listing_it():
    from spn.studies.plan import find_boundary
    from spn.studies.targets import parse_target, vary_values

    path, values = vary_values("workload.think_time=1..1000000000000000")
    calls = []
    with memory_headroom(256 << 20):
        r = find_boundary(values, lambda v: calls.append(v) or {"mean": 1e15 / v}, [parse_target("mean<=3")])
    assert r.answer == 333333333333334 and r.neighbour == r.answer - 1 and len(calls) < 70


# --------------------------------------------------------------------------- standard output
def spn_shell(command: str, timeout: float = 60) -> subprocess.CompletedProcess:
    """``spn`` through sh, for redirections run_spn cannot express; same memory limit."""
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))
    return subprocess.run(["sh", "-c", f"exec {sys.executable} -m spn.cli {command}"], capture_output=True,
                          timeout=timeout, cwd=ROOT, env=dict(os.environ, SPN_DEBUG=""), preexec_fn=limit)


def test_export_to_a_closed_a_full_or_a_broken_stdout():
    assert_refused(spn_shell(f"export {SPARK} >&-"), "standard output is closed")
    if os.path.exists("/dev/full"):
        assert_refused(spn_shell(f"export {SPARK} --format pnml >/dev/full"), "cannot write to standard output")
    reader = subprocess.Popen([sys.executable, "-m", "spn.cli", "export", SPARK, "--format", "pnml"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    reader.stdout.close()                       # the reader leaves before the first byte
    err = reader.stderr.read()
    assert reader.wait(timeout=60) == 1 and err == b""


# --------------------------------------------------------------------------- output files
def test_outputs_are_never_replaced_without_force_and_never_half_written(tmp_path, capsys):
    import shutil

    drawing, plot = tmp_path / "net.svg", tmp_path / "curve.png"
    for path in (drawing, plot):
        path.write_bytes(b"mine")
    if shutil.which("dot"):
        assert main(["draw", MODEL, "-o", str(drawing)]) == 2
        assert_refused(subprocess.CompletedProcess([], 2, "", capsys.readouterr().err), "already exists", "--force")
        assert drawing.read_bytes() == b"mine"
        assert main(["draw", MODEL, "-o", str(drawing), "--force"]) == 0
        assert drawing.read_text().lstrip().startswith("<?xml")
    out = tmp_path / "r.csv"
    sweep = ["sweep", MODEL, "--grid", "cluster.containers=1..2", "--out", str(out), "--workers", "0",
             "--plot", str(plot)]
    assert main(sweep) == 2                     # refused before anything is solved
    assert_refused(subprocess.CompletedProcess([], 2, "", capsys.readouterr().err), "curve.png", "--force")
    assert plot.read_bytes() == b"mine" and not out.exists()
    os.mkfifo(tmp_path / "pipe.png")           # not a regular file: not even --force replaces it
    assert main([*sweep[:-1], str(tmp_path / "pipe.png"), "--force"]) == 2
    assert "not a regular file" in capsys.readouterr().err
    assert main([*sweep, "--force"]) == 0
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["curve.png", "net.svg", "pipe.png", "r.csv",
                                                          "r.csv.sweep.json"]
    with open(out, newline="") as f:             # plain CSV: no comment line
        rows = list(csv.DictReader(f))
    assert [r["cluster.containers"] for r in rows] == ["1", "2"]


# --------------------------------------------------------------------------- --resume of another sweep
def test_resume_refuses_a_sweep_started_otherwise(tmp_path, capsys):
    model = tmp_path / "m.yaml"
    model.write_bytes(Path(MODEL).read_bytes())
    out = tmp_path / "r.csv"
    base = ["sweep", str(model), "--grid", "cluster.containers=1..3", "--out", str(out), "--workers", "0",
            "--deadline", "20"]
    assert main(base) == 0
    capsys.readouterr()
    before = out.read_bytes()
    for extra, words in [(["--set", "workload.users=5"], ["--set", "workload.users=5"]),
                         (["--tol", "1e-8"], ["--tol", "1e-10 then", "1e-08 now"]),
                         (["--method", "direct"], ["--method"]),
                         (["--max-states", "999"], ["--max-states"]),
                         (["--deadline", "30"], ["--deadline 20 then, 30 now"])]:
        assert main([*base, *extra, "--resume"]) == 2, extra
        assert_refused(subprocess.CompletedProcess([], 2, "", capsys.readouterr().err), "started with", *words)
    assert main([*base[:3], "cluster.containers=1..4", *base[4:], "--resume"]) == 2
    assert "--grid cluster.containers=1..3 then" in capsys.readouterr().err
    model.write_text(model.read_text().replace("think_time: 10.0", "think_time: 11.0"))
    assert main([*base, "--resume"]) == 2
    assert "changed since the sweep started" in capsys.readouterr().err
    model.write_bytes(Path(MODEL).read_bytes())
    assert main([*base, "--resume"]) == 0               # the same sweep: nothing left to do
    assert "3 already there, 0 solved" in capsys.readouterr().out
    Path(f"{out}.sweep.json").unlink()
    assert main([*base, "--resume"]) == 2
    assert "record" in capsys.readouterr().err and out.read_bytes() == before


# --------------------------------------------------------------------------- Ctrl-C on Dask
@pytest.mark.slow     # a local Dask cluster started and interrupted: half a minute
def test_ctrl_c_on_a_dask_sweep_is_one_line(tmp_path):
    """The terminal sends SIGINT to the whole process group: the workers must stay silent."""
    from tests.test_sweep import SLOW_GRID, group_ends, spn_process, wait_for_rows

    out = tmp_path / "r.csv"
    proc = spn_process("sweep", TEZ, *SLOW_GRID, "--out", str(out), "--workers", "2", cwd=tmp_path)
    try:
        wait_for_rows(out, 2, proc)
        os.killpg(proc.pid, signal.SIGINT)          # what Ctrl-C in a terminal does
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert (proc.returncode, err) == (130, "spn: error: interrupted\n")
    assert group_ends(proc.pid)


def test_a_file_name_that_is_not_text_is_named_escaped_in_one_line(capsys):
    # undecodable bytes in an argument arrive as lone surrogates, which a strict stream cannot encode
    assert main(["plan", "\udcff", "--vary", "cluster.containers=1..3", "--target", "mean<=1"]) == 2
    err = capsys.readouterr().err
    assert err == "spn: error: \\udcff: no such file or directory\n"
