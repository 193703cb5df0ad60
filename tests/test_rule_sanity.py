"""What-if rules check what they derive against a physical range (issue 28, part 5).

Specifications: a shuffle stage whose derived cross-host bandwidth is below any cluster network's
(:data:`~spn.fit.whatif.MIN_HOST_BANDWIDTH`) was not network-bound: the bandwidth rule does not apply,
the stage keeps the pilot's tasks, and ``reference.what_if.rules`` says so; a plausible bandwidth still
applies the rule; a per-byte line that would make a task outlast its whole stage is not a cost; a
measured CPU share that leaves most of the CPUs to "the rest of the JVM" is not CPU contention.
"""

import json
import os
from pathlib import Path

import numpy as np
import pytest

from spn.fit import fit_logs
from spn.fit.costs import affine_compute_cost
from spn.fit.whatif import MAX_JVM_CPU_FRACTION, MIN_HOST_BANDWIDTH, what_if_run
from spn.logs.spark import read_spark_log
from spn.logs.spark_runs import spark_run, timed_jobs
from spn.logs.task_profile import TaskParts
from tests.whatif_logs import pilot_log

DATA = Path(os.environ.get("SPN_DATA") or Path(__file__).resolve().parents[2] / "shared" / "data")
Q52_E3 = DATA / "lundstrom" / "q52_e3_application_1481182872654_0046.json.gz"

#: the pilot's shuffle-stage task times (s, launch order), as tests/whatif_logs.py writes them
SHUFFLE_TIMES = [1.1, 1.1, 1.1, 3.5]


def rewrite_tasks(path: Path, stage: int, change) -> Path:
    """The log at ``path`` with ``change(metrics)`` applied to the Task Metrics of every task of ``stage``."""
    lines = []
    for line in path.read_text().splitlines():
        event = json.loads(line)
        if event["Event"] == "SparkListenerTaskEnd" and event["Stage ID"] == stage:
            change(event["Task Metrics"])
        lines.append(json.dumps(event))
    path.write_text("\n".join(lines) + "\n")
    return path


def carried(path: Path, **changes):
    """(rules, {stage id: task times}) of the pilot at ``path`` carried to ``changes`` (Spark keys)."""
    app = read_spark_log(path)
    what = what_if_run(app, spark_run(app, timed_jobs(app)), changes)
    return what.rules, {s.stage_ids[0]: list(s.durations) for job in what.run.jobs for s in job.stages}


def shuffle_rules(rules):
    return [rule for rule in rules if rule.startswith("stage 1:") and ("shuffle" in rule)]


def test_a_bandwidth_below_any_network_falls_back_to_the_pilots_tasks_and_says_so(tmp_path):
    # 10 KB of shuffle per task: 10 KB across hosts in ~3.5 s, far below 1 MB/s per host
    def tiny(metrics):
        metrics["Shuffle Read Metrics"]["Remote Bytes Read"] = 5_000
        metrics["Shuffle Read Metrics"]["Local Bytes Read"] = 5_000
    path = rewrite_tasks(pilot_log(tmp_path / "tiny.json"), 1, tiny)
    rules, times = carried(path, **{"spark.executor.instances": 8})
    [rule] = shuffle_rules(rules)
    assert "shuffle rule not applied: derived bandwidth" in rule
    assert f"below {MIN_HOST_BANDWIDTH / 1e6:g} MB/s, so the stage was not network-bound" in rule
    assert times[1] == pytest.approx(SHUFFLE_TIMES)       # the plain carry-over: the pilot's tasks
    model = fit_logs([path], what_if={"spark.executor.instances": 8})
    assert any("shuffle rule not applied" in r for r in model.description["reference"]["what_if"]["rules"])


def test_a_plausible_bandwidth_still_applies_the_rule(tmp_path):
    # 200 MB per task, half across hosts: about 29 MB/s per host, a network at work
    rules, times = carried(pilot_log(tmp_path / "pilot.json"), **{"spark.executor.instances": 8})
    [rule] = shuffle_rules(rules)
    assert "cross-host shuffle served at" in rule and "not applied" not in rule
    per_host = float(rule.split("served at ")[1].split(" MB/s")[0])
    assert per_host > MIN_HOST_BANDWIDTH / 1e6
    assert times[1] != pytest.approx(SHUFFLE_TIMES)     # carried by the bandwidth rule, not kept


@pytest.mark.skipif(not Q52_E3.exists(), reason=f"lundstrom log not found at {Q52_E3} (set SPN_DATA)")
def test_q52s_small_shuffle_is_not_scaled_as_network_bound():
    model = fit_logs([Q52_E3], what_if=["spark.executor.instances=12"])
    rules = model.description["reference"]["what_if"]["rules"]
    [rule] = [r for r in rules if r.startswith("stage 3:")]
    assert rule.startswith("stage 3: shuffle rule not applied: derived bandwidth 0.0815 MB/s per host is below "
                           "1 MB/s, so the stage was not network-bound")


def parts_of(sizes, compute):
    compute = np.asarray(compute, dtype=float)
    return TaskParts(wall=compute, compute=compute, input_bytes=np.asarray(sizes).astype(np.int64))


def test_a_per_byte_cost_longer_than_the_whole_stage_is_not_a_cost():
    sizes = np.linspace(50e6, 150e6, 12)
    parts = parts_of(sizes, 0.4 + 2e-8 * sizes)     # the largest task: 0.4 + 3.0 = 3.4 s of compute
    assert affine_compute_cost(parts, stage_span=10.0).accepted
    refused = affine_compute_cost(parts, stage_span=3.0)
    assert not refused.accepted and "longer than the whole stage took (3 s)" in refused.reason
    assert refused.factors(sizes, 2.0) == pytest.approx(np.full(12, 2.0))   # proportional, as any refused line


def test_a_cpu_share_that_leaves_most_cpus_to_the_jvm_falls_back_to_slots_over_cpus(tmp_path):
    # 16 input tasks, 2 slots per executor on 1 CPU: both busy slots share it. At a CPU time of 0.9 of the run
    # time the measured share applies; at 0.2 the "rest of the JVM" would hold 0.6 of the CPU: not CPU contention
    plain = pilot_log(tmp_path / "p.json", input_tasks=16)
    rules, _ = carried(plain, **{"spark.executor.cores": 1, "executor-cpus": 1})
    assert any("measured: the pilot's tasks ran on" in r for r in rules if r.startswith("stage 0:"))

    def waiting(metrics):
        metrics["Executor CPU Time"] = metrics["Executor Run Time"] * 200_000
    path = rewrite_tasks(pilot_log(tmp_path / "w.json", input_tasks=16), 0, waiting)
    rules, _ = carried(path, **{"spark.executor.cores": 1, "executor-cpus": 1})
    [rule] = [r for r in rules if r.startswith("stage 0: measured CPU share rule not applied")]
    assert f"more than {MAX_JVM_CPU_FRACTION:.0%}" in rule
