"""An ActivityTable answers for a group of activities exactly what Net answers one activity at a time,
and jumping over runs of one instantaneous activity changes nothing in the explored chain."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from spn.statespace.activity_table import UNBOUNDED, ActivityTable
from spn.description import parse_description
from spn.models.dag import build
from spn.net import InputGate, InstantActivity, Net, OutputGate, Place, TimedActivity
from spn.statespace import explore
from test_properties import conservative_nets


@st.composite
def arc_nets_and_markings(draw):
    """Any arc-only net (inputs, outputs, inhibitors, servers) and a batch of markings."""
    n_places = draw(st.integers(1, 5))
    names = [f"p{i}" for i in range(n_places)]
    activities = []
    for i in range(draw(st.integers(1, 6))):
        take = draw(st.dictionaries(st.sampled_from(names), st.integers(1, 3), max_size=2))
        give = draw(st.dictionaries(st.sampled_from(names), st.integers(1, 3), max_size=2))
        inhibit = draw(st.dictionaries(st.sampled_from(names), st.integers(1, 4), max_size=2))
        if draw(st.booleans()):
            activities.append(InstantActivity(f"a{i}", inputs=take, outputs=give, inhibitors=inhibit,
                                              priority=draw(st.integers(0, 2)),
                                              weight=draw(st.sampled_from([0.5, 1.0, 4.0]))))
        else:
            servers = draw(st.sampled_from([1, 2, "infinite"])) if len(take) == 1 else 1
            activities.append(TimedActivity(f"a{i}", inputs=take, outputs=give, inhibitors=inhibit,
                                            servers=servers, rate=draw(st.sampled_from([0.5, 2.0]))))
    net = Net([Place(n) for n in names], activities)
    markings = np.array(draw(st.lists(st.lists(st.integers(0, 6), min_size=n_places, max_size=n_places),
                                      min_size=1, max_size=20)), dtype=np.int32)
    return net, markings


def per_activity(net, activities, markings):
    return np.column_stack([net.enabled(a, markings) for a in activities])


@settings(max_examples=200, deadline=None)
@given(arc_nets_and_markings())
def test_table_agrees_with_the_net_one_activity_at_a_time(case):
    net, markings = case
    for group in (net.timed, net.instant):
        if not group:
            continue
        table = ActivityTable(net, group)
        enabled = table.enabled(markings)
        assert (enabled == per_activity(net, group, markings)).all()
        rows, acts = np.nonzero(enabled)
        fired = table.fire(markings, rows, acts)
        for i, (r, a) in enumerate(zip(rows, acts)):
            activity = group[a]
            assert (fired[i] == net.fire(activity, markings[r:r + 1])[0]).all()
            if isinstance(activity, TimedActivity):
                assert table.rates(markings, rows[i:i + 1], acts[i:i + 1])[0] == net.rate(activity, markings[r:r + 1])[0]
            else:
                assert table.weights(markings, rows[i:i + 1], acts[i:i + 1])[0] == net.weight(activity, markings[r:r + 1])[0]


def test_gates_and_marking_dependent_rates_go_through_the_net():
    net = Net([Place("a", 3), Place("b")], [
        TimedActivity("move", inputs={"a": 1}, outputs={"b": 1}, rate=lambda m: 1.0 + m["b"],
                      input_gates=[InputGate(lambda m: m["b"] < 2)]),
        TimedActivity("back", inputs={"b": 1}, outputs={"a": 1}, rate=3.0,
                      output_gates=[OutputGate(lambda m: m.__setitem__("b", 0))]),
    ])
    table = ActivityTable(net, net.timed)
    markings = np.array([[3, 0], [2, 1], [1, 2]], dtype=np.int32)
    assert table.enabled(markings).tolist() == [[True, False], [True, True], [False, True]]
    rows, acts = np.array([0, 1, 1, 2]), np.array([0, 0, 1, 1])
    assert table.rates(markings, rows, acts).tolist() == [1.0, 2.0, 3.0, 3.0]
    assert table.fire(markings, rows, acts).tolist() == [[2, 1], [1, 2], [3, 0], [2, 0]]


def step_by_step(net, table, marking, a, rivals, limit):
    """Fire activity a until it is disabled or a rival is enabled (at most `limit` times)."""
    m = marking[None, :].copy()
    for i in range(1, limit + 1):
        m = m + table.delta[a]
        enabled = table.enabled(m)[0]
        if not enabled[a] or (enabled & rivals[a]).any():
            return i
    return None


@settings(max_examples=75, deadline=None)   # the only direct test of run_lengths: kept in the default run, fewer nets
@given(arc_nets_and_markings(), st.data())
def test_run_lengths_equal_firing_one_at_a_time(case, data):
    net, markings = case
    group = net.instant or net.timed
    table = ActivityTable(net, group)
    n = len(group)
    rivals = np.array(data.draw(st.lists(st.lists(st.booleans(), min_size=n, max_size=n),
                                         min_size=n, max_size=n)), dtype=bool)
    rivals &= ~np.eye(n, dtype=bool)
    enabled = table.enabled(markings)
    for r in range(len(markings)):
        for a in range(n):
            if not enabled[r, a] or (enabled[r] & rivals[a]).any():
                continue           # runs start where a is enabled and no rival is
            run = table.run_lengths(markings[r:r + 1], np.array([a]), rivals)[0]
            expected = step_by_step(net, table, markings[r], a, rivals, limit=40)
            if expected is None:
                assert run > 40
            else:
                assert run == expected
            if run == UNBOUNDED:
                assert step_by_step(net, table, markings[r], a, rivals, limit=200) is None


def same_chain(one, other):
    """Equal tangible markings with equal rates between them and equal impulses, whatever the order."""
    assert one.n_states == other.n_states
    key = {m.tobytes(): i for i, m in enumerate(np.ascontiguousarray(other.markings, dtype=np.int64))}
    perm = np.array([key[m.tobytes()] for m in np.ascontiguousarray(one.markings, dtype=np.int64)])
    Q1, Q2 = one.generator(), other.generator()[perm][:, perm]
    assert abs(Q1 - Q2).max() <= 1e-12 * max(1.0, abs(Q1).max())
    I1, I2 = one.impulses.tocsr(), other.impulses.tocsr()[perm]
    assert I1.shape == I2.shape and (I1.nnz == 0 or abs(I1 - I2).max() <= 1e-12 * max(1.0, abs(I1).max()))
    np.testing.assert_allclose(one.initial, other.initial[perm], rtol=1e-12)


def explore_without_jumps(net, monkeypatch):
    with monkeypatch.context() as patch:       # every run has length one: each firing is followed
        patch.setattr(ActivityTable, "run_lengths",
                      lambda self, markings, acts, rivals: np.ones(len(markings), dtype=np.int64))
        return explore(net, max_states=20_000, engine="numpy")


def mapreduce_dag(users, containers, maps, reduces):
    """The two-phase DAG model: arcs only, so its container allocations are jumped over."""
    return build(parse_description({
        "name": "mr", "workload": {"users": users, "think_time": 10.0}, "cluster": {"containers": containers},
        "phases": [{"name": "map", "tasks": maps, "task_time": 2.0, "shape": 2},
                   {"name": "reduce", "tasks": reduces, "task_time": 3.0}],
        "edges": [["map", "reduce"]]})).net


@pytest.mark.parametrize("users, containers, maps, reduces", [(1, 8, 12, 5), (3, 6, 6, 4), (2, 10, 3, 9)])
def test_jumping_over_container_allocations_changes_nothing(users, containers, maps, reduces, monkeypatch):
    net = mapreduce_dag(users, containers, maps, reduces)
    calls = []
    original = ActivityTable.run_lengths
    monkeypatch.setattr(ActivityTable, "run_lengths",
                        lambda self, *args: calls.append(original(self, *args)) or calls[-1])
    jumped = explore(net, engine="numpy")
    monkeypatch.undo()
    assert any(times is not None and (times > 1).any() for times in calls)   # runs were jumped
    same_chain(jumped, explore_without_jumps(net, monkeypatch))


@settings(max_examples=100, deadline=None)
@given(conservative_nets())
def test_jumping_changes_nothing_on_random_nets(net):
    from hypothesis import assume

    from spn.exceptions import StateSpaceLimitError, TimelessTrapError
    with pytest.MonkeyPatch.context() as monkeypatch:
        try:
            jumped = explore(net, max_states=500, engine="numpy")
            stepped = explore_without_jumps(net, monkeypatch)
        except (TimelessTrapError, StateSpaceLimitError):
            assume(False)
    same_chain(jumped, stepped)
