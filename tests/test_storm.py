"""Cross-check with the Storm model checker: the same nets, solved by an independent tool.

Storm gets each net as a GreatSPN .pnpro file and computes long-run averages in exact
rational arithmetic; state counts and expected tokens must agree.
"""

import pytest

pytest.importorskip("stormpy")

from spn.io.description import parse_description  # noqa: E402
from spn.io.storm import storm_expected_tokens  # noqa: E402
from spn.measures import expected_tokens  # noqa: E402
from spn.models.dag import build  # noqa: E402
from spn.net import InstantActivity, Net, Place, TimedActivity  # noqa: E402
from spn.solvers import steady_state  # noqa: E402
from spn.statespace import explore  # noqa: E402


def app(phases, edges, users, containers, think=4.0):
    return build(parse_description({
        "name": "x", "workload": {"users": users, "think_time": think}, "cluster": {"containers": containers},
        "phases": phases, "edges": edges})).net


NETS = {
    "choice": Net([Place("idle", 3), Place("ready"), Place("a"), Place("b")], [
        TimedActivity("arrive", inputs={"idle": 1}, outputs={"ready": 1}, rate=1.0, servers="infinite"),
        InstantActivity("to_a", inputs={"ready": 1}, outputs={"a": 1}, weight=1.0),
        InstantActivity("to_b", inputs={"ready": 1}, outputs={"b": 1}, weight=3.0, inhibitors={"b": 2}),
        TimedActivity("serve_a", inputs={"a": 1}, outputs={"idle": 1}, rate=2.0),
        TimedActivity("serve_b", inputs={"b": 1}, outputs={"idle": 1}, rate=1.0, servers=2)]),
    "mapreduce": app([{"name": "map", "tasks": 4, "task_time": 2.0}, {"name": "reduce", "tasks": 4, "task_time": 3.0}],
                     [["map", "reduce"]], users=3, containers=4, think=10.0),
    "erlang-chain": app([{"name": "m", "tasks": 3, "task_time": 1.0, "shape": 2},
                         {"name": "r", "tasks": 2, "task_time": 2.0, "shape": 3}], [["m", "r"]], users=2, containers=2),
    "fork-join-priority": app([{"name": "a", "tasks": 2, "task_time": 1.0},
                               {"name": "b", "tasks": 2, "task_time": 1.5, "priority": 1},
                               {"name": "c", "tasks": 1, "task_time": 0.5}],
                              [["a", "c"], ["b", "c"]], users=2, containers=2),
}


@pytest.mark.parametrize("name", list(NETS))
def test_storm_agrees_on_states_and_expected_tokens(name):
    net = NETS[name]
    ss = explore(net)
    pi = steady_state(ss.generator(), method="direct", rtol=1e-14).x
    watched = [p.name for p in net.places][:4]
    bounds = {p: int(ss.tokens(p).max()) for p in watched}
    storm = storm_expected_tokens(net, bounds, exact=True)
    assert storm.markovian_states == ss.n_states
    for p in watched:
        assert storm.expected_tokens[p] == pytest.approx(expected_tokens(ss, pi, p), rel=1e-10, abs=1e-12)
