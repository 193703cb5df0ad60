"""Cross-check with the Storm model checker: the same nets, solved by an independent tool.

Storm gets each net as a GreatSPN .pnpro file and computes long-run averages in exact
rational arithmetic; state counts and expected tokens must agree.
"""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("stormpy")

from spn.description import parse_description  # noqa: E402
from spn.io.storm import storm_expected_tokens  # noqa: E402
from spn.measures import expected_tokens  # noqa: E402
from spn.models.dag import build  # noqa: E402
from spn.models.jobs import build_jobs  # noqa: E402
from spn.net import InstantActivity, Net, Place, TimedActivity  # noqa: E402
from spn.solvers import steady_state  # noqa: E402
from spn.statespace import explore  # noqa: E402


def app(phases, edges, users, containers, think=4.0, policy=None):
    """The paper's net (policy None: the gate, with the paper's pooled tasks), else the job-identity net."""
    desc = parse_description({
        "name": "x", "workload": {"users": users, "think_time": think}, "cluster": {"containers": containers},
        "scheduler": {"policy": policy or "gate"}, "phases": phases, "edges": edges})
    return build(desc).net if policy is None else build_jobs(desc, policy=policy).net


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
    # the job-identity nets: one slot of places per job, moved up when an older job ends
    "jobs-fifo-erlang": app([{"name": "m", "tasks": 2, "task_time": 1.0, "shape": 2},
                             {"name": "r", "tasks": 2, "task_time": 2.0}], [["m", "r"]], users=2, containers=2,
                            policy="fifo"),
    "jobs-gate-fork-join": app([{"name": "a", "tasks": 2, "task_time": 1.0},
                                {"name": "b", "tasks": 1, "task_time": 1.5, "priority": 1},
                                {"name": "c", "tasks": 1, "task_time": 0.5}],
                               [["a", "c"], ["b", "c"]], users=2, containers=2, policy="gate"),
}


def spn_expected_tokens(net):
    """spn's expected tokens of the net's first four places (solved directly), and their bounds."""
    ss = explore(net)
    pi = steady_state(ss.generator(), method="direct", rtol=1e-14).x
    watched = [p.name for p in net.places][:4]
    bounds = {p: int(ss.tokens(p).max()) for p in watched}
    return ss, {p: expected_tokens(ss, pi, p) for p in watched}, bounds


# the mapreduce net takes Storm minutes: marked slow, the other nets check the same in seconds
@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n == "mapreduce" else n for n in NETS])
def test_storm_agrees_on_states_and_expected_tokens(name):
    ss, expected, bounds = spn_expected_tokens(NETS[name])
    storm = storm_expected_tokens(NETS[name], bounds, exact=True)
    assert storm.markovian_states == ss.n_states
    for p, value in expected.items():
        assert storm.expected_tokens[p] == pytest.approx(value, rel=1e-10, abs=1e-12)


@pytest.mark.parametrize("name", list(NETS))
def test_storm_in_floating_point_agrees_to_1e_8_at_its_tightened_precision(name):
    # Storm's value iteration stops at --lra:precision (1e-6 by default, which differed
    # from spn by up to 4e-7); storm_expected_tokens sets it to 1e-12
    _, expected, bounds = spn_expected_tokens(NETS[name])
    storm = storm_expected_tokens(NETS[name], bounds)
    for p, value in expected.items():
        assert storm.expected_tokens[p] == pytest.approx(value, rel=1e-8, abs=1e-12)


def test_storm_at_a_looser_precision_moves_away_from_the_exact_answer():
    # the setting must really reach Storm; Storm's settings are fixed once per process,
    # so the loose run goes to a fresh interpreter
    net = NETS["mapreduce"]
    ss = explore(net)
    exact = expected_tokens(ss, steady_state(ss.generator(), method="direct", rtol=1e-14).x, "PJ")
    bound = {"PJ": int(ss.tokens("PJ").max())}
    tight = storm_expected_tokens(net, bound).expected_tokens["PJ"]
    script = textwrap.dedent("""
        import sys
        sys.path.insert(0, "tests")
        from test_storm import NETS
        from spn.io.storm import storm_expected_tokens
        print(repr(storm_expected_tokens(NETS["mapreduce"], %r, precision=1e-4).expected_tokens["PJ"]))
    """ % bound)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parents[1], check=True)
    loose = float(done.stdout.split()[-1])
    assert abs(tight - exact) < 1e-10 < abs(loose - exact)
    with pytest.raises(ValueError, match="once per process"):
        storm_expected_tokens(net, bound, precision=1e-4)
