"""``spn simulate`` and ``spn compare``: exit status, JSON keys, bad input, seeds."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spn.cli import main

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = str(REPO / "models" / "mapreduce.yaml")
QUICK = ["--rel-precision", "0.05"]

SIMULATE_KEYS = {
    "mean_execution_time", "ci_low", "ci_high", "replications", "throughput", "throughput_ci_low",
    "throughput_ci_high", "utilization", "utilization_ci_low", "utilization_ci_high", "engine", "seconds",
    "events", "confidence", "rel_precision", "precision_met", "seed", "model", "users", "think_time",
    "containers", "jobs_per_replication", "warmup_jobs", "estimator",
}


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def deterministic(tmp_path):
    path = tmp_path / "det.yaml"
    path.write_text(
        "name: det\n"
        "workload: {users: 1, think_time: 3.0}\n"
        "cluster: {containers: 6}\n"
        "phases:\n"
        "  - {name: map, tasks: 6, task_time: 2.5, distribution: deterministic}\n"
    )
    return str(path)


@pytest.mark.parametrize("engine", ["net", "cluster"])
def test_simulate_json_has_the_documented_keys(capsys, engine):
    code, out, err = run(capsys, "simulate", EXAMPLE, "--seed", "1", "--engine", engine, "--json", *QUICK)
    assert code == 0 and err == ""          # no progress under --json
    result = json.loads(out)
    assert SIMULATE_KEYS <= set(result)
    assert result["engine"] == engine and result["replications"] >= 10
    assert result["ci_low"] <= result["mean_execution_time"] <= result["ci_high"]
    assert result["throughput_ci_low"] <= result["throughput"] <= result["throughput_ci_high"]
    assert 0 < result["utilization"] < 1 and result["events"] > 0 and result["seed"] == 1


def test_simulate_prints_a_table(capsys):
    code, out, err = run(capsys, "simulate", EXAMPLE, "--seed", "1", *QUICK)
    assert code == 0
    assert "mean execution time" in out and "95% CI" in out and "replications" in out


def test_a_deterministic_model_runs_through_spn_simulate(capsys, deterministic):
    code, out, err = run(capsys, "simulate", deterministic, "--json", "--seed", "4")
    assert code == 0
    result = json.loads(out)
    assert result["mean_execution_time"] == pytest.approx(2.5, rel=1e-9)
    assert result["ci_low"] == pytest.approx(2.5, rel=1e-9) and result["ci_high"] == pytest.approx(2.5, rel=1e-9)
    # spn solve has no exact chain for it, so another method answers (here the decomposition, whose one
    # user's X(1) is simulated), and says why
    code, out, err = run(capsys, "solve", deterministic, "--json", "--seed", "4")
    assert code == 0, err
    result = json.loads(out)
    assert result["method"] in ("decomposition", "simulation") and "no exact CTMC" in result["reason"]
    assert result["mean_execution_time"] == pytest.approx(2.5, rel=1e-9)
    # naming the exact method is strict: one line, pointing to the simulation
    code, out, err = run(capsys, "solve", deterministic, "--method", "exact")
    assert code == 2 and "no exact CTMC" in err


def test_the_same_seed_gives_the_same_json(capsys):
    outputs = []
    for _ in range(2):
        code, out, _ = run(capsys, "simulate", EXAMPLE, "--seed", "9", "--json", "--replications", "3",
                           "--rel-precision", "0", "--jobs", "40")
        result = json.loads(out)
        for key in ("seconds", "events_per_second"):
            result.pop(key)
        outputs.append(result)
    assert outputs[0] == outputs[1] and outputs[0]["replications"] == 3


@pytest.mark.parametrize("args, expected", [
    (["simulate", "nosuch.yaml"], "nosuch.yaml: no such file"),
    (["simulate", EXAMPLE, "--replications", "1"], "argument --replications: expected an integer >= 2"),
    (["simulate", EXAMPLE, "--confidence", "1.5"], "argument --confidence: expected a number in (0, 1)"),
    (["simulate", EXAMPLE, "--rel-precision", "-0.1"], "argument --rel-precision: expected a number >= 0"),
    (["simulate", EXAMPLE, "--seed", "-1"], "argument --seed: expected an integer >= 0"),
    (["simulate", EXAMPLE, "--seed", "abc"], "argument --seed: expected an integer >= 0"),
    (["simulate", EXAMPLE, "--engine", "petri"], "argument --engine: invalid choice: 'petri'"),
    (["simulate", EXAMPLE, "--jobs", "0"], "argument --jobs: expected an integer >= 1"),
    (["simulate", EXAMPLE, "--set", "phases.map.tasks=0"], "phases[0] (map).tasks: expected an integer >= 1"),
    (["simulate", EXAMPLE, "--set", "phases.map.distribution=weibull"], "distribution"),
    (["compare", EXAMPLE, "--set", "cluster.containers=-2"], "cluster.containers"),
    (["compare", EXAMPLE, "--max-states", "0"], "argument --max-states: expected an integer >= 1"),
    (["compare"], "the following arguments are required: MODEL"),
])
def test_bad_input_exits_2_with_one_line_on_stderr(capsys, args, expected):
    code, out, err = run(capsys, *args)
    assert code == 2 and out == ""
    assert err.startswith("spn: error: ") and err.count("\n") == 1 and "Traceback" not in err
    assert expected in err


def test_the_cluster_engine_can_take_the_nets_task_pooling(capsys):
    code, out, err = run(capsys, "simulate", EXAMPLE, "--engine", "cluster", "--pool-finished-tasks", "--json",
                         "--seed", "2", *QUICK)
    assert code == 0 and json.loads(out)["pool_finished_tasks"] is True
    code, out, err = run(capsys, "simulate", EXAMPLE, "--pool-finished-tasks")
    assert code == 2 and "job-level engines" in err


def test_precision_not_reached_is_a_loud_warning_not_an_error(capsys):
    code, out, err = run(capsys, "simulate", EXAMPLE, "--json", "--rel-precision", "0.0001",
                         "--replications", "2", "--max-replications", "3", "--jobs", "20")
    assert code == 0 and json.loads(out)["precision_met"] is False
    assert err.startswith("spn: warning: ") and "--rel-precision" in err


def test_compare_json_puts_analytic_and_both_simulators_side_by_side(capsys):
    code, out, err = run(capsys, "compare", EXAMPLE, "--seed", "3", "--json", *QUICK)
    assert code == 0
    result = json.loads(out)
    assert set(result["measures"]) == {"mean_execution_time", "throughput", "utilization"}
    row = result["measures"]["mean_execution_time"]
    assert row["analytic"] == pytest.approx(13.336159, rel=1e-6)
    assert set(row) == {"analytic", "net", "cluster"}
    assert {"value", "ci_low", "ci_high", "contains_analytic"} <= set(row["net"])
    assert set(result["simulations"]) == {"net", "cluster"} and isinstance(result["flags"], list)


def test_compare_table_and_a_model_without_a_ctmc(capsys, deterministic):
    code, out, err = run(capsys, "compare", EXAMPLE, "--seed", "3", *QUICK)
    assert code == 0 and "analytic" in out and "net simulation" in out and "cluster simulation" in out
    code, out, err = run(capsys, "compare", deterministic, "--seed", "3")
    assert code == 0 and "n/a" in out and "no exact CTMC" in out


def test_simulate_runs_as_a_process():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "spn.cli", "simulate", EXAMPLE, "--json", "--seed", "1", *QUICK],
                          capture_output=True, text=True, env=env, cwd=REPO / "tests", timeout=120)
    assert done.returncode == 0 and done.stderr == ""
    assert json.loads(done.stdout)["engine"] == "net"
