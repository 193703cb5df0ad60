"""Reading a model description: a YAML or JSON file becomes a :class:`Description`.

A description says who submits the job (``workload``), what runs it
(``cluster``) and what the job is (``phases`` and the ``edges`` between them);
docs/design.md §4 shows a complete one. Several query ``classes``, each with its own
users, job and queue, may replace the one job (``queues`` share the cluster, §4.6). Reading one goes:

    file text --parse--> mapping --(overrides)--> mapping
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

import json
import math
import os
import types
from collections.abc import Mapping

from spn.description.model import QUEUE_POLICIES, Cluster, Description, Phase, QueryClass, Queue, Scheduler, Workload
from spn.description.overrides import apply_overrides
from spn.description.text import DuplicateKeyError, TooLargeError, kind, one_line, parse_json, parse_yaml, show
from spn.description.validate import problems
from spn.exceptions import ModelError
from spn.limits import DESCRIPTION_BYTES, MAX_DEPTH, MAX_NODES, read_input

__all__ = ["load_description", "parse_description"]

#: problems reported at most (a hostile file may have a million)
MAX_PROBLEMS = 50


def load_description(path, overrides=()) -> Description:
    """Read a ``.yaml``/``.yml`` or ``.json`` description, apply overrides, validate.

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
        raise ModelError(f"{where}a model description must be a mapping at the top level, got {kind(data)}")
    data = apply_overrides(data, overrides)
    found = problems(data)
    if len(found) > MAX_PROBLEMS:       # one line that a person can still read
        found = found[:MAX_PROBLEMS] + [f"and {len(found) - MAX_PROBLEMS:,} more problems"]
    if found:
        if source:
            found = [f"{source}: {problem}" for problem in found]
        raise ModelError(found)
    return _build(data, source)


def _read_file(path: str):
    """The parsed content of a YAML or JSON file; every failure is a one-line ModelError.

    Only a regular file of at most :data:`~spn.limits.DESCRIPTION_BYTES` is read, so that
    ``/dev/zero``, a named pipe or a huge file is refused before anything is read.
    """
    data = read_input(path, max_bytes=DESCRIPTION_BYTES, what="model description")
    extension = os.path.splitext(path)[1].lower()
    if extension not in (".yaml", ".yml", ".json"):
        raise ModelError(f"{path}: unknown file type {extension or '(none)'!r}, expected .yaml, .yml or .json")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise ModelError(f"{path}:{line}: not UTF-8 text (byte 0x{data[error.start]:02x} at offset "
                         f"{error.start:,}): a model description is YAML or JSON text") from None
    if extension == ".json":
        try:
            return parse_json(text)
        except json.JSONDecodeError as error:
            raise ModelError(f"{path}:{error.lineno}:{error.colno}: invalid JSON: {error.msg}") from None
        except DuplicateKeyError as error:
            raise ModelError(f"{path}: invalid JSON: duplicate key {show(error.args[0])}") from None
        except TooLargeError as error:
            where = path if error.position is None else f"{path}:{_line_column(text, error.position)}"
            raise ModelError(f"{where}: JSON {error} (a model description has at most {MAX_DEPTH} levels "
                             f"and {MAX_NODES:,} values)") from None

    import yaml

    try:
        return parse_yaml(text)
    except yaml.MarkedYAMLError as error:
        mark = error.problem_mark or error.context_mark
        where = f"{path}:{mark.line + 1}:{mark.column + 1}" if mark else path
        what = " ".join(part for part in (error.context, error.problem) if part)
        raise ModelError(f"{where}: invalid YAML: {one_line(what)}") from None
    except yaml.YAMLError as error:
        raise ModelError(f"{path}: invalid YAML: {one_line(error)}") from None


def _line_column(text: str, offset: int) -> str:
    """``line:column`` (both from 1) of an offset in ``text``."""
    line = text.count("\n", 0, offset) + 1
    return f"{line}:{offset - (text.rfind(chr(10), 0, offset) + 1) + 1}"


# --------------------------------------------------------------------------
# Building the dataclasses (only from a description that passed every check)
# --------------------------------------------------------------------------


def _build(data: Mapping, source) -> Description:
    common = dict(name=data["name"], framework=data.get("framework"),
                  cluster=Cluster(containers=int(data["cluster"]["containers"])),
                  reference=_freeze(data.get("reference", {})), source=source)
    policy = data.get("scheduler", {}).get("policy")
    if "classes" in data:
        # the gate is the one-class model (refused by the checks); without a policy, classes get fifo
        policy = policy or "fifo"
        queue_policy = policy if policy in QUEUE_POLICIES else "fifo"
        classes = tuple(QueryClass(name=c["name"], workload=Workload(int(c["users"]), float(c["think_time"])),
                                   queue=c.get("queue", "default"), weight=float(c.get("weight", 1.0)),
                                   **_build_job(c)) for c in data["classes"])
        queues = tuple(Queue(name=q["name"], capacity=float(q["capacity"]),
                             max_capacity=float(q.get("max_capacity", 1.0)), policy=q.get("policy", queue_policy))
                       for q in data.get("queues", ()))
        return Description(workload=None, phases=(), edges=(), scheduler=Scheduler(policy=policy), classes=classes,
                           queues=queues, **common)
    return Description(
        workload=Workload(users=int(data["workload"]["users"]), think_time=float(data["workload"]["think_time"])),
        scheduler=Scheduler(policy=policy or "fifo"), **_build_job(data), **common)


def _build_job(data: Mapping) -> dict:
    """``phases`` and ``edges`` of the top level or of a class (a chain in list order without edges)."""
    phases = tuple(_build_phase(phase) for phase in data["phases"])
    if "edges" in data:
        edges = tuple((before, after) for before, after in data["edges"])
    else:
        edges = tuple((first.name, second.name) for first, second in zip(phases, phases[1:]))
    return {"phases": phases, "edges": edges}


def _build_phase(phase: dict) -> Phase:
    samples = phase.get("samples")
    return Phase(
        name=phase["name"],
        tasks=int(phase["tasks"]),
        task_time=float(phase["task_time"]) if "task_time" in phase else math.fsum(samples) / len(samples),
        shape=int(phase.get("shape", 1)),
        distribution=phase.get("distribution", "erlang"),
        spread=float(phase["spread"]) if "spread" in phase else None,
        cv=float(phase["cv"]) if "cv" in phase else None,
        samples=tuple(float(x) for x in samples) if samples is not None else None,
        priority=float(phase.get("priority", 0.0)),
        kind=phase.get("kind", "container"),
    )


def _freeze(value):
    """Read-only copy: mappings become MappingProxyType, lists become tuples."""
    if isinstance(value, Mapping):
        return types.MappingProxyType({key: _freeze(item) for key, item in value.items()})
    if isinstance(value, list):
        return tuple(_freeze(item) for item in value)
    return value
