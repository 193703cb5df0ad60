"""The text side of descriptions: strict YAML/JSON parsing, and the words problems use.

Files and override values are parsed the same strict way: a duplicate key is an
error, and ``1e-3`` is a float (plain YAML 1.1 keeps the last of two equal keys
and reads ``1e-3`` as a string; both hide typos in a model file).

>>> parse_yaml("think_time: 1e-3")
{'think_time': 0.001}
>>> parse_json('{"a": 1, "a": 2}')
Traceback (most recent call last):
spn.description.text.DuplicateKeyError: a
>>> show("four"), kind([1]), did_you_mean("userz", ["users", "think_time"])
('"four"', 'a list', "; did you mean 'users'?")
"""

from __future__ import annotations

import difflib
import functools
import json
import re

__all__ = ["DuplicateKeyError", "parse_yaml", "parse_json", "show", "kind", "did_you_mean", "one_line"]


class DuplicateKeyError(ValueError):
    """A JSON object names the same key twice (``args[0]`` is the key)."""


@functools.cache
def _strict_loader():
    """PyYAML's safe loader, plus: duplicate keys are errors, and ``1e-3`` is a float."""
    import yaml

    class StrictLoader(yaml.SafeLoader):
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

    StrictLoader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$"),
        list("-+0123456789."),
    )
    return StrictLoader


def parse_yaml(text: str):
    """``text`` as YAML, strictly; raises :class:`yaml.YAMLError`."""
    import yaml

    return yaml.load(text, Loader=_strict_loader())


def parse_json(text: str):
    """``text`` as JSON; raises :class:`json.JSONDecodeError` or :class:`DuplicateKeyError`."""
    return json.loads(text, object_pairs_hook=_json_object)


def _json_object(pairs):
    result = {}
    for key, value in pairs:
        if key in result:
            raise DuplicateKeyError(key)
        result[key] = value
    return result


def show(value) -> str:
    """A value as the user wrote it, shortened: ``0``, ``"four"``, ``null``, ``[1, 2]``."""
    text = json.dumps(value, default=str, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def kind(value) -> str:
    """What sort of value this is, for a problem: ``a list``, ``a number (3)`` ..."""
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


def did_you_mean(word, candidates) -> str:
    """``; did you mean 'x'?`` for the closest candidate, or nothing."""
    close = difflib.get_close_matches(str(word), [str(c) for c in candidates], n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def one_line(error) -> str:
    """An error's message with its white space folded onto one line."""
    return " ".join(str(error).split())
