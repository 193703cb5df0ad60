"""``spn predict LOG --vary KEY=A..B [--what-if K=V]``: one predicted execution time per configuration.

On synthetic pilots (tests/whatif_logs.py: 2 executors x 2 cores on 2 hosts):
the table and the --json rows say the key, the value, the predicted mean
inside its 95 % interval, the method and the what-if rules; adding executors
to a compute-bound application shortens it. Bad --vary input is refused in one
line naming --vary. On the real lundstrom Q26/Q52 logs (3 executors; read from
``<repo>/../shared/data`` or ``SPN_DATA``, never copied here) the prediction
runs, and Q26's 200-task shuffle stage slows down per task at 6 executors, as
the measured runs at 6 executors did (~38 s a task against ~16 s at 3).
"""

import json
import math
import os
import subprocess
from pathlib import Path

import pytest

from spn.studies.predict import MAX_VALUES, parse_vary
from spn.cli import main
from spn.exceptions import ModelError
from spn.fit import fit_logs
from tests.hostile import assert_refused
from tests.whatif_logs import pilot_log

DATA = Path(os.environ.get("SPN_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
LUNDSTROM = DATA / "lundstrom"
Q26 = sorted(LUNDSTROM.glob("q26_e3_*.json.gz")) if LUNDSTROM.is_dir() else []
Q52 = sorted(LUNDSTROM.glob("q52_e3_*.json.gz")) if LUNDSTROM.is_dir() else []
needs_lundstrom = pytest.mark.skipif(not (Q26 and Q52), reason=f"no lundstrom q26_e3/q52_e3 logs at {LUNDSTROM}")

ROW_KEYS = {"key", "value", "target", "mean_execution_time", "ci_low", "ci_high", "method_interval",
            "prediction_interval", "method", "rules"}


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    """The pilots: ``compute`` (16 input tasks of 2 s, no shuffle: 4 waves on 4 slots) and ``shuffle``
    (4 input tasks, then a 4-task shuffle stage: see tests/whatif_logs.py)."""
    folder = tmp_path_factory.mktemp("pilots")
    return {"compute": pilot_log(folder / "compute.json", input_tasks=16, shuffle_compute_ms=()),
            "shuffle": pilot_log(folder / "shuffle.json")}


def spn(capsys, monkeypatch, *args) -> subprocess.CompletedProcess:
    """``spn ARGS`` in this process, as a CompletedProcess (stdout and stderr as text)."""
    monkeypatch.delenv("SPN_DEBUG", raising=False)
    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out, err)


def predict_json(capsys, monkeypatch, *args) -> list[dict]:
    result = spn(capsys, monkeypatch, "predict", *args, "--json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["rows"]


# --------------------------------------------------------------------------
# --vary
# --------------------------------------------------------------------------


def test_vary_is_a_range_or_a_list():
    assert parse_vary("spark.executor.instances=3..6") == ("spark.executor.instances", [3, 4, 5, 6])
    assert parse_vary("spark.executor.instances=24,6,6,12") == ("spark.executor.instances", [24, 6, 12])
    assert parse_vary("input-size=1GB,2GB") == ("input-size", [1_000_000_000, 2_000_000_000])
    assert parse_vary(f"hosts=1..{MAX_VALUES}")[1] == list(range(1, MAX_VALUES + 1))  # 64 values: allowed


# --------------------------------------------------------------------------
# The table and the JSON rows
# --------------------------------------------------------------------------


def test_the_table_has_a_row_per_value_the_method_and_the_rules(logs, capsys, monkeypatch):
    result = spn(capsys, monkeypatch, "predict", logs["shuffle"], "--vary", "spark.executor.instances=2,4")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].split()[:3] == ["spark.executor.instances", "predicted", "(s)"]
    assert lines[1].split()[0] == "2" and lines[1].endswith("2 executor(s) x 2 core(s) on 2 host(s), input 1 GB")
    assert lines[2].split()[0] == "4" and lines[2].endswith("4 executor(s) x 2 core(s) on 4 host(s), input 1 GB")
    # one user, past what the exact chain holds (Erlang shapes up to 1000): the job-alone method, as spn solve
    assert lines[3] == "method: job alone: order statistics, with rigorous bounds"
    # the two intervals, each said for what it is
    assert lines[4].startswith("run interval: 90 % prediction interval: the model's own spread of one run")
    assert lines[5] == "method's interval: the numerical error of the method (not the spread of real runs)"
    # the rules of the last configuration (4 executors): the shuffle rule, with d computed in test_whatif
    assert lines[6] == "rules (last configuration):"
    assert lines[7] == ("  - stage 1: cross-host shuffle served at 57.1 MB/s per host in the pilot (0.4 GB across 2 "
                        "host(s) in 3.5 s); bandwidth-bound run time x 0.75 (bytes across hosts x tasks per host); "
                        "remote fraction 0.5 -> 0.75")
    assert len(lines) == 8 and result.stderr == ""


def test_json_rows_have_key_value_mean_within_its_interval_method_and_rules(logs, capsys, monkeypatch):
    rows = predict_json(capsys, monkeypatch, logs["shuffle"], "--vary", "spark.executor.instances=2..4")
    assert [row["value"] for row in rows] == [2, 3, 4]
    for row in rows:
        assert set(row) == ROW_KEYS
        assert row["key"] == "spark.executor.instances"
        assert 0 < row["ci_low"] <= row["mean_execution_time"] <= row["ci_high"] < math.inf
        assert row["method"] == "job alone: order statistics, with rigorous bounds"
    assert rows[0]["rules"] == ["the target is the pilot's own configuration: task times as measured"]
    assert rows[1]["target"] == "3 executor(s) x 2 core(s) on 3 host(s), input 1 GB"
    assert rows[1]["rules"][0].endswith("remote fraction 0.5 -> 0.667")
    assert rows[2]["rules"][0].endswith("remote fraction 0.5 -> 0.75")


@pytest.mark.skipif(not (DATA / "spark-events" / "local-1430917381534.json").exists(), reason="needs ../shared/data")
def test_max_states_bounds_the_exact_chain_and_the_estimate_says_how_it_was_made(capsys, monkeypatch):
    log = DATA / "spark-events" / "local-1430917381534.json"
    exact, = predict_json(capsys, monkeypatch, log, "--vary", "spark.executor.cores=2")
    small, = predict_json(capsys, monkeypatch, log, "--vary", "spark.executor.cores=2", "--max-states", "5")
    assert exact["method"] == "exact (CTMC)" and small["method"] != exact["method"]
    # a 95 % interval misses one seed in twenty: three half-widths miss about one in three hundred
    half = (small["ci_high"] - small["ci_low"]) / 2
    assert abs(small["mean_execution_time"] - exact["mean_execution_time"]) <= 3 * half


def test_what_if_holds_the_other_settings_fixed(logs, capsys, monkeypatch):
    rows = predict_json(capsys, monkeypatch, logs["compute"], "--vary", "spark.executor.instances=2,4",
                        "--what-if", "spark.executor.cores=1")
    assert [row["target"] for row in rows] == ["2 executor(s) x 1 core(s) on 2 host(s), input 4 GB",
                                               "4 executor(s) x 1 core(s) on 4 host(s), input 4 GB"]


def test_adding_executors_to_a_compute_bound_application_shortens_it(logs, capsys, monkeypatch):
    rows = predict_json(capsys, monkeypatch, logs["compute"], "--vary", "spark.executor.instances=2,4,8")
    means = [row["mean_execution_time"] for row in rows]
    # 16 tasks of 2 s on 4, 8, 16 slots: 4, 2, 1 waves (+ the same driver delays)
    assert means[0] > means[1] > means[2]
    assert rows[1]["ci_high"] < rows[0]["ci_low"] and rows[2]["ci_high"] < rows[1]["ci_low"]
    # the pilot's own configuration gives back about its measured 9.5 s (app start 0 to end 9500 ms):
    # 1.0 s start-up + 4 waves x 2 s + 0.5 s to the end
    assert means[0] == pytest.approx(9.5, rel=0.1)
    # two waves fewer save about 2 x 2 s: Erlang task times (shape 10) make a wave's end a little later than 2 s
    assert means[0] - means[1] == pytest.approx(4.0, rel=0.15)


# --------------------------------------------------------------------------
# Bad --vary: exit 2, one line naming --vary, no traceback, nothing printed
# --------------------------------------------------------------------------

BAD_VARY = {
    "reversed-range": (["--vary", "spark.executor.instances=5..3"], "ends before it starts"),
    "65-range": (["--vary", "spark.executor.instances=1..65"], "more than 64"),
    "65-list": (["--vary", "spark.executor.instances=" + ",".join(map(str, range(1, 66)))], "more than 64"),
    "huge-range": (["--vary", "spark.sql.shuffle.partitions=1..10000000"], "more than 64"),
    "no-equals": (["--vary", "spark.executor.instances"], "is not KEY=A..B"),
    "no-values": (["--vary", "spark.executor.instances="], "is not KEY=A..B"),
    "varied-and-fixed": (["--vary", "spark.executor.instances=2,4", "--what-if", "spark.executor.instances=3"],
                         "both varied and fixed"),
}
#: a bad value or key inside --vary: refused, but the line names --what-if
BAD_VARY_VALUE = {
    "zero": (["--vary", "spark.executor.instances=0,4"], "must be between 1 and"),
    "unknown-key": (["--vary", "spark.executor.flavour=1..3"], "is not known"),
    "not-integer": (["--vary", "spark.executor.instances=2..x"], "not a whole number"),
}


def refused(result, *words):
    assert_refused(subprocess.CompletedProcess(result.args, result.returncode, result.stdout, result.stderr), *words)
    assert result.stdout == ""


@pytest.mark.parametrize("case", list(BAD_VARY))
def test_a_bad_vary_is_one_line_naming_the_flag(logs, capsys, monkeypatch, case):
    args, words = BAD_VARY[case]
    refused(spn(capsys, monkeypatch, "predict", logs["shuffle"], *args), words, "(--vary)")


@pytest.mark.parametrize("case", list(BAD_VARY_VALUE))
def test_a_bad_value_in_vary_names_vary(logs, capsys, monkeypatch, case):
    args, words = BAD_VARY_VALUE[case]
    refused(spn(capsys, monkeypatch, "predict", logs["shuffle"], *args), words, "(--vary)")


@pytest.mark.parametrize("case", list(BAD_VARY_VALUE))
def test_a_bad_value_in_vary_is_refused_in_one_line(logs, capsys, monkeypatch, case):
    args, words = BAD_VARY_VALUE[case]
    refused(spn(capsys, monkeypatch, "predict", logs["shuffle"], *args), words)


def test_several_users_need_a_think_time(logs, capsys, monkeypatch):
    refused(spn(capsys, monkeypatch, "predict", logs["shuffle"], "--vary", "spark.executor.instances=2,4",
                "--users", "3"), "think time", "(--think-time)")


def test_the_library_refuses_a_key_both_varied_and_fixed(logs):
    from spn.studies.predict import predict

    with pytest.raises(ModelError, match="both varied and fixed") as error:
        predict([logs["shuffle"]], ("hosts", [1, 2]), ["hosts=1"])
    assert error.value.option == "vary"


# --------------------------------------------------------------------------
# The lundstrom TPC-DS runs (Spark 1.6, 3 executors x 2 cores on 2 hosts)
# --------------------------------------------------------------------------


@needs_lundstrom
@pytest.mark.parametrize("query", ["q26", "q52"])
def test_predict_runs_on_the_real_logs(capsys, monkeypatch, query):
    paths = Q26 if query == "q26" else Q52
    rows = predict_json(capsys, monkeypatch, *paths, "--vary", "spark.executor.instances=6,12,24")
    assert [row["value"] for row in rows] == [6, 12, 24]
    # the pilots had at most 2 executors per host: hosts = ceil(E'/2)
    assert [row["target"].split(" input")[0] for row in rows] == [
        "6 executor(s) x 2 core(s) on 3 host(s),", "12 executor(s) x 2 core(s) on 6 host(s),",
        "24 executor(s) x 2 core(s) on 12 host(s),"]
    for row in rows:
        assert 0 < row["ci_low"] <= row["mean_execution_time"] <= row["ci_high"] < math.inf
        if query == "q26":
            assert any("remote fraction 0.667 -> " in rule for rule in row["rules"])
        else:  # Q52's one shuffle moves 0.08 MB/s per host: not network-bound, its tasks kept (tests/test_rule_sanity.py)
            assert any(rule.startswith("stage 3: shuffle rule not applied") for rule in row["rules"])


@needs_lundstrom
def test_q26_shuffle_stage_tasks_slow_down_at_6_executors():
    # stage 5: 200 tasks (spark.sql.shuffle.partitions), ~16 s a task pooled over the two 3-executor pilots;
    # measured at 6 executors: ~38 s a task (more of the shuffle crosses hosts, as many hosts serve it)
    def stage5(model):
        (phase,) = [p for p in model.description["phases"] if p["name"] == "stage-5"]
        assert phase["tasks"] == 200
        return phase["task_time"]

    pilot = stage5(fit_logs(Q26))
    six = stage5(fit_logs(Q26, what_if={"spark.executor.instances": 6}))
    assert pilot == pytest.approx(16, rel=0.1)
    assert six >= 1.5 * pilot
