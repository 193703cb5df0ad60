"""Sweeps: streamed CSV rows, --resume after a kill, never overwriting --out,
the plot, and Dask: an embedded local cluster and a real scheduler with workers on 127.0.0.1."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from spn.cli import main
from spn.exceptions import ModelError
from spn.studies.sweep import parse_grid, read_rows, run_sweep

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = str(REPO / "models" / "mapreduce.yaml")
TEZ = str(REPO / "models" / "tez-tq3.yaml")
#: 20 points of about 0.25 s each: slow enough to be interrupted halfway
SLOW_GRID = ["--grid", "cluster.containers=4..13", "--grid", "workload.users=3,4"]
#: 60 quick points
WIDE_GRID = ["--grid", "cluster.containers=1..12", "--grid", "workload.users=1..5"]


def environment():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), env.get("PYTHONPATH")]))
    return env


def spn_process(*args, cwd):
    """``python -m spn.cli ARGS`` in its own session (so that the test can stop it and its children)."""
    return subprocess.Popen([sys.executable, "-m", "spn.cli", *args], cwd=cwd, env=environment(),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)


def wait_for_rows(path, rows, proc, timeout=120.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().count("\n") >= rows + 1:
            return
        if proc.poll() is not None:
            raise AssertionError(f"sweep ended early: {proc.communicate()}")
        time.sleep(0.02)
    raise AssertionError("sweep too slow")


def ctrl_c(proc, ready) -> str:
    """Wait for ``ready()``, then press Ctrl-C as a terminal does (SIGINT to every process of the group);
    the process's stderr. Killed if it has not ended within 60 s."""
    try:
        ready()
        os.killpg(proc.pid, signal.SIGINT)
        return proc.communicate(timeout=60)[1]
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()


def group_ends(pgid, timeout=20.0):
    """Whether every process of the process group ``pgid`` ends within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.1)
    return False


def numbers(path):
    """{point: row without the timing column}."""
    header, rows = read_rows(path)
    return {r["point"]: {k: v for k, v in r.items() if k != "seconds"} for r in rows}


def check_complete(path, n):
    header, rows = read_rows(path)
    points = [int(r["point"]) for r in rows]
    assert sorted(points) == list(range(n)), "every point exactly once"
    assert all(r["error"] == "" and r["converged"] == "True" for r in rows)


# --------------------------------------------------------------------------- grid and output file
def test_parse_grid():
    assert parse_grid(["a.b=1,2", "c=3..5"]) == [("a.b", ["1", "2"]), ("c", ["3", "4", "5"])]
    for bad in (["a"], ["a=1,,2"], ["a=5..1"], ["a=1", "a=2"], ["a=1,1"], [], ["a=x..y"]):
        with pytest.raises(ModelError):
            parse_grid(bad)


def test_sweep_in_process_and_never_overwrite(tmp_path, capsys):
    out = tmp_path / "r.csv"
    args = ["sweep", EXAMPLE, "--grid", "cluster.containers=2,4", "--grid", "workload.users=1..3",
            "--out", str(out), "--workers", "0", "--percentiles", "50,90", "--deadline", "20"]
    assert main(args) == 0
    assert "6 points (0 already there, 6 solved, 0 failed)" in capsys.readouterr().out
    header, rows = read_rows(out)
    assert header == ["point", "cluster.containers", "workload.users", "mean_execution_time", "throughput",
                      "utilization", "tangible_states", "transitions", "method", "low", "high", "p50", "p90",
                      "deadline_probability", "converged", "seconds", "error"]
    assert [(r["cluster.containers"], r["workload.users"]) for r in rows] == \
        [("2", "1"), ("2", "2"), ("2", "3"), ("4", "1"), ("4", "2"), ("4", "3")]
    assert float(rows[5]["mean_execution_time"]) == pytest.approx(13.336159219537, rel=1e-9)
    assert all(float(r["p50"]) < float(r["p90"]) for r in rows)
    before = out.read_bytes()
    # an existing --out is never replaced without --resume or --force
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "exists" in err and "--resume" in err and "--force" in err and len(err.strip().splitlines()) == 1
    assert out.read_bytes() == before
    # --resume with nothing left to do changes nothing
    assert main(args + ["--resume"]) == 0
    assert "6 already there, 0 solved" in capsys.readouterr().out and out.read_bytes() == before
    # another sweep's file is refused, even with --resume
    assert main(["sweep", EXAMPLE, "--grid", "cluster.containers=2,3", "--out", str(out), "--workers", "0",
                 "--resume"]) == 2
    assert "another sweep" in capsys.readouterr().err
    other = args[:]
    other[3] = "cluster.containers=2,5"
    assert main(other + ["--resume"]) == 2
    assert "not a point of this grid" in capsys.readouterr().err
    assert main(args + ["--resume", "--force"]) == 2
    assert out.read_bytes() == before
    # --force replaces it
    assert main(["sweep", EXAMPLE, "--grid", "cluster.containers=3", "--out", str(out), "--workers", "0",
                 "--force"]) == 0
    assert len(read_rows(out)[1]) == 1


def test_a_file_where_the_sweep_keeps_its_record_is_not_replaced_without_force(tmp_path, capsys):
    out, record = tmp_path / "side.csv", tmp_path / "side.csv.sweep.json"
    record.write_text("my notes, not spn's\n")
    args = ["sweep", EXAMPLE, "--grid", "cluster.containers=2", "--out", str(out), "--workers", "0"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "side.csv.sweep.json exists" in err and "--force" in err and len(err.strip().splitlines()) == 1
    assert record.read_text() == "my notes, not spn's\n" and not out.exists()
    assert main(args + ["--force"]) == 0 and out.exists()


def test_bad_points_are_refused_before_solving(tmp_path, capsys):
    out = tmp_path / "r.csv"
    assert main(["sweep", EXAMPLE, "--grid", "cluster.containers=0,2", "--out", str(out), "--workers", "0"]) == 2
    err = capsys.readouterr().err
    assert "cluster.containers=0" in err and not out.exists()
    assert main(["sweep", EXAMPLE, "--grid", "cluster.containers=2", "--out", str(out), "--workers", "1",
                 "--scheduler", "tcp://127.0.0.1:9"]) == 2
    assert "give one of them" in capsys.readouterr().err


def test_an_unreachable_scheduler_leaves_no_file(tmp_path, capsys, monkeypatch):
    import spn.studies.sweep

    def refuse(tasks, record, *, workers, scheduler):
        raise spn.studies.sweep.SpnError(f"cannot reach the Dask scheduler at {scheduler}: refused")
    monkeypatch.setattr(spn.studies.sweep, "_run_dask", refuse)
    out = tmp_path / "r.csv"
    assert main(["sweep", EXAMPLE, "--grid", "cluster.containers=2", "--out", str(out),
                 "--scheduler", "tcp://127.0.0.1:9"]) == 2
    assert "cannot reach the Dask scheduler" in capsys.readouterr().err and not out.exists()


def test_failed_points_are_recorded_not_retried(tmp_path, capsys):
    out = tmp_path / "r.csv"
    args = ["sweep", EXAMPLE, "--grid", "workload.users=1,6", "--out", str(out), "--workers", "0",
            "--max-states", "60", "--method", "exact"]
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "1 failed" in captured.out and "error column" in captured.err
    rows = read_rows(out)[1]
    assert rows[0]["error"] == "" and "max_states" in rows[1]["error"] and rows[1]["mean_execution_time"] == ""
    assert main(args + ["--resume"]) == 0
    assert "2 already there, 0 solved" in capsys.readouterr().out


def test_a_point_past_max_states_is_answered_by_the_next_method_as_spn_solve_answers_it(tmp_path, capsys):
    out = tmp_path / "r.csv"
    assert main(["sweep", EXAMPLE, "--grid", "workload.users=1,6", "--out", str(out), "--max-states", "60",
                 "--rel-precision", "0.02", "--seed", "3"]) == 0
    rows = read_rows(out)[1]
    assert [row["method"] for row in rows] == ["exact", "simulation"] and rows[1]["error"] == ""
    low, mean, high = (float(rows[1][key]) for key in ("low", "mean_execution_time", "high"))
    assert low < mean < high
    # the same question through spn solve: the same number (same seed, same method)
    capsys.readouterr()
    assert main(["solve", EXAMPLE, "--set", "workload.users=6", "--max-states", "60", "--rel-precision", "0.02",
                 "--seed", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["mean_execution_time"] == pytest.approx(mean, rel=1e-12)


def test_torn_last_line_is_dropped_on_resume(tmp_path, capsys):
    out = tmp_path / "r.csv"
    args = ["sweep", EXAMPLE, "--grid", "cluster.containers=1..4", "--out", str(out), "--workers", "0"]
    assert main(args) == 0
    full = numbers(out)
    lines = out.read_text().splitlines(keepends=True)
    out.write_text("".join(lines[:3]) + lines[3][:17])          # killed in the middle of a write
    assert main(args + ["--resume"]) == 0
    assert "2 already there, 2 solved" in capsys.readouterr().out
    check_complete(out, 4)
    assert numbers(out) == full


def test_plot(tmp_path):
    out, png = tmp_path / "r.csv", tmp_path / "curve.png"
    summary = run_sweep(EXAMPLE, ["cluster.containers=1..6", "workload.users=1,3"], out, workers=0,
                        percentiles=(10, 90), plot=str(png))
    assert summary.plot == str(png)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000


# --------------------------------------------------------------------------- interruption and --resume
@pytest.mark.slow     # a real sweep killed halfway, then resumed: half a minute
def test_kill_halfway_then_resume(tmp_path):
    """SIGKILL in the middle of a sweep: every finished row is kept byte for byte, and --resume
    solves exactly the missing points."""
    out = tmp_path / "r.csv"
    args = ["sweep", TEZ, *SLOW_GRID, "--out", str(out), "--workers", "0"]
    proc = spn_process(*args, cwd=tmp_path)
    try:
        wait_for_rows(out, 5, proc)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
    kept = out.read_bytes()
    finished = kept[: kept.rfind(b"\n") + 1].count(b"\n") - 1
    assert 5 <= finished < 20, "killed halfway"
    done = subprocess.run([sys.executable, "-m", "spn.cli", *args, "--resume", "--json"], cwd=tmp_path,
                          env=environment(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    summary = json.loads(done.stdout)
    assert (summary["skipped"], summary["computed"]) == (finished, 20 - finished)
    assert out.read_bytes().startswith(kept[: kept.rfind(b"\n") + 1])
    check_complete(out, 20)


@pytest.mark.slow     # a local Dask cluster started, interrupted and resumed: 20 s
def test_interrupt_a_dask_sweep_then_resume(tmp_path, capsys):
    """Ctrl-C (SIGINT) during a sweep on the embedded Dask cluster: exit 130, rows kept, and
    --resume (here without Dask) finishes it without solving a finished point twice."""
    out = tmp_path / "r.csv"
    args = ["sweep", TEZ, *SLOW_GRID, "--out", str(out), "--workers", "2"]
    proc = spn_process(*args, cwd=tmp_path)
    err = ctrl_c(proc, lambda: wait_for_rows(out, 4, proc))
    assert proc.returncode == 130 and err == "spn: error: interrupted\n"
    assert group_ends(proc.pid), "the Dask worker processes were stopped too"
    header, rows = read_rows(out)
    finished = len(rows)
    assert finished < 20
    assert main([*args[:-1], "0", "--resume", "--json"]) == 0          # resumed in this process
    summary = json.loads(capsys.readouterr().out)
    assert (summary["skipped"], summary["computed"]) == (finished, 20 - finished)
    check_complete(out, 20)
    assert read_rows(out)[1][:finished] == rows          # the rows before the interruption, unchanged


def test_ctrl_c_while_the_local_dask_cluster_starts_is_honoured(tmp_path):
    """Ctrl-C to the whole group once the first worker process exists, before any point is solved:
    exit 130 with one line (no worker prints a traceback), every process ends, nothing is written."""
    psutil = pytest.importorskip("psutil")
    out = tmp_path / "r.csv"
    proc = spn_process("sweep", TEZ, *SLOW_GRID, "--out", str(out), "--workers", "2", cwd=tmp_path)

    def first_worker_started():
        deadline = time.monotonic() + 120
        while not psutil.Process(proc.pid).children() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not out.exists(), "still starting"

    err = ctrl_c(proc, first_worker_started)
    assert proc.returncode == 130 and err == "spn: error: interrupted\n"
    assert group_ends(proc.pid)
    assert not out.exists() and list(tmp_path.iterdir()) == []


# --------------------------------------------------------------------------- a real Dask cluster on loopback
@pytest.fixture(scope="module")
def dask_scheduler(tmp_path_factory):
    """A dask scheduler and two single-threaded worker processes, listening on 127.0.0.1 only."""
    pytest.importorskip("distributed")
    where = tmp_path_factory.mktemp("dask")
    info = where / "scheduler.json"
    logs = [open(where / "scheduler.log", "w"), open(where / "workers.log", "w")]
    scheduler = subprocess.Popen(
        [sys.executable, "-m", "distributed.cli.dask_scheduler", "--host", "127.0.0.1", "--port", "0",
         "--no-dashboard", "--scheduler-file", str(info)],
        cwd=where, env=environment(), stdout=logs[0], stderr=subprocess.STDOUT, start_new_session=True)
    workers = None
    try:
        deadline = time.monotonic() + 60
        while not (info.exists() and info.read_text().strip()):
            assert time.monotonic() < deadline and scheduler.poll() is None, "scheduler did not start"
            time.sleep(0.1)
        address = json.loads(info.read_text())["address"]
        assert address.startswith("tcp://127.0.0.1:")
        workers = subprocess.Popen(
            [sys.executable, "-m", "distributed.cli.dask_worker", address, "--nworkers", "2", "--nthreads", "1",
             "--host", "127.0.0.1", "--no-dashboard", "--death-timeout", "60"],
            cwd=where, env=environment(), stdout=logs[1], stderr=subprocess.STDOUT, start_new_session=True)
        from distributed import Client
        with Client(address, timeout="30s") as client:
            client.wait_for_workers(2, timeout=60)
        yield address
    finally:
        for proc in (workers, scheduler):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
        for log in logs:
            log.close()


@pytest.mark.slow     # a Dask scheduler and local workers started: 10-20 s
def test_sweep_on_a_dask_scheduler_equals_local_workers(tmp_path, dask_scheduler, capsys):
    remote, local = tmp_path / "remote.csv", tmp_path / "local.csv"
    common = ["sweep", EXAMPLE, *WIDE_GRID, "--percentiles", "50,95", "--deadline", "30", "--json"]
    started = time.perf_counter()
    assert main([*common, "--out", str(remote), "--scheduler", dask_scheduler]) == 0
    remote_s = time.perf_counter() - started
    summary = json.loads(capsys.readouterr().out)
    assert summary["computed"] == 60 and summary["runner"].startswith(f"Dask scheduler {dask_scheduler}")
    started = time.perf_counter()
    assert main([*common, "--out", str(local), "--workers", "2"]) == 0
    local_s = time.perf_counter() - started
    assert json.loads(capsys.readouterr().out)["runner"] == "local Dask cluster (2 worker processes)"
    check_complete(remote, 60)
    check_complete(local, 60)
    assert numbers(remote) == numbers(local)            # identical numbers, digit for digit
    print(f"\n60 points: Dask scheduler on loopback {remote_s:.2f} s, local --workers 2 {local_s:.2f} s")
