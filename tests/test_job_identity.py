"""The job-identity net (spn.models.jobs): every job in the system keeps its own places.

Specification:

- Exact: on the two-user cases whose chains tests/test_scheduling_policies.py writes
  out by hand and solves with sympy, the net's mean execution time equals the hand
  chain's, for each policy (gate, fifo, fair), to rounding.
- Token mixing is gone: the gate with jobs kept apart equals the cluster simulator
  (which never pooled tasks) on the cases where the paper's net was 3.7 % and 13.7 %
  below it; and where consecutive jobs never share a phase, both nets agree.
- fifo and fair equal the cluster simulator on fork-joins, priorities, Erlang
  shapes and several sinks (its 99 % interval covers the exact value).
- Slots stay ordered and compact: in every tangible marking, the jobs in the system
  fill slots 1..n with no gap, and n is the number of users not thinking.
- The nets are plain (fair's with choice gates): the compiled exploration engine
  takes them and builds the same chain as the NumPy engine, entry by entry.
- One user: every policy is the paper's net.
- Through the command line: ``spn solve`` solves fifo and fair exactly and says which
  policy it solved; ``spn export`` writes the slots.
"""

import json
import sys
from pathlib import Path

import numpy as np
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_activity_table import same_chain  # noqa: E402
from test_scheduling_policies import MAP2_REDUCE2_R, description  # noqa: E402
from test_simulation_models import CATALOGUE  # noqa: E402

from spn.analysis.solve import solve_description  # noqa: E402
from spn.cli import main  # noqa: E402
from spn.description import load_description, parse_description  # noqa: E402
from spn.measures import job_measures  # noqa: E402
from spn.models.dag import build  # noqa: E402
from spn.models.jobs import application_net, build_jobs  # noqa: E402
from spn.simulation import simulate_description  # noqa: E402
from spn.solvers import steady_state  # noqa: E402
from spn.statespace import explore  # noqa: E402
from spn.statespace.activity_table import is_plain  # noqa: E402

pytestmark = pytest.mark.compiled      # run last: the kernels compiled beside the first tests are ready

POLICIES = ("gate", "fifo", "fair")


def solved(app, engine="auto"):
    ss = explore(app.net, engine=engine)
    pi = steady_state(ss.generator(), method="direct").x
    measures = job_measures(ss, pi, users=app.users, think_time=app.think_time, end_activity=app.end_activity,
                            think_place=app.think_place, container_place=app.container_place,
                            containers=app.containers)
    return ss, measures


def R(app):
    return solved(app)[1].mean_execution_time


# --------------------------------------------------------------------------- exact cases
# (case, exact R per policy) from the hand-written chains of tests/test_scheduling_policies.py
HAND_SOLVED = [
    (dict(think_time=1, containers=2, tasks=[2], means=[1]), {"gate": 23 / 13, "fifo": 23 / 13, "fair": 23 / 13}),
    (dict(think_time=1, containers=2, tasks=[1, 1], means=[1, 2]), {"gate": 13 / 4, "fifo": 3.0, "fair": 3.0}),
    (dict(think_time=1, containers=2, tasks=[3], means=[1]), {"gate": 204 / 79, "fifo": 204 / 79, "fair": 13 / 5}),
    (dict(think_time=4, containers=2, tasks=[6], means=[1]),
     {"gate": 10956327 / 2503321, "fifo": 10956327 / 2503321, "fair": 53869535 / 11871163}),
    (dict(think_time=2, containers=2, tasks=[2, 2], means=[1, 2]), {k: float(v) for k, v in MAP2_REDUCE2_R.items()}),
]


@pytest.mark.parametrize("case, exact", HAND_SOLVED)
@pytest.mark.parametrize("policy", POLICIES)
def test_the_net_solves_each_policy_exactly_as_the_hand_written_chain(case, exact, policy):
    assert R(build_jobs(description(policy, **case))) == pytest.approx(exact[policy], rel=1e-12)


# --------------------------------------------------------------------------- token mixing
def test_the_gate_with_jobs_kept_apart_removes_the_token_mixing_the_simulator_measured():
    # the two cases where the paper's net mixed the most: its R is 3.7 % and 13.7 % low
    for name, gap in (("mr-example", 0.0371), ("one-phase-queue", 0.1374)):
        desc = CATALOGUE[name]
        paper, kept_apart = R(build(desc)), R(build_jobs(desc, policy="gate"))
        assert kept_apart / paper - 1 == pytest.approx(gap, abs=5e-4), name
        simulated = simulate_description(desc, engine="cluster", seed=7, confidence=0.99,
                                         rel_precision=0.004).mean_execution_time
        assert simulated.contains(kept_apart), (name, simulated, kept_apart)
        assert not simulated.contains(paper), (name, simulated, paper)


def test_where_jobs_never_share_a_phase_both_nets_agree():
    for name in ("mr-1user-bigC", "priorities"):
        desc = CATALOGUE[name]
        assert R(build_jobs(desc, policy="gate")) == pytest.approx(R(build(desc)), rel=1e-9), name


# --------------------------------------------------------------------------- against the simulator
@pytest.mark.parametrize("name", ["mr-erlang", "mr-C2-erlang", "forkjoin", "priorities", "two-sinks"])
@pytest.mark.parametrize("policy", ["fifo", "fair"])
def test_fifo_and_fair_nets_agree_with_the_cluster_simulator(name, policy):
    desc = parse_description({**_data(CATALOGUE[name]), "scheduler": {"policy": policy}})
    exact = R(build_jobs(desc))
    simulated = simulate_description(desc, engine="cluster", seed=11, confidence=0.99,
                                     rel_precision=0.005).mean_execution_time
    assert simulated.contains(exact), (name, policy, simulated, exact)


def _data(desc):
    """A description back as data (the catalogue's models are built from data)."""
    phases = [{"name": p.name, "tasks": p.tasks, "task_time": p.task_time, "shape": p.shape,
               "priority": p.priority} for p in desc.phases]
    return {"name": desc.name, "workload": {"users": desc.workload.users, "think_time": desc.workload.think_time},
            "cluster": {"containers": desc.cluster.containers}, "phases": phases,
            "edges": [list(e) for e in desc.edges]}


# --------------------------------------------------------------------------- structure
@pytest.mark.parametrize("policy", POLICIES)
def test_slots_stay_ordered_and_compact_and_hold_the_users_not_thinking(policy):
    desc = parse_description({**_data(CATALOGUE["forkjoin"]), "workload": {"users": 3, "think_time": 2.0}})
    app = build_jobs(desc, policy=policy)
    ss = explore(app.net)
    taken = np.stack([ss.tokens(f"slot{k}.taken") for k in (1, 2, 3)])
    gaps = np.stack([ss.tokens(f"slot{k}.gap") for k in (1, 2, 3)])
    assert not gaps.any()                                   # moves end before a marking is tangible
    assert ((taken == 0) | (taken == 1)).all()
    assert (np.diff(taken, axis=0) <= 0).all()              # slot k taken => slot k-1 taken
    assert (taken.sum(axis=0) == 3 - ss.tokens("PJ")).all()
    # a slot holds tokens only while it is taken
    for k in (1, 2, 3):
        own = sum(ss.tokens(p.name) for p in app.net.places if p.name.startswith(f"job{k}/"))
        assert (own[taken[k - 1] == 0] == 0).all()


@pytest.mark.parametrize("policy", POLICIES)
def test_the_nets_are_plain_and_both_engines_build_the_same_chain(policy):
    desc = CATALOGUE["mr-C2-erlang"]
    app = build_jobs(desc, policy=policy)
    assert is_plain(app.net, choices=True) and is_plain(app.net) == (policy != "fair")   # fair: choice gates
    by_numpy, by_compiled = solved(app, "numpy"), solved(app, "compiled")
    same_chain(by_compiled[0], by_numpy[0])                 # entry by entry, up to the numbering of states
    assert by_compiled[1].mean_execution_time == pytest.approx(by_numpy[1].mean_execution_time, rel=1e-12)


@pytest.mark.parametrize("policy", POLICIES)
def test_one_user_is_the_papers_net_under_every_policy(policy):
    desc = CATALOGUE["priorities"]
    one = parse_description({**_data(desc), "workload": {"users": 1, "think_time": 3.0}})
    assert R(build_jobs(one, policy=policy)) == pytest.approx(R(build(one)), rel=1e-12)


def test_the_gate_policy_keeps_the_papers_net_and_fifo_and_fair_take_the_slots():
    desc = load_description("models/mapreduce.yaml")
    assert [p.name for p in application_net(desc).net.places] == [p.name for p in build(desc).net.places]
    fifo = application_net(load_description("models/mapreduce.yaml", ["scheduler.policy=fifo"]))
    assert {"job1/map.PW", "job3/reduce.PR", "slot3.taken"} <= {p.name for p in fifo.net.places}


# --------------------------------------------------------------------------- command line
def test_spn_solve_solves_fifo_and_fair_exactly_and_names_the_policy(capsys):
    for policy, R_exact in (("fifo", 12.1733), ("fair", 12.2093), ("gate", 13.3362)):
        assert main(["solve", "models/mapreduce.yaml", "--set", f"scheduler.policy={policy}", "--json"]) == 0
        result = json.loads(capsys.readouterr().out)
        assert (result["method"], result["policy"]) == ("exact", policy)
        assert result["mean_execution_time"] == pytest.approx(R_exact, abs=5e-5)
    # the same numbers from the description's own field
    assert solve_description(load_description("models/mapreduce.yaml", ["scheduler.policy=fifo"])) \
        .measures.mean_execution_time == pytest.approx(12.1733, abs=5e-5)


def test_spn_export_writes_the_slots_of_a_fifo_model(capsys):
    assert main(["export", "models/mapreduce.yaml", "--set", "scheduler.policy=fifo", "--format", "pnml"]) == 0
    out = capsys.readouterr().out
    assert 'id="job1/map.PW"' in out and 'id="slot3.taken"' in out
