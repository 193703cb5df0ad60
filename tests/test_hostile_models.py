"""Hostile model files, nets and overrides: each is refused cleanly, or solved.

A clean refusal (tests/hostile.py): exit status 2, one ``spn: error:`` line naming the
file, the field or the line and what was expected, no traceback, less than 1 GB of
address space and no hang. The first part runs the command as a user would, one
process per case; the hypothesis part calls :func:`spn.cli.main` in this process
(a process per example would be too slow), under the same memory bound.
"""

from __future__ import annotations

import json
import os
import random

import numpy as np
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hostile import ROOT, assert_refused, memory_headroom, run_spn
from spn.cli import main
from spn.exceptions import ModelError
from spn.limits import DESCRIPTION_BYTES, MAX_SHAPE, NET_BYTES
from spn.net import Erlang

MODEL = ROOT / "models" / "mapreduce.yaml"


def description(**changes) -> dict:
    data = yaml.safe_load(MODEL.read_text())
    data.update(changes)
    return data


def write(path, data) -> str:
    path.write_text(yaml.safe_dump(data) if path.suffix != ".json" else __import__("json").dumps(data))
    return str(path)


def pnml(places: str, transitions: str = "", arcs: str = "") -> str:
    return f"<pnml><net id='n'>{places}{transitions}{arcs}</net></pnml>"


def place(name, tokens=0):
    return f"<place id='{name}'><initialMarking><value>Default,{tokens}</value></initialMarking></place>"


def transition(name, timed=True, rate=1.0):
    return (f"<transition id='{name}'><rate><value>{rate}</value></rate>"
            f"<timed><value>{'true' if timed else 'false'}</value></timed></transition>")


def arc(source, target, weight=1):
    return (f"<arc id='{source}-{target}' source='{source}' target='{target}'>"
            f"<inscription><value>Default,{weight}</value></inscription></arc>")


# --------------------------------------------------------------------------
# Files that are not model files
# --------------------------------------------------------------------------


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/urandom"])
def test_a_device_is_refused_without_reading_it(device):
    assert_refused(run_spn("solve", device), device, "not a regular file")


@pytest.mark.parametrize("suffix", [".yaml", ".pnml"])
def test_a_named_pipe_is_refused_without_waiting_for_a_writer(tmp_path, suffix):
    fifo = tmp_path / f"model{suffix}"
    os.mkfifo(fifo)
    assert_refused(run_spn("solve", fifo), str(fifo), "not a regular file")


def test_a_directory_is_refused(tmp_path):
    assert_refused(run_spn("solve", tmp_path), str(tmp_path), "is a directory")


@pytest.mark.parametrize("suffix, size", [(".yaml", DESCRIPTION_BYTES + 1), (".pnml", NET_BYTES + 1)])
def test_a_huge_file_is_refused_by_its_size(tmp_path, suffix, size):
    path = tmp_path / f"huge{suffix}"
    with open(path, "wb") as file:          # sparse: nothing is written, the size is what counts
        file.truncate(size)
    assert_refused(run_spn("solve", path), str(path), "bytes at most")


def test_random_bytes_are_refused_as_text(tmp_path):
    path = tmp_path / "noise.yaml"
    path.write_bytes(random.Random(7).randbytes(4096))
    assert_refused(run_spn("solve", path), str(path), "not UTF-8")


# --------------------------------------------------------------------------
# YAML and JSON built to exhaust the reader
# --------------------------------------------------------------------------

BILLION_LAUGHS = "a: &a [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n" + "".join(
    f"{b}: &{b} [{', '.join([f'*{a}'] * 9)}]\n" for a, b in zip("abcdefgh", "bcdefghi"))


@pytest.mark.parametrize("name, text, words", [
    ("laughs.yaml", BILLION_LAUGHS, ["laughs.yaml:", "values (aliases expanded)"]),
    ("aliases.yaml", "a: &a 1\nb: [" + ", ".join(["*a"] * 200) + "]\n", ["aliases.yaml:2:", "more than 100 aliases"]),
    ("recursive.yaml", "name: &n [*n]\n", ["recursive.yaml:1:", "recursive alias *n"]),
    ("deep.yaml", "[" * 100 + "]" * 100, ["deep.yaml:1:65:", "nested deeper than 64 levels"]),
    # libyaml >= 0.2.6 (PyYAML 6.0.4 wheels) stops at 1,000 levels in its scanner, before spn's
    # composer sees level 65: either refusal is one line at the file's first line
    ("deeper.yaml", "[" * 100_000 + "]" * 100_000, ["deeper.yaml:1:", "nest"]),
    ("deep.json", "[" * 100_000 + "]" * 100_000, ["deep.json:1:65:", "nested deeper than 64 levels"]),
    ("listkey.yaml", "? [1, 2]\n: 3\n", ["listkey.yaml:1:3:", "a key cannot be a list"]),
    ("mapkey.yaml", "? {a: 1}\n: 3\n", ["mapkey.yaml:1:3:", "a key cannot be a mapping"]),
    ("digits.json", '{"name": ' + "9" * 5000 + "}", ["digits.json", "an integer of 5,000 digits"]),
    ("date.yaml", "name: 2020-13-45\n", ["date.yaml:1:7:", "month must be in 1..12"]),
])
def test_a_file_built_to_exhaust_the_reader_is_refused(tmp_path, name, text, words):
    path = tmp_path / name
    path.write_text(text)
    assert_refused(run_spn("solve", path), *words)


# --------------------------------------------------------------------------
# Numbers too large for the engines
# --------------------------------------------------------------------------


@pytest.mark.parametrize("field, value, words", [
    ("tasks", 1e30, ["phases[0] (map).tasks: expected an integer <= 10,000,000, got 1e+30"]),
    ("tasks", 2**63, ["phases[0] (map).tasks: expected an integer <= 10,000,000, got 9223372036854775808"]),
    ("shape", 1_000_000, ["phases[0] (map).shape: expected an integer <= 1,000, got 1000000"]),
    ("task_time", 1e-30, ["phases[0] (map).task_time: expected a number of seconds in [1e-06, 1e+09]"]),
    ("task_time", 1e300, ["phases[0] (map).task_time: expected a number of seconds in [1e-06, 1e+09]"]),
    ("priority", 1e300, ["phases[0] (map).priority: expected a number in [-1e+06, 1e+06]"]),
])
def test_a_phase_number_past_its_bound_is_refused(tmp_path, field, value, words):
    data = description()
    data["phases"][0][field] = value
    path = write(tmp_path / "m.yaml", data)
    assert_refused(run_spn("solve", path), path, *words)


@pytest.mark.parametrize("setting, words", [
    ("phases.map.tasks=1e30", ["phases[0] (map).tasks", "<= 10,000,000"]),
    ("workload.users=2**63", ["workload.users: expected an integer >= 1", '"2**63"']),
    ("workload.users=9223372036854775808", ["workload.users: expected an integer <= 10,000,000"]),
    ("workload.think_time=1e-300", ["workload.think_time: expected a number of seconds"]),
    ("cluster.containers=.inf", ["cluster.containers"]),
    ("phases.map.shape=1000000", ["phases[0] (map).shape: expected an integer <= 1,000"]),
    ("phases.²=1", ["--set phases.²=1", "unknown phase '²'"]),
    ("phases." + "9" * 5000 + ".tasks=1", ["--set phases.999", "unknown phase"]),
    ("a" + ".a" * 100 + "=1", ["--set a.a.a", "more than a description's 64 levels"]),
])
def test_an_override_past_a_bound_is_refused(setting, words):
    assert_refused(run_spn("solve", MODEL, "--set", setting), *words)


def test_an_erlang_shape_past_the_bound_is_refused_before_anything_is_allocated():
    with pytest.raises(ModelError, match=f"more than {MAX_SHAPE:,}"):
        Erlang(10**6, 1.0)


def test_a_pnml_marking_past_the_bound_is_refused(tmp_path):
    path = tmp_path / "big.pnml"
    path.write_text(pnml(place("p", 10**30)))
    assert_refused(run_spn("solve", path), "place 'p' initial marking", "more than 10,000,000")


def test_a_pnml_rate_whose_ratios_would_overflow_is_refused(tmp_path):
    path = tmp_path / "fast.pnml"
    path.write_text(pnml(place("p", 1), transition("t", rate=1e300), arc("p", "t") + arc("t", "p")))
    assert_refused(run_spn("solve", path), "activity 't': rate 1e+300 is outside [1e-12, 1e+12]")


# --------------------------------------------------------------------------
# Nets that would explore forever
# --------------------------------------------------------------------------


def test_immediate_transitions_that_produce_tokens_forever_are_a_timeless_trap(tmp_path):
    path = tmp_path / "grow.pnml"
    path.write_text(pnml(place("P", 1) + place("Q"), transition("i", timed=False),
                         arc("P", "i") + arc("i", "P") + arc("i", "Q")))
    assert_refused(run_spn("solve", path), "timeless trap", "'i' would fire forever", "tokens grow")


def test_immediate_transitions_that_take_turns_growing_tokens_are_a_timeless_trap(tmp_path):
    path = tmp_path / "turns.pnml"
    path.write_text(pnml(place("P", 1) + place("Q") + place("R"),
                         transition("i1", timed=False) + transition("i2", timed=False),
                         arc("P", "i1") + arc("i1", "Q") + arc("Q", "i2") + arc("i2", "P") + arc("i2", "R")))
    assert_refused(run_spn("solve", path), "timeless trap", "['i1', 'i2']", "more than 10,000 rounds")


def test_a_timed_transition_that_adds_tokens_without_end_stops_at_the_token_bound(tmp_path):
    path = tmp_path / "flood.pnml"
    path.write_text(pnml(place("P"), transition("t"), arc("t", "P", 10_000_000)))
    assert_refused(run_spn("solve", path, "--max-states", "100000000"), "place 'P' would hold",
                   "more than 1,073,741,824", "unbounded")


def test_a_pnml_net_without_places_is_refused(tmp_path):
    path = tmp_path / "empty.pnml"
    path.write_text(pnml("", transition("t")))
    assert_refused(run_spn("solve", path), str(path), "a net needs at least one place")


@pytest.mark.parametrize("name, text, words", [
    ("lol.pnml", '<?xml version="1.0"?><!DOCTYPE l [<!ENTITY l0 "lol">' + "".join(
        f'<!ENTITY l{i + 1} "{f"&l{i};" * 10}">' for i in range(9)) + "]><pnml><net id='n'>"
     "<place id='p'><initialMarking><value>&l9;</value></initialMarking></place></net></pnml>",
     ["lol.pnml: not well-formed XML", "amplification"]),
    ("flood.pnml", "<pnml><net id='n'>" + "<a/>" * 1_100_000 + "</net></pnml>",
     ["flood.pnml: more than 1,000,000 XML elements"]),
])
def test_xml_built_to_exhaust_the_reader_is_refused(tmp_path, name, text, words):
    path = tmp_path / name
    path.write_text(text)
    assert_refused(run_spn("solve", path), *words)


# --------------------------------------------------------------------------
# Large models: solved in reasonable time, or stopped before memory runs out
# --------------------------------------------------------------------------


@pytest.mark.slow   # a 3,000-phase model solved in a fresh process (up to a minute)
def test_a_description_of_3000_phases_is_solved(tmp_path):
    data = description(phases=[{"name": f"p{i}", "tasks": 1, "task_time": 1.0} for i in range(3000)],
                       workload={"users": 1, "think_time": 10.0})
    del data["edges"]
    # the NumPy engine explores this net at a few hundred states/s: the exact chain needs the time for it
    done = run_spn("solve", write(tmp_path / "long.yaml", data), "--json", "--max-seconds", "240", timeout=300)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    assert '"tangible_states": 3001' in done.stdout.decode()


@pytest.mark.slow   # exploration stops at its share of the budget, then a simulation of 3,000-task jobs
def test_several_users_of_a_3000_phase_job_are_answered_within_the_budget(tmp_path):
    data = description(phases=[{"name": f"p{i}", "tasks": 1, "task_time": 1.0} for i in range(3000)],
                       workload={"users": 3, "think_time": 10.0})
    del data["edges"]
    done = run_spn("solve", write(tmp_path / "long.yaml", data), "--json", "--max-seconds", "30", timeout=300)
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    result = json.loads(done.stdout)
    # the gate admits one job at a time and two users always wait: the cluster never idles, X = 1/3000,
    # and R = N/X - Z = 8990 s (to the simulation's interval, and a per mille of start-up bias)
    assert result["method"] == "simulation"
    assert 0.999 * result["ci_low"] <= 8990 <= 1.001 * result["ci_high"]


def test_too_many_phases_are_refused_at_once(tmp_path):
    data = description(phases=[{"name": f"p{i}"} for i in range(20_000)])
    path = write(tmp_path / "many.json", data)
    assert_refused(run_spn("solve", path), path, "phases: 20,000 phases", "5,000 at most")


def test_a_large_max_states_stops_before_memory_runs_out():
    """7.4 million states need about 2.6 GB: under 1 GB the exact method's exploration stops, saying why."""
    line = assert_refused(run_spn(
        "solve", MODEL, "--set", "workload.users=50", "--set", "phases.map.tasks=500", "--set",
        "phases.reduce.tasks=500", "--set", "cluster.containers=300", "--max-states", "100000000",
        "--method", "exact"),
        "stopped exploring at", "tangible markings", "bytes per state", "available")
    assert "(--max-states)" not in line       # a larger limit would not help


def test_past_the_state_limit_the_exact_method_stops_at_once():
    assert_refused(run_spn("solve", ROOT / "models" / "spark-sq2.yaml", "--max-states", "1000", "--method", "exact",
                           timeout=30),
                   # the description's lower bound already puts the chain past it: nothing is explored
                   "at least 6.36e+04 tangible states, past max_states 1,000", "(--max-states)")


# --------------------------------------------------------------------------
# The engines' paths for large nets build the chains of the small ones
# --------------------------------------------------------------------------


#: the paths of large nets, taken by small ones: sparse token changes and enabling by sentinel
#: places, or enabling by blocks of markings; and hashing rows as wide ones
LARGE_NET_PATHS = [{"DENSE_ENTRIES": 0}, {"_COLUMN_TESTS": 0}]


@pytest.mark.parametrize("paths", LARGE_NET_PATHS)
def test_the_paths_of_large_nets_build_the_same_chain(monkeypatch, paths):
    from test_activity_table import mapreduce_dag, same_chain

    from spn.statespace import activity_table, explore, marking_index

    net = mapreduce_dag(3, 6, 6, 4)
    small = explore(net, engine="numpy")
    for name, value in paths.items():
        monkeypatch.setattr(activity_table, name, value)
    monkeypatch.setattr(marking_index, "_WIDE", 0)
    same_chain(explore(net, engine="numpy"), small)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data(), st.sampled_from(LARGE_NET_PATHS))
def test_the_paths_of_large_nets_agree_on_random_nets(data, paths):
    from test_activity_table import same_chain
    from test_properties import conservative_nets

    from spn.exceptions import StateSpaceLimitError, TimelessTrapError
    from spn.statespace import activity_table, explore, marking_index

    net = data.draw(conservative_nets())
    try:
        dense = explore(net, engine="numpy", max_states=300)
    except (TimelessTrapError, StateSpaceLimitError) as error:
        dense = type(error)
    with pytest.MonkeyPatch.context() as patch:
        for name, value in paths.items():
            patch.setattr(activity_table, name, value)
        patch.setattr(marking_index, "_WIDE", 0)
        if isinstance(dense, type):
            with pytest.raises(dense):
                explore(net, engine="numpy", max_states=300)
        else:
            same_chain(explore(net, engine="numpy", max_states=300), dense)


@given(st.lists(st.integers(0, 3), min_size=1, max_size=8), st.data())
def test_rivals_answer_as_the_whole_matrix_would(priorities, data):
    from spn.statespace.activity_table import Rivals

    p = np.array(priorities, dtype=float)
    matrix = (p[None, :] >= p[:, None]) & ~np.eye(len(p), dtype=bool)
    marked = np.array(data.draw(st.lists(st.booleans(), min_size=len(p), max_size=len(p))))
    acts = np.array(data.draw(st.lists(st.integers(0, len(p) - 1), max_size=5)), dtype=np.intp)
    assert (Rivals(p)[acts] == matrix[acts]).all()
    assert (Rivals(p).any_of(marked) == (matrix & marked[None, :]).any(axis=1)).all()


# --------------------------------------------------------------------------
# Generated inputs, in this process: exit 0 or a clean refusal, never a failure
# --------------------------------------------------------------------------


def run_in_process(capsys, *args) -> int:
    """``spn ARGS`` through :func:`spn.cli.main`; checks the exit status and the error line."""
    with memory_headroom():
        status = main([str(arg) for arg in args])
    err = capsys.readouterr().err
    assert status in (0, 2), err
    assert "Traceback" not in err and "spn: error: unexpected" not in err, err
    if status == 2:
        errors = [line for line in err.splitlines() if line.startswith("spn: error:")]
        assert len(errors) == 1, err
    return status


@pytest.fixture(autouse=True)
def _no_debug(monkeypatch):
    monkeypatch.delenv("SPN_DEBUG", raising=False)


HYPOTHESIS = dict(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


@settings(max_examples=150, **HYPOTHESIS)
@given(st.binary(max_size=2000), st.sampled_from([".yaml", ".json", ".pnml"]))
def test_random_bytes_as_a_model(tmp_path, capsys, content, suffix):
    path = tmp_path / f"random{suffix}"
    path.write_bytes(content)
    run_in_process(capsys, "solve", path, "--max-states", "2000")


keys = st.one_of(st.text(max_size=12), st.sampled_from(["name", "workload", "users", "think_time", "cluster",
                                                        "containers", "phases", "tasks", "task_time", "shape",
                                                        "edges", "priority", "distribution", "reference"]))
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(), st.text(max_size=20))
structures = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=5),
                                                           st.dictionaries(keys, inner, max_size=5)),
                          max_leaves=30)


@settings(max_examples=150, **HYPOTHESIS)
@given(structures, st.sampled_from([".yaml", ".json"]), st.data())
def test_random_structures_as_a_model(tmp_path, capsys, structure, suffix, data):
    """Random values at random places of a valid description, and random documents."""
    model = description()
    if isinstance(structure, dict) and data.draw(st.booleans()):
        model = structure
    else:
        node = model
        path = data.draw(st.lists(st.sampled_from(["workload", "cluster", "phases", 0, 1, "name", "tasks"]),
                                  min_size=1, max_size=3))
        for key in path[:-1]:
            if isinstance(node, dict) and key in node or isinstance(node, list) and isinstance(key, int) \
                    and key < len(node):
                node = node[key]
        if isinstance(node, dict) and isinstance(path[-1], str):
            node[path[-1]] = structure
        elif isinstance(node, list) and isinstance(path[-1], int) and path[-1] < len(node):
            node[path[-1]] = structure
    path = tmp_path / f"m{suffix}"
    try:
        text = yaml.safe_dump(model) if suffix == ".yaml" else __import__("json").dumps(model)
    except (ValueError, TypeError, OverflowError, yaml.YAMLError):
        return                      # not every generated value can be written in both formats
    path.write_text(text)
    run_in_process(capsys, "solve", path, "--max-states", "2000")


numbers = st.one_of(st.integers(-10, 10), st.integers(-2**80, 2**80), st.floats(),
                    st.sampled_from([0, 1, 2, 1e-300, 1e-7, 1e9, 1e10, 1e30, 2**63, 2**64, 10**7, 10**7 + 1]))
NUMERIC = ["workload.users", "workload.think_time", "cluster.containers", "phases.map.tasks",
           "phases.map.task_time", "phases.map.shape", "phases.reduce.tasks", "phases.reduce.task_time",
           "phases.reduce.shape", "phases.map.priority"]


@pytest.mark.slow   # 100 random models, each solved (minutes)
@settings(max_examples=100, **HYPOTHESIS)
@given(st.dictionaries(st.sampled_from(NUMERIC), numbers, min_size=1, max_size=4))
def test_random_numbers_in_every_numeric_field(tmp_path, capsys, values):
    model = description()
    for dotted, value in values.items():
        keys = dotted.split(".")
        node = model if keys[0] != "phases" else next(p for p in model["phases"] if p["name"] == keys[1])
        node = node if keys[0] == "phases" else node[keys[0]]
        node[keys[-1]] = value
    path = tmp_path / "numbers.yaml"
    path.write_text(yaml.safe_dump(model))
    run_in_process(capsys, "solve", path, "--max-states", "2000")


@pytest.mark.slow   # 150 random --set lists, each solved (minutes)
@settings(max_examples=150, **HYPOTHESIS)
@given(st.lists(st.one_of(
    st.text(max_size=40),
    st.builds(lambda path, value: f"{path}={value}",
              st.sampled_from(NUMERIC + ["name", "phases.0.name", "edges", "phases", "reference.x", "phases.9"]),
              st.one_of(st.text(max_size=30), numbers.map(str), st.sampled_from(["[1, 2]", "{a: 1}", "&a [*a]",
                                                                                  "null", "!!binary aGk="])))),
    min_size=1, max_size=3))
def test_random_overrides(capsys, settings_):
    args = ["solve", MODEL, "--max-states", "2000"]
    for setting in settings_:
        args += ["--set", setting]
    run_in_process(capsys, *args)


pnml_numbers = st.one_of(numbers.map(str), st.sampled_from(["", "x", "Default,", "Default,3", "inf", "nan",
                                                             "-1", "1e400", "9" * 30]))


@st.composite
def pnml_nets(draw):
    """Random PNML: places, timed and immediate transitions, arcs of every kind between any ids."""
    places = draw(st.lists(st.sampled_from("PQRS"), max_size=4, unique=True))
    transitions = draw(st.lists(st.sampled_from("tuvw"), max_size=4, unique=True))
    ids = places + transitions + ["nowhere"]
    text = "".join(place(p, draw(st.one_of(st.integers(0, 3), pnml_numbers))) for p in places)
    for t in transitions:
        text += (f"<transition id='{t}'><rate><value>{draw(pnml_numbers)}</value></rate>"
                 f"<timed><value>{draw(st.sampled_from(['true', 'false', '']))}</value></timed>"
                 f"<priority><value>{draw(st.sampled_from(['0', '1', '2', 'x']))}</value></priority></transition>")
    for i in range(draw(st.integers(0, 8))):
        kind = draw(st.sampled_from(["normal", "inhibition", "other"]))
        text += (f"<arc id='a{i}' source='{draw(st.sampled_from(ids))}' target='{draw(st.sampled_from(ids))}'>"
                 f"<inscription><value>Default,{draw(st.one_of(st.integers(1, 3), pnml_numbers))}</value>"
                 f"</inscription><type value='{kind}'/></arc>")
    return f"<pnml><net id='n'>{text}</net></pnml>"


@settings(max_examples=150, **HYPOTHESIS)
@given(pnml_nets())
def test_random_pnml_nets(tmp_path, capsys, text):
    path = tmp_path / "random.pnml"
    path.write_text(text)
    run_in_process(capsys, "solve", path, "--max-states", "2000")


# --------------------------------------------------------------------------
# Query classes and queues (models/two-queues.yaml)
# --------------------------------------------------------------------------

CLASSES_MODEL = ROOT / "models" / "two-queues.yaml"
SIMULATE_SMALL = ["--jobs", "20", "--replications", "2", "--rel-precision", "0", "--max-seconds", "5"]


def with_classes(**changes) -> dict:
    data = yaml.safe_load(CLASSES_MODEL.read_text())
    data.update(changes)
    return data


def a_class(name, phases=1) -> dict:
    return {"name": name, "users": 1, "think_time": 1.0, "queue": "etl",
            "phases": [{"name": f"p{i}", "tasks": 1, "task_time": 1.0} for i in range(phases)]}


@pytest.mark.parametrize("name, changes, words", [
    ("many.json", {"classes": [a_class(f"c{i}") for i in range(2000)]},
     ["classes: 2,000 classes, more than a description may have (1,000 at most)"]),
    ("long.json", {"classes": [a_class(f"c{i}", 2000) for i in range(3)]},
     ["classes: 6,000 phases in all, more than a description may have (5,000 at most)"]),
    ("text.yaml", {"classes": "etl"}, ['classes: expected a non-empty list of classes, got "etl"']),
    ("nan.yaml", {"queues": [{"name": "etl", "capacity": float("nan")}, {"name": "bi", "capacity": 0.4}]},
     ["queues[0] (etl).capacity: expected a finite number, got nan"]),
    ("huge.yaml", {"classes": [{**a_class("etl"), "users": 10**30}]},
     ["classes[0] (etl).users: expected an integer <= 10,000,000"]),
    ("both.yaml", {"workload": {"users": 1, "think_time": 1}, "phases": [{"name": "p", "tasks": 1, "task_time": 1}]},
     ["workload: not used with classes", "phases: not used with classes"]),
    ("nameless.yaml", {"queues": [{"capacity": 0.6}, {"name": "bi", "capacity": 0.4}]},
     ["queues[0].name: required (a non-empty string)"]),
    ("tiny-share.yaml", {"queues": [{"name": "etl", "capacity": 0.005, "max_capacity": 0.01},
                                    {"name": "bi", "capacity": 0.995}]},
     ["queue etl: max_capacity 0.01 of 16 containers is less than one container, so class etl's jobs could never run"]),
])
def test_a_hostile_class_or_queue_is_refused(tmp_path, name, changes, words):
    path = write(tmp_path / name, with_classes(**changes))
    assert_refused(run_spn("simulate", path, *SIMULATE_SMALL), *words)


def test_solve_names_a_queue_too_small_for_one_container_as_simulate_does(tmp_path):
    # the exact path used to end in "no job ever completes", which does not say why
    path = write(tmp_path / "tiny-share.yaml", with_classes(queues=[
        {"name": "etl", "capacity": 0.005, "max_capacity": 0.01}, {"name": "bi", "capacity": 0.995}]))
    assert_refused(run_spn("solve", path, "--method", "exact"),
                   "queue etl: max_capacity 0.01 of 16 containers is less than one container")


@pytest.mark.slow   # each valid example is simulated and solved (tens of minutes in all); refusals: just above
@settings(max_examples=60, **HYPOTHESIS)
@given(structures, st.data())
def test_random_structures_in_classes_and_queues(tmp_path, capsys, structure, data):
    """Random values at random places of the two-queue model: refused in one line, or simulated."""
    model = with_classes()
    node = model
    path = data.draw(st.lists(st.sampled_from(["classes", "queues", 0, 1, "name", "users", "queue", "capacity",
                                               "max_capacity", "policy", "phases", "tasks"]), min_size=1, max_size=4))
    for key in path[:-1]:
        if isinstance(node, dict) and key in node or isinstance(node, list) and isinstance(key, int) \
                and key < len(node):
            node = node[key]
    if isinstance(node, dict) and isinstance(path[-1], str):
        node[path[-1]] = structure
    elif isinstance(node, list) and isinstance(path[-1], int) and path[-1] < len(node):
        node[path[-1]] = structure
    try:
        text = yaml.safe_dump(model)
    except (ValueError, TypeError, OverflowError, yaml.YAMLError):
        return
    file = tmp_path / "m.yaml"
    file.write_text(text)
    run_in_process(capsys, "simulate", file, *SIMULATE_SMALL[:-2], "--max-seconds", "1")
    run_in_process(capsys, "solve", file)
