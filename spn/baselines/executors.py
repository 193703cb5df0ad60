"""Runtime against executors at one input size: four laws fitted to measured runs.

After the paper on a parallelisation model for Spark (runtime
``a/n + b*sqrt(n)``, compared with Amdahl's and Gustafson's laws). With
``n`` the executors (here: cores) and all parameters >= 0:

- ``amdahl``:    ``T = t * (f + (1 - f) / n)``, ``0 <= f <= 1`` (a serial share ``f`` of the 1-core time ``t``);
- ``gustafson``: ``T = t / (n + (1 - n) * f)``, ``0 <= f <= 1`` (time from Gustafson's scaled speed-up);
- ``sqrt``:      ``T = a / n + b * sqrt(n)`` (the paper's 2-D plate model: work shared, boundaries growing);
- ``power``:     ``T = a / n + b * n**c``, ``0 <= c <= 2`` (its generalisation).

Each law is fitted by bounded least squares (``scipy.optimize.curve_fit``)
and reports ``R^2 = 1 - SS_res / SS_tot``. A fit needs more distinct core
counts than the law has parameters (3 for the two-parameter laws, 4 for
``power``): with as many points as parameters every law passes through them
and ``R^2`` says nothing. The cores that minimise the fitted runtime are
searched over the whole numbers of a stated range.

>>> import numpy as np
>>> n = np.array([1, 2, 4, 8])
>>> fit = fit_executors("sqrt", n, 64 / n + 2 * np.sqrt(n), cores_range=(1, 64))
>>> np.round(fit.params, 6).tolist(), round(fit.r_squared, 6)
([64.0, 2.0], 1.0)
>>> fit.best_cores, round(fit.predict(16), 6)   # minimum of 64/n + 2 sqrt(n) at n = 64**(2/3) = 16
(16, 12.0)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.optimize

from spn.exceptions import ModelError

__all__ = ["LAWS", "ExecutorFit", "runtime", "r_squared", "fit_executors"]


def _amdahl(n, t, f):
    return t * (f + (1 - f) / n)


def _gustafson(n, t, f):
    return t / (n + (1 - n) * f)


def _sqrt(n, a, b):
    return a / n + b * np.sqrt(n)


def _power(n, a, b, c):
    return a / n + b * n**c


#: law -> (formula, parameter names, function(n, *params), lower bounds, upper bounds)
LAWS = {
    "amdahl": ("t (f + (1-f)/n)", ("t", "f"), _amdahl, (0, 0), (np.inf, 1)),
    "gustafson": ("t / (n + (1-n) f)", ("t", "f"), _gustafson, (0, 0), (np.inf, 1)),
    "sqrt": ("a/n + b sqrt(n)", ("a", "b"), _sqrt, (0, 0), (np.inf, np.inf)),
    "power": ("a/n + b n^c", ("a", "b", "c"), _power, (0, 0, 0), (np.inf, np.inf, 2)),
}


@dataclass(frozen=True)
class ExecutorFit:
    """One law fitted to ``(cores, seconds)``: parameters, R^2 and the best cores in ``cores_range``."""

    law: str
    params: tuple[float, ...]
    r_squared: float
    points: int
    best_cores: int
    best_seconds: float
    cores_range: tuple[int, int]

    def predict(self, cores) -> float:
        """The fitted runtime (s) on ``cores`` cores."""
        return float(runtime(self.law, cores, self.params))

    @property
    def formula(self) -> str:
        return LAWS[self.law][0]


def runtime(law: str, cores, params):
    """The runtime of ``law`` with ``params`` at ``cores`` (a number or an array).

    >>> runtime("amdahl", 4, (100.0, 0.2)), runtime("gustafson", 2, (100.0, 0.5))   # 100 (0.2 + 0.8/4); 100/1.5
    (40.0, 66.66666666666667)
    """
    if law not in LAWS:
        raise ModelError(f"unknown law {law!r}: expected one of {', '.join(LAWS)}")
    value = LAWS[law][2](np.asarray(cores, dtype=float), *params)
    return float(value) if np.ndim(value) == 0 else value


def r_squared(measured, fitted) -> float:
    """``1 - SS_res / SS_tot``; NaN when the measured values are all equal (SS_tot = 0).

    >>> r_squared([1.0, 2.0, 3.0], [1.0, 2.0, 4.0])    # 1 - 1 / 2
    0.5
    """
    y, f = np.asarray(measured, dtype=float), np.asarray(fitted, dtype=float)
    total = float(np.sum((y - y.mean()) ** 2))
    return 1.0 - float(np.sum((y - f) ** 2)) / total if total > 0 else float("nan")


def fit_executors(law: str, cores, seconds, *, cores_range: tuple[int, int] | None = None) -> ExecutorFit:
    """Fit ``law`` (a key of :data:`LAWS`) to runs at one input size; repeated core counts are all used.

    ``cores_range`` (default: 1 to 4 x the most cores measured) bounds the
    search for the cores with the least fitted runtime. Raises
    :class:`~spn.exceptions.ModelError` with too few distinct core counts.
    """
    if law not in LAWS:
        raise ModelError(f"unknown law {law!r}: expected one of {', '.join(LAWS)}")
    _, names, function, lower, upper = LAWS[law]
    n = np.asarray(cores, dtype=float)
    y = np.asarray(seconds, dtype=float)
    if n.shape != y.shape or n.ndim != 1:
        raise ModelError("give one time per run (two arrays of the same length)")
    if np.any(n < 1) or np.any(y <= 0):
        raise ModelError("cores must be >= 1 and times > 0")
    distinct = len(np.unique(n))
    if distinct < len(names) + 1:
        raise ModelError(f"{law} ({LAWS[law][0]}) needs runs on at least {len(names) + 1} different core counts "
                         f"at one input size, got {distinct}")
    start = _start(law, n, y)
    params, _ = scipy.optimize.curve_fit(function, n, y, p0=start, bounds=(lower, upper), maxfev=20000)
    params = tuple(float(p) for p in params)
    low, high = cores_range if cores_range is not None else (1, int(4 * n.max()))
    if not 1 <= low <= high:
        raise ModelError(f"cores range must satisfy 1 <= low <= high, got {low}..{high}")
    best_cores, best_seconds = _least(function, params, int(low), int(high))
    return ExecutorFit(law, params, r_squared(y, function(n, *params)), len(y), best_cores, best_seconds,
                       (int(low), int(high)))


#: core counts evaluated at once in the search for the least runtime (a log may claim millions of cores)
_GRID_CHUNK = 1 << 20


def _least(function, params, low: int, high: int) -> tuple[int, float]:
    """The first core count in ``low..high`` of the least ``function(cores, *params)``, and that value.

    Chunk by chunk, so that memory stays bounded whatever the range; as
    ``numpy.argmin`` over the whole range would, a NaN counts as the least.

    >>> _least(lambda n, a: (n - a) ** 2, (3.5,), 1, 10)
    (3, 0.25)
    """
    best_cores, best_seconds = low, float("inf")
    for start in range(low, high + 1, _GRID_CHUNK):
        grid = np.arange(start, min(start + _GRID_CHUNK, high + 1))
        values = function(grid.astype(float), *params)
        i = int(np.argmin(values))
        if np.isnan(values[i]):
            return int(grid[i]), float(values[i])
        if values[i] < best_seconds:
            best_cores, best_seconds = int(grid[i]), float(values[i])
    return best_cores, best_seconds


def _start(law: str, n, y) -> list[float]:
    """A starting point inside the bounds: the 1-core time from the fastest-scaling reading, mid-range shares."""
    t = float(np.max(y * n))
    if law in ("amdahl", "gustafson"):
        return [float(np.max(y)), 0.5]
    if law == "sqrt":
        return [t, float(np.min(y)) / np.sqrt(n.max())]
    return [t, float(np.min(y)) / np.sqrt(n.max()), 0.5]
