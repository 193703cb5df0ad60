"""Model descriptions: YAML/JSON files -> frozen dataclasses, every problem reported at once.

Each bad input must give a ModelError whose message is ONE line naming the
offending path and what was expected.
"""

import copy
import json
import math
from pathlib import Path

import jsonschema
import pytest

from spn.exceptions import ModelError
from spn.description import (
    Cluster,
    Description,
    Phase,
    Scheduler,
    Workload,
    apply_overrides,
    load_description,
    parse_description,
    schema,
)

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "models" / "mapreduce.yaml"


def example() -> dict:
    """The shipped example as a plain mapping (a fresh one per call)."""
    return {
        "name": "mapreduce",
        "framework": "mapreduce",
        "workload": {"users": 3, "think_time": 10.0},
        "cluster": {"containers": 4},
        "scheduler": {"policy": "gate"},
        "phases": [
            {"name": "map", "tasks": 4, "task_time": 2.0, "shape": 1},
            {"name": "reduce", "tasks": 4, "task_time": 3.0, "shape": 1},
        ],
        "edges": [["map", "reduce"]],
    }


def error_of(data, overrides=()) -> str:
    """The message of the ModelError that ``data`` must raise; checked to be one line."""
    with pytest.raises(ModelError) as info:
        parse_description(data, overrides)
    message = str(info.value)
    assert "\n" not in message
    assert message == "; ".join(info.value.problems)
    return message


def load_error(path, overrides=()) -> str:
    with pytest.raises(ModelError) as info:
        load_description(path, overrides)
    message = str(info.value)
    assert "\n" not in message
    return message


# --------------------------------------------------------------------------
# Good descriptions
# --------------------------------------------------------------------------


def test_the_shipped_example_loads_as_dataclasses():
    desc = load_description(EXAMPLE)

    assert desc == Description(
        name="mapreduce",
        framework="mapreduce",
        workload=Workload(users=3, think_time=10.0),
        cluster=Cluster(containers=4),
        scheduler=Scheduler(policy="gate"),     # the paper's gate, named in the file (the default is fifo)
        phases=(
            Phase(name="map", tasks=4, task_time=2.0, shape=1),
            Phase(name="reduce", tasks=4, task_time=3.0, shape=1),
        ),
        edges=(("map", "reduce"),),
    )
    assert desc.source == str(EXAMPLE)
    assert dict(desc.reference) == {}
    assert isinstance(desc.workload.users, int) and isinstance(desc.workload.think_time, float)


def test_the_example_matches_the_schema():
    import yaml

    jsonschema.Draft202012Validator(schema()).validate(yaml.safe_load(EXAMPLE.read_text()))


def test_a_json_file_gives_the_same_description(tmp_path):
    path = tmp_path / "mapreduce.json"
    path.write_text(json.dumps(example()))

    assert load_description(path) == load_description(EXAMPLE)


def test_yml_extension_is_yaml(tmp_path):
    path = tmp_path / "m.yml"
    path.write_text(EXAMPLE.read_text())

    assert load_description(path) == load_description(EXAMPLE)


def test_without_edges_the_phases_run_in_list_order():
    data = example()
    del data["edges"]
    data["phases"].append({"name": "output", "tasks": 1, "task_time": 1.0})

    assert parse_description(data).edges == (("map", "reduce"), ("reduce", "output"))


def test_defaults_of_optional_fields():
    data = example()
    del data["framework"]
    del data["phases"][0]["shape"]

    desc = parse_description(data)

    assert desc.framework is None
    assert desc.phases[0] == Phase("map", tasks=4, task_time=2.0, shape=1, distribution="erlang", priority=0.0)


def test_every_distribution_with_its_parameter():
    data = example()
    data["edges"] = [["map", "reduce"], ["reduce", "a"], ["a", "b"], ["b", "c"], ["c", "d"]]
    data["phases"] += [
        {"name": "a", "tasks": 1, "task_time": 1, "distribution": "deterministic"},
        {"name": "b", "tasks": 1, "task_time": 1, "distribution": "uniform", "spread": 0.5},
        {"name": "c", "tasks": 1, "task_time": 1, "distribution": "lognormal", "cv": 2},
        {"name": "d", "tasks": 1, "distribution": "empirical", "samples": [1, 2.5]},
    ]
    data["phases"][1].update(distribution="exponential", priority=2)

    a, b, c, d = parse_description(data).phases[2:]

    assert parse_description(data).phases[1].priority == 2.0
    assert (a.distribution, b.spread, c.cv, d.samples) == ("deterministic", 0.5, 2.0, (1.0, 2.5))
    assert d.task_time == 1.75                  # an empirical law's mean is its samples'


def test_an_empirical_task_time_must_be_its_samples_mean():
    # the simulators draw the samples: a task_time that disagrees would be ignored without a word
    data = example()
    data["phases"][0].update(task_time=5.0, distribution="empirical", samples=[1.0, 2.0, 3.0])
    with pytest.raises(ModelError, match=r"phases\[0\] \(map\).task_time: 5 s is not the mean of its samples "
                                         r"\(2 s\)"):
        parse_description(data)
    data["phases"][0]["task_time"] = 2.0001     # rounding, as spn fit --empirical writes it
    assert parse_description(data).phases[0].task_time == 2.0001
    data["phases"][1].pop("task_time")
    with pytest.raises(ModelError, match=r"phases\[1\] \(reduce\).task_time: required"):
        parse_description(data)


def test_reference_is_kept_read_only_and_ignored_by_equality():
    data = example()
    data["reference"] = {"measured_s": 14.2, "runs": [13.9, 14.5], "cluster": {"nodes": 4}}

    desc = parse_description(data)

    assert desc.reference["runs"] == (13.9, 14.5)
    with pytest.raises(TypeError):
        desc.reference["measured_s"] = 0  # type: ignore[index]
    with pytest.raises(TypeError):
        desc.reference["cluster"]["nodes"] = 0  # type: ignore[index]
    assert desc == parse_description(example())


def test_descriptions_are_frozen_and_hashable():
    desc = load_description(EXAMPLE)

    with pytest.raises(AttributeError):
        desc.name = "other"  # type: ignore[misc]
    assert hash(desc) == hash(load_description(EXAMPLE))


def test_parsing_does_not_modify_the_input():
    data = example()
    before = copy.deepcopy(data)

    parse_description(data, ["workload.users=7", "phases.map.shape=2"])

    assert data == before


# --------------------------------------------------------------------------
# Bad files
# --------------------------------------------------------------------------


def test_malformed_yaml_names_the_file_and_line(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text("name: x\nworkload:\n  users: 3\n  think_time: [1, 2\ncluster: {containers: 4}\n")

    message = load_error(path)

    assert message.startswith(f"{path}:")
    assert "invalid YAML" in message
    assert f"{path}:5:" in message  # where the parser noticed the unclosed list


def test_malformed_json_names_the_file_line_and_column(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text('{\n  "name": "x",\n  "workload": {"users": 3,}\n}\n')

    assert load_error(path).startswith(f"{path}:3:")


def test_duplicate_yaml_keys_are_an_error_not_silently_the_last(tmp_path):
    path = tmp_path / "dup.yaml"
    path.write_text("name: a\nname: b\n")

    message = load_error(path)

    assert f"{path}:2:" in message and "duplicate key 'name'" in message


@pytest.mark.parametrize("written, yaml_1_1", [("010", "octal (8)"), ("-010", "octal (-8)"), ("1:30", "base-60"),
                                               ("1:30.5", "base-60")])
def test_numbers_yaml_1_1_reads_otherwise_than_yaml_1_2_are_refused_not_silently_converted(tmp_path, written, yaml_1_1):
    # 010 is 8 and 1:30 is 90 to PyYAML, 10 and a string to YAML 1.2, JSON and a reader
    path = tmp_path / "ambiguous.yaml"
    path.write_text(EXAMPLE.read_text().replace("think_time: 10.0", f"think_time: {written}"))

    message = load_error(path)

    assert f"{path}:" in message and yaml_1_1 in message and "\n" not in message
    with pytest.raises(ModelError, match=yaml_1_1.replace("(", r"\(").replace(")", r"\)")):
        load_description(EXAMPLE, [f"cluster.containers={written}"])


def test_yaml_reads_exponent_notation_as_numbers(tmp_path):
    path = tmp_path / "exp.yaml"
    path.write_text(EXAMPLE.read_text().replace("think_time: 10.0", "think_time: 1e1"))

    assert load_description(path).workload.think_time == 10.0


def test_missing_file_is_named(tmp_path):
    path = tmp_path / "nosuch.yaml"

    assert load_error(path) == f"{path}: no such file"


@pytest.mark.parametrize(
    "text, expected",
    [
        ("", "got nothing"),
        ("- name: map\n", "got a list"),
        ("just words\n", "got a string"),
    ],
)
def test_top_level_must_be_a_mapping(tmp_path, text, expected):
    path = tmp_path / "m.yaml"
    path.write_text(text)

    message = load_error(path)

    assert "must be a mapping at the top level" in message and expected in message


def test_unknown_file_type(tmp_path):
    path = tmp_path / "m.txt"
    path.write_text("name: x\n")

    assert "expected .yaml, .yml or .json" in load_error(path)


def test_problems_name_the_file(tmp_path):
    path = tmp_path / "m.yaml"
    path.write_text(EXAMPLE.read_text().replace("containers: 4", "containers: -3"))

    assert load_error(path) == f"{path}: cluster.containers: expected an integer >= 1, got -3"


# --------------------------------------------------------------------------
# Bad values: each names its path and what was expected
# --------------------------------------------------------------------------


def without(key):
    return lambda data: data.pop(key)


def setting(path, value):
    """A change to example(): ``setting("phases.1.tasks", 0)``."""

    def change(data):
        *parents, last = path.split(".")
        node = data
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[int(last) if isinstance(node, list) else last] = value

    return change


@pytest.mark.parametrize(
    "change, expected",
    [
        (without("phases"), "phases: required (a non-empty list of phases)"),
        (setting("phases", []), "phases: expected a non-empty list of phases, got []"),
        (setting("phases.1.tasks", 0), "phases[1] (reduce).tasks: expected an integer >= 1, got 0"),
        (setting("phases.1.tasks", 2.5), "phases[1] (reduce).tasks: expected an integer >= 1, got 2.5"),
        (setting("phases.0.task_time", -1), "phases[0] (map).task_time: expected a number > 0, got -1"),
        (setting("phases.0.task_time", "2s"), 'phases[0] (map).task_time: expected a number > 0, got "2s"'),
        (setting("phases.0.task_time", math.nan), "phases[0] (map).task_time: expected a finite number, got nan"),
        (setting("phases.0.shape", 0), "phases[0] (map).shape: expected an integer >= 1, got 0"),
        (setting("workload.users", True), "workload.users: expected an integer >= 1, got true"),
        (setting("workload.think_time", 0), "workload.think_time: expected a number > 0, got 0"),
        (setting("cluster.containers", -3), "cluster.containers: expected an integer >= 1, got -3"),
        (setting("cluster", 4), "cluster: expected a mapping, got 4"),
        (setting("name", ""), 'name: expected a non-empty string, got ""'),
        (setting("framework", "flink"), 'framework: expected one of: mapreduce, tez, spark, got "flink"'),
        (setting("edges", [["map"]]), 'edges[0]: expected a pair of non-empty strings, got ["map"]'),
        (lambda data: data["workload"].pop("users"), "workload.users: required (an integer >= 1)"),
        (setting("framwork", "spark"), "framwork: unknown key (known keys: name, framework,"),
        (setting("framwork", "spark"), "did you mean 'framework'?"),
        (setting("phases.0.taks", 3), "phases[0] (map).taks: unknown key (known keys: name, tasks,"),
        (setting("workload.userz", 3), "workload.userz: unknown key (known keys: users, think_time; did you mean 'users'?)"),
    ],
)
def test_a_bad_value_is_reported_with_its_path(change, expected):
    data = example()
    change(data)

    assert expected in error_of(data)


@pytest.mark.parametrize(
    "phase, expected",
    [
        ({"distribution": "uniform"}, "phases[0] (map): distribution 'uniform' needs spread"),
        ({"distribution": "uniform", "spread": 1.5}, "phases[0] (map).spread: expected a number in (0, 1], got 1.5"),
        ({"distribution": "lognormal"}, "phases[0] (map): distribution 'lognormal' needs cv"),
        ({"distribution": "lognormal", "cv": 0}, "phases[0] (map).cv: expected a number > 0, got 0"),
        ({"distribution": "empirical"}, "phases[0] (map): distribution 'empirical' needs samples"),
        ({"distribution": "empirical", "samples": []}, "phases[0] (map).samples: expected a non-empty list of numbers > 0, got []"),
        ({"distribution": "empirical", "samples": [1, -2]}, "phases[0] (map).samples[1]: expected a number > 0, got -2"),
        ({"distribution": "exponential", "shape": 3}, "phases[0] (map).shape: distribution 'exponential' has shape 1 (or no shape), got 3"),
        ({"distribution": "deterministic", "shape": 3}, "phases[0] (map).shape: only used with distribution 'erlang'"),
        ({"spread": 0.5}, "phases[0] (map).spread: only used with distribution 'uniform', this phase is 'erlang'"),
        ({"distribution": "gamma"}, "phases[0] (map).distribution: expected one of: erlang, exponential,"),
    ],
)
def test_a_distribution_needs_its_parameters_and_no_others(phase, expected):
    data = example()
    data["phases"][0].update(phase)

    assert expected in error_of(data)


def test_an_exponential_phase_may_say_shape_1():
    data = example()
    data["phases"][0]["distribution"] = "exponential"

    assert parse_description(data).phases[0].distribution == "exponential"


# --------------------------------------------------------------------------
# Phase names and edges
# --------------------------------------------------------------------------


def test_duplicate_phase_names():
    data = example()
    data["phases"][1]["name"] = "map"
    data["edges"] = [["map", "map"]]

    assert "phases[1]: duplicate phase name 'map' (also phases[0])" in error_of(data)


def test_a_cycle_is_named():
    data = example()
    data["phases"].append({"name": "output", "tasks": 1, "task_time": 1})
    data["edges"] = [["map", "reduce"], ["reduce", "output"], ["output", "map"]]

    message = error_of(data)

    assert "edges form a cycle: " in message
    assert "map -> reduce -> output -> map" in message or "reduce -> output -> map -> reduce" in message


def test_a_self_loop():
    data = example()
    data["edges"].append(["reduce", "reduce"])

    assert error_of(data) == "edges[1]: self-loop on phase 'reduce' (a phase cannot follow itself)"


def test_an_unknown_phase_in_edges():
    data = example()
    data["edges"] = [["map", "shuffle"], ["map", "reduce"]]

    assert error_of(data) == "edges[0]: unknown phase 'shuffle' (phases: map, reduce)"


def test_a_duplicate_edge():
    data = example()
    data["edges"].append(["map", "reduce"])

    assert error_of(data) == "edges[1]: duplicate edge map -> reduce (also edges[0])"


def test_a_phase_no_edge_names_is_not_connected():
    data = example()
    data["phases"].append({"name": "orphan", "tasks": 1, "task_time": 1})

    assert error_of(data) == "phases[2] (orphan): not connected to the other phases (no edge names it)"


def test_a_single_phase_needs_no_edges():
    data = example()
    data["phases"].pop()
    data["edges"] = []

    assert parse_description(data).edges == ()


def test_a_dag_with_a_fork_and_a_join_is_fine():
    data = example()
    data["phases"] += [{"name": "b", "tasks": 1, "task_time": 1}, {"name": "out", "tasks": 1, "task_time": 1}]
    data["edges"] = [["map", "reduce"], ["map", "b"], ["reduce", "out"], ["b", "out"]]

    assert len(parse_description(data).edges) == 4


def test_several_problems_are_all_reported_in_document_order():
    data = example()
    data["workload"]["users"] = 0
    del data["cluster"]["containers"]
    data["phases"][1]["tasks"] = 0
    data["phases"][0]["task_time"] = -1
    data["edges"] = [["map", "reduce"], ["reduce", "map"]]

    with pytest.raises(ModelError) as info:
        parse_description(data)

    assert info.value.problems == [
        "workload.users: expected an integer >= 1, got 0",
        "cluster.containers: required (an integer >= 1)",
        "phases[0] (map).task_time: expected a number > 0, got -1",
        "phases[1] (reduce).tasks: expected an integer >= 1, got 0",
        "edges form a cycle: map -> reduce -> map (phases must form a DAG)",
    ]


# --------------------------------------------------------------------------
# --set PATH=VALUE
# --------------------------------------------------------------------------


def test_overrides_by_name_by_index_and_at_the_top():
    desc = parse_description(
        example(),
        [
            "workload.users=5",
            "cluster.containers=8",
            "phases.map.tasks=10",
            "phases.1.task_time=2.5",
            "name=foo",
        ],
    )

    assert (desc.workload.users, desc.cluster.containers, desc.name) == (5, 8, "foo")
    assert (desc.phases[0].tasks, desc.phases[1].task_time) == (10, 2.5)


def test_override_values_are_yaml_scalars():
    result = apply_overrides(
        example(),
        ["workload.think_time=1e-3", "phases.map.samples=[1, 2.5]", "phases.map.distribution=empirical", "name=42"],
    )

    assert result["workload"]["think_time"] == 0.001
    assert result["phases"][0]["samples"] == [1, 2.5]
    assert result["name"] == 42  # an int: the schema then says it must be a string


def test_an_override_may_add_an_optional_key_the_schema_allows():
    data = example()
    del data["phases"][0]["shape"]
    del data["framework"]

    desc = parse_description(data, ["phases.map.shape=3", "framework=tez", "reference.measured=12.5"])

    assert (desc.phases[0].shape, desc.framework, desc.reference["measured"]) == (3, "tez", 12.5)


def test_overrides_return_a_new_dict_and_leave_the_input_alone():
    data = example()
    before = copy.deepcopy(data)

    result = apply_overrides(data, ["phases.map.tasks=10", "workload.users=9"])

    assert data == before
    assert result["phases"][0]["tasks"] == 10 and result is not data


def test_an_overridden_value_is_validated_like_any_other():
    assert error_of(example(), ["workload.users=0"]) == "workload.users: expected an integer >= 1, got 0"


@pytest.mark.parametrize(
    "override, expected",
    [
        ("workload.userz=5", "--set workload.userz=5: unknown key 'userz' in workload (known keys: users, think_time; did you mean 'users'?)"),
        ("phases.nosuch.tasks=3", "--set phases.nosuch.tasks=3: unknown phase 'nosuch' (phases: map, reduce)"),
        ("phases.5.tasks=3", "--set phases.5.tasks=3: no phase at index 5 (phases: map, reduce)"),
        ("phases.map.taks=3", "--set phases.map.taks=3: unknown key 'taks' in phases.map"),
        ("colour=red", "--set colour=red: unknown key 'colour' in the description (known keys: name, framework,"),
        ("name.first=x", "--set name.first=x: name is \"mapreduce\", not a mapping, so it has no 'first'"),
        ("workload..users=1", "--set workload..users=1: PATH must be dotted names"),
        ("workload.users", "--set 'workload.users': expected PATH=VALUE, e.g. workload.users=5"),
        ("phases.map.samples=[1, 2", "--set phases.map.samples=[1, 2: VALUE is not valid YAML"),
    ],
)
def test_a_bad_override_names_the_path_and_what_exists(override, expected):
    message = error_of(example(), [override])

    assert message.startswith(expected)


def test_every_bad_override_is_reported():
    with pytest.raises(ModelError) as info:
        apply_overrides(example(), ["workload.userz=5", "ok", "phases.nosuch.tasks=3"])

    assert len(info.value.problems) == 3


def test_load_description_applies_overrides():
    assert load_description(EXAMPLE, ["cluster.containers=8"]).cluster == Cluster(containers=8)


# --------------------------------------------------------------------------
# The schema
# --------------------------------------------------------------------------


def test_the_schema_is_a_valid_draft_2020_12_schema():
    jsonschema.Draft202012Validator.check_schema(schema())


def test_schema_returns_a_copy():
    schema()["required"].append("nonsense")

    assert "nonsense" not in schema()["required"]


# --------------------------------------------------------------------------
# YAML anchors and the bounds of reading
# --------------------------------------------------------------------------


def test_yaml_merge_keys_share_phase_settings(tmp_path):
    path = tmp_path / "merge.yaml"
    path.write_text(EXAMPLE.read_text().split("phases:")[0] + (
        "phases:\n"
        "  - &task {name: map, tasks: 4, task_time: 2.0}\n"
        "  - {<<: *task, name: reduce, task_time: 3.0}\n"))

    assert [(p.name, p.tasks, p.task_time) for p in load_description(path).phases] == [
        ("map", 4, 2.0), ("reduce", 4, 3.0)]


@pytest.mark.parametrize("text, expected", [
    ("a: &x [*x]\n", "recursive alias *x"),
    ("[" * 65 + "]" * 65, "nested deeper than 64 levels"),
    ("? [1]\n: 2\n", "a key cannot be a list"),
])
def test_yaml_that_no_description_needs_is_refused_where_it_is(tmp_path, text, expected):
    path = tmp_path / "m.yaml"
    path.write_text(text)

    message = load_error(path)

    assert message.startswith(f"{path}:1:") and expected in message


def test_numbers_past_the_engines_bounds_are_problems_like_any_other():
    data = example()
    data["workload"]["users"] = 10**12
    data["phases"][1]["task_time"] = 1e-9

    assert error_of(data) == ("workload.users: expected an integer <= 10,000,000, got 1000000000000; "
                              "phases[1] (reduce).task_time: expected a number of seconds in [1e-06, 1e+09], "
                              "got 1e-09")
