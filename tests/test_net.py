"""The net formalism: validation reports every problem, semantics of arcs and gates."""

import numpy as np
import pytest

from spn.exceptions import ModelError
from spn.net.erlang import expand_erlang
from spn.net import Erlang, InputGate, InstantActivity, Net, OutputGate, Place, TimedActivity


def test_validation_reports_every_problem_at_once():
    with pytest.raises(ModelError) as err:
        Net([Place("a", -1), Place("a"), Place("b", 1.5)], [
            TimedActivity("t", inputs={"nowhere": 1}, outputs={"a": 0}, rate=-2.0),
            TimedActivity("u", inputs={"a": 1}, rate=0.0),
            TimedActivity("v", inputs={"a": 1}, erlang=Erlang(0, -1.0)),
            InstantActivity("w", inputs={"a": 1}, weight=0.0),
            TimedActivity("x", inputs={"a": 1, "b": 1}, rate=1.0, servers="infinite"),
        ])
    problems = err.value.problems
    text = str(err.value)
    assert "'a'" in text and "declared twice" in text
    assert any("initial tokens" in p and "-1" in p for p in problems)
    assert any("unknown place 'nowhere'" in p for p in problems)
    assert any("multiplicity" in p for p in problems)
    assert any("'t'" in p and "rate must be > 0" in p for p in problems)
    assert any("'u'" in p and "rate must be > 0" in p for p in problems)
    assert any("Erlang shape" in p for p in problems) and any("Erlang mean" in p for p in problems)
    assert any("weight must be > 0" in p for p in problems)
    assert any("exactly one input place" in p for p in problems)
    assert len(problems) >= 10


def test_gate_naming_an_unknown_place_is_reported_with_its_activity():
    with pytest.raises(ModelError, match=r"'start'.*unknown place 'PFX'"):
        Net([Place("PFM", 0)], [
            InstantActivity("start", input_gates=[InputGate(lambda m: m["PFX"] >= 1)]),
        ])


def test_firing_order_is_arcs_then_gates():
    """Input arcs, input-gate function, output arcs, output-gate function — in that order."""
    net = Net([Place("a", 3), Place("b", 0)], [
        TimedActivity("t", inputs={"a": 1}, outputs={"b": 1}, rate=1.0,
                      input_gates=[InputGate(lambda m: m["a"] >= 2,
                                             lambda m: m.__setitem__("b", m["a"] * 10))],
                      output_gates=[OutputGate(lambda m: m.__setitem__("a", m["b"] - 1))]),
    ])
    m = np.array([[3, 0], [1, 0]], dtype=np.int32)
    t = net.activity("t")
    assert net.enabled(t, m).tolist() == [True, False]
    # a: 3 -> 2 (arc); b := 20 (input gate); b -> 21 (arc); a := 20 (output gate)
    assert net.fire(t, m[:1]).tolist() == [[20, 21]]


def test_inhibitor_arc_disables_at_its_bound():
    net = Net([Place("q", 0)], [TimedActivity("arrive", outputs={"q": 1}, inhibitors={"q": 2}, rate=1.0)])
    m = np.array([[0], [1], [2], [3]], dtype=np.int32)
    assert net.enabled(net.activity("arrive"), m).tolist() == [True, True, False, False]


def test_firing_into_negative_tokens_is_an_error_naming_the_activity():
    net = Net([Place("a", 1)], [
        TimedActivity("t", inputs={"a": 1}, rate=1.0,
                      output_gates=[OutputGate(lambda m: m.__setitem__("a", m["a"] - 5))]),
    ])
    with pytest.raises(ModelError, match=r"'t' makes a place negative"):
        net.fire(net.activity("t"), net.initial_marking()[None, :])


def test_marking_dependent_rate_is_evaluated_per_marking():
    net = Net([Place("q", 2)], [
        TimedActivity("serve", inputs={"q": 1}, rate=lambda m: 1.0 + m["q"]),
    ])
    m = np.array([[1], [2], [5]], dtype=np.int32)
    assert net.rate(net.activity("serve"), m).tolist() == [2.0, 3.0, 6.0]


def test_negative_marking_dependent_rate_is_reported():
    net = Net([Place("q", 2)], [TimedActivity("serve", inputs={"q": 1}, rate=lambda m: 1.0 - m["q"])])
    with pytest.raises(ModelError, match="'serve' has rate"):
        net.rate(net.activity("serve"), np.array([[2]], dtype=np.int32))


def test_erlang_expansion_builds_a_chain_of_stages():
    net = Net([Place("wait", 2), Place("run"), Place("done"), Place("pool", 1)], [
        InstantActivity("grab", inputs={"wait": 1, "pool": 1}, outputs={"run": 1}),
        TimedActivity("task", inputs={"run": 1}, outputs={"done": 1, "pool": 1},
                      erlang=Erlang(3, 6.0), servers="infinite"),
        InstantActivity("collect", input_gates=[InputGate(lambda m: m["run"] + m["done"] >= 5)]),
    ])
    flat = expand_erlang(net)
    assert [p.name for p in flat.places] == ["wait", "run_1", "run_2", "run_3", "done", "pool"]
    assert [a.name for a in flat.timed] == ["task_1", "task_2", "task_3"]
    assert all(a.rate == 0.5 and a.servers == "infinite" for a in flat.timed)
    assert flat.activity("grab").outputs == {"run_1": 1}
    assert flat.activity("task") is flat.activity("task_3")
    assert flat.activity("task_3").outputs == {"done": 1, "pool": 1}
    # a gate reading the split place sees the sum of its stages
    m = np.array([[0, 1, 1, 1, 2, 0]], dtype=np.int32)
    assert flat.enabled(flat.activity("collect"), m).tolist() == [True]


def test_erlang_needs_a_private_input_place_and_infinite_servers():
    with pytest.raises(ModelError, match="servers='infinite'"):
        expand_erlang(Net([Place("a", 1)], [TimedActivity("t", inputs={"a": 1}, erlang=Erlang(2, 1.0))]))
    with pytest.raises(ModelError, match="consumes from 'a'"):
        expand_erlang(Net([Place("a", 1)], [
            TimedActivity("t", inputs={"a": 1}, erlang=Erlang(2, 1.0), servers="infinite"),
            TimedActivity("u", inputs={"a": 1}, rate=1.0),
        ]))


def test_shape_one_erlang_is_plain_exponential():
    net = Net([Place("a", 1)], [TimedActivity("t", inputs={"a": 1}, erlang=Erlang(1, 4.0))])
    flat = expand_erlang(net)
    assert flat.activity("t").rate == 0.25 and flat.activity("t").erlang is None


def test_inhibitor_on_a_split_place_counts_every_stage():
    net = Net([Place("run", 0), Place("src", 3)], [
        TimedActivity("admit", inputs={"src": 1}, outputs={"run": 1}, inhibitors={"run": 2}, rate=1.0),
        TimedActivity("task", inputs={"run": 1}, outputs={"src": 1}, erlang=Erlang(2, 1.0), servers="infinite"),
    ])
    flat = expand_erlang(net)
    admit = flat.activity("admit")
    m = np.array([[1, 0, 2], [0, 1, 2], [1, 1, 1]], dtype=np.int32)   # run_1, run_2, src
    assert [p.name for p in flat.places] == ["run_1", "run_2", "src"]
    assert flat.enabled(admit, m).tolist() == [True, True, False]
