"""Sweeps over descriptions with query classes and queues: rows equal to spn solve's, queue capacities
rebalanced to sum to 1, --resume without solving a finished point again, simulated rows with their
intervals, failed rows, and one-line refusals."""

import json
from pathlib import Path

import pytest

import spn.studies.sweep
from spn.analysis.solve import solve_description
from spn.studies.sweep import read_rows, run_sweep
from spn.studies.sweep_files import SweepRecord, record_path
from spn.cli import main
from spn.description import load_description

REPO = Path(__file__).resolve().parent.parent
TWO_QUEUES = str(REPO / "models" / "two-queues.yaml")
#: a small two-queue model: 153 to 1,438 states, a tenth of a second to half a second a point
SMALL = ("cluster.containers=4", "classes.etl.users=1", "classes.dashboard.users=2", "classes.etl.phases.map.tasks=3",
         "classes.etl.phases.reduce.tasks=1", "classes.dashboard.phases.scan.tasks=2", "queues.bi.max_capacity=0.5")
SETS = [arg for s in SMALL for arg in ("--set", s)]
#: 2 x 2: bi's share (etl gets the rest; at 0.75 bi's max_capacity 0.5 is raised to it) and the dashboard users
GRID = ["queues.bi.capacity=0.25,0.75", "classes.dashboard.users=1,2"]
#: what each point is, written as spn solve's --set would have to write it
SAME_AS = {("0.25", "1"): ["queues.bi.capacity=0.25", "queues.etl.capacity=0.75", "classes.dashboard.users=1"],
           ("0.25", "2"): ["queues.bi.capacity=0.25", "queues.etl.capacity=0.75", "classes.dashboard.users=2"],
           ("0.75", "1"): ["queues.bi.capacity=0.75", "queues.etl.capacity=0.25", "queues.bi.max_capacity=0.75",
                           "classes.dashboard.users=1"],
           ("0.75", "2"): ["queues.bi.capacity=0.75", "queues.etl.capacity=0.25", "queues.bi.max_capacity=0.75",
                           "classes.dashboard.users=2"]}


def solved(overrides, **options):
    return solve_description(load_description(TWO_QUEUES, [*SMALL, *overrides]), **options).as_dict()


def test_rows_equal_solve_classes(tmp_path):
    out = tmp_path / "r.csv"
    summary = run_sweep(TWO_QUEUES, GRID, out, sets=SMALL, workers=0)
    assert (summary.points, summary.computed, summary.failed) == (4, 4, 0)
    header, rows = read_rows(out)
    assert header[:6] == ["point", "queues.bi.capacity", "classes.dashboard.users", "mean_execution_time",
                          "ci_low", "ci_high"]
    assert header.count("queues.bi.capacity") == 1 and "queues.etl.capacity" in header
    assert [(r["queues.bi.capacity"], r["classes.dashboard.users"]) for r in rows] == list(SAME_AS)
    for row in rows:
        expected = solved(SAME_AS[row["queues.bi.capacity"], row["classes.dashboard.users"]])
        assert row["method"] == "exact" and row["error"] == "" and row["converged"] == "True"
        assert row["ci_low"] == row["classes.etl.ci_low"] == row["replications"] == ""
        assert int(row["tangible_states"]) == expected["tangible_states"]
        for name, c in expected["classes"].items():
            for key in ("mean_execution_time", "throughput"):
                assert float(row[f"classes.{name}.{key}"]) == pytest.approx(c[key], rel=1e-12, abs=0)
        for name, q in expected["queues"].items():      # the configuration too: capacities sum to 1
            assert float(row[f"queues.{name}.utilization"]) == pytest.approx(q["utilization"], rel=1e-12, abs=0)
            assert float(row[f"queues.{name}.capacity"]) == q["capacity"]
            assert float(row[f"queues.{name}.max_capacity"]) == q["max_capacity"]
    # the share moves the answer: R of the dashboards at 2 users differs between bi at 0.25 and at 0.75
    assert rows[1]["classes.dashboard.mean_execution_time"] != rows[3]["classes.dashboard.mean_execution_time"]


def test_resume_after_an_interruption_solves_only_the_missing_points(tmp_path, monkeypatch, capsys):
    out = tmp_path / "r.csv"
    args = ["sweep", TWO_QUEUES, *SETS, *(a for g in GRID for a in ("--grid", g)), "--out", str(out),
            "--workers", "0", "--json"]
    real, solved_points = spn.studies.sweep.solve_point, []

    def interrupted_at_the_third(task):
        if len(solved_points) == 2:
            raise KeyboardInterrupt
        solved_points.append(task.index)
        return real(task)

    monkeypatch.setattr(spn.studies.sweep, "solve_point", interrupted_at_the_third)
    assert main(args) == 130
    capsys.readouterr()
    kept = out.read_bytes()
    assert kept.count(b"\n") == 3 and solved_points == [0, 1]         # the header and two rows
    record = SweepRecord.read(record_path(out))
    assert (record.seed, record.rel_precision, record.max_seconds) == (1, 0.005, 60.0)

    def counted(task):
        solved_points.append(task.index)
        return real(task)

    monkeypatch.setattr(spn.studies.sweep, "solve_point", counted)
    assert main(args + ["--resume"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert (summary["skipped"], summary["computed"], summary["failed"]) == (2, 2, 0)
    assert solved_points == [0, 1, 2, 3], "points 0 and 1 were not solved again"
    assert out.read_bytes().startswith(kept)
    assert sorted(int(r["point"]) for r in read_rows(out)[1]) == [0, 1, 2, 3]
    # resuming with another seed is refused, naming it
    assert main(args + ["--resume", "--seed", "2"]) == 2
    assert "--seed 1 then, 2 now" in capsys.readouterr().err


def test_a_simulated_row_carries_its_interval(tmp_path):
    """Past --max-states, --method auto simulates the point (as spn solve does) and says so."""
    out = tmp_path / "r.csv"
    run_sweep(TWO_QUEUES, ["classes.dashboard.users=1,2"], out, sets=SMALL, workers=0, max_states=500,
              rel_precision=0.05, max_seconds=20)
    rows = {r["classes.dashboard.users"]: r for r in read_rows(out)[1]}
    exact, simulated = rows["1"], rows["2"]                    # 153 states, then 966 > 500
    assert exact["method"] == "exact" and exact["ci_low"] == "" and exact["tangible_states"] == "153"
    assert simulated["method"] == "simulation" and simulated["error"] == ""
    assert simulated["tangible_states"] == "" and int(simulated["replications"]) >= 2
    assert simulated["precision_met"] == "True" and float(simulated["seconds"]) > 0
    for name in ("etl", "dashboard"):
        low, value, high = (float(simulated[f"classes.{name}.{k}"]) for k in ("ci_low", "mean_execution_time",
                                                                               "ci_high"))
        assert low < value < high and (high - low) / 2 <= 0.05 * value * (1 + 1e-9)
        assert float(simulated[f"classes.{name}.throughput_ci_low"]) < float(simulated[f"classes.{name}.throughput"])
    assert float(simulated["queues.bi.utilization_ci_low"]) < float(simulated["queues.bi.utilization_ci_high"])
    # the exact answer lies in the interval
    exact_r = solved(["classes.dashboard.users=2"])["classes"]["dashboard"]["mean_execution_time"]
    assert float(simulated["classes.dashboard.ci_low"]) <= exact_r <= float(simulated["classes.dashboard.ci_high"])


def test_a_bad_point_is_a_failed_row(tmp_path, capsys):
    """bi's capacity 0.75 above a max_capacity 0.5 that the grid itself sets is invalid only in
    combination, so it is found when the point is solved, and recorded."""
    out = tmp_path / "r.csv"
    assert main(["sweep", TWO_QUEUES, *SETS, "--grid", "queues.bi.capacity=0.25,0.75",
                 "--grid", "queues.bi.max_capacity=1,0.5", "--out", str(out), "--workers", "0"]) == 0
    captured = capsys.readouterr()
    assert "4 points (0 already there, 4 solved, 1 failed)" in captured.out and "error column" in captured.err
    rows = {(r["queues.bi.capacity"], r["queues.bi.max_capacity"]): r for r in read_rows(out)[1]}
    bad = rows["0.75", "0.5"]
    assert "max_capacity" in bad["error"] and "\n" not in bad["error"] and bad["method"] == ""
    assert all(r["error"] == "" and r["method"] == "exact" for k, r in rows.items() if k != ("0.75", "0.5"))


def test_bad_grids_are_one_line_errors(tmp_path, capsys):
    out = tmp_path / "r.csv"
    common = ["sweep", TWO_QUEUES, *SETS, "--out", str(out), "--workers", "0"]
    for grid, words in ((["classes.nope.users=1,2"], ["--grid classes.nope.users", "unknown class 'nope'"]),
                        (["workload.users=1,2"], ["--grid workload.users"]),
                        (["queues.bi.capacity=0.5,1"], ["queues.bi.capacity=1", "leaving nothing for etl"]),
                        (["classes.etl.name=a,b"], ["renames"]),
                        (["queues.bi.capacity=0.5", "--percentiles", "50"], ["query classes", "--percentiles"])):
        assert main([*common, "--grid", *grid]) == 2
        err = capsys.readouterr().err
        assert err.startswith("spn: error: ") and len(err.strip().splitlines()) == 1, err
        assert all(w in err for w in words), err
    assert not out.exists()


def test_dask_workers_give_the_same_rows(tmp_path):
    """On a local Dask cluster an exact and a simulated point (the same seed) give the rows of this process."""
    pytest.importorskip("distributed")
    rows = {}
    for workers in (0, 2):
        out = tmp_path / f"w{workers}.csv"
        summary = run_sweep(TWO_QUEUES, ["classes.dashboard.users=1,2"], out, sets=SMALL, workers=workers,
                            max_states=500, rel_precision=0.05, max_seconds=20)
        assert summary.failed == 0
        rows[workers] = {r["point"]: {k: v for k, v in r.items() if k != "seconds"} for r in read_rows(out)[1]}
    assert summary.runner == "local Dask cluster (2 worker processes)"
    assert rows[0] == rows[2] and {r["method"] for r in rows[2].values()} == {"exact", "simulation"}


def test_with_every_capacity_on_the_grid_a_combination_not_summing_to_1_is_a_failed_row(tmp_path):
    out = tmp_path / "both.csv"
    grid = ["queues.etl.capacity=0.25,0.75", "queues.bi.capacity=0.75,0.25"]
    summary = run_sweep(TWO_QUEUES, grid, out, sets=(*SMALL, "queues.bi.max_capacity=1"), workers=0)
    assert (summary.points, summary.failed) == (4, 2)
    _, rows = read_rows(out)
    by_point = {(r["queues.etl.capacity"], r["queues.bi.capacity"]): r for r in rows}
    assert "capacities sum to 0.5" in by_point[("0.25", "0.25")]["error"]
    assert "capacities sum to 1.5" in by_point[("0.75", "0.75")]["error"]
    assert float(by_point[("0.25", "0.75")]["mean_execution_time"]) == pytest.approx(
        solved(["queues.etl.capacity=0.25", "queues.bi.capacity=0.75", "queues.bi.max_capacity=1"])
        ["mean_execution_time"], rel=1e-9)
