"""Task-time laws for simulation, and the law of each phase of a description (docs/design.md §4).

A :class:`Distribution` is plain data (frozen) that can draw a block of samples
from a :class:`numpy.random.Generator`. The simulators draw in blocks and hand out
the numbers one at a time, so that a hot loop never calls NumPy for one number.

==============  ==========================================  ======================
law             parameters                                  mean / variance
==============  ==========================================  ======================
exponential     mean                                        m / m^2
erlang          shape k, mean                               m / m^2/k
deterministic   mean                                        m / 0
uniform         mean, spread s (half-width / mean, (0, 1])  m / (s m)^2/3
lognormal       mean, cv                                    m / (cv m)^2
empirical       samples (drawn with replacement)            sample mean / variance
==============  ==========================================  ======================

>>> import numpy as np
>>> law = Distribution.uniform(2.0, spread=0.5)
>>> law.mean, round(law.variance, 4)
(2.0, 0.3333)
>>> x = law.sample(np.random.default_rng(1), 4)
>>> bool(((x >= 1.0) & (x <= 3.0)).all())
True
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np

from spn.exceptions import ModelError, SpnError

KINDS = ("exponential", "erlang", "deterministic", "uniform", "lognormal", "empirical")

#: numbers drawn per call to NumPy by the simulators' streams
BLOCK = 2048


@dataclass(frozen=True)
class Distribution:
    """A task-time law. Build one with the class methods, e.g. ``Distribution.erlang(3, 2.0)``.

    ``mean`` is the mean duration (for ``empirical``, the mean of the samples).

    >>> Distribution.erlang(3, 2.0).scv
    0.3333333333333333
    >>> Distribution.exponential(2.0).is_exponential, Distribution.erlang(1, 2.0).is_exponential
    (True, True)
    """

    kind: str
    mean: float
    shape: int = 1
    spread: float | None = None
    cv: float | None = None
    samples: tuple[float, ...] | None = None

    def __post_init__(self):
        problems = []
        if self.kind not in KINDS:
            problems.append(f"unknown distribution {self.kind!r} (known: {', '.join(KINDS)})")
        if not (_finite(self.mean) and self.mean > 0):
            problems.append(f"{self.kind}: mean must be a finite number > 0, got {self.mean!r}")
        if self.kind == "erlang" and not (isinstance(self.shape, (int, np.integer))
                                          and not isinstance(self.shape, bool) and self.shape >= 1):
            problems.append(f"erlang: shape must be an integer >= 1, got {self.shape!r}")
        if self.kind == "uniform" and not (_finite(self.spread) and 0 < self.spread <= 1):
            problems.append(f"uniform: spread must be in (0, 1], got {self.spread!r}")
        if self.kind == "lognormal" and not (_finite(self.cv) and self.cv > 0):
            problems.append(f"lognormal: cv must be a finite number > 0, got {self.cv!r}")
        if self.kind == "empirical":
            if not self.samples or not all(_finite(x) and x > 0 for x in self.samples):
                problems.append("empirical: samples must be a non-empty list of finite durations > 0")
        if problems:
            raise ModelError(problems)

    # ---- constructors
    @classmethod
    def exponential(cls, mean: float) -> Distribution:
        return cls("exponential", float(mean))

    @classmethod
    def erlang(cls, shape: int, mean: float) -> Distribution:
        return cls("erlang", float(mean), shape=shape)

    @classmethod
    def deterministic(cls, value: float) -> Distribution:
        return cls("deterministic", float(value))

    @classmethod
    def uniform(cls, mean: float, spread: float) -> Distribution:
        """Uniform on [mean (1 - spread), mean (1 + spread)]."""
        return cls("uniform", float(mean), spread=float(spread))

    @classmethod
    def lognormal(cls, mean: float, cv: float) -> Distribution:
        """Lognormal with the given mean and coefficient of variation."""
        return cls("lognormal", float(mean), cv=float(cv))

    @classmethod
    def empirical(cls, samples) -> Distribution:
        """Measured durations, drawn with replacement (each equally likely)."""
        samples = tuple(float(x) for x in samples)
        mean = sum(samples) / len(samples) if samples else math.nan
        return cls("empirical", mean, samples=samples)

    # ---- properties
    @property
    def is_exponential(self) -> bool:
        """True for ``exponential`` and for Erlang of shape 1 (memoryless: raced by rate)."""
        return self.kind == "exponential" or (self.kind == "erlang" and self.shape == 1)

    @property
    def variance(self) -> float:
        m = self.mean
        if self.kind == "exponential":
            return m * m
        if self.kind == "erlang":
            return m * m / self.shape
        if self.kind == "deterministic":
            return 0.0
        if self.kind == "uniform":
            return (self.spread * m) ** 2 / 3.0
        if self.kind == "lognormal":
            return (self.cv * m) ** 2
        x = np.asarray(self.samples)
        return float(x.var())

    @property
    def scv(self) -> float:
        """Squared coefficient of variation, variance / mean^2."""
        return self.variance / self.mean ** 2

    def sample(self, rng: np.random.Generator, size: int) -> np.ndarray:
        """``size`` independent durations (a float array)."""
        m = self.mean
        if self.kind == "exponential":
            return rng.standard_exponential(size) * m
        if self.kind == "erlang":
            if self.shape == 1:
                return rng.standard_exponential(size) * m
            return rng.standard_gamma(self.shape, size) * (m / self.shape)
        if self.kind == "deterministic":
            return np.full(size, m)
        if self.kind == "uniform":
            return m * (1.0 + self.spread * (2.0 * rng.random(size) - 1.0))
        if self.kind == "lognormal":
            sigma2 = math.log1p(self.cv ** 2)
            return rng.lognormal(math.log(m) - sigma2 / 2.0, math.sqrt(sigma2), size)
        return np.asarray(self.samples)[rng.integers(0, len(self.samples), size)]

    def __str__(self) -> str:
        if self.kind == "erlang":
            return f"erlang(k={self.shape}, mean={self.mean:g})"
        if self.kind == "uniform":
            return f"uniform(mean={self.mean:g}, spread={self.spread:g})"
        if self.kind == "lognormal":
            return f"lognormal(mean={self.mean:g}, cv={self.cv:g})"
        if self.kind == "empirical":
            return f"empirical({len(self.samples)} samples, mean={self.mean:g})"
        return f"{self.kind}(mean={self.mean:g})"


#: events between two looks at the clock by a simulator given a deadline (a few milliseconds of work)
CLOCK_EVERY = 4096


class SimulationTimeout(SpnError):
    """A replication was stopped at its deadline (``max_seconds``) before its run ended.

    >>> SimulationTimeout("stopped").option
    'max_seconds'
    """

    def __init__(self, *args):
        super().__init__(*args, option="max_seconds")


def stream(draw, block: int = BLOCK):
    """An endless iterator over ``draw(block)`` blocks, one Python float at a time.

    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> s = stream(rng.random, 4)
    >>> 0 <= next(s) < 1
    True
    """
    while True:
        yield from draw(block).tolist()


def law_stream(law: Distribution, rng: np.random.Generator, block: int = BLOCK):
    """An endless iterator of durations drawn from ``law`` with ``rng``."""
    if law.kind == "deterministic":
        return itertools.repeat(float(law.mean))
    return stream(lambda n: law.sample(rng, n), block)


def phase_distribution(phase) -> Distribution:
    """The task-time law of a :class:`~spn.description.Phase`.

    ``empirical`` phases draw from their ``samples`` (their ``task_time`` is not used).

    >>> from spn.description import Phase
    >>> str(phase_distribution(Phase("map", tasks=2, task_time=3.0, shape=2)))
    'erlang(k=2, mean=3)'
    """
    kind = phase.distribution
    if kind == "erlang":
        return Distribution.erlang(phase.shape, phase.task_time)
    if kind == "exponential":
        return Distribution.exponential(phase.task_time)
    if kind == "deterministic":
        return Distribution.deterministic(phase.task_time)
    if kind == "uniform":
        return Distribution.uniform(phase.task_time, phase.spread)
    if kind == "lognormal":
        return Distribution.lognormal(phase.task_time, phase.cv)
    if kind == "empirical":
        return Distribution.empirical(phase.samples)
    raise ModelError(f"phases.{phase.name}.distribution: unknown distribution {kind!r}")


def distributions_from_description(desc) -> dict[str, Distribution]:
    """``{f"{phase}.TAR": law}`` for every phase: the task-time laws of the application net.

    >>> from spn.description import parse_description
    >>> desc = parse_description({"name": "x", "workload": {"users": 1, "think_time": 1},
    ...     "cluster": {"containers": 1},
    ...     "phases": [{"name": "p", "tasks": 1, "task_time": 2, "distribution": "deterministic"}]})
    >>> {k: str(v) for k, v in distributions_from_description(desc).items()}
    {'p.TAR': 'deterministic(mean=2)'}
    """
    return {f"{phase.name}.TAR": phase_distribution(phase) for phase in desc.phases}


def _finite(x) -> bool:
    try:
        return not isinstance(x, bool) and math.isfinite(float(x))
    except (TypeError, ValueError):
        return False
