"""The fields of a log event, checked as they are read: ids, counts, times, byte counts, texts.

A log is input from anywhere: a time may be ``1e400`` (infinity to JSON), ``"NaN"``
or ``"abc"``, an id ``1.5`` or 400 digits long. Each reader here returns the value
as the type the models need, or raises :class:`FieldError` (a ``ValueError``)
saying which field held what and what was expected; the log readers add the
file and the line. An integral float (``3.0``) is taken as the integer it is;
a bool is not a number.

>>> event = {"Launch Time": 1422981780767, "Index": 3.0, "Host": "node-1"}
>>> time_ms(event, "Launch Time"), ident(event, "Index"), text(event, "Host"), time_ms(event, "Finish Time")
(1422981780767, 3, 'node-1', None)
>>> time_ms({"Finish Time": float("inf")}, "Finish Time")
Traceback (most recent call last):
...
spn.logs.fields.FieldError: 'Finish Time' is inf: expected a time in epoch milliseconds (an integer from 0 to 9,007,199,254,740,992)
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping

from spn.exceptions import LogFormatError
from spn.limits import MAX_COUNT

__all__ = ["FieldError", "MAX_TIME_MS", "MAX_ID", "integer", "time_ms", "ident", "id_list", "count",
           "byte_count", "text", "scalar_text", "mapping", "shown", "event_at"]

#: the latest time a log may hold, in epoch ms: exact in a float, and far past any real clock
MAX_TIME_MS = 2 ** 53
#: the largest id (a Java long, what Spark and Hadoop write)
MAX_ID = 2 ** 63 - 1

_TIME = f"a time in epoch milliseconds (an integer from 0 to {MAX_TIME_MS:,})"
_ID = "an id (an integer >= 0)"
_BYTES = "a number of bytes (an integer >= 0)"


class FieldError(ValueError):
    """A field of a log event that holds the wrong thing (message: the field, its value, what was expected)."""


@contextlib.contextmanager
def event_at(where: str, kind: str):
    """Within the block, a bad field of the ``kind`` event at ``where`` (file and line) is a LogFormatError.

    A stray ``KeyError``, ``TypeError``, ... (an event of a shape no check
    foresaw) is one too, named by its type, rather than an internal error.

    >>> with event_at("app.json: line 7", "SparkListenerTaskEnd"):
    ...     time_ms({"Launch Time": "abc"}, "Launch Time")
    Traceback (most recent call last):
    ...
    spn.exceptions.LogFormatError: app.json: line 7: malformed SparkListenerTaskEnd event: 'Launch Time' is 'abc': expected a time in epoch milliseconds (an integer from 0 to 9,007,199,254,740,992)
    """
    try:
        yield
    except FieldError as error:
        raise LogFormatError(f"{where}: malformed {kind} event: {error}") from None
    except (KeyError, TypeError, ValueError, AttributeError, ArithmeticError) as error:
        raise LogFormatError(f"{where}: malformed {kind} event ({type(error).__name__}: {error})") from None


def shown(value) -> str:
    """A short, safe description of a value for a message (no 4,000-digit integers, no megabyte strings).

    >>> shown(10 ** 400), shown("x" * 100), shown([1, 2]), shown(float("nan"))
    ('an integer of 401 digits', "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...'", 'a list', 'nan')
    """
    if isinstance(value, bool) or value is None:
        return {True: "true", False: "false", None: "null"}[value]
    if isinstance(value, int):
        if value.bit_length() > 64:
            return f"an integer of {len(str(abs(value))) if value.bit_length() < 10_000 else 'thousands of'} digits"
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, str):
        return repr(value[:40] + "...") if len(value) > 40 else repr(value)
    return "an object" if isinstance(value, Mapping) else "a list" if isinstance(value, list) else type(value).__name__


def integer(value, name: str, *, low: int, high: int, what: str) -> int:
    """``value`` as an int in ``[low, high]``; a :class:`FieldError` naming ``name`` and ``what`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise FieldError(f"{name!r} is {shown(value)}: expected {what}")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise FieldError(f"{name!r} is {shown(value)}: expected {what}")
    if not low <= value <= high:
        raise FieldError(f"{name!r} is {shown(value)}: expected {what}")
    return int(value)


def _field(event: Mapping, key: str, required: bool):
    value = event.get(key)
    if value is None and required:
        raise FieldError(f"{key!r} is missing" if key not in event else f"{key!r} is null")
    return value


def time_ms(event: Mapping, key: str, *, required: bool = False) -> int | None:
    """A time (epoch ms) from ``event[key]``; ``None`` when absent or null and not ``required``."""
    value = _field(event, key, required)
    return None if value is None else integer(value, key, low=0, high=MAX_TIME_MS, what=_TIME)


def ident(event: Mapping, key: str, *, required: bool = True, default: int | None = None) -> int | None:
    """An id (job, stage, task, attempt, index) from ``event[key]``; ``default`` when absent and not required."""
    value = _field(event, key, required)
    return default if value is None else integer(value, key, low=0, high=MAX_ID, what=_ID)


def id_list(value, name: str) -> tuple[int, ...]:
    """A JSON list of ids as a tuple."""
    if not isinstance(value, list):
        raise FieldError(f"{name!r} is {shown(value)}: expected a list of ids")
    return tuple(integer(v, name, low=0, high=MAX_ID, what="a list of ids (integers >= 0)") for v in value)


def count(event: Mapping, key: str, *, required: bool = False, default: int | None = None) -> int | None:
    """A count (tasks, cores) in ``[0, MAX_COUNT]`` from ``event[key]``; ``default`` when absent."""
    value = _field(event, key, required)
    return default if value is None else integer(value, key, low=0, high=MAX_COUNT,
                                                 what=f"a count (an integer from 0 to {MAX_COUNT:,})")


def byte_count(group, key: str) -> int:
    """Bytes from a metrics group (``Input Metrics``, Hadoop counters): 0 when the group or the key is absent."""
    if not isinstance(group, Mapping):
        return 0
    value = group.get(key)
    return 0 if value is None else integer(value, key, low=0, high=MAX_ID, what=_BYTES)


def text(event: Mapping, key: str) -> str | None:
    """A name, status or id written as text: a string, or a number taken as its text; ``None`` when absent."""
    value = event.get(key)
    if value is None or isinstance(value, str):
        return value
    return scalar_text(value, key)


def scalar_text(value, name: str) -> str:
    """A JSON scalar as its ``str()``; a list, an object or an integer past 64 bits is a :class:`FieldError`."""
    if isinstance(value, str):
        return value
    if isinstance(value, (bool, float)) or (isinstance(value, int) and value.bit_length() <= 64):
        return str(value)
    raise FieldError(f"{name!r} is {shown(value)}: expected text")


def mapping(value, name: str, *, required: bool = True) -> Mapping:
    """A JSON object; an empty one when it is absent (or null) and not ``required``."""
    if value is None and not required:
        return {}
    if not isinstance(value, Mapping):
        raise FieldError(f"{name!r} is {'missing' if value is None else shown(value)}: expected an object")
    return value
