"""What a run costs: executor-hours, and money at a price per executor-hour.

**Executor-hours** of a run are ``executors x execution time / 3600``: the hours the cluster holds
the application's executors for, from its start to its end (Spark's static allocation: the
executors are granted at start-up and released at the end, idle or not). The driver is not
counted (in YARN client mode it runs outside the cluster; in cluster mode add its container to
the price). A model with ``cluster.containers`` varied counts **container-hours** the same way.

**Money** is executor-hours times a price per executor-hour. A cloud bill prices *instances* per
hour, so the price can also be given per instance type, with how many executors one instance
holds (``--price m5.xlarge=0.192 --instance-type m5.xlarge --executors-per-instance 2``: 0.096
per executor-hour).

>>> price = parse_price(["m5.xlarge=0.192", "m5.2xlarge=0.384"], instance_type="m5.2xlarge",
...                     executors_per_instance=4)
>>> price.per_executor_hour, price.how
(0.096, 'm5.2xlarge at 0.384 USD per instance-hour, 4 executors per instance: 0.096 USD per executor-hour')
>>> cost = run_cost(12, 900.0, price)               # 12 executors for 15 minutes
>>> cost.executor_hours, round(cost.money, 4)
(3.0, 0.288)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from spn.exceptions import ModelError

__all__ = ["Price", "RunCost", "parse_price", "executor_hours", "run_cost", "cheapest", "COSTED_PATHS"]

#: the varied parameters whose value is a number of priced resources, and what one is called
COSTED_PATHS = {"spark.executor.instances": "executor", "cluster.containers": "container"}


@dataclass(frozen=True)
class Price:
    """A price per executor-hour (or container-hour), its currency, and where it came from in words."""

    per_executor_hour: float
    currency: str = "USD"
    how: str = ""

    def as_dict(self) -> dict:
        return {"per_executor_hour": self.per_executor_hour, "currency": self.currency, "how": self.how}


@dataclass(frozen=True)
class RunCost:
    """One configuration's cost: ``executors`` for ``seconds`` make ``executor_hours``, and ``money`` at a price
    (None without one)."""

    executors: int
    seconds: float
    executor_hours: float
    money: float | None = None

    def as_dict(self) -> dict:
        return {"executors": self.executors, "seconds": self.seconds, "executor_hours": self.executor_hours,
                "money": self.money}


def executor_hours(executors: float, seconds: float) -> float:
    """``executors x seconds / 3600``.

    >>> executor_hours(24, 450.0)
    3.0
    """
    if not (math.isfinite(executors) and executors >= 0 and math.isfinite(seconds) and seconds >= 0):
        raise ModelError(f"executor-hours need executors and seconds >= 0, got {executors!r} and {seconds!r}")
    return executors * seconds / 3600.0


def run_cost(executors: int, seconds: float, price: Price | None = None) -> RunCost:
    """The :class:`RunCost` of ``executors`` held for ``seconds``, in money at ``price`` when given."""
    hours = executor_hours(executors, seconds)
    return RunCost(executors, seconds, hours, None if price is None else hours * price.per_executor_hour)


def cheapest(costs: Sequence[RunCost]) -> RunCost | None:
    """The cheapest of ``costs`` (by money when priced, else executor-hours; a tie goes to fewer executors).

    >>> cheapest([run_cost(6, 1200.0), run_cost(3, 2300.0), run_cost(12, 700.0)]).executors
    3
    """
    if not costs:
        return None
    return min(costs, key=lambda c: (c.executor_hours if c.money is None else c.money, c.executors))


def parse_price(prices: Sequence[str], *, instance_type: str | None = None, executors_per_instance: int = 1,
                currency: str = "USD", resource: str = "executor") -> Price | None:
    """The :class:`Price` of ``--price`` items: one bare number (per executor-hour), or ``TYPE=PRICE`` items
    (per instance-hour, a price list) of which ``instance_type`` picks one (needed when there are several);
    each instance holds ``executors_per_instance`` executors. No items: None (cost in executor-hours only).
    ``resource`` names what is priced in the texts (``container``: a price per container-hour).

    >>> parse_price(["0.05"]).per_executor_hour
    0.05
    >>> parse_price(["m5.xlarge=0.192"]).per_executor_hour
    0.192
    """
    prices = [str(p).strip() for p in prices]
    if not prices:
        if instance_type is not None:
            raise ModelError(f"--instance-type {instance_type}: give its price (--price {instance_type}=PER_HOUR)",
                             option="price")
        return None
    if not (isinstance(executors_per_instance, int) and executors_per_instance >= 1):
        raise ModelError(f"executors per instance must be an integer >= 1, got {executors_per_instance!r}",
                         option="executors_per_instance")
    typed = [p for p in prices if "=" in p]
    if not typed:
        if len(prices) > 1:
            raise ModelError(f"--price: {len(prices)} prices per executor-hour given ({', '.join(prices)}): give one, "
                             "or a price list TYPE=PER_HOUR with --instance-type", option="price")
        if instance_type is not None:
            raise ModelError(f"--instance-type {instance_type} picks from a price list: give --price "
                             f"{instance_type}=PER_HOUR", option="price")
        value = _amount(prices[0], "--price")
        per_executor = value / executors_per_instance
        how = (f"{_money(value)} {currency} per {resource}-hour" if executors_per_instance == 1 else
               f"{_money(value)} {currency} per instance-hour, {executors_per_instance} {resource}s per instance: "
               f"{_money(per_executor)} {currency} per {resource}-hour")
        return Price(per_executor, currency, how)
    if len(typed) != len(prices):
        raise ModelError(f"--price: mix of a bare price and a price list ({', '.join(prices)}): give one or the "
                         "other", option="price")
    table = {}
    for item in typed:
        name, _, amount = item.partition("=")
        name = name.strip()
        if not name:
            raise ModelError(f"--price {item!r}: expected TYPE=PER_HOUR, e.g. m5.xlarge=0.192", option="price")
        if name in table:
            raise ModelError(f"--price: instance type {name} priced twice", option="price")
        table[name] = _amount(amount, f"--price {name}")
    if instance_type is None:
        if len(table) > 1:
            raise ModelError(f"--price lists {len(table)} instance types ({', '.join(table)}): pick one with "
                             "--instance-type", option="instance_type")
        instance_type = next(iter(table))
    if instance_type not in table:
        raise ModelError(f"--instance-type {instance_type}: not in the price list ({', '.join(table)})",
                         option="instance_type")
    value = table[instance_type]
    per_executor = value / executors_per_instance
    how = f"{instance_type} at {_money(value)} {currency} per instance-hour"
    if executors_per_instance > 1:
        how += (f", {executors_per_instance} {resource}s per instance: {_money(per_executor)} {currency} per "
                f"{resource}-hour")
    return Price(per_executor, currency, how)


def _amount(text: str, what: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise ModelError(f"{what}: expected a price per hour >= 0 (a number), got {text.strip()!r}", option="price")
    return value


def _money(value: float) -> str:
    return f"{value:.6g}"
