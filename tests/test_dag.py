"""Composite DAG models: composition by shared places, the DAG builder, closed forms."""

import itertools

import networkx as nx
import numpy as np
import pytest

from spn.net.compose import SubModel, compose
from spn.exceptions import ModelError
from spn.measures import job_measures, throughput
from spn.models.dag import build_application
from spn.models.mapreduce import END_ACTIVITY, mapreduce_net
from spn.models.submodels import fork, join, phase, think
from spn.net import Place, TimedActivity
from spn.solvers import steady_state
from spn.statespace import explore


def dag(phases, edges=()):
    """phases: {name: (tasks, mean) or (tasks, mean, shape) or dict}."""
    g = nx.DiGraph()
    for name, spec in phases.items():
        if isinstance(spec, dict):
            g.add_node(name, **spec)
        else:
            g.add_node(name, tasks=spec[0], task_time=spec[1], shape=spec[2] if len(spec) > 2 else 1)
    g.add_edges_from(edges)
    return g


def solve_app(app):
    ss = explore(app.net)
    result = steady_state(ss.generator(), method="direct")
    assert result.converged
    m = job_measures(ss, result.x, users=app.users, think_time=app.think_time,
                     end_activity=app.end_activity, think_place=app.think_place,
                     container_place=app.container_place, containers=app.containers)
    return ss, result.x, m


# --------------------------------------------------------------------------- composition
def test_compose_merges_interface_places_and_prefixes_the_rest():
    a = SubModel("a", [Place("out"), Place("local", 2)],
                 [TimedActivity("make", inputs={"local": 1}, outputs={"out": 1}, rate=1.0)],
                 {"end": "out"})
    b = SubModel("b", [Place("in", 1)], [TimedActivity("use", inputs={"in": 1}, rate=2.0)],
                 {"start": "in"})
    net = compose([a, b], {"link": [("a", "end"), ("b", "start")]})
    assert [(p.name, p.tokens) for p in net.places] == [("link", 1), ("a.local", 2)]
    assert net.activity("a.make").outputs == {"link": 1}
    assert net.activity("b.use").inputs == {"link": 1}


def test_compose_reports_unknown_sub_models_and_roles():
    a = SubModel("a", [Place("out")], [], {"end": "out"})
    with pytest.raises(ModelError) as err:
        compose([a], {"x": [("a", "nope"), ("zz", "end")]})
    assert "no interface place 'nope'" in str(err.value)
    assert "unknown sub-model 'zz'" in str(err.value)


def test_gates_keep_their_local_names_after_composition():
    from spn.net import InputGate, InstantActivity
    a = SubModel("a", [Place("x", 3), Place("y")], [
        InstantActivity("move", inputs={"x": 1}, outputs={"y": 1},
                        input_gates=[InputGate(lambda m: m["x"] > 1)])], {})
    net = compose([a], {})
    m = np.array([[3, 0], [1, 0]], dtype=np.int32)
    assert net.enabled(net.activity("a.move"), m).tolist() == [True, False]


def test_sub_models_alone():
    assert [a.name for a in fork("f", 3).activities] == ["IA0"]
    assert fork("f", 3).activities[0].outputs == {"P1": 1, "P2": 1, "P3": 1}
    assert join("j", 2).activities[0].inputs == {"P1": 1, "P2": 1}
    ends = {a.name: a for a in phase("p", tasks=5, task_time=1.0).activities}
    assert ends["IAF"].inputs == {"PF": 5} and ends["IAS"].outputs == {"PW": 5}
    t = think(4, 2.0)
    assert t.places[0] == Place("PJ", 4) and t.activities[0].rate == 0.5


# --------------------------------------------------------------------------- the two-phase DAG is Fig. 3
@pytest.mark.parametrize("N,C,M,R,km,kr", [
    (1, 1, 2, 2, 1, 1), (1, 4, 4, 4, 1, 1), (2, 2, 3, 2, 1, 1), (3, 4, 4, 4, 1, 1),
    (2, 3, 3, 2, 2, 1), (1, 2, 3, 3, 1, 3), (4, 2, 2, 3, 2, 2), (3, 5, 5, 1, 3, 1),
    (2, 6, 2, 4, 1, 2), (5, 3, 1, 1, 1, 1),
])
def test_two_phase_dag_equals_hand_built_mapreduce_model(N, C, M, R, km, kr):
    app = build_application(dag({"map": (M, 2.0, km), "reduce": (R, 3.0, kr)}, [("map", "reduce")]),
                            users=N, think_time=10.0, containers=C)
    ss_dag, _, m_dag = solve_app(app)
    ss_mr = explore(mapreduce_net(users=N, think_time=10.0, containers=C, map_tasks=M, map_time=2.0,
                                  map_shape=km, reduce_tasks=R, reduce_time=3.0, reduce_shape=kr))
    pi = steady_state(ss_mr.generator(), method="direct").x
    m_mr = job_measures(ss_mr, pi, users=N, think_time=10.0, end_activity=END_ACTIVITY,
                        think_place="PJ", container_place="PC", containers=C)
    assert ss_dag.n_states == ss_mr.n_states
    assert ss_dag.n_transitions == ss_mr.n_transitions
    assert m_dag.mean_execution_time == pytest.approx(m_mr.mean_execution_time, rel=1e-9)
    assert m_dag.utilization == pytest.approx(m_mr.utilization, rel=1e-9)


# --------------------------------------------------------------------------- closed forms
@pytest.mark.parametrize("a,b", [(2.0, 3.0), (1.0, 1.0), (0.5, 7.0)])
def test_fork_join_of_two_single_task_phases(a, b):
    g = dag({"A": (1, a), "B": (1, b)})                       # two sources, two sinks
    _, _, m = solve_app(build_application(g, users=1, think_time=10.0, containers=2))
    assert m.mean_execution_time == pytest.approx(a + b - a * b / (a + b), rel=1e-10)
    _, _, m1 = solve_app(build_application(g, users=1, think_time=10.0, containers=1))
    assert m1.mean_execution_time == pytest.approx(a + b, rel=1e-10)


def test_diamond_is_first_plus_max_of_middle_plus_last():
    a, b, c, d = 1.0, 2.0, 3.0, 0.5
    g = dag({"A": (1, a), "B": (1, b), "C": (1, c), "D": (1, d)},
            [("A", "B"), ("A", "C"), ("B", "D"), ("C", "D")])
    _, _, m = solve_app(build_application(g, users=1, think_time=5.0, containers=2))
    assert m.mean_execution_time == pytest.approx(a + (b + c - b * c / (b + c)) + d, rel=1e-10)


def test_chain_of_phases_with_enough_containers_sums_harmonic_maxima():
    g = dag({"s1": (2, 1.0), "s2": (3, 2.0), "s3": (1, 4.0)}, [("s1", "s2"), ("s2", "s3")])
    _, _, m = solve_app(build_application(g, users=1, think_time=5.0, containers=3))
    assert m.mean_execution_time == pytest.approx(1.0 * 1.5 + 2.0 * (1 + 1 / 2 + 1 / 3) + 4.0, rel=1e-10)


def test_priority_gives_containers_to_the_higher_phase_first():
    g = dag({"A": {"tasks": 2, "task_time": 1.0, "priority": 1}, "B": {"tasks": 2, "task_time": 1.0}})
    ss, pi, m = solve_app(build_application(g, users=1, think_time=5.0, containers=1))
    waiting_a, running_b = ss.tokens("A.PW"), ss.tokens("B.PR")
    assert not np.any((waiting_a > 0) & (running_b > 0))
    # with one container the four tasks run one after another whatever the order
    assert m.mean_execution_time == pytest.approx(4.0, rel=1e-10)


def test_several_users_flow_balance_through_a_dag():
    g = dag({"A": (2, 1.0), "B": (1, 2.0, 2), "C": (2, 1.5), "D": (1, 1.0)},
            [("A", "B"), ("A", "C"), ("B", "D"), ("C", "D")])
    app = build_application(g, users=3, think_time=4.0, containers=3)
    ss, pi, m = solve_app(app)
    x = m.throughput
    for v, tasks in {"A": 2, "B": 1, "C": 2, "D": 1}.items():
        assert throughput(ss, pi, f"{v}.TAR") == pytest.approx(tasks * x, rel=1e-9)
        assert throughput(ss, pi, f"{v}.IAS") == pytest.approx(x, rel=1e-9)
    assert throughput(ss, pi, "think.TAT") == pytest.approx(x, rel=1e-9)
    held = ss.tokens("PC") + sum(ss.tokens(f"{v}.PR") for v in "ABCD")
    assert (held == 3).all()


# --------------------------------------------------------------------------- errors
def test_cycle_and_reserved_names_are_reported():
    with pytest.raises(ModelError, match="cycle: A -> B -> A"):
        build_application(dag({"A": (1, 1.0), "B": (1, 1.0)}, [("A", "B"), ("B", "A")]),
                           users=1, think_time=1.0, containers=1)
    with pytest.raises(ModelError, match="'think' is reserved"):
        build_application(dag({"think": (1, 1.0)}), users=1, think_time=1.0, containers=1)


def test_disconnected_groups_run_in_parallel():
    g = dag({"a": (1, 1.0), "b": (1, 1.0), "c": (1, 1.0), "d": (1, 1.0)}, [("a", "b"), ("c", "d")])
    app = build_application(g, users=1, think_time=1.0, containers=2)
    _, _, m = solve_app(app)
    # max of two independent sums of two unit exponentials (Erlang(2, rate 1)): E = 2.75
    assert m.mean_execution_time == pytest.approx(2.75, rel=1e-10)
    assert list(itertools.islice(app.net.place_index, 2)) == ["PJ", "PWJ"]


def test_a_phase_called_join_or_fork_keeps_its_edges():
    """Merged place names of joins and forks cannot clash with edge places of such phases."""
    g = dag({"join": (1, 1.0), "fork": (1, 1.0), "x": (1, 2.0), "y": (1, 1.0), "z": (1, 1.0)},
            [("join", "y"), ("x", "y"), ("fork", "join"), ("fork", "z")])
    app = build_application(g, users=1, think_time=1.0, containers=3)
    assert not [p.name for p in app.net.places if p.name.startswith(("join.", "fork."))
                and p.name.endswith((".PE", ".PS"))]
    ss, pi, m = solve_app(app)
    assert len(ss.dead_markings()) == 0
    # one user, enough containers: max(fork + max(join, z) ..., x) + y, all exponential: finite and
    # at least the longest chain of means
    assert m.mean_execution_time > 1.0 + 1.0 + 1.0
