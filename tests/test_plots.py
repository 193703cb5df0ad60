"""--plot on predict, plan, baseline and backtest: each draws the numbers its command prints (the curves handed
to the one figure function are compared with the command's JSON), and a bad plot file is refused before any work."""

import json
from pathlib import Path

import pytest

import spn.studies.plot as plot
from spn.cli import main
from spn.studies.backtest import Backtest, BacktestRow, read_run
from whatif_logs import pilot_log

WAVES = """\
name: waves
workload: {users: 1, think_time: 1.0}
cluster: {containers: 1}
phases:
  - {name: only, tasks: 4, task_time: 10.0, shape: 20}
"""


@pytest.fixture(scope="module")
def pilot(tmp_path_factory):
    return pilot_log(tmp_path_factory.mktemp("plots") / "pilot.json")


@pytest.fixture
def drawn(monkeypatch):
    """The curves of every figure drawn (the figure itself is still drawn and written)."""
    seen = []
    real = plot.curves_figure

    def spy(curves, **kwargs):
        seen.append((curves, kwargs))
        return real(curves, **kwargs)

    monkeypatch.setattr(plot, "curves_figure", spy)
    return seen


def _curve(curves, label):
    return next(c for c in curves if c["label"] == label)


def test_predict_plot_draws_the_predictions_and_the_measured_run(pilot, tmp_path, drawn, capsys):
    out = tmp_path / "p.png"
    assert main(["predict", str(pilot), "--vary", "spark.executor.instances=1,2,4", "--json", "--plot", str(out)]) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    (curves, kwargs), = drawn
    mean = _curve(curves, "predicted mean")
    assert mean["x"] == [1, 2, 4] and mean["y"] == [r["mean_execution_time"] for r in rows]
    assert mean["low"] == [r["prediction_interval"]["low"] for r in rows]
    assert mean["high"] == [r["prediction_interval"]["high"] for r in rows]
    run = read_run(pilot)
    assert _curve(curves, "measured runs")["x"] == [run.executors] and _curve(curves, "measured runs")["y"] == [
        run.seconds]
    assert kwargs["xlabel"] == "spark.executor.instances"


def test_plan_plot_draws_every_solved_value_the_bound_and_the_answer(tmp_path, drawn, capsys):
    model = tmp_path / "waves.yaml"
    model.write_text(WAVES)
    out = tmp_path / "plan.svg"
    assert main(["plan", str(model), "--vary", "cluster.containers=1..5", "--target", "mean<=20", "--json",
                 "--plot", str(out)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert out.read_text().lstrip().startswith("<?xml")
    (curves, kwargs), = drawn
    mean = _curve(curves, "mean")
    assert mean["x"] == [p["value"] for p in result["points"]] and mean["y"] == [p["mean"] for p in result["points"]]
    answer = _curve(curves, f"answer: {result['answer']}")
    assert answer["x"] == [3] and kwargs["bound"] == 20.0


def test_baseline_plot_draws_each_method(pilot, tmp_path, drawn, capsys):
    out = tmp_path / "b.pdf"
    assert main(["baseline", str(pilot), "--predict", "cores=2,4,8", "--no-san", "--json", "--plot", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert out.read_bytes()[:5] == b"%PDF-"
    (curves, kwargs), = drawn
    assert kwargs["xlabel"] == "cores"
    predictions = [p for p in report["predictions"] if p["seconds"] is not None]
    assert predictions
    for prediction in predictions:
        curve = _curve(curves, prediction["method"])
        assert curve["y"][curve["x"].index(prediction["cores"])] == prediction["seconds"]
    measured = _curve(curves, "measured runs")
    assert measured["x"] == [4] and measured["y"] == [read_run(pilot).seconds]


def test_backtest_plot_draws_each_pilots_predictions_and_every_run(tmp_path, drawn):
    rows = (BacktestRow("3 x 2", "6 x 2", "a.json", 1200.0, 1100.0, "exact", (900.0, 1300.0)),
            BacktestRow("3 x 2", "6 x 2", "b.json", 1150.0, 1100.0, "exact", (900.0, 1300.0)),
            BacktestRow("3 x 2", "12 x 2", "c.json", 700.0, 600.0, "exact", (500.0, 720.0)))
    plot.plot_backtest(Backtest(rows, "smallest", 0.9), tmp_path / "bt.png")
    (curves, _), = drawn
    predicted = _curve(curves, "from 3 x 2")
    assert (predicted["x"], predicted["y"]) == ([6.0, 12.0], [1100.0, 600.0])
    assert (predicted["low"], predicted["high"]) == ([900.0, 500.0], [1300.0, 720.0])
    measured = _curve(curves, "measured runs")
    assert sorted(zip(measured["x"], measured["y"])) == [(6.0, 1150.0), (6.0, 1200.0), (12.0, 700.0)]


@pytest.mark.parametrize("command", [
    ["predict", "{log}", "--vary", "spark.executor.instances=1,2"],
    ["backtest", "{log}"],
    ["baseline", "{log}", "--no-san"],
    ["plan", "{log}", "--vary", "spark.executor.instances=1..2", "--target", "mean<=100"],
])
@pytest.mark.parametrize("plot_file, message", [("p.txt", "the plot format is chosen by the extension"),
                                                ("taken.png", "replaced only with --force")])
def test_a_bad_plot_file_is_refused_before_any_work(pilot, tmp_path, capsys, command, plot_file, message):
    (tmp_path / "taken.png").write_bytes(b"mine")
    args = [a.format(log=pilot) for a in command] + ["--plot", str(tmp_path / plot_file)]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("spn: error: ") and message in err and len(err.strip().splitlines()) == 1
    assert (tmp_path / "taken.png").read_bytes() == b"mine" and not (tmp_path / "p.txt").exists()


def test_a_queue_share_plan_has_no_plot(tmp_path, capsys):
    model = Path(__file__).resolve().parents[1] / "models" / "two-queues.yaml"
    assert main(["plan", str(model), "--vary", "queues.bi.capacity=0.2..0.8", "--target", "dashboard.mean<=30",
                 "--plot", str(tmp_path / "q.png")]) == 2
    assert "--plot draws a plan over one parameter" in capsys.readouterr().err
