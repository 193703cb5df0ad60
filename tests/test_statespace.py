"""Exploration limits and errors."""

import numpy as np
import pytest

from spn.exceptions import StateSpaceLimitError
from spn.models.mapreduce import mapreduce_net
from spn.net import Net, Place, TimedActivity
from spn.statespace import explore


def test_max_states_stops_exploration_with_a_clear_error():
    net = mapreduce_net(users=3, think_time=10.0, containers=4, map_tasks=4, map_time=2.0,
                        reduce_tasks=4, reduce_time=3.0)
    assert explore(net, max_states=49).n_states == 49
    with pytest.raises(StateSpaceLimitError, match="more than 48 tangible markings"):
        explore(net, max_states=48)


def test_max_seconds_stops_exploration_at_the_first_look_at_the_clock_past_it():
    net = mapreduce_net(users=3, think_time=10.0, containers=4, map_tasks=4, map_time=2.0,
                        reduce_tasks=4, reduce_time=3.0)
    with pytest.raises(StateSpaceLimitError, match=r"after 0 s \(max_seconds\) at 1 tangible marking") as stopped:
        explore(net, engine="numpy", max_seconds=0.0)
    assert stopped.value.option == "max_seconds"
    assert explore(net, engine="numpy", max_seconds=60.0).n_states == 49


def test_an_unbounded_net_hits_the_limit_instead_of_running_forever():
    net = Net([Place("q", 0)], [TimedActivity("arrive", outputs={"q": 1}, rate=1.0)])
    with pytest.raises(StateSpaceLimitError):
        explore(net, max_states=1000)


def test_dead_markings_are_reported():
    net = Net([Place("a", 1), Place("b")], [TimedActivity("t", inputs={"a": 1}, outputs={"b": 1}, rate=1.0)])
    ss = explore(net)
    assert ss.n_states == 2
    assert ss.dead_markings().tolist() == [1]


def test_markings_are_kept_as_one_integer_array():
    ss = explore(mapreduce_net(users=2, think_time=1.0, containers=2, map_tasks=2, map_time=1.0,
                               reduce_tasks=2, reduce_time=1.0, map_shape=2))
    assert ss.markings.shape == (ss.n_states, len(ss.net.places))
    assert ss.markings.dtype == np.uint8        # the fewest bytes the token counts allow
    assert len({m.tobytes() for m in ss.markings}) == ss.n_states
