"""Checking a description mapping: the JSON Schema, then what a schema cannot say.

:func:`problems` returns every problem at once, each naming the path of the
offending value and what was expected:

>>> for problem in problems({"name": "x", "workload": {"users": 1, "think_time": 1},
...                          "cluster": {"containers": 1},
...                          "phases": [{"name": "p", "tasks": 0, "task_time": 1, "cv": 0.5}]}):
...     print(problem)
phases[0] (p).tasks: expected an integer >= 1, got 0
phases[0] (p).cv: only used with distribution 'lognormal', this phase is 'erlang'

A description with query classes and queues is checked the same way, class by class,
and then as a whole (docs/design.md §4.6):

>>> problems({"name": "x", "cluster": {"containers": 4},
...           "classes": [{"name": "etl", "users": 1, "think_time": 9, "queue": "etl",
...                        "phases": [{"name": "map", "tasks": 2, "task_time": 3}]}],
...           "queues": [{"name": "etl", "capacity": 0.6}, {"name": "bi", "capacity": 0.3}]})  # doctest: +ELLIPSIS
['queues: capacities sum to 0.9 (etl 0.6 + bi 0.3), not 1 as YARN requires ...: set them together, \
e.g. --set queues.bi.capacity=0.4']
"""

from __future__ import annotations

import copy
import functools
import graphlib
import importlib.resources
import json
import math
from collections.abc import Mapping

from spn.description.model import DEFAULT_QUEUE, DISTRIBUTIONS, LAW_PARAMETER
from spn.description.text import did_you_mean, show
from spn.limits import (MAX_COUNT, MAX_CV, MAX_EDGES, MAX_PHASES, MAX_PRIORITY, MAX_SHAPE, MAX_TIME,
                        MIN_TIME)

__all__ = ["schema", "shared_schema", "problems"]

#: how far an empirical phase's task_time may lie from its samples' mean (relative): rounding to a few
#: digits, as ``spn fit --empirical`` writes both, stays within it; a task_time meant to change the law does not
EMPIRICAL_MEAN_TOLERANCE = 1e-3

#: the problem of sibling queues whose capacities do not sum to 1, after the path of its file (``spn sweep`` records
#: such a point of its grid as a failed row instead of refusing the grid)
CAPACITY_SUM = "queues: capacities sum to"


def schema() -> dict:
    """The JSON Schema (draft 2020-12) every description must satisfy (a fresh copy).

    >>> schema()["else"]["required"]         # without classes; with classes, workload and phases go there
    ['name', 'workload', 'cluster', 'phases']
    """
    return copy.deepcopy(shared_schema())


@functools.cache
def shared_schema() -> dict:
    """The JSON Schema, parsed once and shared: read it, never modify it."""
    text = importlib.resources.files("spn.description").joinpath("schema.json").read_text(encoding="utf-8")
    return json.loads(text)


#: the longest name of a model, class, queue or phase (names end up in place names, messages and CSV columns)
MAX_NAME = 200

#: most query classes, and most queues, in a description (a cluster has a few dozen queues at most)
MAX_CLASSES = 1_000

#: how far the queues' capacities may sum from 1 (YARN's own check allows rounding too)
CAPACITY_TOLERANCE = 1e-9


def problems(data) -> list[str]:
    """Every problem of a description mapping: schema violations first, then semantic ones.

    A description with more phases or edges than the limits allow gets only that problem:
    checking each of a million phases would take minutes to say the same thing.

    >>> problems({"phases": [{}] * 20_000})
    ['phases: 20,000 phases, more than a description may have (5,000 at most)']
    """
    found = _size_problems(data)
    if found:
        return found
    return _schema_problems(data) + _semantic_problems(data)


def _size_problems(data) -> list[str]:
    found = []
    if isinstance(data, Mapping):
        for key, most in (("phases", MAX_PHASES), ("edges", MAX_EDGES), ("classes", MAX_CLASSES),
                          ("queues", MAX_CLASSES)):
            items = data.get(key)
            if isinstance(items, list) and len(items) > most:
                found.append(f"{key}: {len(items):,} {key}, more than a description may have ({most:,} at most)")
        classes = data.get("classes")
        if isinstance(classes, list) and not found:     # the phases and edges of all classes count together
            for key, most in (("phases", MAX_PHASES), ("edges", MAX_EDGES)):
                total = sum(len(c[key]) for c in classes if isinstance(c, Mapping) and isinstance(c.get(key), list))
                if total > most:
                    found.append(f"classes: {total:,} {key} in all, more than a description may have "
                                 f"({most:,} at most)")
    return found


# --------------------------------------------------------------------------
# Step 1: the JSON Schema
# --------------------------------------------------------------------------


def _schema_problems(data) -> list[str]:
    """Every schema violation, as ``path: expected ..., got ...``, sorted by path."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(shared_schema())
    errors = sorted(validator.iter_errors(data), key=lambda error: _document_order(data, error.absolute_path))
    found = []
    for error in errors:
        for problem in _explain(error, data):
            if problem not in found:
                found.append(problem)
    return found


def _explain(error, data) -> list[str]:
    """Turn one jsonschema error into readable problems."""
    path = list(error.absolute_path)
    if error.validator == "required":
        # One error per missing key; name only the keys missing here.
        missing = [key for key in error.validator_value if key not in error.instance]
        # the top level's "else" (no classes: workload and phases required) has no properties of its own
        properties = error.schema.get("properties") or (shared_schema()["properties"] if not path else {})
        return [
            f"{_path_text(data, path + [key])}: required ({_expected(properties.get(key, {}))})"
            for key in missing
        ]
    if error.validator == "additionalProperties":
        known = list(error.schema.get("properties", {}))
        return [
            f"{_path_text(data, path + [key])}: unknown key (known keys: {', '.join(known)}{did_you_mean(key, known)})"
            for key in error.instance
            if key not in known
        ]
    return [f"{_path_text(data, path)}: expected {_expected(error.schema)}, got {show(error.instance)}"]


def _expected(subschema: dict, plural: bool = False) -> str:
    """What a (sub)schema asks for, in words: ``an integer >= 1``, ``a non-empty list of phases``."""

    def noun(one: str, many: str) -> str:
        return many if plural else one

    if "$ref" in subschema:
        name = subschema["$ref"].rsplit("/", 1)[-1]
        return noun(f"a {name}", f"{name}es" if name.endswith("s") else f"{name}s")
    if "enum" in subschema:
        return "one of: " + ", ".join(str(value) for value in subschema["enum"])
    kind = subschema.get("type")
    if kind == "integer":
        return noun("an integer", "integers") + _bounds(subschema)
    if kind == "number":
        return noun("a number", "numbers") + _bounds(subschema)
    if kind == "string":
        if subschema.get("minLength"):
            return noun("a non-empty string", "non-empty strings")
        return noun("a string", "strings")
    if kind == "object":
        return noun("a mapping", "mappings")
    if kind == "array":
        items = subschema.get("items")
        of = f" of {_expected(items, plural=True)}" if items else ""
        low, high = subschema.get("minItems", 0), subschema.get("maxItems")
        if low == high == 2:
            return noun(f"a pair{of}", f"pairs{of}")
        if low >= 1:
            return noun(f"a non-empty list{of}", f"non-empty lists{of}")
        return noun(f"a list{of}", f"lists{of}")
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
# Step 2: what a schema cannot say
# --------------------------------------------------------------------------


def _semantic_problems(data: Mapping) -> list[str]:
    """Non-finite numbers, phase names, distribution parameters, the edges graph; classes and queues.

    Runs even when the schema found problems, on whatever parts are well formed,
    so that one run reports everything.
    """
    found = _non_finite_problems(data) + _bound_problems(data) + _job_problems(data, [])
    classes = data.get("classes")
    for index, job_class in enumerate(classes if isinstance(classes, list) else ()):
        if isinstance(job_class, Mapping):
            found += _job_problems(data, ["classes", index])
    return found + _class_and_queue_problems(data)


def _job_problems(data: Mapping, at: list) -> list[str]:
    """Phase names, laws and edges of the job at path ``at`` (the top level, or a class)."""
    node = data
    for key in at:
        node = node[key]
    prefix = f"{_path_text(data, at)}." if at else ""
    found = []
    phases = node.get("phases")
    if not isinstance(phases, list):
        return found

    first_index = {}  # phase name -> index of its first occurrence
    for index, phase in enumerate(phases):
        if not isinstance(phase, dict):
            continue
        name = phase.get("name")
        if isinstance(name, str) and name:
            if name in first_index:
                found.append(f"{prefix}phases[{index}]: duplicate phase name {_quoted(name)} "
                             f"(also phases[{first_index[name]}])")
            else:
                first_index[name] = index
        found += _distribution_problems(_path_text(data, [*at, "phases", index]), phase)
        priority = phase.get("priority", 0)
        if phase.get("kind") == "driver" and isinstance(priority, (int, float)) and priority != 0:
            found.append(f"{_path_text(data, [*at, 'phases', index])}.priority: a driver phase takes no container, "
                         f"so it has no priority among containers (got {show(priority)})")
    kinds = [phase.get("kind", "container") for phase in phases if isinstance(phase, dict)]
    if kinds and all(k == "driver" for k in kinds):
        found.append(f"{prefix}phases: every phase is a driver phase; a job needs at least one phase whose tasks "
                     "run in containers (kind: container)")

    edges = node.get("edges")
    if isinstance(edges, list):
        found += _edge_problems(edges, first_index, prefix)
    return found


def _class_and_queue_problems(data: Mapping) -> list[str]:
    """Classes replace the top-level job; every class names a queue; the queues share the cluster."""
    classes, queues = data.get("classes"), data.get("queues")
    found = []
    if classes is None:
        if queues is not None:
            found.append("queues: only used with classes (each class names the queue its jobs go to)")
        return found
    for key in ("workload", "phases", "edges"):
        if key in data:
            found.append(f"{key}: not used with classes (each class has its own users, think_time, phases and edges)")
    policy = data.get("scheduler", {}).get("policy") if isinstance(data.get("scheduler"), Mapping) else None
    if policy == "gate":
        found.append("scheduler.policy: gate is the paper's one-class model; a description with classes "
                     "takes fifo or fair (or each queue's policy)")
    found += _unique_names(data, "classes", "class")
    queue_names = None
    if isinstance(queues, list):
        found += _unique_names(data, "queues", "queue")
        found += _capacity_problems(data, queues)
        queue_names = [q["name"] for q in queues if isinstance(q, Mapping) and isinstance(q.get("name"), str)]
    for index, job_class in enumerate(classes if isinstance(classes, list) else ()):
        if not isinstance(job_class, Mapping):
            continue
        where = _path_text(data, ["classes", index, "queue"])
        queue = job_class.get("queue")
        if queue_names is None:
            if isinstance(queue, str) and queue != DEFAULT_QUEUE:
                found.append(f"{where}: unknown queue {_quoted(queue)} (the description has no queues list; "
                             f"without one every class is in queue {DEFAULT_QUEUE!r})")
        elif queue is None:
            found.append(f"{where}: required when the description has queues (queues: {_listing(queue_names)})")
        elif isinstance(queue, str) and queue not in queue_names:
            found.append(f"{where}: unknown queue {_quoted(queue)} (queues: {_listing(queue_names)}"
                         f"{did_you_mean(queue, queue_names)})")
    return found


def _unique_names(data: Mapping, key: str, what: str) -> list[str]:
    """``classes[2]: duplicate class name 'bi' (also classes[0])``."""
    found, first_index = [], {}
    for index, item in enumerate(data[key] if isinstance(data[key], list) else ()):
        name = item.get("name") if isinstance(item, Mapping) else None
        if isinstance(name, str) and name:
            if "/" in name:         # the net's places are <queue>/job<k>/<class>/...: a '/' would make two meet
                found.append(f"{key}[{index}].name: {_quoted(name)}: a {what} name cannot hold '/' (it separates "
                             "queue, slot and class in the net's place names)")
            elif not name.strip() or name != name.strip() or not name.isprintable():
                found.append(f"{key}[{index}].name: {_quoted(name)}: a {what} name must be printable, with no "
                             "blank at either end (it heads columns of the reports)")
            if name in first_index:
                found.append(f"{key}[{index}]: duplicate {what} name {_quoted(name)} (also {key}[{first_index[name]}])")
            else:
                first_index[name] = index
    return found


def _capacity_problems(data: Mapping, queues: list) -> list[str]:
    """capacity <= max_capacity per queue; the capacities sum to 1 (when every one is a valid number)."""

    def fraction(value):
        ok = isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)
        return value if ok and 0 < value <= 1 else None

    found, capacities = [], []                     # (queue name, capacity)
    for index, queue in enumerate(queues):
        if not isinstance(queue, Mapping):
            capacities = None
            continue
        capacity, ceiling = fraction(queue.get("capacity")), fraction(queue.get("max_capacity", 1.0))
        if capacity is not None and ceiling is not None and ceiling < capacity:
            found.append(f"{_path_text(data, ['queues', index, 'max_capacity'])}: expected a number >= the queue's "
                         f"capacity {capacity:g}, got {show(queue['max_capacity'])}")
        if capacities is not None and capacity is not None:
            capacities.append((_short(queue.get("name", index)), capacity))
        else:
            capacities = None                       # another problem says what is wrong with it
    total = sum(capacity for _, capacity in capacities or ())
    if capacities and abs(total - 1) > CAPACITY_TOLERANCE:
        terms = " + ".join(f"{name} {value:g}" for name, value in capacities[:10])
        if len(capacities) > 10:
            terms += f" + ... ({len(capacities):,} queues)"
        last, capacity = capacities[-1]
        rest = 1 - (total - capacity)             # what the last queue would need
        hint = f", e.g. --set queues.{last}.capacity={rest:.6g}" if 0 < rest <= 1 else ""
        found.append(f"{CAPACITY_SUM} {total:.12g} ({terms}), not 1 as YARN requires of sibling "
                     f"queues: set them together{hint}")
    return found


def _non_finite_problems(data: Mapping) -> list[str]:
    """``nan`` and ``inf`` pass every ``minimum`` check; they are never valid inputs."""
    found = []

    def walk(value, path):
        if isinstance(value, float) and not math.isfinite(value):
            found.append(f"{_path_text(data, path)}: expected a finite number, got {value}")
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(item, path + [key])
        elif isinstance(value, list):
            for index, item in enumerate(value):
                walk(item, path + [index])

    for key, value in data.items():
        if key != "reference":
            walk(value, [key])
    return found


def _bound_problems(data: Mapping) -> list[str]:
    """Numbers past the bounds of :mod:`spn.limits`: counts the engines can hold, times whose
    rates stay far from overflow. Values the schema refuses (wrong type, below its minimum)
    and non-finite ones are left to those checks."""
    found = []

    def within(path, low, high, what, floor=None):
        node = data
        for key in path:
            if isinstance(node, Mapping) and key in node:
                node = node[key]
            elif isinstance(node, list) and isinstance(key, int) and key < len(node):
                node = node[key]
            else:
                return
        value = node
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return
        if isinstance(value, float) and not math.isfinite(value):
            return
        if floor is not None and value <= floor:
            return                                  # the schema's own minimum says it
        if not low <= value <= high:
            found.append(f"{_path_text(data, list(path))}: expected {what}, got {show(value)}")

    count = f"an integer <= {MAX_COUNT:,}"
    seconds = f"a number of seconds in [{MIN_TIME:g}, {MAX_TIME:g}]"
    def short_name(path, node):
        name = node.get("name")
        if isinstance(name, str) and len(name) > MAX_NAME:
            where = f"{_path_text(data, list(path))}.name" if path else "name"
            found.append(f"{where}: expected at most {MAX_NAME} characters, got {len(name):,}")

    def job(at, node):
        """The phases of the job at path ``at`` (the top level or a class)."""
        phases = node.get("phases")
        for index, phase in enumerate(phases if isinstance(phases, list) else ()):
            if not isinstance(phase, Mapping):
                continue
            here = (*at, "phases", index)
            name = phase.get("name")
            if isinstance(name, str) and len(name) > MAX_NAME:
                found.append(f"{_path_text(data, list(at))}{'.' if at else ''}phases[{index}].name: expected at most "
                             f"{MAX_NAME} characters, got {len(name):,}")
            within((*here, "tasks"), 1, MAX_COUNT, count, floor=0)
            within((*here, "task_time"), MIN_TIME, MAX_TIME, seconds, floor=0)
            within((*here, "shape"), 1, MAX_SHAPE, f"an integer <= {MAX_SHAPE:,}", floor=0)
            within((*here, "priority"), -MAX_PRIORITY, MAX_PRIORITY,
                   f"a number in [{-MAX_PRIORITY:g}, {MAX_PRIORITY:g}]")
            within((*here, "cv"), 0, MAX_CV, f"a number <= {MAX_CV:g}", floor=0)
            samples = phase.get("samples")
            for j in range(len(samples) if isinstance(samples, list) else 0):
                within((*here, "samples", j), MIN_TIME, MAX_TIME, seconds, floor=0)

    within(("workload", "users"), 1, MAX_COUNT, count, floor=0)
    within(("workload", "think_time"), MIN_TIME, MAX_TIME, seconds, floor=0)
    within(("cluster", "containers"), 1, MAX_COUNT, count, floor=0)
    short_name((), data)
    job((), data)
    for key in ("classes", "queues"):
        items = data.get(key)
        for index, item in enumerate(items if isinstance(items, list) else ()):
            if not isinstance(item, Mapping):
                continue
            short_name((key, index), item)
            if key == "classes":
                within((key, index, "users"), 1, MAX_COUNT, count, floor=0)
                within((key, index, "think_time"), MIN_TIME, MAX_TIME, seconds, floor=0)
                job((key, index), item)
    return found


# What each law's parameter is, for the problem that says it is missing.
_NEEDS = {
    "spread": "the half-width as a fraction of the mean, in (0, 1]",
    "cv": "the coefficient of variation, > 0",
    "samples": "a non-empty list of measured durations in seconds",
}


def _distribution_problems(where: str, phase: dict) -> list[str]:
    """A phase's distribution has the parameters it needs, and no others."""
    distribution = phase.get("distribution", "erlang")
    if distribution not in DISTRIBUTIONS:
        return []  # the schema already said so
    found = []
    needed = LAW_PARAMETER.get(distribution)
    if needed and needed not in phase:
        found.append(f"{where}: distribution {distribution!r} needs {needed} ({_NEEDS[needed]})")
    for parameter in _NEEDS:
        if parameter in phase and parameter != needed:
            law = next(law for law, name in LAW_PARAMETER.items() if name == parameter)
            found.append(f"{where}.{parameter}: only used with distribution {law!r}, this phase is {distribution!r}")
    samples, task_time = phase.get("samples"), phase.get("task_time")
    if distribution == "empirical" and _numbers(samples) and _numbers([task_time]):
        mean = math.fsum(samples) / len(samples)
        if abs(task_time - mean) > EMPIRICAL_MEAN_TOLERANCE * mean:
            found.append(f"{where}.task_time: {task_time:g} s is not the mean of its samples ({mean:.6g} s), and an "
                         f"empirical law is its samples: drop task_time, or scale the samples")
    shape = phase.get("shape", 1)
    if distribution != "erlang" and isinstance(shape, int) and shape != 1:
        if distribution == "exponential":
            found.append(f"{where}.shape: distribution 'exponential' has shape 1 (or no shape), got {shape}")
        else:
            found.append(f"{where}.shape: only used with distribution 'erlang', this phase is {distribution!r}")
    return found


def _numbers(values) -> bool:
    """A non-empty list of finite numbers > 0 (what the schema checks, read again for a formula)."""
    return isinstance(values, list) and bool(values) and all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0 for v in values)


def _edge_problems(edges: list, first_index: dict, prefix: str = "") -> list[str]:
    """Edges name known phases, have no self-loops, duplicates or cycles, and reach every phase.

    ``prefix`` (``classes[0] (etl).``) says whose edges they are in the problems.
    """
    names = list(first_index)
    found = []
    kept = []
    mentioned = set()
    seen = {}  # (from, to) -> index of its first occurrence
    for index, edge in enumerate(edges):
        if not (isinstance(edge, list) and len(edge) == 2 and all(isinstance(end, str) for end in edge)):
            continue  # the schema already said so
        mentioned.update(edge)
        unknown = [end for end in dict.fromkeys(edge) if end not in first_index]
        for end in unknown:
            found.append(f"{prefix}edges[{index}]: unknown phase {_quoted(end)} (phases: {_listing(names)})")
        if unknown:
            continue
        source, target = edge
        if source == target:
            found.append(f"{prefix}edges[{index}]: self-loop on phase {_quoted(source)} (a phase cannot follow itself)")
        elif (source, target) in seen:
            found.append(f"{prefix}edges[{index}]: duplicate edge {_short(source)} -> {_short(target)} "
                         f"(also edges[{seen[source, target]}])")
        else:
            seen[source, target] = index
            kept.append((source, target))

    # One cycle named per group of phases that reach each other (networkx, slow to import, only for a cycle).
    groups, parents = [], {name: [] for name in names}
    for source, target in kept:
        parents[target].append(source)
    try:
        graphlib.TopologicalSorter(parents).prepare()
    except graphlib.CycleError:
        import networkx as nx

        graph = nx.DiGraph()
        graph.add_nodes_from(names)
        graph.add_edges_from(kept)
        groups = [group for group in nx.strongly_connected_components(graph) if len(group) > 1]
    for group in sorted(groups, key=lambda group: min(first_index[name] for name in group)):
        cycle = nx.find_cycle(graph.subgraph(group))
        path = [_short(source) for source, _ in cycle] + [_short(cycle[0][0])]
        if len(path) > 12:
            path = path[:10] + [f"... ({len(path) - 1:,} phases)", path[-1]]
        found.append(f"{prefix}edges form a cycle: {' -> '.join(path)} (phases must form a DAG)")

    if len(names) > 1:
        for name in names:
            if name not in mentioned:
                where = f"{prefix}phases[{first_index[name]}] ({name})"
                found.append(f"{where}: not connected to the other phases (no edge names it)")
    return found


def _listing(names, most: int = 10) -> str:
    """``a, b, c`` or, past ``most`` names, ``a, b, ... (1,000 in all)``."""
    if len(names) <= most:
        return ", ".join(map(_short, names))
    return f"{', '.join(map(_short, names[:most]))}, ... ({len(names):,} in all)"


def _short(name, most: int = 40) -> str:
    """A name from the file, cut to ``most`` characters for a message."""
    name = str(name)
    return name if len(name) <= most else name[:most - 3] + "..."


def _quoted(name) -> str:
    return repr(_short(name))


# --------------------------------------------------------------------------
# Paths
# --------------------------------------------------------------------------


#: lists whose items have a ``name``, shown after the index in problems
_NAMED_LISTS = ("phases", "classes", "queues")


def _path_text(data, path) -> str:
    """``["phases", 1, "tasks"]`` -> ``phases[1] (reduce).tasks`` (phase names shown for context).

    >>> _path_text({"phases": [{"name": "map"}]}, ["phases", 0, "tasks"])
    'phases[0] (map).tasks'
    >>> _path_text({"classes": [{"name": "bi", "phases": [{"name": "scan"}]}]}, ["classes", 0, "phases", 0, "shape"])
    'classes[0] (bi).phases[0] (scan).shape'
    """
    text = ""
    node = data
    for depth, key in enumerate(path):
        if isinstance(key, int):
            text += f"[{key}]"
        else:
            text += f".{_short(key)}" if text else _short(key)
        try:
            node = node[key]
        except (KeyError, IndexError, TypeError):
            node = None
        if (isinstance(key, int) and depth >= 1 and path[depth - 1] in _NAMED_LISTS and isinstance(node, dict)
                and isinstance(node.get("name"), str)):
            text += f" ({_short(node['name'])})"
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
