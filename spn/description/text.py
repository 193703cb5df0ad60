"""The text side of descriptions: strict, bounded YAML/JSON parsing, and the words problems use.

Files and override values are parsed the same strict way: a duplicate key is an
error, and ``1e-3`` is a float (plain YAML 1.1 keeps the last of two equal keys
and reads ``1e-3`` as a string; both hide typos in a model file).

Parsing is also bounded, so that no text can make it run for minutes or exhaust
memory: at most :data:`~spn.limits.MAX_DEPTH` levels of nesting (deeper would
overflow the recursion of the readers and checkers), :data:`~spn.limits.MAX_ALIASES`
YAML aliases, :data:`~spn.limits.MAX_NODES` values once aliases are expanded (a
"billion laughs" file is a few lines of aliases of aliases), and no alias inside
its own anchor (a value that contains itself).

>>> parse_yaml("think_time: 1e-3")
{'think_time': 0.001}
>>> parse_json('{"a": 1, "a": 2}')
Traceback (most recent call last):
spn.description.text.DuplicateKeyError: a
>>> parse_yaml("a: &x [*x]")
Traceback (most recent call last):
...
yaml.composer.ComposerError: found a recursive alias *x (a value that contains itself)
  in "<unicode string>", line 1, column 8
>>> show("four"), kind([1]), did_you_mean("userz", ["users", "think_time"])
('"four"', 'a list', "; did you mean 'users'?")
"""

from __future__ import annotations

import difflib
import functools
import json
import re

from spn.limits import MAX_ALIASES, MAX_DEPTH, MAX_NODES

__all__ = ["DuplicateKeyError", "TooLargeError", "parse_yaml", "parse_json", "show", "kind", "did_you_mean",
           "one_line"]

#: digits of an integer literal: more is no count or time (and int() refuses past 4,300)
_MAX_DIGITS = 100


class DuplicateKeyError(ValueError):
    """A JSON object names the same key twice (``args[0]`` is the key)."""


class TooLargeError(ValueError):
    """JSON text past a bound (nesting, values, digits); ``args[0]`` says which, ``position``
    is the offset in the text where it was found (or None)."""

    def __init__(self, what: str, position: int | None = None):
        super().__init__(what)
        self.position = position


@functools.cache
def _strict_loader():
    """PyYAML's safe loader, with duplicate keys as errors, ``1e-3`` as a float, and the bounds of
    the module docstring. Events come from libyaml where it is installed (scanning in Python
    costs about 10 s per MB); nodes are composed here, where they can be counted."""
    import yaml
    from yaml.composer import Composer
    from yaml.constructor import ConstructorError, SafeConstructor
    from yaml.resolver import Resolver

    class BoundedComposer(Composer):
        def compose_document(self):
            self._depth, self._aliases, self._nodes = 0, 0, 0
            self._sizes, self._open = {}, set()
            return super().compose_document()

        def compose_node(self, parent, index):
            event = self.peek_event()
            if isinstance(event, yaml.AliasEvent):
                self._aliases += 1
                if self._aliases > MAX_ALIASES:
                    self._refuse(f"more than {MAX_ALIASES} aliases", event)
                if event.anchor in self._open:
                    self._refuse(f"found a recursive alias *{event.anchor} (a value that contains itself)", event)
                self._count(self._sizes.get(event.anchor, 1), event)
                return super().compose_node(parent, index)
            self._depth += 1
            if self._depth > MAX_DEPTH:
                self._refuse(f"nested deeper than {MAX_DEPTH} levels", event)
            before = self._nodes
            self._count(1, event)
            anchor = event.anchor
            if anchor is not None:
                self._open.add(anchor)
            node = super().compose_node(parent, index)
            if anchor is not None:
                self._open.discard(anchor)
                self._sizes[anchor] = self._nodes - before
            self._depth -= 1
            return node

        def _count(self, nodes, event):
            self._nodes += nodes
            if self._nodes > MAX_NODES:
                self._refuse(f"more than {MAX_NODES:,} values (aliases expanded)", event)

        @staticmethod
        def _refuse(problem, event):
            raise yaml.composer.ComposerError(None, None, problem, event.start_mark)

    class StrictConstructor(SafeConstructor):
        def construct_mapping(self, node, deep=False):
            seen = set()
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue                # `<<: *defaults`: keys written beside it override
                key = self.construct_object(key_node, deep=True)
                try:
                    duplicate = key in seen
                except TypeError:
                    raise ConstructorError(None, None, f"a key cannot be {kind(key)}", key_node.start_mark) from None
                if duplicate:
                    raise ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
                seen.add(key)
            return super().construct_mapping(node, deep=deep)

        def construct_object(self, node, deep=False):
            try:
                return super().construct_object(node, deep=deep)
            except (ValueError, OverflowError) as error:   # e.g. a date 2020-13-45, 5,000 digits
                raise ConstructorError(None, None, f"cannot read {show(node.value)}: {one_line(error)}",
                                       node.start_mark) from None

        def construct_yaml_int(self, node):
            digits = re.sub(r"[^0-9a-fA-F]", "", str(node.value))
            if len(digits) > _MAX_DIGITS:
                raise ConstructorError(None, None, f"an integer of {len(digits):,} digits", node.start_mark)
            self._unambiguous(node)
            return super().construct_yaml_int(node)

        def construct_yaml_float(self, node):
            self._unambiguous(node)
            return super().construct_yaml_float(node)

        @staticmethod
        def _unambiguous(node):
            """Refuse the numbers YAML 1.1 reads otherwise than everyone else (YAML 1.2, JSON, a person):
            ``010`` is octal 8 there and ``1:30`` base 60 (90), so a grid of 010,012 would solve 8 and 10."""
            value = str(node.value).replace("_", "")
            if ":" in value:
                raise ConstructorError(None, None, f"{value} is a base-60 number in YAML 1.1 (1:30 is 90): "
                                       "write the plain number", node.start_mark)
            if re.fullmatch(r"[-+]?0[0-9]+", value):
                raise ConstructorError(None, None, f"{value} has a leading zero, which YAML 1.1 reads as octal "
                                       f"({int(value, 8)}): write it without the zero", node.start_mark)

    StrictConstructor.add_constructor("tag:yaml.org,2002:int", StrictConstructor.construct_yaml_int)
    StrictConstructor.add_constructor("tag:yaml.org,2002:float", StrictConstructor.construct_yaml_float)

    if getattr(yaml, "__with_libyaml__", False):
        from yaml.cyaml import CParser

        def start(self, stream):
            CParser.__init__(self, stream)
        parsers = (CParser,)
    else:
        from yaml.parser import Parser
        from yaml.reader import Reader
        from yaml.scanner import Scanner

        def start(self, stream):
            Reader.__init__(self, stream)
            Scanner.__init__(self)
            Parser.__init__(self)
        parsers = (Reader, Scanner, Parser)

    class StrictLoader(*parsers, BoundedComposer, StrictConstructor, Resolver):
        def __init__(self, stream):
            start(self, stream)
            BoundedComposer.__init__(self)
            StrictConstructor.__init__(self)
            Resolver.__init__(self)

        # libyaml's parser composes nodes in C, without bounds: take the composer above
        get_single_node = BoundedComposer.get_single_node
        get_node = BoundedComposer.get_node
        check_node = BoundedComposer.check_node

    StrictLoader.add_implicit_resolver(
        "tag:yaml.org,2002:float",
        re.compile(r"^[-+]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)[eE][-+]?[0-9]+$"),
        list("-+0123456789."),
    )
    return StrictLoader


def parse_yaml(text: str):
    """``text`` as YAML, strictly and within bounds; raises :class:`yaml.YAMLError`."""
    import yaml

    return yaml.load(text, Loader=_strict_loader())


def parse_json(text: str):
    """``text`` as JSON; raises :class:`json.JSONDecodeError`, :class:`DuplicateKeyError` or
    :class:`TooLargeError`.

    >>> parse_json("[" * 100 + "]" * 100)
    Traceback (most recent call last):
    ...
    spn.description.text.TooLargeError: nested deeper than 64 levels
    """
    try:
        value = json.loads(text, object_pairs_hook=_json_object, parse_int=_json_int)
    except RecursionError:
        raise TooLargeError(f"nested deeper than {MAX_DEPTH} levels", _too_deep(text)) from None
    _check_size(value, text)
    return value


def _json_int(text: str) -> int:
    if len(text) > _MAX_DIGITS:
        raise TooLargeError(f"an integer of {len(text):,} digits")
    return int(text)


def _json_object(pairs):
    result = {}
    for key, value in pairs:
        if key in result:
            raise DuplicateKeyError(key)
        result[key] = value
    return result


def _check_size(value, text: str) -> None:
    """Refuse parsed JSON nested past MAX_DEPTH or with more than MAX_NODES values (no recursion)."""
    stack, nodes = [(value, 1)], 0
    while stack:
        value, depth = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise TooLargeError(f"more than {MAX_NODES:,} values")
        if depth > MAX_DEPTH:
            raise TooLargeError(f"nested deeper than {MAX_DEPTH} levels", _too_deep(text))
        if isinstance(value, dict):
            stack += [(item, depth + 1) for item in value.values()]
        elif isinstance(value, list):
            stack += [(item, depth + 1) for item in value]


_JSON_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)


def _too_deep(text: str) -> int | None:
    """Offset of the bracket that opens level MAX_DEPTH + 1 (strings skipped), or None."""
    depth = 0
    for match in _JSON_TOKENS.finditer(text):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return match.start()
        elif token in "]}":
            depth -= 1
    return None


def show(value) -> str:
    """A value as the user wrote it, shortened: ``0``, ``"four"``, ``null``, ``[1, 2]``."""
    try:
        text = json.dumps(value, default=str, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):   # keys JSON cannot hold, a cycle, 5,000 digits
        try:
            text = repr(value)
        except ValueError:
            text = f"an integer of {value.bit_length():,} bits" if isinstance(value, int) else type(value).__name__
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."


def kind(value) -> str:
    """What sort of value this is, for a problem: ``a list``, ``a number (3)`` ..."""
    if value is None:
        return "nothing (empty)"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a mapping"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return f"a boolean ({str(value).lower()})"
    if isinstance(value, (int, float)):
        return f"a number ({show(value)})"
    return f"a {type(value).__name__}"


def did_you_mean(word, candidates) -> str:
    """``; did you mean 'x'?`` for the closest candidate, or nothing."""
    close = difflib.get_close_matches(str(word), [str(c) for c in candidates], n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def one_line(error) -> str:
    """An error's message with its white space folded onto one line."""
    return " ".join(str(error).split())
