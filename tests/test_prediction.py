"""Prediction intervals (where one real run will fall) and backtests, apart from the methods' intervals."""

import json
import types
from pathlib import Path

import numpy as np
import pytest

import spn.pipeline
import spn.studies.backtest as backtest_module
from spn.cli import main
from spn.exceptions import ModelError
from spn.studies.backtest import LogRun, backtest
from spn.pipeline.prediction import default_errors, fewest_errors, prediction_interval, spread_levels
from whatif_logs import pilot_log

ROOT = Path(__file__).resolve().parents[1]
LUNDSTROM = ROOT.parent / "shared" / "data" / "lundstrom"
Q52 = sorted(LUNDSTROM.glob("q52_e*_*.json.gz"))
needs_lundstrom = pytest.mark.skipif(not Q52, reason="the lundstrom logs (../shared/data/lundstrom) are absent")


def test_a_90_percent_interval_covers_90_percent_of_runs_with_a_known_spread():
    # the rules are 3 % short and the cluster spreads runs by 5 %: 60 backtested runs make the interval
    rng = np.random.default_rng(7)
    predicted = 100.0
    errors = rng.normal(0.03, 0.05, size=60)
    pi = prediction_interval(predicted, None, errors, level=0.9)
    runs = predicted * (1 + rng.normal(0.03, 0.05, size=20_000))
    coverage = np.mean((runs >= pi.low) & (runs <= pi.high))
    assert pi.guaranteed and 0.85 <= coverage <= 0.96
    # the model's own spread widens it, never narrows it
    wider = prediction_interval(predicted, (90.0, 112.0), errors, level=0.9)
    assert wider.low < pi.low and wider.high > pi.high


def test_too_few_errors_take_the_most_extreme_and_say_the_level_is_not_guaranteed():
    pi = prediction_interval(100.0, None, [0.02, -0.04, 0.05], level=0.9)
    assert not pi.guaranteed and "too few" in pi.how
    assert (pi.low, pi.high) == pytest.approx((96.0, 105.0))


def test_nineteen_errors_make_a_guaranteed_90_percent_interval_and_eighteen_do_not():
    # (19 + 1) x 0.05 is exactly the first rank; in floats 1 - 0.9 is a little under 0.1
    assert fewest_errors(0.9) == 19 and fewest_errors(0.8) == 9 and fewest_errors(0.5) == 3
    errors = np.linspace(-0.09, 0.09, 19)
    pi = prediction_interval(100.0, None, errors, level=0.9)
    assert pi.guaranteed and (pi.low, pi.high) == pytest.approx((91.0, 109.0))
    assert not prediction_interval(100.0, None, errors[1:], level=0.9).guaranteed


def test_no_error_at_all_is_refused():
    with pytest.raises(ModelError, match="at least one"):
        prediction_interval(100.0, None, [], level=0.9)


def test_spread_levels_are_the_two_tails():
    assert spread_levels(0.9) == (5.0, 95.0) and spread_levels(0.5) == (25.0, 75.0)


def test_the_installed_validation_errors_say_where_they_come_from():
    errors, source = default_errors()
    assert len(errors) >= 19 and "lundstrom" in source


def test_predict_names_the_method_interval_and_the_run_interval_apart(tmp_path, capsys):
    log = pilot_log(tmp_path / "pilot.json")
    assert main(["predict", str(log), "--vary", "spark.executor.instances=2,4", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    for row in rows:
        method, run = row["method_interval"], row["prediction_interval"]
        assert method["kind"] == "numerical" and run["level"] == 0.9
        assert run["low"] < method["low"] <= row["mean_execution_time"] <= method["high"] < run["high"]
        assert "validation" in run["how"] or "backtest" in run["how"]
    assert main(["predict", str(log), "--vary", "spark.executor.instances=2"]) == 0
    table = capsys.readouterr().out
    assert "90 % run interval" in table and "method's interval" in table


def test_a_backtest_judges_each_run_by_an_interval_made_without_its_own_configuration(monkeypatch):
    runs = {f"e{n}-{k}": LogRun(f"e{n}-{k}", n, 2, 10**9, 1000.0 / n * (1.1 if n == 8 else 1.0))
            for n in (2, 4, 8) for k in (1, 2)}
    monkeypatch.setattr(backtest_module, "read_run", lambda path: runs[path])

    def fake_evaluate(logs, settings, **options):
        executors = int(settings[0].split("=")[1])
        mean = 1000.0 / executors
        return types.SimpleNamespace(mean_execution_time=mean, method="job-alone",
                                     percentiles={5.0: mean, 95.0: mean})
    monkeypatch.setattr(spn.pipeline, "evaluate", fake_evaluate)
    result = backtest(list(runs), pilot="smallest")
    assert [(row.pilot, row.target) for row in result.rows] == [("2 x 2", "4 x 2")] * 2 + [("2 x 2", "8 x 2")] * 2
    assert result.errors == pytest.approx((0.0, 0.0, 0.1, 0.1))
    # the 8-executor runs are 10 % long; their interval comes from the 4-executor errors only (none): missed
    assert [row.inside for row in result.rows] == [True, True, False, False]
    assert result.summary_numbers()["coverage"] == 0.5
    # two errors per interval: the table says the level is not guaranteed
    assert "too few for a guaranteed 90 % (that needs 19)" in result.summary()


def test_a_backtest_needs_two_configurations(monkeypatch):
    monkeypatch.setattr(backtest_module, "read_run", lambda path: LogRun(path, 2, 2, 10**9, 100.0))
    with pytest.raises(ModelError, match="at least two configurations"):
        backtest(["a", "b"])


@needs_lundstrom
def test_spn_backtest_on_real_runs_prints_errors_and_coverage(capsys):
    assert main(["backtest", *map(str, Q52), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["runs"] == 6 and {row["target"] for row in result["rows"]} == {"6 x 2", "12 x 2", "24 x 2"}
    assert result["mean_abs_error"] < 0.15 and 0 <= result["coverage"] <= 1
