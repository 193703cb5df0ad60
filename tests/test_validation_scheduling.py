"""The pure helpers of validation/run_scheduling_spark.py (no pyspark needed)."""

import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "validation"))

import scheduling_spark_lib as lib

from spn.description import parse_description


def test_list_makespan_fills_the_slot_free_first():
    # 2 slots: 3 | 1 then 1 then 1 -> slots end at 3 and 3
    assert lib.list_makespan(np.array([3.0, 1.0, 1.0, 1.0]), 2)[0] == 3.0
    # more slots than tasks: the longest task
    assert lib.list_makespan(np.array([[0.5, 2.0, 1.0]]), 8)[0] == 2.0


def test_standalone_adds_the_levels():
    shape = lib.SHAPES["join"]
    draws = {"left": np.full(8, 1.0), "right": np.full(6, 2.0), "join": np.full(8, 0.5)}
    # level 1: 14 tasks on 8 slots, in list order: 8 x 1.0 fill the slots, then 6 x 2.0 -> 3.0; level 2: 0.5
    assert lib.standalone(shape, draws)[0] == pytest.approx(3.5)


def test_expected_standalone_of_two_exponential_tasks():
    shape = lib.Shape("two", (lib.Phase("p", 2, "exponential", 1.0),), (), think=1.0)
    mean, se = lib.expected_standalone(shape, samples=200_000, seed=3)
    assert abs(mean - 1.5) < 4 * se  # E[max of two Exp(1)] = 1.5


def test_control_variate_removes_the_variance_it_explains():
    rng = np.random.default_rng(1)
    c = rng.exponential(2.0, 40)
    out = lib.control_variate(c + 0.25, c, expected_c=2.0)
    assert out["beta"] == pytest.approx(1.0)
    assert out["mean"] == pytest.approx(2.25)
    assert out["hw"] == pytest.approx(0.0, abs=1e-9)
    assert out["raw_hw"] > 0.1


def test_calibration_of_a_synthetic_one_user_job():
    shape = lib.SHAPES["mapreduce"]
    # map: 12 tasks of 1 s sleep; the first 8 launch at 0 and leave at 1.02 s, the last 4 at 1.03 s
    maps = [(0, 1020, 1.0)] * 8 + [(1030, 2050, 1.0)] * 4
    reduces = [(2100, 2620, 0.5)] * 4
    job = {"R": 2.72, "tasks": {"map": maps, "reduce": reduces}}
    cal = lib.calibrate([job], shape)
    assert cal["overhead"]["map"] == pytest.approx(0.02)
    assert cal["overhead"]["reduce"] == pytest.approx(0.02)
    assert cal["gap"] == pytest.approx(0.01) and cal["gaps"] == 4
    assert cal["driver"] == pytest.approx(2.72 - 2.05 - 0.52)


@pytest.mark.parametrize("policy", ["fifo", "fair", "gate"])
def test_descriptions_are_valid(policy):
    cal = {"overhead": {"map": 0.02, "reduce": 0.03, "left": 0.02, "right": 0.02, "join": 0.04}, "gap": 0.01,
           "driver": 0.1}
    for shape in lib.SHAPES.values():
        desc = parse_description(lib.description(shape, 3, policy, cal))
        assert desc.cluster.containers == lib.K_SLOTS
        assert desc.workload.think_time == pytest.approx(shape.think + 0.1)
        assert desc.scheduler.policy == policy
        first = shape.phases[0]
        assert desc.phases[0].task_time == pytest.approx(first.mean + cal["overhead"][first.name] + 0.01)
        assert np.mean(desc.phases[0].samples) == pytest.approx(desc.phases[0].task_time, rel=1e-4)
