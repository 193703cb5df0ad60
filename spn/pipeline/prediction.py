"""The prediction interval: where one run of the application on the real cluster will fall.

It is another thing than a method's interval (:mod:`spn.pipeline.result`: a simulation's
confidence interval, the job-alone bounds), which says how exactly the *model* was solved. A
prediction interval at level ``L`` (default 90 %) combines, per side, two relative spreads:

- the model's own run-to-run spread: one job's execution-time law, its ``(1 - L)/2`` and
  ``(1 + L)/2`` quantiles around the mean R (from the method that answered);
- the error of the what-if rules and of the cluster's own noise: relative errors
  ``e = measured run / predicted mean - 1`` of backtests (:mod:`spn.studies.backtest`), each
  individual run counted. Conformal style, the bound on each side is an order statistic of the
  errors: the ``ceil((n + 1)(1 + L)/2)``-th smallest above, the ``floor((n + 1)(1 - L)/2)``-th below;
  with too few errors for that rank the most extreme error is taken, and the interval says the
  level is then not guaranteed.

The two are taken independent: ``R (1 + e_lo - m_lo ...)`` added in quadrature,
``high = R (1 + sqrt(m_hi^2 + e_hi^2))`` and ``low = R (1 - sqrt(m_lo^2 + e_lo^2))``.

With a single log there is nothing to backtest: the errors are the project's own validation
backtests (:data:`DEFAULT_ERRORS_FILE`, written by ``validation/run_backtest.py`` from the
lundstrom YARN runs), and the interval says so.

>>> pi = prediction_interval(100.0, (98.0, 102.0), [-0.05, 0.02, 0.04, -0.01, 0.03], level=0.5)
>>> round(pi.low, 2), round(pi.high, 2), pi.guaranteed
(94.61, 104.47, True)
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from spn.exceptions import ModelError

__all__ = ["PredictionInterval", "prediction_interval", "fewest_errors", "spread_levels", "default_errors", "LEVEL",
           "DEFAULT_ERRORS_FILE"]

#: the level of a prediction interval when none is asked for
LEVEL = 0.90
#: the validation backtests' relative errors (written by validation/run_backtest.py, never by hand)
DEFAULT_ERRORS_FILE = Path(__file__).with_name("backtest_errors.json")
#: how far a rank computed in floats may miss the whole number it is in exact arithmetic (1 - 0.9 is not 0.1)
_ROUNDING = 1e-9


@dataclass(frozen=True)
class PredictionInterval:
    """[low, high] seconds at ``level`` for one run on the cluster; ``how`` says where it came from."""

    low: float
    high: float
    level: float
    how: str
    errors: int
    guaranteed: bool

    def contains(self, seconds: float) -> bool:
        return self.low <= seconds <= self.high

    def as_dict(self) -> dict:
        return {"low": self.low, "high": self.high, "level": self.level, "how": self.how,
                "backtest_errors": self.errors, "level_guaranteed": self.guaranteed}


def fewest_errors(level: float = LEVEL) -> int:
    """How many backtest errors a prediction interval at ``level`` needs to be guaranteed.

    >>> fewest_errors(0.9), fewest_errors(0.8)
    (19, 9)
    """
    return math.ceil(2 / (1 - level) - _ROUNDING) - 1


def _order_statistic(errors: list[float], rank: int) -> float:
    return errors[min(max(rank, 1), len(errors)) - 1]


def prediction_interval(mean: float, spread: tuple[float, float] | None, errors: Sequence[float], *,
                        level: float = LEVEL, source: str = "backtest") -> PredictionInterval:
    """The prediction interval around the predicted ``mean`` (seconds).

    ``spread``: the model's own (1 - level)/2 and (1 + level)/2 quantiles of one job's execution
    time (None: not known, taken as none); ``errors``: relative errors of backtests
    (measured / predicted - 1); ``source``: where they came from, in words.
    """
    if not 0 < level < 1:
        raise ModelError(f"prediction level must be in (0, 1), got {level!r}")
    errors = sorted(float(e) for e in errors if math.isfinite(e))
    if not errors:
        raise ModelError("a prediction interval needs at least one backtest error")
    n = len(errors)
    # the ranks are whole numbers in exact arithmetic where (n + 1)(1 - level)/2 is: 1 - 0.9 is not 0.1 in floats
    rank_high = math.ceil((n + 1) * (1 + level) / 2 - _ROUNDING)
    rank_low = math.floor((n + 1) * (1 - level) / 2 + _ROUNDING)
    guaranteed = rank_high <= n and rank_low >= 1
    e_high = max(_order_statistic(errors, rank_high), 0.0)
    e_low = max(-_order_statistic(errors, rank_low), 0.0)
    m_low, m_high = (0.0, 0.0) if spread is None else (max(1 - spread[0] / mean, 0.0), max(spread[1] / mean - 1, 0.0))
    low = mean * max(1 - math.hypot(m_low, e_low), 0.0)
    high = mean * (1 + math.hypot(m_high, e_high))
    how = (f"{100 * level:g} % prediction interval: the model's own spread of one run "
           f"({'none known' if spread is None else f'-{100 * m_low:.2g} %/+{100 * m_high:.2g} %'}) with the "
           f"{source}'s errors ({n} runs: -{100 * e_low:.3g} %/+{100 * e_high:.3g} %"
           f"{'' if guaranteed else f', too few for a guaranteed {100 * level:g} %: the most extreme taken'})")
    return PredictionInterval(low, high, level, how, n, guaranteed)


def spread_levels(level: float = LEVEL) -> tuple[float, float]:
    """The percentiles of one run's law that a prediction interval at ``level`` needs.

    >>> spread_levels(0.9)
    (5.0, 95.0)
    """
    return (round(100 * (1 - level) / 2, 10), round(100 * (1 + level) / 2, 10))


def default_errors() -> tuple[tuple[float, ...], str]:
    """The project's validation backtest errors and where they come from (for a single log)."""
    try:
        data = json.loads(DEFAULT_ERRORS_FILE.read_text())
    except (OSError, ValueError):
        raise ModelError(f"{DEFAULT_ERRORS_FILE.name} is missing from this installation: run "
                         "validation/run_backtest.py, or give several logs to backtest") from None
    return tuple(float(e) for e in data["errors"]), data["source"]
