"""Driver time is not execution time (issue 28, part 4): idle gaps with no job active are left out of the fit.

Specifications: a spark-shell log's model runs for about its jobs' own time, not the application's wall
span; a synthetic application with a long idle gap between two jobs is modelled without it, and the gap is
reported (``reference.idle_gaps``, one line from ``spn fit``); a short gap stays as driver work; a batch
application's start-up (its executors arriving) stays execution time; the driver phases a spark-shell log
is fitted with hold no container.
"""

import os
from pathlib import Path

import pytest
import yaml

from spn.cli import main
from spn.analysis.solve import solve_description
from spn.description import load_description, parse_description
from spn.fit import fit_logs
from spn.logs import load_runs
from spn.logs.idle import IDLE_FLOOR_S, IDLE_FRACTION, idle_gaps
from spn.logs.spark import read_spark_log
from spn.pipeline import Budget, evaluate
from tests.test_logmodel import job, stage, write_spark_log

DATA = Path(os.environ.get("SPN_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
SHELL = DATA / "spark-events" / "application_1516285256255_0012.json"
SHELL_LOCAL = DATA / "spark-events" / "local-1430917381534.json"
Q26_E24 = DATA / "lundstrom" / "q26_e24_application_1483026795778_0404.json.gz"
BUDGET = Budget(max_states=20_000, max_seconds=20, rel_precision=0.02, seed=1)


def mean_time(model) -> float:
    return evaluate(parse_description(model.description), budget=BUDGET).mean_execution_time


def two_jobs(path, gap_ms, *, name=None, lead_ms=0):
    """Two one-stage jobs of 2 tasks x 1 s on 2 cores (each job 1.1 s), the second ``gap_ms`` after the first;
    the first is submitted ``lead_ms`` after the application started, which ends 0.1 s after the last job."""
    a = lead_ms
    first = job(0, [stage(0, [(a + 100, a + 1100)] * 2)], submit=a, complete=a + 1100)
    t = a + 1100 + gap_ms
    second = job(1, [stage(1, [(t + 100, t + 1100)] * 2)], submit=t, complete=t + 1100)
    path = write_spark_log(path, [first, second], start=0, end=t + 1200)
    if name:  # an interactive session, as spark-shell names it
        path.write_text(path.read_text().replace('"App Name": "synthetic"', f'"App Name": "{name}"'))
    return path


@pytest.mark.skipif(not SHELL.exists(), reason=f"spark-shell fixture not found at {SHELL} (set SPN_DATA)")
def test_a_spark_shell_log_is_modelled_for_its_jobs_time_not_its_wall_span():
    model = fit_logs([SHELL], max_shape=1000)
    reference = model.description["reference"]
    idle = reference["idle_gaps"][0]
    assert idle["interactive"] and idle["jobs"] == 1
    assert idle["gaps_s"] == pytest.approx([157.512, 312.204])   # the user before the first job and after the last
    assert idle["total_s"] == pytest.approx(469.716)
    jobs_time = reference["measured_execution_time_s"][0]
    assert jobs_time == pytest.approx(idle["jobs_time_s"]) == pytest.approx(3.103)
    # no delay phase of minutes: the driver's share left is its work inside the job
    delays = [p for p in model.description["phases"] if p["name"].startswith("driver-")]
    assert all(p["task_time"] < 1.0 for p in delays)
    value = mean_time(model)
    assert value == pytest.approx(jobs_time, rel=0.35)
    assert value < 0.05 * (jobs_time + idle["total_s"])


@pytest.mark.skipif(not SHELL_LOCAL.exists(), reason=f"spark-shell fixture not found at {SHELL_LOCAL}")
def test_a_local_spark_shell_session_leaves_its_start_and_end_out():
    run = load_runs(SHELL_LOCAL)
    assert [g.where for g in run.idle.gaps] == ["before the first job", "after the last job"]
    assert run.execution_time == pytest.approx(1.167, abs=0.01)
    assert run.end_delay == 0.0


def test_a_long_gap_between_two_jobs_is_idle_and_left_out(tmp_path, capsys):
    path = two_jobs(tmp_path / "spaced.json", 60_000)
    run = load_runs(path)
    assert [(g.where, g.seconds) for g in run.idle.gaps] == [("between jobs", 60.0)]
    assert run.execution_time == pytest.approx(2.3)        # 1.1 + 1.1 s of jobs, 0.1 s after the last
    assert [j.delay for j in run.jobs] == pytest.approx([0.1, 0.1])   # each job's own untasked 0.1 s
    model = fit_logs([path], max_shape=1000)
    reference = model.description["reference"]
    assert reference["measured_execution_time_s"] == [pytest.approx(2.3)]
    assert reference["idle_gaps"][0]["gaps_s"] == [60.0] and reference["idle_gaps"][0]["jobs"] == 2
    assert mean_time(model) == pytest.approx(2.3, rel=0.05)
    # spn fit says what it left out, in one line
    assert main(["fit", str(path), "--out", str(tmp_path / "m.yaml")]) == 0
    lines = [line for line in capsys.readouterr().err.splitlines() if "idle gaps left out" in line]
    assert len(lines) == 1 and "60 s between jobs" in lines[0]
    written = yaml.safe_load((tmp_path / "m.yaml").read_text())
    assert written["reference"]["idle_gaps"][0]["total_s"] == 60.0


def test_a_short_gap_between_jobs_is_driver_work_and_kept(tmp_path):
    path = two_jobs(tmp_path / "close.json", 2_000)
    run = load_runs(path)
    assert run.idle is None and 2.0 < IDLE_FLOOR_S
    assert run.execution_time == run.span == pytest.approx(4.3)
    model = fit_logs([path], max_shape=1000)
    assert "idle_gaps" not in model.description["reference"]
    assert mean_time(model) == pytest.approx(4.3, rel=0.05)


def test_the_threshold_grows_with_the_jobs_time(tmp_path):
    # jobs active 2.2 s: the floor (5 s) decides; a 4.9 s gap is kept, a 5.1 s one is idle
    assert load_runs(two_jobs(tmp_path / "a.json", 4_900)).idle is None
    assert load_runs(two_jobs(tmp_path / "b.json", 5_100)).idle.gaps[0].seconds == pytest.approx(5.1)
    found = idle_gaps(read_spark_log(two_jobs(tmp_path / "c.json", 5_100)))
    assert found.threshold_s == max(IDLE_FLOOR_S, IDLE_FRACTION * found.jobs_time_s)


def test_an_interactive_session_leaves_out_its_start_and_end_whatever_their_length(tmp_path):
    # 3 s before the first job and 0.1 s after the last, both under the floor: a session's start and end are
    # its user's; the 1 s between its jobs is judged as in any application (kept)
    run = load_runs(two_jobs(tmp_path / "shell.json", 1_000, name="Spark shell", lead_ms=3000))
    assert run.idle.interactive
    assert [(g.where, g.seconds) for g in run.idle.gaps] == [("before the first job", 3.0), ("after the last job", 0.1)]
    assert run.execution_time == pytest.approx(3.2) and run.end_delay == 0.0
    batch = load_runs(two_jobs(tmp_path / "batch.json", 1_000, lead_ms=3000))
    assert batch.idle is None and batch.execution_time == pytest.approx(6.3)


@pytest.mark.skipif(not Q26_E24.exists(), reason=f"lundstrom log not found at {Q26_E24} (set SPN_DATA)")
def test_a_batch_applications_start_up_is_execution_time():
    # 62 s before the first job, executors arriving until 50 s of it: all kept (Hive start-up, then planning)
    run = load_runs(Q26_E24)
    assert run.idle is None
    assert run.jobs[0].delay == pytest.approx(62.55, abs=0.1)


@pytest.mark.skipif(not SHELL.exists(), reason=f"spark-shell fixture not found at {SHELL} (set SPN_DATA)")
def test_a_spark_shell_logs_driver_phases_hold_no_container(tmp_path):
    # written by spn fit and read back: the driver phase keeps its kind (shapes capped at 10 for a small chain)
    out = tmp_path / "shell.yaml"
    assert main(["fit", str(SHELL), "--max-shape", "10", "--out", str(out)]) == 0
    desc = load_description(out, ["workload.users=2", "workload.think_time=5"])
    kinds = {p.name: p.kind for p in desc.phases}
    assert kinds == {"stage-0": "container", "stage-1": "container", "driver-job0": "driver"}
    # two users: the containers are busy X · W / C, W the stages' container-seconds alone (the driver's 0.217 s
    # held would add 2.5 % to it)
    measures = solve_description(desc).measures
    work = sum(p.tasks * p.task_time for p in desc.phases if p.kind == "container")
    assert measures.utilization == pytest.approx(measures.throughput * work / desc.cluster.containers, rel=1e-6)
