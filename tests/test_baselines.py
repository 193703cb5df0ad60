"""Baselines of the literature (`spn.baselines`, `spn baseline`): every formula against values computed by hand,
stage groups from synthetic and real logs, and the command (happy path, methods that do not apply, bad input).

Hand computations are written out next to each expected number. Synthetic logs come from the writer of
tests/test_logmodel.py (every time known by construction); the real logs are in ``<repo>/../shared/data``
(SPN_DATA overrides) and their tests skip without them.
"""

import json
import math

import numpy as np
import pytest

from spn.baselines import (
    Prediction,
    ReferenceRun,
    StageGroup,
    Target,
    compare_runs,
    fit_ernest,
    fit_executors,
    fit_peridot,
    ideal_scaling,
    predict_ernest,
    predict_peridot,
    r_squared,
    reference_run,
    runtime,
    waves,
)
from spn.baselines.compare import format_table
from spn.exceptions import ModelError
from test_logmodel import EVENTS, job, needs_data, run_cli, stage, two_stage_app, write_spark_log

# --------------------------------------------------------------------------
# PERIDOT
# --------------------------------------------------------------------------

# Two references on E = 2 cores. Group 1 (two parallel stages) and group 3 are variable, group 2 fixed.
SMALL = ReferenceRun("small", 40.0, 100, 2, (StageGroup((0, 1), 4, 8.0), StageGroup((2,), 2, 3.0),
                                             StageGroup((3,), 3, 6.0)))
LARGE = ReferenceRun("large", 70.0, 300, 2, (StageGroup((0, 1), 12, 27.0), StageGroup((2,), 2, 3.5),
                                             StageGroup((3,), 9, 15.0)))


def test_waves_round_up_but_not_on_float_noise():
    assert [waves(p, 4) for p in (1, 4, 5, 8, 9)] == [1, 1, 2, 2, 3]
    assert waves(16.000000001, 4) == 4 and waves(16.01, 4) == 5


def test_peridot_parameters_by_hand():
    model = fit_peridot(SMALL, LARGE)
    g1, g2, g3 = model.groups
    assert g1.variable and not g2.variable and g3.variable
    assert g1.stage_ids == (0, 1) and g1.partitions == (4, 12)
    # group 1: 8 s / ceil(4/2) = 4; 27 s / ceil(12/2) = 4.5; mean 4.25
    assert g1.wave_seconds == pytest.approx(4.25)
    # group 3: 6 s / ceil(3/2) = 3; 15 s / ceil(9/2) = 3; mean 3
    assert g3.wave_seconds == pytest.approx(3.0)
    # fixed time: 40 - (8 + 6) = 26 and 70 - (27 + 15) = 28; mean 27 (the fixed group is inside it)
    assert model.fixed_seconds == pytest.approx(27.0)
    assert model.reference_bytes == pytest.approx(200.0) and model.reference_cores == 2


def test_peridot_prediction_by_hand():
    model = fit_peridot(SMALL, LARGE)
    # D = 400, E = 4: P1 = 400/200 * 8 = 16 -> 4 waves x 4.25 = 17; P3 = 2 * 6 = 12 -> 3 waves x 3 = 9
    assert predict_peridot(model, 400, 4) == pytest.approx(27 + 17 + 9)
    # D = 200, E = 3: P1 = 8 -> ceil(8/3) = 3 waves x 4.25 = 12.75; P3 = 6 -> 2 waves x 3 = 6
    assert predict_peridot(model, 200, 3) == pytest.approx(27 + 12.75 + 6)
    # D = 100, E = 2 (a reference's own setting): P1 = 4 -> 2 waves (8.5); P3 = 3 -> 2 waves (6)
    assert predict_peridot(model, 100, 2) == pytest.approx(27 + 8.5 + 6)


def test_peridot_refuses_references_it_cannot_use():
    with pytest.raises(ModelError, match="same cores"):
        fit_peridot(SMALL, ReferenceRun("x", 70.0, 300, 4, LARGE.groups))
    with pytest.raises(ModelError, match="different"):
        fit_peridot(SMALL, ReferenceRun("x", 70.0, 100, 2, LARGE.groups))
    with pytest.raises(ModelError, match="different stage groups"):
        fit_peridot(SMALL, ReferenceRun("x", 70.0, 300, 2, LARGE.groups[:2]))
    with pytest.raises(ModelError, match="stage groups"):
        fit_peridot(ReferenceRun("x", 1.0, 1, 2), ReferenceRun("y", 2.0, 2, 2))
    with pytest.raises(ModelError, match="cores"):
        predict_peridot(fit_peridot(SMALL, LARGE), 100, 0)


# --------------------------------------------------------------------------
# Ideal scaling and Ernest
# --------------------------------------------------------------------------


def test_ideal_scaling_by_hand():
    # one reference: 40 s at D = 100 on 2 cores -> 40 x 300/100 x 2/4 = 60 s
    assert ideal_scaling([ReferenceRun("a", 40.0, 100, 2)], 300, 4) == pytest.approx(60.0)
    # two references: 40 x 2 x 2/1 = 160 and 70 x 2/3 x 2/1 = 93.33; mean 126.67
    assert ideal_scaling([SMALL, LARGE], 200, 1) == pytest.approx((160 + 280 / 3) / 2)
    with pytest.raises(ModelError, match="input size"):
        ideal_scaling([ReferenceRun("a", 40.0, 0, 2)], 300, 4)
    with pytest.raises(ModelError, match="at least one"):
        ideal_scaling([], 300, 4)


def test_ernest_recovers_known_coefficients_including_the_log_term():
    theta = np.array([2.0, 0.5, 3.0, 1.0])
    D = np.array([10.0, 20.0, 40.0, 40.0, 80.0, 80.0])
    n = np.array([1, 2, 2, 4, 4, 8])
    T = theta[0] + theta[1] * D / n + theta[2] * np.log(n) + theta[3] * n
    fitted = fit_ernest(D, n, T)
    assert fitted == pytest.approx(theta, abs=1e-9)
    # 2 + 0.5 x 160/16 + 3 ln 16 + 16
    assert predict_ernest(fitted, 160.0, 16) == pytest.approx(2 + 5 + 3 * math.log(16) + 16)


def test_ernest_keeps_coefficients_non_negative():
    # time falls with the input: least squares would take a negative slope; NNLS keeps theta_1 = 0,
    # and the best non-negative fit of (10, 8, 6) at n = 1 is the constant 8 (theta_0 + theta_3 = 8)
    D, n, T = [1.0, 2.0, 3.0], [1, 1, 1], [10.0, 8.0, 6.0]
    theta = fit_ernest(D, n, T)
    assert np.all(theta >= 0) and theta[1] == pytest.approx(0.0, abs=1e-12)
    assert predict_ernest(theta, 5.0, 1) == pytest.approx(8.0)


def test_ernest_on_two_references_fits_them_exactly():
    # PERIDOT's setting: D = 1 and 2 on one core, T = 10 and 15: T = 5 + 5 D whatever split of the
    # constant between theta_0 and theta_3 (both are 1 at n = 1), so D = 3 -> 20 s
    theta = fit_ernest([1.0, 2.0], [1, 1], [10.0, 15.0])
    assert predict_ernest(theta, 3.0, 1) == pytest.approx(20.0)
    # the unit of D does not matter (columns are scaled inside): bytes vs megabytes
    theta_bytes = fit_ernest([1e6, 2e6], [1, 1], [10.0, 15.0])
    assert predict_ernest(theta_bytes, 3e6, 1) == pytest.approx(20.0)


# --------------------------------------------------------------------------
# Runtime against executors
# --------------------------------------------------------------------------


def test_laws_by_hand():
    assert runtime("amdahl", 4, (100.0, 0.2)) == pytest.approx(100 * (0.2 + 0.8 / 4))       # 40
    assert runtime("gustafson", 2, (100.0, 0.5)) == pytest.approx(100 / (2 - 0.5))           # 66.67
    assert runtime("sqrt", 4, (64.0, 2.0)) == pytest.approx(64 / 4 + 2 * 2)                  # 20
    assert runtime("power", 8, (64.0, 1.0, 1 / 3)) == pytest.approx(64 / 8 + 8 ** (1 / 3))   # 10
    with pytest.raises(ModelError, match="unknown law"):
        runtime("moore", 2, (1.0,))


def test_r_squared_by_hand():
    assert r_squared([1.0, 2.0, 3.0], [1.0, 2.0, 4.0]) == pytest.approx(1 - 1 / 2)
    assert r_squared([2.0, 4.0], [2.0, 4.0]) == 1.0
    assert math.isnan(r_squared([5.0, 5.0, 5.0], [5.0, 5.0, 5.0]))


@pytest.mark.parametrize("law, params", [("amdahl", (120.0, 0.15)), ("gustafson", (90.0, 0.7)),
                                         ("sqrt", (200.0, 3.0)), ("power", (150.0, 2.0, 0.3))])
def test_each_law_recovers_its_own_parameters(law, params):
    n = np.array([1, 2, 3, 4, 6, 8])
    fit = fit_executors(law, n, runtime(law, n, params), cores_range=(1, 100))
    assert fit.params == pytest.approx(params, rel=1e-6)
    assert fit.r_squared == pytest.approx(1.0)
    assert fit.points == 6


def test_amdahl_least_squares_by_hand():
    # T = A + B/n with A = t f, B = t (1 - f); x = 1/n = (1, .5, .25), y = (30, 20, 16):
    # Sxx = 0.291667, Sxy = 5.5 -> B = 18.857143, A = 22 - B x 0.583333 = 11.0
    fit = fit_executors("amdahl", [1, 2, 4], [30.0, 20.0, 16.0], cores_range=(1, 32))
    t, f = fit.params
    assert t * f == pytest.approx(11.0, rel=1e-6) and t * (1 - f) == pytest.approx(18.857143, rel=1e-6)
    assert fit.predict(8) == pytest.approx(11.0 + 18.857143 / 8, rel=1e-6)
    # fitted (29.857, 20.429, 15.714): SS_res = 0.285714, SS_tot = 104 -> R^2 = 0.997253
    assert fit.r_squared == pytest.approx(1 - 0.285714 / 104, abs=1e-6)
    # Amdahl's runtime only falls: the best core count is the top of the range
    assert fit.best_cores == 32 and fit.best_seconds == pytest.approx(11.0 + 18.857143 / 32, rel=1e-6)


def test_best_cores_of_the_sqrt_law():
    # 64/n + 2 sqrt(n) is least at n = (2a/b)^(2/3) = 64^(2/3) = 16, where it is 4 + 8 = 12
    n = np.array([1, 2, 4, 8])
    fit = fit_executors("sqrt", n, 64 / n + 2 * np.sqrt(n), cores_range=(1, 64))
    assert (fit.best_cores, fit.best_seconds) == (16, pytest.approx(12.0))
    # a range that stops short of the minimum: its top
    assert fit_executors("sqrt", n, 64 / n + 2 * np.sqrt(n), cores_range=(2, 10)).best_cores == 10


def test_fits_need_more_core_counts_than_parameters():
    with pytest.raises(ModelError, match="at least 3 different core counts.*got 2"):
        fit_executors("amdahl", [1, 2, 2, 1], [10.0, 6.0, 6.1, 9.9])
    with pytest.raises(ModelError, match="at least 4 different core counts.*got 3"):
        fit_executors("power", [1, 2, 4], [10.0, 6.0, 4.0])
    with pytest.raises(ModelError, match="times > 0"):
        fit_executors("sqrt", [1, 2, 4], [10.0, 0.0, 4.0])
    with pytest.raises(ModelError, match="cores range"):
        fit_executors("sqrt", [1, 2, 4], [10.0, 6.0, 4.0], cores_range=(5, 2))


# --------------------------------------------------------------------------
# All methods for the same targets
# --------------------------------------------------------------------------


def test_compare_runs_gives_each_method_its_references():
    runs = [ReferenceRun("a", 30.0, 100, 1), ReferenceRun("b", 20.0, 100, 2), ReferenceRun("c", 16.0, 100, 4),
            ReferenceRun("d", 50.0, 200, 1)]
    calls = []
    report = compare_runs(runs, [Target(100, 8), Target(400, 2)], san=lambda t: calls.append(t) or 99.0)
    near = report.row(Target(100, 8))
    assert near["SAN"].seconds == 99.0 and calls == [Target(100, 8), Target(400, 2)]
    # PERIDOT: the two sizes on 1 core (the core count with most runs): no stage groups here
    assert near["PERIDOT"].seconds is None and "stage groups" in near["PERIDOT"].note
    # ideal scaling: mean of 30 x 1/8, 20 x 2/8, 16 x 4/8, 50 x 1/2 x 1/8
    assert near["ideal scaling"].seconds == pytest.approx((3.75 + 5 + 8 + 3.125) / 4)
    # the laws use the three runs at D = 100 only (as in test_amdahl_least_squares_by_hand)
    assert near["Amdahl"].seconds == pytest.approx(11.0 + 18.857143 / 8, rel=1e-6)
    assert "at least 4" in near["a/n+b*n^c"].note
    far = report.row(Target(400, 2))
    assert far["Amdahl"].seconds is None and "no reference run at this input size" in far["Amdahl"].note
    assert far["Ernest"].seconds is not None


def test_san_failure_becomes_a_reason():
    def failing(target):
        raise ModelError("too many states")

    report = compare_runs([ReferenceRun("a", 30.0, 100, 1)], [Target(100, 2)], san=failing)
    assert report.row(Target(100, 2))["SAN"] == Prediction("SAN", None, "too many states")


# --------------------------------------------------------------------------
# Stage groups from logs
# --------------------------------------------------------------------------


def parallel_app(path, *, scan_tasks, end):
    """Two scan stages submitted together (each ``scan_tasks`` tasks of 1 s, sharing 2 cores), then a join stage."""
    left = [(100 + (i // 2) * 1000, 100 + (i // 2 + 1) * 1000) for i in range(0, 2 * scan_tasks, 2)]
    right = [(a, b) for a, b in left]
    scan_end = left[-1][1]
    s0 = stage(0, left, submit=100, input_bytes=1_000_000 * scan_tasks)
    s1 = stage(1, right, submit=100, input_bytes=1_000_000 * scan_tasks)
    s2 = stage(2, [(scan_end + 50, scan_end + 550)] * 2, parents=[0, 1])
    return write_spark_log(path, [job(0, [s0, s1, s2])], end=end)


def test_stage_groups_of_parallel_stages(tmp_path):
    run = reference_run(parallel_app(tmp_path / "p.json", scan_tasks=4, end=5000))
    assert run.cores == 2 and run.seconds == pytest.approx(5.0) and run.input_bytes == 4_000_000
    # scans: 8 one-second tasks from 100 to 4100 ms, two at a time (one of each stage): 4 waves
    assert [(g.stage_ids, g.partitions) for g in run.groups] == [((0, 1), 8), ((2,), 2)]
    assert run.groups[0].seconds == pytest.approx(4.0) and run.groups[1].seconds == pytest.approx(0.5)


def test_peridot_from_synthetic_logs(tmp_path):
    small = write_spark_log(tmp_path / "small.json", [two_stage_app(None, scan_tasks=4)], end=5000)
    large = write_spark_log(tmp_path / "large.json", [two_stage_app(None, scan_tasks=8)], end=7000)
    model = fit_peridot(reference_run(small), reference_run(large))
    # scan: 2 s / 2 waves and 4 s / 4 waves -> W = 1 s; fixed: 5 - 2 = 3 and 7 - 4 = 3 -> F = 3 s
    assert model.groups[0].wave_seconds == pytest.approx(1.0) and model.fixed_seconds == pytest.approx(3.0)
    # 16 MB on 2 cores: P = 16/6 x 6 = 16 tasks -> 8 waves; on 4 cores: 4 waves
    assert predict_peridot(model, 16_000_000, 2) == pytest.approx(11.0)
    assert predict_peridot(model, 16_000_000, 4) == pytest.approx(7.0)


@needs_data
def test_stage_groups_of_a_real_join():
    # application_..._24630151: stages 0 and 1 (4 tasks each) feed stage 2 (1 task)
    run = reference_run(EVENTS / "application_1506645932520_24630151.json")
    assert [(g.stage_ids, g.partitions) for g in run.groups] == [((0, 1), 8), ((2,), 1)]
    assert run.cores == 7 and run.seconds == pytest.approx(106.4)


# --------------------------------------------------------------------------
# spn baseline
# --------------------------------------------------------------------------


def two_sizes(tmp_path):
    small = write_spark_log(tmp_path / "small.json", [two_stage_app(None, scan_tasks=4)], end=5000)
    large = write_spark_log(tmp_path / "large.json", [two_stage_app(None, scan_tasks=8)], end=7000)
    return small, large


def test_cli_json(tmp_path, capsys):
    small, large = two_sizes(tmp_path)
    assert run_cli("baseline", small, large, "--predict", "cores=2,4", "--scale", "2", "--json") == 0
    result = json.loads(capsys.readouterr().out)
    got = {(p["input_bytes"], p["cores"], p["method"]): p for p in result["predictions"]}
    assert {k[:2] for k in got} == {(16_000_000, 2), (16_000_000, 4)}
    assert got[(16_000_000, 2, "PERIDOT")]["seconds"] == pytest.approx(11.0)
    assert got[(16_000_000, 4, "PERIDOT")]["seconds"] == pytest.approx(7.0)
    # ideal scaling: mean of 5 s x 16/4 and 7 s x 16/8 on the same 2 cores -> 17; on 4 cores 8.5
    assert got[(16_000_000, 2, "ideal scaling")]["seconds"] == pytest.approx(17.0)
    assert got[(16_000_000, 4, "ideal scaling")]["seconds"] == pytest.approx(8.5)
    # the SAN model: 16 one-second tasks on 2 cores (8 s of scan) plus the 0.5 s stage and the delays
    assert 9.0 < got[(16_000_000, 2, "SAN")]["seconds"] < 13.5
    assert got[(16_000_000, 4, "SAN")]["seconds"] < got[(16_000_000, 2, "SAN")]["seconds"]
    amdahl = got[(16_000_000, 2, "Amdahl")]
    assert amdahl["seconds"] is None and "no reference run at this input size" in amdahl["note"]
    assert result["peridot"]["fixed_seconds"] == pytest.approx(3.0)
    assert [g["variable"] for g in result["peridot"]["groups"]] == [True, False]


def test_cli_table_with_executor_fits(tmp_path, capsys):
    logs = [write_spark_log(tmp_path / f"k{k}.json", [two_stage_app(None, scan_tasks=4)], end=end, cores=k)
            for k, end in ((1, 9000), (2, 5500), (4, 4500))]
    assert run_cli("baseline", *logs, "--predict", "cores=8", "--cores-range", "1..16", "--no-san") == 0
    out = capsys.readouterr().out
    assert "SAN" not in out
    row = next(line for line in out.splitlines() if line.startswith("4 MB"))
    assert row.split()[3] == "n/a"                       # PERIDOT: one input size
    assert "R^2" in out and "searched 1..16" in out
    assert "a/n+b*n^c needs runs on at least 4 different core counts at this input size, got 3" in out


def test_table_layout():
    report = compare_runs([ReferenceRun("a.json", 20.0, 10**6, 2)], [Target(2 * 10**6, 4)])
    lines = format_table(report).splitlines()
    assert lines[6].split()[:5] == ["2", "MB", "4", "n/a", "[1]"]
    # ideal scaling 20 x 2 x 2/4; Ernest from one configuration would only repeat its time: n/a
    assert lines[6].split()[5:7] == ["20", "n/a"]


@needs_data
def test_cli_on_a_real_log(capsys):
    path = EVENTS / "application_1506645932520_24630151.json"
    assert run_cli("baseline", path, "--json") == 0
    result = json.loads(capsys.readouterr().out)
    got = {p["method"]: p for p in result["predictions"]}
    assert got["ideal scaling"]["seconds"] == pytest.approx(106.4)   # its own configuration
    assert got["SAN"]["seconds"] > 0
    assert got["PERIDOT"]["seconds"] is None


def assert_one_line_error(capsys, *needles):
    err = capsys.readouterr().err
    assert err.startswith("spn: error: ") and err.count("\n") == 1 and "Traceback" not in err
    for needle in needles:
        assert needle in err


@pytest.mark.parametrize("args, needle", [
    (["--predict", "cores=0"], "integer >= 1"),
    (["--predict", "cores="], "comma-separated"),
    (["--predict", "memory=4"], "expected cores="),
    (["--predict", "input-size=lots"], "input size 'lots'"),
    (["--scale", "-1"], "number > 0"),
    (["--scale", "2", "--predict", "input-size=1GB"], "not both"),
    (["--predict", "cores=1", "--predict", "cores=2"], "given twice"),
    (["--cores-range", "4..2"], "LO..HI"),
])
def test_cli_bad_options_exit_2(tmp_path, capsys, args, needle):
    small, large = two_sizes(tmp_path)
    assert run_cli("baseline", small, large, *args) == 2
    assert_one_line_error(capsys, needle)


def test_cli_bad_logs_exit_2(tmp_path, capsys):
    assert run_cli("baseline", tmp_path / "missing.json") == 2
    assert_one_line_error(capsys, "no such file")
    (tmp_path / "empty.json").write_text("")
    assert run_cli("baseline", tmp_path / "empty.json") == 2
    assert_one_line_error(capsys)
