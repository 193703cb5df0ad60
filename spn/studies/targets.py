"""What a plan asks: its targets (``mean<=120``, ``p95<=150``, ``dashboard.mean<=30``) and the values of
the parameter it varies (``cluster.containers=1..400``).

>>> str(parse_target("dashboard.mean_execution_time<=30"))
'dashboard.mean<=30'
>>> vary_values("cluster.containers=3..6")
('cluster.containers', range(3, 7))
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from spn.exceptions import ModelError

__all__ = ["Target", "parse_target", "parse_vary", "vary_values", "parse_share_vary", "targets_for", "MAX_POINTS", "MAX_VALUE"]

#: the most configurations one command solves (a sweep's grid, an exhaustive plan)
MAX_POINTS = 1_000_000
#: the largest magnitude of a --vary or --grid range end: integers stay exact as floats below 2**53
MAX_VALUE = 10 ** 15


# --------------------------------------------------------------------------- targets and ranges
# [CLASS.]METRIC<=S: the class is everything before the last dot that precedes the metric
_TARGET = re.compile(r"^\s*(?:(.+?)\.)?(mean_execution_time|mean|p(\d+(?:\.\d+)?))\s*(<=|<)\s*"
                     r"([0-9.]+(?:[eE][-+]?\d+)?)\s*s?\s*$")


@dataclass(frozen=True)
class Target:
    """``mean<=120`` or ``p95<=150``: a metric (seconds), a comparison and a bound.

    ``query_class`` names the class whose metric it is (``dashboard.mean<=30``) in a
    description with query classes (docs/design.md §4.6); None: the model's one class.
    """

    metric: str
    op: str
    bound: float
    query_class: str | None = None

    @property
    def percentile(self) -> float | None:
        return None if self.metric == "mean" else float(self.metric[1:])

    @property
    def key(self) -> str:
        """The name of its metric among a solved point's metrics: ``p95``, or with a class ``dashboard.mean``."""
        return self.metric if self.query_class is None else f"{self.query_class}.{self.metric}"

    def met(self, value: float) -> bool:
        return value <= self.bound if self.op == "<=" else value < self.bound

    def __str__(self) -> str:
        prefix = "" if self.query_class is None else f"{self.query_class}."
        return f"{prefix}{self.metric}{self.op}{self.bound:g}"


def parse_target(text: str) -> Target:
    """Parse ``mean<=120``, ``p95<=150``, ``p99.9<200``, and with a class ``dashboard.mean_execution_time<=30``.

    ``mean_execution_time`` is another name for ``mean``.

    >>> parse_target("p95 <= 150")
    Target(metric='p95', op='<=', bound=150.0, query_class=None)
    >>> str(parse_target("dashboard.mean_execution_time<=30"))
    'dashboard.mean<=30'
    """
    match = _TARGET.match(str(text))
    if not match:
        raise ModelError(f"target: expected [CLASS.]METRIC<=SECONDS with METRIC mean (or mean_execution_time) "
                         f"or pQ (e.g. mean<=120, p95<=150, dashboard.mean<=30), got {text!r}")
    query_class, metric, q, op, number = match.groups()
    try:
        bound = float(number)
    except ValueError:      # the pattern lets "1.2.3" through
        raise ModelError(f"target: the bound must be a number of seconds, got {number!r}") from None
    if metric == "mean_execution_time":
        metric = "mean"
    if q is not None:
        if not 0 < float(q) < 100:
            raise ModelError(f"target: percentile {q} is not in (0, 100)")
        metric = f"p{float(q):g}"
    if not math.isfinite(bound) or bound <= 0:
        raise ModelError(f"target: the bound must be a positive number of seconds, got {number}")
    if query_class is not None:
        query_class = query_class.strip()
        if not query_class:
            raise ModelError(f"target: the class name before {metric} is empty in {text!r}")
    return Target(metric, op, bound, query_class)


def parse_vary(text: str) -> tuple[str, list[int]]:
    """``PATH=LO..HI`` (integers, inclusive) or ``PATH=V1,V2,...`` -> (path, sorted values), as a list.

    >>> parse_vary("cluster.containers=3..6")
    ('cluster.containers', [3, 4, 5, 6])
    """
    path, values = vary_values(text)
    if len(values) > MAX_POINTS:
        raise ModelError(f"vary: {len(values):,} values, more than {MAX_POINTS:,} to list")
    return path, list(values)


def vary_values(text: str) -> tuple[str, Sequence[int]]:
    """Like :func:`parse_vary`, but a range stays a :class:`range`: nothing is built for ``1..10**15``.

    >>> vary_values("workload.users=1..1000000000000")
    ('workload.users', range(1, 1000000000001))
    """
    path, sep, spec = str(text).partition("=")
    path, spec = path.strip(), spec.strip()
    if not sep or not path or not spec:
        raise ModelError(f"vary: expected PATH=LO..HI or PATH=V1,V2,..., got {text!r}")
    try:
        if ".." in spec:
            lo, hi = (int(x) for x in spec.split("..", 1))
            if hi < lo:
                raise ModelError(f"vary: empty range {spec!r} (LO must be <= HI)")
            values = range(lo, hi + 1)
        else:
            values = sorted({int(x) for x in spec.split(",")})
    except ValueError:
        raise ModelError(f"vary: the values must be integers (LO..HI or a list), got {_short(spec)!r}") from None
    if abs(values[0]) > MAX_VALUE or abs(values[-1]) > MAX_VALUE:
        raise ModelError(f"vary: {path} values must lie between -{MAX_VALUE:.0e} and {MAX_VALUE:.0e}, "
                         f"got {_short(spec)}")
    return path, values


def parse_share_vary(text: str) -> tuple[str, float, float] | None:
    """``queues.NAME.capacity=LO..HI`` -> (NAME, LO, HI), shares in (0, 1); None for another parameter.

    >>> parse_share_vary("queues.bi.capacity=0.1..0.9"), parse_share_vary("cluster.containers=1..9")
    (('bi', 0.1, 0.9), None)
    """
    from spn.description.shares import SHARE_PATH

    path, _, spec = str(text).partition("=")
    match = SHARE_PATH.match(path.strip())
    if not match:
        return None
    if ".." not in spec:
        raise ModelError(f"vary: expected queues.NAME.capacity=LO..HI with shares in (0, 1), got {_short(text)!r}")
    try:
        lo, hi = (float(x) for x in spec.split("..", 1))
    except ValueError:
        raise ModelError(f"vary: the shares must be numbers in (0, 1), got {_short(spec.strip())!r}") from None
    for share in (lo, hi):
        if not 0 < share < 1:      # also refuses nan
            raise ModelError(f"vary: a queue's share must lie in (0, 1) (the other queues need some), got {share:g}")
    if hi < lo:
        raise ModelError(f"vary: empty range {spec.strip()!r} (LO must be <= HI)")
    return match.group(1), lo, hi


def _short(text, width: int = 60) -> str:
    """``text``, cut to ``width`` characters for a one-line message."""
    text = str(text)
    return text if len(text) <= width else text[:width] + "..."


def targets_for(desc, targets) -> tuple:
    """``targets`` checked against ``desc``'s classes. One class: a prefix naming it names the model's own
    metric (``mapreduce.mean`` is what :func:`solve_point` calls ``mean``). Query classes: every target
    names a class, and asks for its mean (the classes' execution-time laws are not solved)."""
    from spn.description.model import job_classes

    names = [c.name for c in job_classes(desc)]
    if not desc.classes:
        strangers = [str(t) for t in targets if t.query_class not in (None, desc.name)]
        if strangers:
            raise ModelError(f"target: {', '.join(strangers)} names a class, but model {desc.name} has one class, "
                             f"{desc.name!r} (leave the prefix out)")
        return tuple(replace(t, query_class=None) for t in targets)
    problems = []
    for t in targets:
        if t.query_class is None:
            problems.append(f"target {t}: name the class, e.g. {names[0]}.{t.metric}{t.op}{t.bound:g} "
                            f"(classes: {', '.join(names)})")
        elif t.query_class not in names:
            problems.append(f"target {t}: unknown class {t.query_class!r} (classes: {', '.join(names)})")
        elif t.metric != "mean":
            problems.append(f"target {t}: with query classes a plan judges each class's mean execution time "
                            f"only (use CLASS.mean<=S)")
    if problems:
        raise ModelError(problems)
    return targets
