"""A queue's share changed alone: the other queues share the rest (spn.description.shares).

spn plan --vary queues.NAME.capacity and spn sweep --grid queues.NAME.capacity build their
configurations this way, so that capacities still sum to 1 as YARN requires.
"""

import pytest

from spn.description.model import Queue
from spn.description.shares import raised_maxima, rebalance, share_grid, share_positions
from spn.exceptions import ModelError


def queues(*items):
    return {"queues": [dict(zip(("name", "capacity", "max_capacity"), item)) for item in items]}


def test_two_queues_the_other_gets_exactly_the_rest():
    data = rebalance(queues(("etl", 0.6), ("bi", 0.3)), (1,))
    assert data["queues"][0]["capacity"] == 1 - 0.3


def test_several_others_keep_their_proportions_and_a_low_maximum_is_raised():
    data = rebalance(queues(("a", 0.5, 0.6), ("b", 0.3), ("c", 0.1)), (2,))      # a and b share 0.9 as 5 : 3
    a, b, c = data["queues"]
    assert (a["capacity"], b["capacity"]) == (pytest.approx(0.5625), pytest.approx(0.3375))
    assert a["max_capacity"] == 0.6                                             # 0.5625 is under it
    data = rebalance(queues(("a", 0.5, 0.6), ("b", 0.3), ("c", 0.02)), (2,))     # a: 0.6125, above 0.6
    assert data["queues"][0]["max_capacity"] == data["queues"][0]["capacity"] == pytest.approx(0.6125)
    before = (Queue("a", 0.5, 0.6), Queue("b", 0.3), Queue("c", 0.2))
    after = [Queue(q["name"], q["capacity"], q.get("max_capacity", 1.0)) for q in data["queues"]]
    assert raised_maxima(before, after) == ["a.max_capacity raised from 0.6 to 0.6125 (its capacity)"]


def test_a_pinned_maximum_is_not_raised_and_every_capacity_set_rebalances_nothing():
    data = rebalance(queues(("etl", 0.6, 0.7), ("bi", 0.2)), (1,), pinned=(0,))
    assert data["queues"][0] == {"name": "etl", "capacity": 0.8, "max_capacity": 0.7}   # left for validation
    both = queues(("etl", 0.6), ("bi", 0.6))
    assert rebalance(both, (0, 1)) == queues(("etl", 0.6), ("bi", 0.6))


def test_a_share_leaving_nothing_is_refused_naming_the_queues():
    with pytest.raises(ModelError, match="bi given 1 of the cluster, leaving nothing for etl"):
        rebalance(queues(("etl", 0.6), ("bi", 1.0)), (1,))


def test_positions_by_name_or_index_and_the_grid_of_whole_containers():
    data = queues(("etl", 0.6), ("bi", 0.4))
    assert share_positions(data, ["queues.bi.capacity", "queues.0.max_capacity", "cluster.containers"]) == ((1,), (0,))
    assert share_grid(0.05, 0.95, 16)[0] == 1 / 16 and share_grid(0.51, 0.55, 16) == ()
    assert share_grid(0.3, 0.8, 4) == (0.5, 0.75)
