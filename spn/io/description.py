"""Model descriptions: YAML or JSON files that become frozen dataclasses.

A description says who submits the job (``workload``), what runs it
(``cluster``) and what the job is (``phases`` and the ``edges`` between them);
DESIGN.md section 4 shows a complete one. Reading one goes:

    file text --parse--> mapping --(--set overrides)--> mapping
             --JSON Schema + semantic checks--> Description

Every check reports *all* the problems it finds at once, each naming the path
of the offending value and what was expected, in one :class:`ModelError`:

    phases[1] (reduce).tasks: expected an integer >= 1, got 0

>>> desc = parse_description({
...     "name": "tiny",
...     "workload": {"users": 2, "think_time": 5.0},
...     "cluster": {"containers": 2},
...     "phases": [{"name": "map", "tasks": 2, "task_time": 1.0},
...                {"name": "reduce", "tasks": 1, "task_time": 3.0}],
... }, overrides=["workload.users=4"])
>>> desc.workload.users, desc.edges
(4, (('map', 'reduce'),))
"""

from __future__ import annotations

import copy
import difflib
import functools
import importlib.resources
import json
import math
import os
import re
import types
from collections.abc import Mapping
from dataclasses import dataclass, field

import jsonschema
import networkx as nx
import yaml

from spn.exceptions import ModelError

__all__ = [
    "Workload",
    "Cluster",
    "Phase",
    "Description",
    "load_description",
    "parse_description",
    "apply_overrides",
    "schema",
]


# --------------------------------------------------------------------------
# The model, as data
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class Workload:
    """The closed population: ``users`` (N) each thinking ``think_time`` (Z) s on average."""

    users: int
    think_time: float


@dataclass(frozen=True)
class Cluster:
    """The ``containers`` (C) shared by every phase of every job."""

    containers: int


@dataclass(frozen=True)
class Phase:
    """A phase (map/reduce phase, Tez vertex, Spark stage): ``tasks`` tasks of mean ``task_time`` s.

    ``distribution`` is the task-time law: ``erlang`` (with ``shape``),
    ``exponential``, ``deterministic``, ``uniform`` (with ``spread``, the
    half-width as a fraction of the mean), ``lognormal`` (with ``cv``) or
    ``empirical`` (with ``samples``, in seconds).

    >>> Phase("map", tasks=4, task_time=2.0).shape
    1
    """

    name: str
    tasks: int
    task_time: float
    shape: int = 1
    distribution: str = "erlang"
    spread: float | None = None
    cv: float | None = None
    samples: tuple[float, ...] | None = None
    priority: float = 0.0


@dataclass(frozen=True)
class Description:
    """A whole model description.

    ``edges`` always lists the dependencies explicitly (a chain in list order
    when the file gave none). ``reference`` holds measured results, read-only,
    never used as input; ``source`` is the file it was read from. Equality
    compares the model only, not ``reference`` or ``source``.
    """

    name: str
    framework: str | None
    workload: Workload
    cluster: Cluster
    phases: tuple[Phase, ...]
    edges: tuple[tuple[str, str], ...]
    reference: Mapping = field(default_factory=lambda: types.MappingProxyType({}), compare=False)
    source: str | None = field(default=None, compare=False)


# --------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------


def load_description(path, overrides=()) -> Description:
    """Read a ``.yaml``/``.yml`` or ``.json`` description, apply ``--set`` overrides, validate.

    ``overrides`` are ``"PATH=VALUE"`` strings (see :func:`apply_overrides`).
    Raises :class:`ModelError` listing every problem found.

    >>> load_description("models/mapreduce.yaml", ["cluster.containers=8"]).cluster  # doctest: +SKIP
    Cluster(containers=8)
    """
    source = os.fspath(path)
    data = _read_file(source)
    return parse_description(data, overrides, source=source)


def parse_description(data: dict, overrides=(), source=None) -> Description:
    """Build a :class:`Description` from an already-parsed mapping (from YAML or JSON).

    ``data`` is not modified. ``source`` (a file name) prefixes the problems reported.

    >>> parse_description({"name": "x", "workload": {"users": 1, "think_time": 1},
    ...                    "cluster": {"containers": 1},
    ...                    "phases": [{"name": "p", "tasks": 0, "task_time": 1}]})
    Traceback (most recent call last):
    spn.exceptions.ModelError: phases[0] (p).tasks: expected an integer >= 1, got 0
    """
    if not isinstance(data, Mapping):
        where = f"{source}: " if source else ""
        raise ModelError(f"{where}a model description must be a mapping at the top level, got {_kind(data)}")
    data = apply_overrides(data, overrides)
    problems = _schema_problems(data) + _semantic_problems(data)
    if problems:
        if source:
            problems = [f"{source}: {problem}" for problem in problems]
        raise ModelError(problems)
    return _build(data, source)


def apply_overrides(data: dict, overrides) -> dict:
    """Return a copy of ``data`` with each ``"PATH=VALUE"`` override applied.

    PATH is dotted over the mapping; phases are addressed by name or by index.
    VALUE is read as a YAML scalar (``5`` is an int, ``2.5`` a float, ``[1, 2]``
    a list). A path may only name keys that exist or that the schema allows.

    >>> apply_overrides({"phases": [{"name": "map", "tasks": 4}]}, ["phases.map.tasks=10"])
    {'phases': [{'name': 'map', 'tasks': 10}]}
    """
    if not isinstance(data, Mapping):
        raise ModelError(f"cannot apply --set to {_kind(data)}: a model description is a mapping")
    if isinstance(overrides, str):
        overrides = [overrides]
    result = copy.deepcopy(dict(data))
    problems = []
    for text in overrides:
        try:
            _apply_override(result, text)
        except _OverrideProblem as problem:
            problems.append(str(problem))
    if problems:
        raise ModelError(problems)
    return result


def schema() -> dict:
    """The JSON Schema (draft 2020-12) every description must satisfy (a fresh copy).

    >>> schema()["required"]
    ['name', 'workload', 'cluster', 'phases']
    """
    return copy.deepcopy(_schema())


# --------------------------------------------------------------------------
# Reading files
# --------------------------------------------------------------------------


class _Loader(yaml.SafeLoader):
    """PyYAML's safe loader, plus: duplicate keys are errors, and ``1e-3`` is a float.

    (Plain YAML 1.1 silently keeps the last of two equal keys and reads ``1e-3``
    as a string; both hide typos in a model file.)
    """

    def construct_mapping(self, node, deep=False):
        seen = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$"),
    list("-+0123456789."),
)


def _read_file(path: str):
    """The parsed content of a YAML or JSON file; every failure is a one-line ModelError."""
    try:
        with open(path, encoding="utf-8") as file:
            text = file.read()
    except FileNotFoundError:
        raise ModelError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise ModelError(f"{path}: is a directory, expected a model description file") from None
    except (OSError, UnicodeDecodeError) as error:
        raise ModelError(f"{path}: cannot read: {_one_line(error)}") from None

    extension = os.path.splitext(path)[1].lower()
    if extension not in (".yaml", ".yml", ".json"):
        raise ModelError(f"{path}: unknown file type {extension or '(none)'!r}, expected .yaml, .yml or .json")

    if extension == ".json":
        try:
            return json.loads(text, object_pairs_hook=_json_object)
        except json.JSONDecodeError as error:
            raise ModelError(f"{path}:{error.lineno}:{error.colno}: invalid JSON: {error.msg}") from None
        except _DuplicateKey as error:
            raise ModelError(f"{path}: invalid JSON: duplicate key {error.args[0]!r}") from None
    try:
        return yaml.load(text, Loader=_Loader)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
        what = " ".join(part for part in (error.context, error.problem) if part)
        raise ModelError(f"{where}: invalid YAML: {_one_line(what)}") from None
    except yaml.YAMLError as error:
        raise ModelError(f"{path}: invalid YAML: {_one_line(error)}") from None


class _DuplicateKey(Exception):
    pass


def _json_object(pairs):
    result = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKey(key)
        result[key] = value
    return result


# --------------------------------------------------------------------------
# Validation, step 1: the JSON Schema
# --------------------------------------------------------------------------


@functools.cache
def _schema() -> dict:
    text = importlib.resources.files("spn.io").joinpath("schema.json").read_text(encoding="utf-8")
    return json.loads(text)


def _schema_problems(data) -> list[str]:
    """Every schema violation, as ``path: expected ..., got ...``, sorted by path."""
    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(data), key=lambda error: _document_order(data, error.absolute_path))
    problems = []
    for error in errors:
        for problem in _explain(error, data):
            if problem not in problems:
                problems.append(problem)
    return problems


def _explain(error, data) -> list[str]:
    """Turn one jsonschema error into readable problems."""
    path = list(error.absolute_path)
    if error.validator == "required":
        # One error per missing key; name only the keys missing here.
        missing = [key for key in error.validator_value if key not in error.instance]
        properties = error.schema.get("properties", {})
        return [
            f"{_path_text(data, path + [key])}: required ({_expected(properties.get(key, {}))})"
            for key in missing
        ]
    if error.validator == "additionalProperties":
        known = list(error.schema.get("properties", {}))
        problems = []
        for key in error.instance:
            if key not in known:
                hint = _did_you_mean(key, known)
                problems.append(
                    f"{_path_text(data, path + [key])}: unknown key (known keys: {', '.join(known)}{hint})"
                )
        return problems
    return [f"{_path_text(data, path)}: expected {_expected(error.schema)}, got {_show(error.instance)}"]


def _expected(subschema: dict, plural: bool = False) -> str:
    """What a (sub)schema asks for, in words: ``an integer >= 1``, ``a non-empty list of phases``."""
    if "$ref" in subschema:
        noun = subschema["$ref"].rsplit("/", 1)[-1]
        return f"{noun}s" if plural else f"a {noun}"
    if "enum" in subschema:
        return "one of: " + ", ".join(str(value) for value in subschema["enum"])
    kind = subschema.get("type")
    if kind in ("integer", "number"):
        if kind == "integer":
            words = "integers" if plural else "an integer"
        else:
            words = "numbers" if plural else "a number"
        return words + _bounds(subschema)
    if kind == "string":
        if subschema.get("minLength"):
            return "non-empty strings" if plural else "a non-empty string"
        return "strings" if plural else "a string"
    if kind == "object":
        return "mappings" if plural else "a mapping"
    if kind == "array":
        items = subschema.get("items")
        of = f" of {_expected(items, plural=True)}" if items else ""
        low, high = subschema.get("minItems", 0), subschema.get("maxItems")
        if low == high == 2:
            return f"pairs{of}" if plural else f"a pair{of}"
        if low >= 1:
            return f"non-empty lists{of}" if plural else f"a non-empty list{of}"
        return f"lists{of}" if plural else f"a list{of}"
    return "a valid value"


def _bounds(subschema: dict) -> str:
    """`` >= 1``, `` > 0``, `` in (0, 1]`` ... from minimum/exclusiveMinimum/maximum."""
    low_open = "exclusiveMinimum" in subschema
    low = subschema.get("exclusiveMinimum", subschema.get("minimum"))
    high = subschema.get("maximum")
    if low is not None and high is not None:
        return f" in {'(' if low_open else '['}{low:g}, {high:g}]"
    if low is not None:
        return f" {'>' if low_open else '>='} {low:g}"
    if high is not None:
        return f" <= {high:g}"
    return ""


# --------------------------------------------------------------------------
# Validation, step 2: what a schema cannot say
# --------------------------------------------------------------------------


def _semantic_problems(data: Mapping) -> list[str]:
    """Non-finite numbers, phase names, distribution parameters, the edges graph.

    Runs even when the schema found problems, on whatever parts are well formed,
    so that one run reports everything.
    """
    problems = _non_finite_problems(data)
    phases = data.get("phases")
    if not isinstance(phases, list):
        return problems

    first_index = {}  # phase name -> index of its first occurrence
    for index, phase in enumerate(phases):
        if not isinstance(phase, dict):
            continue
        name = phase.get("name")
        if isinstance(name, str) and name:
            if name in first_index:
                problems.append(f"phases[{index}]: duplicate phase name {name!r} (also phases[{first_index[name]}])")
            else:
                first_index[name] = index
        problems += _distribution_problems(_path_text(data, ["phases", index]), phase)

    edges = data.get("edges")
    if isinstance(edges, list):
        problems += _edge_problems(edges, first_index)
    return problems


def _non_finite_problems(data: Mapping) -> list[str]:
    """``nan`` and ``inf`` pass every ``minimum`` check; they are never valid inputs."""
    problems = []

    def walk(value, path):
        if isinstance(value, float) and not math.isfinite(value):
            problems.append(f"{_path_text(data, path)}: expected a finite number, got {value}")
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(item, path + [key])
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, path + [index])

    for key, value in data.items():
        if key != "reference":
            walk(value, [key])
    return problems


# Which optional phase key goes with which distribution.
_PARAMETER_OF = {"uniform": "spread", "lognormal": "cv", "empirical": "samples"}
_NEEDS = {
    "spread": "the half-width as a fraction of the mean, in (0, 1]",
    "cv": "the coefficient of variation, > 0",
    "samples": "a non-empty list of measured durations in seconds",
}


def _distribution_problems(where: str, phase: dict) -> list[str]:
    """A phase's distribution has the parameters it needs, and no others."""
    distribution = phase.get("distribution", "erlang")
    if distribution not in ("erlang", "exponential", "deterministic", "uniform", "lognormal", "empirical"):
        return []  # the schema already said so
    problems = []
    needed = _PARAMETER_OF.get(distribution)
    if needed and needed not in phase:
        problems.append(f"{where}: distribution {distribution!r} needs {needed} ({_NEEDS[needed]})")
    for parameter in ("spread", "cv", "samples"):
        if parameter in phase and parameter != needed:
            problems.append(
                f"{where}.{parameter}: only used with distribution {_distribution_with(parameter)!r}, "
                f"this phase is {distribution!r}"
            )
    shape = phase.get("shape", 1)
    if distribution != "erlang" and isinstance(shape, int) and shape != 1:
        if distribution == "exponential":
            problems.append(f"{where}.shape: distribution 'exponential' has shape 1 (or no shape), got {shape}")
        else:
            problems.append(f"{where}.shape: only used with distribution 'erlang', this phase is {distribution!r}")
    return problems


def _distribution_with(parameter: str) -> str:
    return next(law for law, name in _PARAMETER_OF.items() if name == parameter)


def _edge_problems(edges: list, first_index: dict) -> list[str]:
    """Edges name known phases, have no self-loops, duplicates or cycles, and reach every phase."""
    names = list(first_index)
    problems = []
    graph = nx.DiGraph()
    graph.add_nodes_from(names)
    mentioned = set()
    seen = {}  # (from, to) -> index of its first occurrence
    for index, edge in enumerate(edges):
        if not (isinstance(edge, list) and len(edge) == 2 and all(isinstance(end, str) for end in edge)):
            continue  # the schema already said so
        mentioned.update(edge)
        unknown = [end for end in dict.fromkeys(edge) if end not in first_index]
        for end in unknown:
            problems.append(f"edges[{index}]: unknown phase {end!r} (phases: {', '.join(names)})")
        if unknown:
            continue
        source, target = edge
        if source == target:
            problems.append(f"edges[{index}]: self-loop on phase {source!r} (a phase cannot follow itself)")
        elif (source, target) in seen:
            problems.append(f"edges[{index}]: duplicate edge {source} -> {target} (also edges[{seen[source, target]}])")
        else:
            seen[source, target] = index
            graph.add_edge(source, target)

    # One cycle named per group of phases that reach each other.
    groups = [group for group in nx.strongly_connected_components(graph) if len(group) > 1]
    for group in sorted(groups, key=lambda group: min(first_index[name] for name in group)):
        cycle = nx.find_cycle(graph.subgraph(group))
        path = [source for source, _ in cycle] + [cycle[0][0]]
        problems.append(f"edges form a cycle: {' -> '.join(path)} (phases must form a DAG)")

    if len(names) > 1:
        for name in names:
            if name not in mentioned:
                where = f"phases[{first_index[name]}] ({name})"
                problems.append(f"{where}: not connected to the other phases (no edge names it)")
    return problems


# --------------------------------------------------------------------------
# --set PATH=VALUE
# --------------------------------------------------------------------------


class _OverrideProblem(Exception):
    """One override that cannot be applied (collected into a ModelError)."""


def _apply_override(root: dict, text: str) -> None:
    """Apply one ``PATH=VALUE`` to ``root`` in place, guided by the schema."""
    if not isinstance(text, str) or "=" not in text:
        raise _OverrideProblem(f"--set {text!r}: expected PATH=VALUE, e.g. workload.users=5")
    path, _, raw = text.partition("=")
    keys = path.strip().split(".")
    if any(key == "" for key in keys):
        raise _OverrideProblem(f"--set {text}: PATH must be dotted names, e.g. phases.map.tasks")
    try:
        value = yaml.load(raw, Loader=_Loader)
    except yaml.YAMLError as error:
        raise _OverrideProblem(f"--set {text}: VALUE is not valid YAML ({_one_line(error)})") from None

    node, node_schema = root, _schema()
    for depth, key in enumerate(keys):
        here = ".".join(keys[:depth]) or "the description"
        last = depth == len(keys) - 1
        if isinstance(node, dict):
            properties = node_schema.get("properties") if node_schema else None
            closed = node_schema is not None and node_schema.get("additionalProperties") is False
            if key not in node and closed and key not in (properties or {}):
                known = list(properties or {})
                raise _OverrideProblem(
                    f"--set {text}: unknown key {key!r} in {here} "
                    f"(known keys: {', '.join(known)}{_did_you_mean(key, known)})"
                )
            child_schema = _resolve((properties or {}).get(key)) if node_schema else None
            if last:
                node[key] = value
                return
            if key not in node:
                if child_schema is not None and child_schema.get("type") != "object":
                    unset = ".".join(keys[: depth + 1])
                    raise _OverrideProblem(f"--set {text}: {unset} is not set, so it has no {keys[depth + 1]!r}")
                node[key] = {}
            index = key
        elif isinstance(node, list):
            child_schema = _resolve(node_schema.get("items")) if node_schema else None
            index = _list_index(node, key)
            if index is None:
                raise _OverrideProblem(f"--set {text}: {_missing_item(node, key, here)}")
            if last:
                node[index] = value
                return
        else:
            raise _OverrideProblem(f"--set {text}: {here} is {_show(node)}, not a mapping, so it has no {key!r}")
        node, node_schema = node[index], child_schema


def _list_index(items: list, key: str):
    """The index named by ``key``: an item's ``name`` first, else a number; None if neither."""
    for index, item in enumerate(items):
        if isinstance(item, dict) and item.get("name") == key:
            return index
    if key.isdigit() and int(key) < len(items):
        return int(key)
    return None


def _missing_item(items: list, key: str, here: str) -> str:
    names = [item["name"] for item in items if isinstance(item, dict) and isinstance(item.get("name"), str)]
    if here == "phases":
        listing = f"phases: {', '.join(names)}" if names else "there are no phases"
        if key.isdigit():
            return f"no phase at index {key} ({listing})"
        return f"unknown phase {key!r} ({listing}{_did_you_mean(key, names)})"
    return f"no item {key!r} in {here} (it has {len(items)} items, indexes 0..{len(items) - 1})"


def _resolve(subschema):
    """Follow a ``{"$ref": "#/$defs/name"}`` to the definition it names."""
    if subschema and "$ref" in subschema:
        return _schema()["$defs"][subschema["$ref"].rsplit("/", 1)[-1]]
    return subschema


# --------------------------------------------------------------------------
# Building the dataclasses (only from a description that passed every check)
# --------------------------------------------------------------------------


def _build(data: Mapping, source) -> Description:
    phases = tuple(_build_phase(phase) for phase in data["phases"])
    if "edges" in data:
        edges = tuple((before, after) for before, after in data["edges"])
    else:
        edges = tuple((first.name, second.name) for first, second in zip(phases, phases[1:]))
    return Description(
        name=data["name"],
        framework=data.get("framework"),
        workload=Workload(users=int(data["workload"]["users"]), think_time=float(data["workload"]["think_time"])),
        cluster=Cluster(containers=int(data["cluster"]["containers"])),
        phases=phases,
        edges=edges,
        reference=_freeze(data.get("reference", {})),
        source=source,
    )


def _build_phase(phase: dict) -> Phase:
    samples = phase.get("samples")
    return Phase(
        name=phase["name"],
        tasks=int(phase["tasks"]),
        task_time=float(phase["task_time"]),
        shape=int(phase.get("shape", 1)),
        distribution=phase.get("distribution", "erlang"),
        spread=float(phase["spread"]) if "spread" in phase else None,
        cv=float(phase["cv"]) if "cv" in phase else None,
        samples=tuple(float(x) for x in samples) if samples is not None else None,
        priority=float(phase.get("priority", 0.0)),
    )


def _freeze(value):
    """Read-only copy: mappings become MappingProxyType, lists become tuples."""
    if isinstance(value, Mapping):
        return types.MappingProxyType({key: _freeze(item) for key, item in value.items()})
    if isinstance(value, list):
        return tuple(_freeze(item) for item in value)
    return value


# --------------------------------------------------------------------------
# Small text helpers
# --------------------------------------------------------------------------


def _path_text(data, path) -> str:
    """``["phases", 1, "tasks"]`` -> ``phases[1] (reduce).tasks`` (phase names shown for context)."""
    text = ""
    node = data
    for depth, key in enumerate(path):
        if isinstance(key, int):
            text += f"[{key}]"
        else:
            text += f".{key}" if text else str(key)
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            node = None
        if depth == 1 and path[0] == "phases" and isinstance(node, dict) and isinstance(node.get("name"), str):
            text += f" ({node['name']})"
    return text or "(top level)"


def _document_order(data, path) -> list[int]:
    """Where ``path`` sits in the file: positions of its keys/indexes, for sorting problems."""
    positions = []
    node = data
    for key in path:
        if isinstance(node, dict):
            keys = list(node)
            positions.append(keys.index(key) if key in node else len(keys))
        elif isinstance(node, list) and isinstance(key, int):
            positions.append(key)
        else:
            break
        node = node.get(key) if isinstance(node, dict) else node[key]
    return positions


def _show(value) -> str:
    """A value as the user wrote it, shortened: ``0``, ``"four"``, ``null``, ``[1, 2]``."""
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _kind(value) -> str:
    if value is None:
        return "nothing (empty)"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({value})"
    return f"a {type(value).__name__}"


def _did_you_mean(word, candidates) -> str:
    close = difflib.get_close_matches(str(word), [str(c) for c in candidates], n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _one_line(error) -> str:
    return " ".join(str(error).split())
