"""What-if rules (spn.fit.whatif): the pilot's task times carried to a configuration it did not run.

Each rule is checked against a case computed by hand, on a small synthetic
Spark 2.4 log (tests/whatif_logs.py) whose task parts are known exactly:

- pilot: 2 executors (host-a, host-b: at most 1 executor per host), 2 cores
  each = 4 slots, spark.sql.shuffle.partitions=4, input D = 4 x 250 MB = 1 GB;
- stage 0 (input, 4 tasks): wall 2.0 s = other 0.1 (deserialize) + compute 1.8
  + shuffle write 0.1;
- stage 1 (shuffle, 4 tasks, launched together at 3.0 s): wall = other 0.1 +
  fetch wait W 0.5 + shuffle write 0.2 + compute c, c = 0.3, 0.3, 0.3, 2.7
  -> walls 1.1, 1.1, 1.1, 3.5 s; each task reads 100 MB remote + 100 MB
  local (b = 200 MB).

Then the model that ``spn fit --what-if`` writes carries its provenance, and
``spn solve``/``spn simulate`` take it; bad --what-if values are refused in
one line naming the flag, for ``spn fit`` and ``spn predict`` alike.
"""

import json
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest
import yaml

from spn.cli import main
from spn.exceptions import LogFormatError, ModelError
from spn.fit import fit_logs
from spn.fit.whatif import (
    Setting,
    parse_changes,
    pilot_setting,
    quantiles,
    target_setting,
    what_if_run,
)
from spn.logs.spark import read_spark_log
from spn.logs.spark_runs import spark_run, timed_jobs
from tests.hostile import assert_refused, run_spn
from tests.whatif_logs import pilot_log

DATA = Path(os.environ.get("SPN_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
JHISTS = sorted((DATA / "mapreduce-history").glob("*.jhist")) if (DATA / "mapreduce-history").is_dir() else []

#: the pilot's task times, by stage, in launch order (s)
PILOT = {0: [2.0, 2.0, 2.0, 2.0], 1: [1.1, 1.1, 1.1, 3.5]}


@pytest.fixture(scope="module")
def pilot(tmp_path_factory):
    """(log path, app, run) of the pilot."""
    path = pilot_log(tmp_path_factory.mktemp("pilot") / "pilot.json")
    app = read_spark_log(path)
    return path, app, spark_run(app, timed_jobs(app))


def carried(pilot, **changes):
    """The what-if of ``changes`` (short names: executors, cores, partitions, input_size, executor_cpus, hosts)
    and the carried stages by stage id."""
    names = {"executors": "spark.executor.instances", "cores": "spark.executor.cores",
             "partitions": "spark.sql.shuffle.partitions", "input_size": "input-size", "executor_cpus": "executor-cpus"}
    _, app, run = pilot
    what = what_if_run(app, run, parse_changes({names.get(k, k): v for k, v in changes.items()}))
    stages = {s.stage_ids[0]: s for job in what.run.jobs for s in job.stages}
    return what, stages


# --------------------------------------------------------------------------
# The pilot as read
# --------------------------------------------------------------------------


def test_the_pilot_is_read_as_built(pilot):
    _, app, run = pilot
    setting = pilot_setting(app, run)
    assert (setting.executors, setting.cores, setting.hosts, setting.executors_per_host) == (2, 2, 2, 1)
    assert setting.input_bytes == 1_000_000_000 and setting.slots == 4
    assert setting.partitions["spark.sql.shuffle.partitions"] == 4
    stages = {s.stage_ids[0]: s for job in run.jobs for s in job.stages}
    assert {k: list(s.durations) for k, s in stages.items()} == {k: pytest.approx(v) for k, v in PILOT.items()}


# --------------------------------------------------------------------------
# Identity
# --------------------------------------------------------------------------


@pytest.mark.parametrize("changes", [
    {"spark.executor.instances": 2},
    {"spark.executor.instances": 2, "spark.executor.cores": 2, "hosts": 2, "spark.sql.shuffle.partitions": 4,
     "input-size": "1GB"},
    {"executor-cpus": 2},  # the machines: it holds for the pilot as well, so nothing changes
], ids=["executors", "all-keys", "executor-cpus"])
def test_a_target_equal_to_the_pilot_keeps_every_task_time_exactly(pilot, changes):
    _, app, run = pilot
    what = what_if_run(app, run, parse_changes(changes))
    assert what.run.jobs == run.jobs  # every stage, task count and duration, to the bit
    assert what.rules == ("the target is the pilot's own configuration: task times as measured",)


def test_a_target_equal_to_the_pilot_fits_the_pilots_own_model(pilot):
    path = pilot[0]
    plain = fit_logs([path])
    same = fit_logs([path], what_if=["spark.executor.instances=2"])
    assert same.description["phases"] == plain.description["phases"]
    assert same.description["cluster"] == plain.description["cluster"] == {"containers": 4}


# --------------------------------------------------------------------------
# Task counts and data per task
# --------------------------------------------------------------------------


def test_input_size_x2_doubles_the_input_stages_tasks_and_keeps_their_times(pilot):
    what, stages = carried(pilot, input_size="2GB")
    # stage 0 reads input: split size kept, n' = round(4 x 2 GB / 1 GB) = 8 tasks of 2.0 s each
    assert stages[0].tasks == 8 and list(stages[0].durations) == pytest.approx([2.0] * 8)
    assert stages[0].input_bytes == 2_000_000_000 and what.run.input_bytes == 2_000_000_000
    assert "stage 0: reads input: split size kept, 4 -> 8 tasks" in what.rules
    # stage 1 has 4 = spark.sql.shuffle.partitions tasks, unchanged: g = (D'/D)(n/n') = 2 x 4/4 = 2;
    # compute, shuffle write (and, executors unchanged, the fetch wait) x 2, the other 0.1 s kept:
    # short: 0.1 + 2 x (0.2 + 0.3 + 0.5) = 2.1 s; straggler: 0.1 + 2 x (0.2 + 2.7 + 0.5) = 6.9 s
    assert stages[1].tasks == 4
    assert list(stages[1].durations) == pytest.approx([2.1, 2.1, 2.1, 6.9])
    assert ("stage 1: data per task x 2: compute and shuffle write per byte (proportional: no fixed + per-byte "
            "cost: 4 task(s) with a measured run time and a size, fewer than 10)") in what.rules


def test_a_shuffle_stage_of_spark_sql_shuffle_partitions_tasks_gets_the_new_count(pilot):
    what, stages = carried(pilot, partitions=8)
    assert stages[0].tasks == 4 and list(stages[0].durations) == pytest.approx(PILOT[0])  # no shuffle read: kept
    # n = 4 -> n' = 8, g = (D'/D)(n/n') = 1 x 4/8 = 0.5:
    # short: 0.1 + 0.5 x (0.2 + 0.3 + 0.5) = 0.6 s; straggler: 0.1 + 0.5 x (0.2 + 2.7 + 0.5) = 1.8 s;
    # 8 tasks drawn as the quantiles of [0.6, 0.6, 0.6, 1.8] at levels (i + 0.5)/8, i.e. at positions
    # 3 (i + 0.5)/8 = 0.1875, 0.5625, ..., 2.8125 of the sorted sample: below 2 -> 0.6 (5 of them);
    # 2.0625 -> 0.6 + 0.0625 x 1.2 = 0.675; 2.4375 -> 0.6 + 0.4375 x 1.2 = 1.125; 2.8125 -> 1.575
    assert stages[1].tasks == 8
    assert list(stages[1].durations) == pytest.approx([0.6] * 5 + [0.675, 1.125, 1.575])
    assert "stage 1: 4 -> 8 tasks (spark.sql.shuffle.partitions)" in what.rules
    assert ("stage 1: data per task x 0.5: compute and shuffle write per byte (proportional: no fixed + per-byte "
            "cost: 4 task(s) with a measured run time and a size, fewer than 10)") in what.rules


def test_a_shuffle_stage_not_of_the_partitions_setting_keeps_its_count(tmp_path):
    # the pilot's shuffle stage has 4 tasks but spark.sql.shuffle.partitions is 200: it is not that setting's stage
    path = pilot_log(tmp_path / "p200.json", partitions=200)
    app = read_spark_log(path)
    what = what_if_run(app, spark_run(app, timed_jobs(app)), {"spark.sql.shuffle.partitions": 400})
    stages = {s.stage_ids[0]: s for job in what.run.jobs for s in job.stages}
    assert stages[1].tasks == 4 and list(stages[1].durations) == pytest.approx(PILOT[1])


# --------------------------------------------------------------------------
# Processor sharing
# --------------------------------------------------------------------------


def read_pilot(path):
    """(log path, app, run) of the pilot log at ``path``, as the ``pilot`` fixture gives them."""
    app = read_spark_log(path)
    return path, app, spark_run(app, timed_jobs(app))


def test_more_busy_slots_than_cpus_stretch_compute(tmp_path):
    # 16 input tasks on 2 executors: 8 per executor, so every slot is busy in the pilot (2) and the target (4)
    what, stages = carried(read_pilot(pilot_log(tmp_path / "big.json", input_tasks=16)), cores=4, executor_cpus=2)
    # pilot: min(2, 16/2) = 2 busy slots on 2 CPUs -> x1; target: min(4, 8) = 4 on 2 CPUs -> x2
    # input stage: 0.1 (deserialize) + 0.1 (write) + 2 x 1.8 = 3.8 s
    # (measured: the tasks ran on 0.9 of a CPU, the rest of the JVM took 2 - 2 x 0.9 = 0.2, which leaves
    # the target's 4 slots 1.8 CPUs: 0.45 each, x 0.9/0.45 = 2 as well)
    assert list(stages[0].durations) == pytest.approx([3.8] * 16)
    assert ("stage 0: compute x 2: up to 4 busy slot(s) share 2 CPU(s) per executor (pilot: 2 on 2); measured: the "
            "pilot's tasks ran on 0.90 of a CPU (CPU time over run time), the rest of the JVM took 0.20 CPU(s), the "
            "target's tasks get 0.45" in what.rules)
    assert what.target.cpus == what.pilot.cpus == 2


def test_fewer_busy_slots_than_cpus_give_tasks_the_cpu_share_they_lacked(tmp_path):
    # the pilot's 2 busy slots on 2 CPUs ran on 0.9 of a CPU each (CPU time 0.9 x run time): the rest of the JVM
    # took 0.2 CPU. One slot gets a whole CPU: compute x 0.9/1, 1.8 -> 1.62 s; a task 0.1 + 0.1 + 1.62 s
    path = pilot_log(tmp_path / "big.json", input_tasks=16)
    what, stages = carried(read_pilot(path), cores=1, executor_cpus=2)
    assert list(stages[0].durations) == pytest.approx([1.82] * 16)
    assert any(rule.startswith("stage 0: compute x 0.9: up to 1 busy slot(s) share 2 CPU(s)") for rule in what.rules)
    # without the tasks' CPU time (Spark before 2.1) the ratio of slots to CPUs says nothing changes
    events = [json.loads(line) for line in path.read_text().splitlines()]
    for event in events:
        if event["Event"] == "SparkListenerTaskEnd":
            del event["Task Metrics"]["Executor CPU Time"]
    old = tmp_path / "no-cpu.json"
    old.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    _, stages = carried(read_pilot(old), cores=1, executor_cpus=2)
    assert list(stages[0].durations) == pytest.approx([2.0] * 16)


def test_a_stage_of_few_tasks_does_not_fill_the_slots_so_shares_nothing(pilot):
    what, stages = carried(pilot, cores=4, executor_cpus=2)
    # 4 tasks on 2 executors: 2 busy slots per executor whether it has 2 or 4: min(4, 4/2) / 2 = 1 -> x1
    assert list(stages[0].durations) == pytest.approx(PILOT[0])
    # the shuffle stage: slots 4 -> 8, so its fetch is carried too (executors and hosts kept): X' = X,
    # k = 4/ceil(4/4) = 4 -> k' = 4/ceil(4/8) = 4 (still one wave), H' = H: F'/F = 1; latency' = 0.5 x 1 = 0.5 s
    # every task keeps its time: 0.1 + 0.2 + max(c + 0.5, c + 0.5)
    assert list(stages[1].durations) == pytest.approx(PILOT[1])
    assert not any("compute x" in rule for rule in what.rules)


def test_as_many_cpus_as_slots_leave_compute_alone(pilot):
    what, stages = carried(pilot, cores=4, executor_cpus=4)
    # pilot 2 slots on 4 CPUs: x max(1, 0.5) = 1; target 4 on 4: x1
    assert list(stages[0].durations) == pytest.approx(PILOT[0])
    assert not any("compute x" in rule for rule in what.rules)


# --------------------------------------------------------------------------
# Shuffle fetch
# --------------------------------------------------------------------------


def test_hosts_follow_the_executors():
    # H' = ceil(E' / m), m = the most executors the pilot had on one host
    pilot = Setting(3, 2, 2, 2, 10**9, {"spark.sql.shuffle.partitions": 200, "spark.default.parallelism": None})
    assert target_setting(pilot, {"spark.executor.instances": 6}).hosts == 3       # ceil(6/2)
    assert target_setting(pilot, {"spark.executor.instances": 7}).hosts == 4       # ceil(7/2)
    assert target_setting(pilot, {"spark.executor.instances": 3}).hosts == 2       # the pilot's own
    assert target_setting(pilot, {"spark.executor.instances": 6, "hosts": 6}).hosts == 6   # hosts= overrides
    with pytest.raises(ModelError, match="hosts=4 is more than the 3 executor"):
        target_setting(pilot, {"hosts": 4})


def test_executors_2_to_4_carry_the_shuffle_fetch_by_hand(pilot):
    what, stages = carried(pilot, executors=4)
    assert (what.target.executors, what.target.hosts, what.target.slots) == (4, 4, 8)  # hosts = ceil(4/1)
    assert list(stages[0].durations) == pytest.approx(PILOT[0])  # no shuffle read: kept
    # pilot: every task's 200 MB, less its own host's share (1 of 2 executors), crossed hosts: X = 100 MB a task,
    # 400 MB in the stage's span 3.5 s (all launched at 3.0 s, the straggler ends at 6.5 s) over 2 hosts:
    #   d = 400 MB / (2 x 3.5 s) = 57.1 MB/s per host (reported; it cancels in the rule)
    # target: remote fraction 1 - 1/2 = 0.5 -> 1 - 1/4 = 0.75; 1 executor per host, so X' = 200 MB x 3/4 = 150 MB;
    #   tasks per wave k = 4/ceil(4/4) = 4 -> k' = 4/ceil(4/8) = 4; hosts 2 -> 4
    #   F'/F = (X'/X)(k'/k)(H/H') = (150/100)(4/4)(2/4) = 0.75; latency' = W (r'/r) g = 0.5 x (0.75/0.5) = 0.75 s
    # short task: 0.1 + 0.2 + max(0.3 + 0.75, (0.3 + 0.5) x 0.75) = 1.35 s (compute and latency)
    # straggler: 0.1 + 0.2 + max(2.7 + 0.75, (2.7 + 0.5) x 0.75) = 3.75 s
    assert stages[1].tasks == 4
    assert list(stages[1].durations) == pytest.approx([1.35, 1.35, 1.35, 3.75])
    (rule,) = what.rules
    assert rule == ("stage 1: cross-host shuffle served at 57.1 MB/s per host in the pilot (0.4 GB across 2 host(s) "
                    "in 3.5 s); bandwidth-bound run time x 0.75 (bytes across hosts x tasks per host); remote "
                    "fraction 0.5 -> 0.75")


def test_one_executor_fetches_nothing_remotely(pilot):
    what, stages = carried(pilot, executors=1)
    # remote fraction 1 - 1/1 = 0: cross' = 0 (F' = 0) and latency' = 0.5 x 0/0.5 = 0; one host
    # short: 0.1 + 0.2 + max(0.3 + 0, 0) = 0.6 s; straggler: 0.1 + 0.2 + 2.7 = 3.0 s
    assert (what.target.hosts, what.target.slots) == (1, 2)
    assert list(stages[1].durations) == pytest.approx([0.6, 0.6, 0.6, 3.0])


def test_a_stage_with_little_fetch_wait_says_its_rate_is_a_lower_bound(tmp_path):
    # the straggler computes 20 s: the fetch wait is 4 x 0.5 / (3 x 1.1 + 20.8) = 8 % of the task time
    path = pilot_log(tmp_path / "slow.json", shuffle_compute_ms=(300, 300, 300, 20_000))
    app = read_spark_log(path)
    what = what_if_run(app, spark_run(app, timed_jobs(app)), {"spark.executor.instances": 4})
    (rule,) = what.rules
    assert "fetch wait was 8 % of the pilot's task time: the stage was not network-bound" in rule
    assert "upper bound on its bandwidth-bound time" in rule


def test_more_slots_that_do_not_change_the_waves_keep_the_shuffle_task_times(pilot):
    _, stages = carried(pilot, cores=3)
    # 2 executors x 3 cores = 6 slots >= 4 tasks: one wave, as in the pilot; executors and hosts kept, so every
    # task fetches what it fetched, from as many hosts sharing the same bandwidth: its time is kept
    assert list(stages[0].durations) == pytest.approx(PILOT[0])
    assert list(stages[1].durations) == pytest.approx(PILOT[1])


# --------------------------------------------------------------------------
# Provenance: the written model says it is a what-if, and the tools take it
# --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def what_if_model(pilot, tmp_path_factory):
    out = tmp_path_factory.mktemp("model") / "m.yaml"
    assert main(["fit", str(pilot[0]), "--what-if", "spark.executor.instances=4", "--what-if", "input-size=2GB",
                 "-o", str(out)]) == 0
    return out


def test_the_model_records_what_if_changes_target_and_rules(what_if_model):
    text = what_if_model.read_text()
    desc = yaml.safe_load(text)
    what = desc["reference"]["what_if"]
    assert what["changes"] == {"spark.executor.instances": 4, "input-size": 2_000_000_000}
    assert what["target"] == "4 executor(s) x 2 core(s) on 4 host(s), input 2 GB"
    assert what["pilots"] == ["2 executor(s) x 2 core(s) on 2 host(s), input 1 GB"]
    assert "stage 0: reads input: split size kept, 4 -> 8 tasks" in what["rules"]
    assert any(rule.startswith("stage 1: cross-host shuffle served at") for rule in what["rules"])
    header = [line for line in text.splitlines() if line.startswith("#")]
    assert any(line.startswith("# What-if: spark.executor.instances=4, input-size=2000000000: 4 executor(s)")
               for line in header)
    assert desc["cluster"]["containers"] == 8  # the target's slots: 4 x 2
    assert {p["name"]: p["tasks"] for p in desc["phases"]}["stage-0"] == 8


def test_spn_solve_and_simulate_accept_a_what_if_model(what_if_model, capsys):
    assert main(["solve", str(what_if_model), "--max-states", "200000"]) == 0
    assert main(["simulate", str(what_if_model), "--jobs", "20", "--replications", "2", "--max-seconds", "5"]) == 0
    assert "mean execution time" in capsys.readouterr().out.lower()


# --------------------------------------------------------------------------
# Bad --what-if values: exit 2, one line naming --what-if, no traceback, nothing written
# --------------------------------------------------------------------------

BAD = {
    "unknown-key": ("spark.executor.flavour=4", "is not known"),
    "unsupported-key": ("spark.executor.memory=4g", "cannot be predicted from an event log"),
    "no-equals": ("spark.executor.instances", "is not KEY=VALUE"),
    "no-value": ("spark.executor.instances=", "is not KEY=VALUE"),
    "not-integer": ("spark.executor.instances=2.5", "not a whole number"),
    "zero": ("spark.executor.instances=0", "must be between 1 and"),
    "negative": ("spark.executor.cores=-3", "must be between 1 and"),
    "power-text": ("spark.executor.instances=10**20", "not a whole number"),
    "1e20": ("spark.sql.shuffle.partitions=100000000000000000000", "must be between 1 and"),
    "negative-size": ("input-size=-1GB", "input-size"),
    "hosts-over-executors": ("hosts=3", "more than the 2 executor(s)"),
    "slots-over-max": ("spark.executor.instances=10000000", "task slots, more than 10,000,000"),
}
HUGE_INPUT = {
    "input-size-1e20": "input-size=100000000000000000000",
    "input-size-1e30": "input-size=1e30",
}


def spn_in_process(capsys, monkeypatch, *args) -> subprocess.CompletedProcess:
    """``spn ARGS`` run in this process (fast), as a CompletedProcess for :func:`assert_refused`."""
    monkeypatch.delenv("SPN_DEBUG", raising=False)
    capsys.readouterr()
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return subprocess.CompletedProcess(args, code, out.encode(), err.encode())


def what_if_args(command, log, value, out):
    return (["fit", log, "--what-if", value, "-o", out] if command == "fit" else
            ["predict", log, "--vary", "spark.executor.cores=1,2", "--what-if", value, "--max-seconds", "5"])


def refused_what_if(result, out, *words):
    assert_refused(result, *words, "(--what-if)")
    assert not out.exists() and result.stdout == b""


@pytest.mark.parametrize("command", ["fit", "predict"])
@pytest.mark.parametrize("case", list(BAD))
def test_a_bad_what_if_is_one_line_naming_the_flag(pilot, tmp_path, capsys, monkeypatch, command, case):
    value, words = BAD[case]
    out = tmp_path / "m.yaml"
    refused_what_if(spn_in_process(capsys, monkeypatch, *what_if_args(command, pilot[0], value, out)), out, words)


def test_a_bad_what_if_is_refused_by_the_spn_process_too(pilot, tmp_path):
    out = tmp_path / "m.yaml"
    refused_what_if(run_spn(*what_if_args("fit", pilot[0], "spark.executor.instances=0", out), cwd=tmp_path), out,
                    "must be between 1 and")


@pytest.mark.parametrize("case", list(HUGE_INPUT))
def test_an_input_size_too_large_to_run_is_refused_naming_the_flag(pilot, tmp_path, case):
    # in a child process with 1 GB of address space: sizes are bounded (an exbibyte) before anything is built
    out = tmp_path / "m.yaml"
    refused_what_if(run_spn(*what_if_args("fit", pilot[0], HUGE_INPUT[case], out), cwd=tmp_path), out,
                    "input-size")


def test_the_same_what_if_key_twice_is_refused(pilot, tmp_path, capsys, monkeypatch):
    out = tmp_path / "m.yaml"
    result = spn_in_process(capsys, monkeypatch, "fit", pilot[0], "--what-if", "hosts=1", "--what-if", "hosts=2",
                            "-o", out)
    refused_what_if(result, out, "given twice")


def test_what_if_with_per_query_is_refused(pilot, tmp_path, capsys, monkeypatch):
    out = tmp_path / "m.yaml"
    result = spn_in_process(capsys, monkeypatch, "fit", pilot[0], "--per-query", "--what-if",
                            "spark.executor.instances=4", "-o", out)
    refused_what_if(result, out, "per-query")


@pytest.mark.skipif(not JHISTS, reason="no MapReduce .jhist under shared/data/mapreduce-history")
@pytest.mark.parametrize("command", ["fit", "predict"])
def test_a_mapreduce_history_with_what_if_is_refused_naming_the_flag(tmp_path, capsys, monkeypatch, command):
    out = tmp_path / "m.yaml"
    result = spn_in_process(capsys, monkeypatch, *what_if_args(command, JHISTS[0], "spark.executor.instances=4", out))
    refused_what_if(result, out, "MapReduce")


def test_a_mapreduce_history_is_refused_by_the_library_too():
    if not JHISTS:
        pytest.skip("no MapReduce .jhist under shared/data/mapreduce-history")
    with pytest.raises(LogFormatError, match="what-if predictions need a Spark event log"):
        fit_logs([JHISTS[0]], what_if={"spark.executor.instances": 4})


def test_a_log_without_task_metrics_keeps_task_times_fixed_and_says_so(tmp_path, capsys, monkeypatch):
    # the same pilot with every Task Metrics object removed: no parts to carry, so each task's whole wall time
    # is compute; more executors change nothing in a task, and the fit says so in a note (never a crash)
    path = pilot_log(tmp_path / "pilot.json")
    events = [json.loads(line) for line in path.read_text().splitlines()]
    for event in events:
        event.pop("Task Metrics", None)
    bare = tmp_path / "bare.json"
    bare.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    app = read_spark_log(bare)
    what = what_if_run(app, spark_run(app, timed_jobs(app)), {"spark.executor.instances": 4})
    assert [list(s.durations) for s in what.run.jobs[0].stages] == [pytest.approx(PILOT[0]), pytest.approx(PILOT[1])]
    assert any("no Task Metrics" in rule and "fixed-time fallback" in rule for rule in what.rules)
    out = tmp_path / "m.yaml"
    result = spn_in_process(capsys, monkeypatch, "fit", bare, "--what-if", "spark.executor.instances=4", "-o", out)
    assert result.returncode == 0 and out.exists()
    assert "spn: note: stage 0: 4 of 4 tasks have no Task Metrics" in result.stderr.decode()


def test_an_input_size_is_not_scaled_from_a_pilot_whose_input_tasks_lack_metrics(tmp_path):
    # their bytes would count as 0: the pilot's input looks smaller, and every target scales too far
    path = pilot_log(tmp_path / "pilot.json")
    events = [json.loads(line) for line in path.read_text().splitlines()]
    first = next(e for e in events if e["Event"] == "SparkListenerTaskEnd" and e["Stage ID"] == 0)
    first["Task Metrics"] = None
    holed = tmp_path / "holed.json"
    holed.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    app = read_spark_log(holed)
    run = spark_run(app, timed_jobs(app))
    with pytest.raises(ModelError, match="1 task.s. of stage 0, which reads input, have no Task Metrics"):
        what_if_run(app, run, {"input-size": 2 * run.input_bytes})
    assert what_if_run(app, run, {"spark.executor.instances": 4}).rules      # other what-ifs still answer


def test_a_larger_stage_of_tasks_still_warming_up_runs_its_extra_tasks_at_the_pilots_warmest(tmp_path):
    # 16 input tasks on 4 slots; after the first wave each task ran 0.1 s faster than the one before
    # (the JIT compiler still at work): 3.1, 3.0, ..., 2.0 s. Input x2: 32 tasks = the pilot's 16 in
    # launch order + 16 following the later half of the 12 after the first wave (2.5 ... 2.0 s)
    path = pilot_log(tmp_path / "pilot.json", input_tasks=16)
    events = [json.loads(line) for line in path.read_text().splitlines()]
    for event in events:
        if event["Event"] == "SparkListenerTaskEnd" and event["Stage ID"] == 0 and event["Task Info"]["Index"] >= 4:
            excess = 100 * (15 - event["Task Info"]["Index"])
            event["Task Info"]["Finish Time"] += excess
            event["Task Metrics"]["Executor Run Time"] += excess
    warming = tmp_path / "warming.json"
    warming.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    app = read_spark_log(warming)
    what = what_if_run(app, spark_run(app, timed_jobs(app)), {"input-size": 8 * 10**9})  # 16 x 250 MB, twice
    stage = what.run.jobs[0].stages[0]
    pilot = [2.0] * 4 + [2.0 + 0.1 * (15 - i) for i in range(4, 16)]
    extra = np.quantile(pilot[10:], (np.arange(16) + 0.5) / 16)
    assert stage.tasks == 32 and list(stage.durations) == pytest.approx(pilot + list(extra))
    (rule,) = [r for r in what.rules if "got faster" in r]
    assert rule.startswith("stage 0: tasks got faster as the pilot's stage went on (Kendall tau -1.00, p = ")
    assert "over 12 tasks): the first 16 task(s) keep the pilot's times in launch order" in rule


def test_a_larger_stage_pays_the_cold_start_of_its_first_wave_once(tmp_path):
    # 12 input tasks on 4 slots; the first wave (4 tasks) ran 1.0 s longer each (fresh executors: class
    # loading, JIT). Input x2: 24 tasks = the 4 cold ones as they were + 20 with the warm tasks' times
    path = pilot_log(tmp_path / "pilot.json", input_tasks=12)
    events = [json.loads(line) for line in path.read_text().splitlines()]
    for event in events:
        if event["Event"] == "SparkListenerTaskEnd" and event["Stage ID"] == 0 and event["Task Info"]["Index"] < 4:
            event["Task Info"]["Finish Time"] += 1000
            event["Task Metrics"]["Executor Run Time"] += 1000
    cold = tmp_path / "cold.json"
    cold.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    app = read_spark_log(cold)
    what = what_if_run(app, spark_run(app, timed_jobs(app)), {"input-size": 6 * 10**9})  # 12 x 250 MB, twice
    stage = what.run.jobs[0].stages[0]
    assert stage.tasks == 24
    # cold: 0.1 + 1.0 + 1.8 + 0.1 = 3.0 s; warm: 2.0 s (not the pilot's mean 2.33 s for every new task)
    assert sorted(stage.durations) == pytest.approx([2.0] * 20 + [3.0] * 4)
    assert any("first wave's 4 task(s) keep their (cold JVM) times" in rule for rule in what.rules)


def test_resampled_quantiles_are_numpys_to_the_last_bit():
    # the what-if resamples a stage's task times at evenly spaced levels from one sort; NumPy's quantile
    # partitions once per level (27 s for 200,000 tasks), and the numbers must not change
    random = np.random.default_rng(5)
    for n in (1, 2, 3, 10, 257, 4000):
        values = np.concatenate([random.gamma(2.0, 1.5, n), np.full(n // 3, 2.5)])
        for count in (1, 7, 1000):
            levels = np.concatenate([(np.arange(count) + 0.5) / count, [0.0, 1.0, 0.5]])
            assert np.array_equal(quantiles(values, levels), np.quantile(values, levels))
