"""Overrides: ``"PATH=VALUE"`` strings that change a description mapping before it is checked.

PATH is dotted over the mapping; items of ``phases``, ``classes`` and ``queues`` are
addressed by name or by index (``classes.dashboard.phases.scan.tasks=4``,
``queues.etl.capacity=0.3``). VALUE is read as a YAML scalar. The schema guides the
walk, so that a typo in PATH is reported with the keys that exist. Every override is
applied before the description is checked, so values that must agree (the queues'
capacities, which sum to 1) are changed together by repeating ``--set``.

>>> apply_overrides({"workload": {"users": 3}}, ["workload.users=5"])
{'workload': {'users': 5}}
>>> apply_overrides({"workload": {"users": 3}}, ["workload.userz=5"])
Traceback (most recent call last):
spn.exceptions.ModelError: --set workload.userz=5: unknown key 'userz' in workload (known keys: users, think_time; \
did you mean 'users'?)
"""

from __future__ import annotations

import copy
from collections.abc import Mapping

from spn.description.model import THINK_TIME_PLACEHOLDER
from spn.description.text import did_you_mean, kind, one_line, parse_yaml, show
from spn.description.validate import _listing, _quoted, shared_schema
from spn.exceptions import ModelError
from spn.limits import MAX_DEPTH

__all__ = ["apply_overrides"]


def apply_overrides(data: dict, overrides) -> dict:
    """Return a copy of ``data`` with each ``"PATH=VALUE"`` override applied.

    VALUE is read as a YAML scalar (``5`` is an int, ``2.5`` a float, ``[1, 2]``
    a list). A path may only name keys that exist or that the schema allows.
    Raises :class:`ModelError` listing every override that cannot be applied.

    >>> apply_overrides({"phases": [{"name": "map", "tasks": 4}]}, ["phases.map.tasks=10"])
    {'phases': [{'name': 'map', 'tasks': 10}]}
    """
    if not isinstance(data, Mapping):
        raise ModelError(f"cannot apply overrides to {kind(data)}: a model description is a mapping")
    if isinstance(overrides, str):
        overrides = [overrides]
    result = copy.deepcopy(dict(data))
    problems = []
    for text in overrides:
        try:
            _apply_override(result, text)
        except _OverrideProblem as problem:
            problems.append(str(problem))
        else:
            _forget_placeholder(result, text)
    if problems:
        raise ModelError(problems)
    return result


class _OverrideProblem(Exception):
    """One override that cannot be applied (collected into a ModelError)."""

    def __init__(self, text, what: str):
        # Overrides come from the command line's --set, so the problem quotes them that way
        # (tests/test_description.py pins this wording).
        super().__init__(f"--set {_shown(text)}: {what}")


def _apply_override(root: dict, text: str) -> None:
    """Apply one ``PATH=VALUE`` to ``root`` in place, guided by the schema."""
    import yaml

    if not isinstance(text, str) or "=" not in text:
        raise _OverrideProblem(repr(text), "expected PATH=VALUE, e.g. workload.users=5")
    path, _, raw = text.partition("=")
    keys = path.strip().split(".")
    if any(key == "" for key in keys):
        raise _OverrideProblem(text, "PATH must be dotted names, e.g. phases.map.tasks")
    if len(keys) > MAX_DEPTH:
        raise _OverrideProblem(text, f"PATH has {len(keys):,} parts, more than a description's "
                                             f"{MAX_DEPTH} levels")
    try:
        value = parse_yaml(raw)
    except yaml.YAMLError as error:
        raise _OverrideProblem(text, f"VALUE is not valid YAML ({one_line(error)})") from None

    node, node_schema = root, shared_schema()
    for depth, key in enumerate(keys):
        here = _shown(".".join(keys[:depth])) or "the description"
        last = depth == len(keys) - 1
        if isinstance(node, dict):
            properties = node_schema.get("properties") if node_schema else None
            closed = node_schema is not None and node_schema.get("additionalProperties") is False
            if key not in node and closed and key not in (properties or {}):
                known = list(properties or {})
                raise _OverrideProblem(
                    text, f"unknown key {_quoted(key)} in {here} (known keys: {', '.join(known)}{did_you_mean(key, known)})"
                )
            child_schema = _resolve((properties or {}).get(key)) if node_schema else None
            if last:
                node[key] = value
                return
            if key not in node:
                if child_schema is not None and child_schema.get("type") != "object":
                    unset = ".".join(keys[: depth + 1])
                    raise _OverrideProblem(text, f"{unset} is not set, so it has no {_quoted(keys[depth + 1])}")
                node[key] = {}
            index = key
        elif isinstance(node, list):
            child_schema = _resolve(node_schema.get("items")) if node_schema else None
            index = _list_index(node, key)
            if index is None:
                raise _OverrideProblem(text, _missing_item(node, key, here))
            if last:
                node[index] = value
                return
        else:
            raise _OverrideProblem(text, f"{here} is {show(node)}, not a mapping, so it has no {_quoted(key)}")
        node, node_schema = node[index], child_schema


def _forget_placeholder(root: dict, text: str) -> None:
    """A think time given with --set is the user's, so the fit's placeholder mark goes (even for 1.0 s).

    >>> data = {"workload": {"think_time": 1.0}, "reference": {"think_time_placeholder": 1.0}}
    >>> apply_overrides(data, ["workload.think_time=1.0"])["reference"]
    {}
    """
    if text.partition("=")[0].strip() == "workload.think_time" and isinstance(root.get("reference"), dict):
        root["reference"].pop(THINK_TIME_PLACEHOLDER, None)


def _list_index(items: list, key: str):
    """The index named by ``key``: an item's ``name`` first, else a number; None if neither."""
    for index, item in enumerate(items):
        if isinstance(item, dict) and item.get("name") == key:
            return index
    if _is_index(key) and int(key) < len(items):
        return int(key)
    return None


def _is_index(key: str) -> bool:
    """``"12"`` is an index; ``"²"`` or ``"١"`` (digits to str.isdigit) and 5,000 digits are not."""
    return key.isascii() and key.isdigit() and len(key) <= 18


def _shown(text: str) -> str:
    """An override as quoted in a problem, cut to a readable length."""
    return text if len(text) <= 80 else text[:77] + "..."


#: the lists whose items have names, and what one item is called
_ITEMS = {"phases": "phase", "classes": "class", "queues": "queue"}


def _missing_item(items: list, key: str, here: str) -> str:
    names = [item["name"] for item in items if isinstance(item, dict) and isinstance(item.get("name"), str)]
    plural = here.rsplit(".", 1)[-1]                # classes.etl.phases: a class's phases
    if plural in _ITEMS:
        one = _ITEMS[plural]
        listing = f"{plural}: {_listing(names)}" if names else f"there are no {plural}"
        if _is_index(key):
            return f"no {one} at index {key} ({listing})"
        return f"unknown {one} {_quoted(key)} ({listing}{did_you_mean(key, names)})"
    return f"no item {_quoted(key)} in {here} (it has {len(items)} items, indexes 0..{len(items) - 1})"


def _resolve(subschema):
    """Follow a ``{"$ref": "#/$defs/name"}`` to the definition it names."""
    if subschema and "$ref" in subschema:
        return shared_schema()["$defs"][subschema["$ref"].rsplit("/", 1)[-1]]
    return subschema
