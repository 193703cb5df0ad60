"""``spn compare`` says what each column models and names known differences of model.

Under ``gate`` with several users the net pools a phase's finished tasks across jobs; the
cluster simulator pools them too by default (the same question), and run per job
(``--per-job-tasks``) its flags are *explained* by :data:`spn.studies.compare.POOLING`
instead of counting as disagreements (docs/design.md §3.4).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from spn.studies.compare import POOLING, compare_description, tasks_can_mix
from spn.cli import main
from spn.description import parse_description

EXAMPLE = str(Path(__file__).resolve().parent.parent / "models" / "mapreduce.yaml")


def one_phase_queue(policy="gate", users=6):
    """2 tasks on 3 containers, 6 users: consecutive jobs meet in the phase (R 13.7 % lower in the net)."""
    return parse_description({"name": "one-phase-queue", "workload": {"users": users, "think_time": 5.0},
                              "cluster": {"containers": 3}, "scheduler": {"policy": policy},
                              "phases": [{"name": "only", "tasks": 2, "task_time": 1.0}]})


def test_by_default_the_cluster_simulator_pools_as_the_net_and_agrees():
    c = compare_description(one_phase_queue(), seed=2, confidence=0.99)
    assert c.pool_finished_tasks and c.simulations["cluster"].pool_finished_tasks
    assert c.flags == [] and c.explained_flags == [] and c.explained == {}
    assert any(note.startswith("cluster: the job-level simulator pooling") for note in c.notes)


def test_per_job_the_flags_name_the_difference():
    c = compare_description(one_phase_queue(), seed=2, confidence=0.99, pool_finished_tasks=False)
    assert not c.pool_finished_tasks and not c.simulations["cluster"].pool_finished_tasks
    assert c.flags == [] and c.explained == {"cluster": POOLING}
    assert any(flag.startswith("analytic mean_execution_time") and flag.endswith(POOLING)
               for flag in c.explained_flags)
    assert all("cluster simulator" in flag for flag in c.explained_flags)
    assert c.as_dict()["notes"] == list(c.notes) and "per-job system" in c.notes[-1]


@pytest.mark.parametrize("policy, users", [("gate", 1), ("fifo", 6)])
def test_no_difference_to_explain_where_no_two_jobs_meet_in_the_net(policy, users):
    desc = one_phase_queue(policy, users)
    assert not tasks_can_mix(desc)
    c = compare_description(desc, seed=2, confidence=0.99, rel_precision=0.02, pool_finished_tasks=False)
    assert not c.pool_finished_tasks and c.explained == {} and c.explained_flags == []
    assert c.notes and c.notes[0].startswith("analytic: ")


def run(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_cli_carries_notes_and_explained_flags(capsys):
    code, out, err = run(capsys, "compare", EXAMPLE, "--seed", "3", "--json", "--per-job-tasks",
                         "--rel-precision", "0.01")
    assert code == 0
    result = json.loads(out)
    assert result["pool_finished_tasks"] is False and result["explained"] == {"cluster": POOLING}
    assert result["flags"] == [] and result["explained_flags"]       # 13.34 s against about 13.8 s
    assert all(flag.endswith(POOLING) for flag in result["explained_flags"])
    code, out, err = run(capsys, "compare", EXAMPLE, "--seed", "3", "--per-job-tasks", "--rel-precision", "0.01")
    assert code == 0 and "~ analytic value outside the interval, explained: differs by model" in out
    assert " ~\n" in out and " *\n" not in out and "models: cluster: " in out


def test_the_cli_table_says_the_cluster_column_pools(capsys):
    code, out, err = run(capsys, "compare", EXAMPLE, "--seed", "3", "--rel-precision", "0.05")
    assert code == 0 and "cluster simulation, pooled" in out and "models: analytic and net: " in out
    assert "explained" not in out
