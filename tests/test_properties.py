"""Properties every explored and solved net must have, on randomly generated small nets."""

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from spn.exceptions import NotErgodicError, StateSpaceLimitError, TimelessTrapError
from spn.measures import job_measures, throughput
from spn.models.mapreduce import END_ACTIVITY, mapreduce_net
from spn.net import InstantActivity, Net, Place, TimedActivity
from spn.solvers import steady_state
from spn.statespace import explore


@st.composite
def conservative_nets(draw):
    """Nets whose every activity moves as many tokens as it takes (so token count is invariant)."""
    n_places = draw(st.integers(2, 4))
    names = [f"p{i}" for i in range(n_places)]
    tokens = draw(st.lists(st.integers(0, 2), min_size=n_places, max_size=n_places))
    assume(sum(tokens) > 0)
    activities = []
    for i in range(draw(st.integers(2, 6))):
        take = draw(st.dictionaries(st.sampled_from(names), st.integers(1, 2), min_size=1, max_size=2))
        total = sum(take.values())
        give_to = draw(st.lists(st.sampled_from(names), min_size=total, max_size=total))
        give = {}
        for p in give_to:
            give[p] = give.get(p, 0) + 1
        inhibit = draw(st.dictionaries(st.sampled_from(names), st.integers(1, 3), max_size=1))
        if draw(st.booleans()) and draw(st.booleans()):
            activities.append(InstantActivity(
                f"i{i}", inputs=take, outputs=give, inhibitors=inhibit,
                priority=draw(st.integers(0, 1)), weight=draw(st.sampled_from([0.5, 1.0, 3.0]))))
        else:
            servers = "infinite" if len(take) == 1 and draw(st.booleans()) else 1
            activities.append(TimedActivity(
                f"t{i}", inputs=take, outputs=give, inhibitors=inhibit, servers=servers,
                rate=draw(st.sampled_from([0.25, 1.0, 2.0, 7.0]))))
    return Net([Place(n, t) for n, t in zip(names, tokens)], activities)


def explore_and_solve(net):
    try:
        ss = explore(net, max_states=500)
    except (TimelessTrapError, StateSpaceLimitError):
        assume(False)
    assume(ss.n_states > 1 and len(ss.dead_markings()) == 0)
    try:
        result = steady_state(ss.generator(), method="direct")
    except NotErgodicError:
        assume(False)
    return ss, result


@pytest.mark.slow   # 150 random nets explored and solved (minutes)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(conservative_nets())
def test_random_nets_give_a_proper_ctmc_and_distribution(net):
    ss, result = explore_and_solve(net)
    Q = ss.generator()
    scale = abs(Q.diagonal()).max()
    # a generator: non-negative off-diagonal, rows summing to zero
    off = Q - np.diag(Q.diagonal())
    assert off.min() >= 0
    assert np.abs(np.asarray(Q.sum(axis=1))).max() <= 1e-12 * scale
    # a distribution that balances Q
    pi = result.x
    assert result.converged
    assert pi.min() >= 0 and abs(pi.sum() - 1) < 1e-12
    assert np.abs(pi @ Q).sum() <= 1e-9 * scale
    # every kept marking is tangible, and tokens are conserved
    for a in ss.net.instant:
        assert not ss.net.enabled(a, ss.markings).any()
    assert (ss.markings.sum(axis=1) == ss.net.initial_marking().sum()).all()
    # flow balance: what enters each place equals what leaves it, timed and instantaneous alike
    net_flow = np.zeros(len(ss.net.places))
    for a in ss.net.activities:
        x = throughput(ss, pi, a.name)
        for p, k in a.outputs.items():
            net_flow[ss.net.place_index[p]] += x * k
        for p, k in a.inputs.items():
            net_flow[ss.net.place_index[p]] -= x * k
    assert np.abs(net_flow).max() <= 1e-8 * max(1.0, scale)


@pytest.mark.slow   # 150 random nets, each solved four ways (minutes)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.filter_too_much])
@given(conservative_nets())
def test_every_solver_agrees_on_random_nets(net):
    ss, reference = explore_and_solve(net)
    for method in ("gmres", "power", "sor"):
        result = steady_state(ss.generator(), method=method, rtol=1e-13)
        assert result.converged
        assert np.abs(result.x - reference.x).max() < 1e-8


@settings(max_examples=40, deadline=None)
@given(users=st.integers(1, 3), containers=st.integers(1, 4), maps=st.integers(1, 4),
       reduces=st.integers(1, 3), map_shape=st.integers(1, 3), reduce_shape=st.integers(1, 2),
       think=st.sampled_from([0.5, 5.0, 20.0]))
def test_mapreduce_invariants(users, containers, maps, reduces, map_shape, reduce_shape, think):
    net = mapreduce_net(users=users, think_time=think, containers=containers, map_tasks=maps,
                        map_time=2.0, map_shape=map_shape, reduce_tasks=reduces, reduce_time=1.0,
                        reduce_shape=reduce_shape)
    ss = explore(net)
    pi = steady_state(ss.generator(), method="direct").x
    m = job_measures(ss, pi, users=users, think_time=think, end_activity=END_ACTIVITY,
                     think_place="PJ", container_place="PC", containers=containers)
    # Little's law between thinking users and completions
    assert abs(m.mean_jobs_thinking - m.throughput * think) <= 1e-9 * max(1.0, m.mean_jobs_thinking)
    # a job takes at least one map and one reduce after the other
    assert m.mean_execution_time >= 2.0 + 1.0 - 1e-9
    assert 0.0 < m.utilization <= 1.0 + 1e-12
    # container conservation in every tangible marking
    held = ss.tokens("PC") + ss.tokens("PRM") + ss.tokens("PRR")
    assert (held == containers).all()
