"""What is asked (:class:`Question`) and what an answer may cost (:class:`Budget`).

>>> Question(percentiles=(50, 95)).needs_distribution, Question().needs_distribution
(True, False)
>>> Budget(max_seconds=30).max_seconds
30.0
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

from spn.defaults import MAX_STATES, RTOL, SEED
from spn.exceptions import ModelError

__all__ = ["Question", "Budget", "Clock", "parse_percentiles", "MAX_SECONDS", "REL_PRECISION", "MAX_PERCENTILES"]

#: percentiles one evaluation reports
MAX_PERCENTILES = 100

#: seconds one evaluation may take by default, every step included (an exact chain may spend half
#: of it exploring: about 1,000,000 states of the paper's net, 400,000 of a job-identity net)
MAX_SECONDS = 30.0
#: relative half-width of a simulation's 95 % interval of the mean execution time, by default
REL_PRECISION = 0.005


@dataclass(frozen=True)
class Question:
    """The measures asked for besides the mean, throughput and utilisation (always given).

    ``percentiles``: levels q in (0, 100) of one job's execution time; ``deadline``: also
    P(execution time <= deadline).
    """

    percentiles: tuple[float, ...] = ()
    deadline: float | None = None

    def __post_init__(self):
        qs = tuple(float(q) for q in self.percentiles)
        bad = [q for q in qs if not 0 < q < 100]
        if bad:
            raise ModelError(f"percentiles: {bad[0]:g} is not in (0, 100)")
        object.__setattr__(self, "percentiles", tuple(dict.fromkeys(qs)))
        if self.deadline is not None:
            deadline = float(self.deadline)
            if not (math.isfinite(deadline) and deadline > 0):
                raise ModelError(f"deadline: must be a positive number of seconds, got {self.deadline!r}")
            object.__setattr__(self, "deadline", deadline)

    @property
    def needs_distribution(self) -> bool:
        """Whether one job's execution-time law is needed, not only means."""
        return bool(self.percentiles) or self.deadline is not None


@dataclass(frozen=True)
class Budget:
    """What one evaluation may spend: ``max_seconds`` for everything (None: no limit), ``max_states``
    tangible states for an exact chain, the simulation's ``rel_precision`` and ``seed``, the
    steady-state solver's ``rtol``, and ``progress`` lines on stderr (only on a terminal)."""

    max_seconds: float | None = MAX_SECONDS
    max_states: int = MAX_STATES
    rel_precision: float = REL_PRECISION
    rtol: float = RTOL
    seed: int = SEED
    progress: bool = False

    def __post_init__(self):
        if self.max_seconds is not None:
            object.__setattr__(self, "max_seconds", float(self.max_seconds))
            if not self.max_seconds > 0:
                raise ModelError(f"max_seconds must be > 0, got {self.max_seconds:g}", option="max_seconds")


class Clock:
    """The seconds left of a :class:`Budget` since the evaluation started.

    >>> clock = Clock(None)
    >>> clock.left() is None
    True
    """

    def __init__(self, max_seconds: float | None):
        self.started = time.perf_counter()
        self.max_seconds = max_seconds

    def elapsed(self) -> float:
        return time.perf_counter() - self.started

    def left(self) -> float | None:
        """Seconds left (never below a tenth of a second, so that a last method can still answer)."""
        if self.max_seconds is None:
            return None
        return max(self.max_seconds - self.elapsed(), 0.1)


def parse_percentiles(text: str) -> tuple[float, ...]:
    """``"50,90,99"`` -> ``(50.0, 90.0, 99.0)``; each in (0, 100).

    >>> parse_percentiles("50, 99.9")
    (50.0, 99.9)
    """
    out = []
    for part in str(text).split(","):
        part = part.strip()
        try:
            q = float(part)
        except ValueError:
            raise ModelError(f"percentiles: expected numbers in (0, 100) separated by commas, got {part!r}") \
                from None
        if not 0 < q < 100:
            raise ModelError(f"percentiles: {part} is not in (0, 100)")
        out.append(q)
    out = tuple(dict.fromkeys(out))
    if len(out) > MAX_PERCENTILES:
        raise ModelError(f"percentiles: {len(out):,} of them, more than {MAX_PERCENTILES}")
    return out
