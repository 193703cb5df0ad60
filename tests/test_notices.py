"""``spn.pipeline.notices``: the fit's placeholder think time is refused for several users, and the
start gate is named when it, not the containers, holds the throughput down (exact CTMC measures)."""

from __future__ import annotations

import pytest

from spn.analysis.solve import solve_description
from spn.cli import main
from spn.description import load_description, parse_description
from spn.description.model import THINK_TIME_PLACEHOLDER
from spn.exceptions import ModelError
from spn.fit import fit_logs, write_model
from spn.pipeline.notices import gate_notice, think_time_problem
from test_logmodel import two_stage_app, write_spark_log


# --------------------------------------------------------------------------
# The placeholder think time of a fitted model
# --------------------------------------------------------------------------


@pytest.fixture
def log(tmp_path):
    return write_spark_log(tmp_path / "app.json", [two_stage_app(None)], end=3000)


def test_a_fit_without_a_think_time_marks_its_placeholder(log, tmp_path):
    model = fit_logs([log])
    d = model.description
    assert d["workload"] == {"users": 1, "think_time": 1.0} and d["reference"][THINK_TIME_PLACEHOLDER] == 1.0
    out = write_model(model, tmp_path / "fitted.yaml")
    assert think_time_problem(load_description(out)) is None                 # one user: Z does not matter
    problem = think_time_problem(load_description(out, ["workload.users=5"]))
    assert problem == ("workload.think_time is the fit's placeholder (1 s, right for one user only): "
                       "give --set workload.think_time=SECONDS for 5 users")
    for given in ("30", "1.0"):     # any think time given with --set is the user's, even the placeholder's value
        desc = load_description(out, ["workload.users=5", f"workload.think_time={given}"])
        assert think_time_problem(desc) is None and THINK_TIME_PLACEHOLDER not in desc.reference


def test_a_given_think_time_is_not_a_placeholder(log):
    d = fit_logs([log], think_time=20.0, users=4).description
    assert d["workload"] == {"users": 4, "think_time": 20.0} and THINK_TIME_PLACEHOLDER not in d["reference"]
    assert think_time_problem(parse_description(d)) is None


def test_several_users_without_a_think_time_are_refused(log, tmp_path, capsys):
    with pytest.raises(ModelError, match="3 users need a think time") as error:
        fit_logs([log], users=3)
    assert error.value.option == "think_time"
    assert main(["fit", str(log), "--users", "3", "-o", str(tmp_path / "m.yaml")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "think time" in err and "(--think-time)" in err
    assert not (tmp_path / "m.yaml").exists()


def test_the_fit_says_its_think_time_is_a_placeholder(log, tmp_path, capsys):
    assert main(["fit", str(log), "-o", str(tmp_path / "m.yaml")]) == 0
    assert "a placeholder, give --set workload.think_time=SECONDS with more users" in capsys.readouterr().out


def test_a_hand_edited_mark_that_is_not_the_think_time_says_nothing():
    base = {"name": "x", "workload": {"users": 3, "think_time": 1.0}, "cluster": {"containers": 2},
            "phases": [{"name": "p", "tasks": 1, "task_time": 1.0}]}
    for mark in (2.0, "1.0", True, None):
        assert think_time_problem(parse_description({**base, "reference": {THINK_TIME_PLACEHOLDER: mark}})) is None
    assert think_time_problem(parse_description(base)) is None


# --------------------------------------------------------------------------
# The gate at scale
# --------------------------------------------------------------------------

#: a long first phase and a short last one: a job holds the gate for about 10 s of its 10.1 s
GATED = {"name": "gated", "workload": {"users": 6, "think_time": 1.0}, "cluster": {"containers": 20},
         "scheduler": {"policy": "gate"},
         "phases": [{"name": "long", "tasks": 1, "task_time": 10.0}, {"name": "short", "tasks": 1, "task_time": 0.1}]}


def exact(desc):
    result = solve_description(desc, method="exact").as_dict()
    return result["mean_execution_time"], result["utilization"]


def test_the_gate_is_named_when_it_holds_throughput_down():
    desc = parse_description(GATED)
    r, u = exact(desc)
    assert r == pytest.approx(59.0, rel=1e-6) and u == pytest.approx(0.0505, rel=1e-6)   # X = 1/10.1 s
    notice = gate_notice(desc, u)
    assert notice.startswith("policy gate: the start gate, not the 20 containers (5.05 % busy), limits throughput")
    assert "6 users thinking 1 s ask for 27.3 % of them" in notice and "policy fifo" in notice
    assert "\n" not in notice
    # fifo lets jobs overlap: each takes its 10.1 s alone, and nothing to say
    fifo = parse_description(GATED, ["scheduler.policy=fifo"])
    r, u = exact(fifo)
    assert r == pytest.approx(10.1, rel=1e-6) and gate_notice(fifo, u) is None


@pytest.mark.parametrize("overrides", [
    [],                                                     # 3 users on 4 containers: 64 % busy
    ["workload.users=1"],                                   # one user never waits at the gate
    ["workload.users=2", "workload.think_time=100"],        # 9 % busy, but that is all 2 users ask
])
def test_the_gate_says_nothing_where_it_does_not_limit(overrides):
    desc = load_description("models/mapreduce.yaml", overrides)
    r, u = exact(desc)
    assert gate_notice(desc, u) is None


def test_the_papers_example_at_scale():
    # 200 users, 500 containers: R 823 s at 0.96 % utilisation under gate (fifo: 10.4 s)
    desc = load_description("models/mapreduce.yaml", ["workload.users=200", "cluster.containers=500"])
    assert "500 containers (0.96 % busy)" in gate_notice(desc, 0.0096)
    assert gate_notice(desc, 0.39) is None              # what 200 users ask when no job waits


def test_several_containers_busy_are_not_the_gates_doing():
    # 4 containers: 25 % busy under gate, below what 6 users ask (all of them): still the gate
    desc = parse_description(GATED, ["cluster.containers=4"])
    assert gate_notice(desc, exact(desc)[1]) is not None
    assert gate_notice(desc, 0.6) is None                # more than half busy: the containers may be the limit
