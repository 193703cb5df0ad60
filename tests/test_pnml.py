"""PNML and .pnpro: round trips, files written by Storm, and bad files."""

import numpy as np
import pytest

from spn.exceptions import ModelError
from spn.description import parse_description
from spn.io.pnml import from_pnml, identifier_names, load_pnml, to_pnml, to_pnpro
from spn.measures import expected_tokens, throughput
from spn.models.dag import build
from spn.net import Erlang, InputGate, InstantActivity, Net, Place, TimedActivity
from spn.solvers import steady_state
from spn.statespace import explore

DIAMOND = {   # the paper's net (spn.models.dag.build), so the paper's gate
    "name": "diamond", "workload": {"users": 2, "think_time": 3.0}, "cluster": {"containers": 2},
    "scheduler": {"policy": "gate"},
    "phases": [{"name": "a", "tasks": 2, "task_time": 1.0, "shape": 2},
               {"name": "b", "tasks": 1, "task_time": 2.0},
               {"name": "c", "tasks": 2, "task_time": 0.5, "priority": 1},
               {"name": "d", "tasks": 1, "task_time": 1.0}],
    "edges": [["a", "b"], ["a", "c"], ["b", "d"], ["c", "d"]],
}


def solved(net):
    ss = explore(net)
    return ss, steady_state(ss.generator(), method="direct").x


def test_round_trip_keeps_every_measure():
    net = build(parse_description(DIAMOND)).net
    back = from_pnml(to_pnml(net))
    ss, pi = solved(net)
    ss2, pi2 = solved(back)
    assert ss2.n_states == ss.n_states and ss2.n_transitions == ss.n_transitions
    flat = ss.net
    for p in flat.places:
        assert expected_tokens(ss2, pi2, p.name) == pytest.approx(expected_tokens(ss, pi, p.name), abs=1e-12)
    for a in flat.activities:
        assert throughput(ss2, pi2, a.name) == pytest.approx(throughput(ss, pi, a.name), abs=1e-12)


def test_what_pnml_carries():
    net = Net([Place("p", 3), Place("q")], [
        TimedActivity("t", inputs={"p": 2}, outputs={"q": 1}, inhibitors={"q": 4}, rate=0.25, servers=3),
        InstantActivity("i", inputs={"q": 1}, outputs={"p": 2}, priority=7.5, weight=2.5),
        InstantActivity("j", inputs={"q": 1}, outputs={"p": 2}, priority=-1),
    ])
    back = from_pnml(to_pnml(net))
    t, i, j = back.activity("t"), back.activity("i"), back.activity("j")
    assert (t.inputs, t.outputs, t.inhibitors, t.rate, t.servers) == ({"p": 2}, {"q": 1}, {"q": 4}, 0.25, 3)
    assert (i.weight, j.weight) == (2.5, 1.0)
    assert i.priority > j.priority                     # priorities become ranks 1..k, order kept
    assert back.places == (Place("p", 3), Place("q", 0))


def test_gates_and_erlang_in_export():
    gated = Net([Place("p", 1)], [InstantActivity("i", inputs={"p": 1},
                                                  input_gates=[InputGate(lambda m: m["p"] > 0)])])
    with pytest.raises(ModelError, match="gates, which are code"):
        to_pnml(gated)
    erl = Net([Place("p", 1), Place("q")], [
        TimedActivity("t", inputs={"p": 1}, outputs={"q": 1}, erlang=Erlang(3, 1.0), servers="infinite")])
    assert to_pnml(erl).count("<transition ") == 3        # written expanded


def test_reads_pnml_written_by_storm(tmp_path):
    gspn = pytest.importorskip("stormpy.gspn")
    b = gspn.GspnBuilder()
    b.set_gspn_name("storm-net")
    idle = b.add_place(capacity=None, initial_tokens=2, name="idle")
    busy = b.add_place(capacity=None, initial_tokens=0, name="busy")
    ready = b.add_place(capacity=None, initial_tokens=0, name="ready")
    arrive = b.add_timed_transition(0, 1.5, 1, "arrive")
    start = b.add_immediate_transition(1, 2.0, "start")
    serve = b.add_timed_transition(0, 3.0, 1, "serve")
    b.add_input_arc(idle, arrive, 1)
    b.add_output_arc(arrive, ready, 1)
    b.add_input_arc(ready, start, 1)
    b.add_inhibition_arc(busy, start, 2)
    b.add_output_arc(start, busy, 1)
    b.add_input_arc(busy, serve, 1)
    b.add_output_arc(serve, idle, 1)
    path = tmp_path / "storm.pnml"
    gspn.export_gspn_pnml_file(b.build_gspn(), str(path))
    net = load_pnml(path)
    assert net.name == "storm-net"
    assert sorted((p.name, p.tokens) for p in net.places) == [("busy", 0), ("idle", 2), ("ready", 0)]
    assert net.activity("arrive").rate == 1.5 and net.activity("arrive").servers == 1
    assert net.activity("start").weight == 2.0 and net.activity("start").inhibitors == {"busy": 2}
    ss = explore(net)
    assert ss.n_states == 3        # idle=2 | 1 busy | 2 busy (ready is vanishing)


@pytest.mark.parametrize("text,message", [
    ("<pnml><net id='x'><place id='p'/>", "not well-formed"),
    ("<foo/>", "not a PNML file"),
    ("<pnml><net id='x'><place id='p'/><transition id='t'><rate><value>-1</value></rate>"
     "<timed><value>true</value></timed></transition></net></pnml>", "rate must be > 0"),
    ("<pnml><net id='x'><place id='p'/><transition id='t'><timed><value>true</value></timed>"
     "</transition><arc id='a' source='p' target='nowhere'/></net></pnml>", "must join a place and a transition"),
    ("<pnml><net id='x'><place id='p'><initialMarking><value>Default,two</value></initialMarking>"
     "</place></net></pnml>", "is not a number"),
])
def test_bad_pnml_names_the_problem(text, message):
    with pytest.raises(ModelError, match=message):
        from_pnml(text, source="bad.pnml")


def test_identifier_names_and_pnpro():
    net = identifier_names(build(parse_description(DIAMOND)).net)
    assert all(p.name.isidentifier() for p in net.places)
    assert len({p.name for p in net.places}) == len(net.places)
    text = to_pnpro(net)
    assert 'nservers="Infinite"' in text and 'kind="INHIBITOR"' in text and 'type="IMM"' in text


def test_spn_solve_reads_a_pnml_file(tmp_path, capsys):
    import json

    from spn.cli import main
    path = tmp_path / "net.pnml"
    path.write_text(to_pnml(build(parse_description(DIAMOND)).net))
    assert main(["solve", str(path), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) >= {"tangible_states", "transitions", "solver", "timings", "places", "activities"}
    assert out["places"]["PJ"] + out["places"]["PWJ"] <= 2 + 1e-9
    assert np.isclose(out["activities"]["think.TAT"], out["activities"]["d.IAF"], rtol=1e-9)
    assert main(["solve", str(tmp_path / "none.pnml")]) == 2


@pytest.mark.parametrize("text, message", [
    ("<pnml><net id='x'><place id='p'/><transition id='t'/><transition id='t'/></net></pnml>",
     "transition 't' is declared twice"),
    ("<pnml><net id='x'><place id='p'/><transition id='t'><timed><value/></timed></transition></net></pnml>",
     None),
    ("<pnml><net id='x'/></pnml>", "a net needs at least one place"),
    ("<pnml><net id='x'><place id='p'><initialMarking><value>Default,99999999999</value></initialMarking>"
     "</place></net></pnml>", "99,999,999,999 is more than 10,000,000"),
])
def test_pnml_edge_cases(text, message):
    if message is None:
        assert from_pnml(text, source="x.pnml").activity("t").priority == 0
    else:
        with pytest.raises(ModelError, match=message):
            from_pnml(text, source="x.pnml")
