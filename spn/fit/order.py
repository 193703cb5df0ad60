"""How much a stage's time owes to the order its tasks ran in, which a fitted model loses.

A model draws each task's time independently of the others, as if the tasks
could have run in any order. Some stages are not like that: the tasks of a
network-bound shuffle stage are long while the stage is full and short at its
end, when fewer tasks are left to share the hosts' bandwidth. Replayed in
random order, a long task can come last, and the stage takes longer than it
did. :func:`order_effect` measures that: the stage's tasks replayed on the
run's slots in random orders against the same tasks in their launch order
(each task on the slot that frees first, as Spark hands them out). A model
fitted to such a stage over-predicts it by about as much.

>>> middle_heavy = [1.0] * 4 + [3.0] * 8 + [1.0] * 4   # 16 tasks on 4 slots: long ones in the middle
>>> in_order, shuffled = order_effect(middle_heavy, 4)
>>> in_order, shuffled > in_order
(8.0, True)
>>> order_effect([2.0] * 16, 4)
(8.0, 8.0)
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

__all__ = ["ORDER_EFFECT", "ORDER_SECONDS", "greedy_makespan", "order_effect", "order_note"]

#: a stage replayed this much slower in random order than in launch order is flagged in the fitted model ...
ORDER_EFFECT = 0.05
#: ... when that is this many seconds or more (a sub-second stage's order is not worth a note)
ORDER_SECONDS = 1.0
#: a stage of more tasks is not replayed; a smaller one gets this over its tasks random orders (5 to 50): under 2 s
REPLAYED_TASKS = 200_000


def greedy_makespan(durations: Sequence[float], slots: int) -> float:
    """Time (s) to run ``durations`` in this order on ``slots`` slots, each task on the slot that frees first
    (as Spark hands tasks out; the one-stage case of :func:`spn.baselines.sparklens.replay`'s list scheduling).

    >>> greedy_makespan([4.0, 3.0, 2.0, 2.0, 1.0], slots=2)   # slot 1: 4, 2; slot 2: 3, 2, 1
    6.0
    """
    if slots < 1:
        raise ValueError(f"greedy_makespan needs at least 1 slot, got {slots}")
    free = [0.0] * min(slots, len(durations))
    end = 0.0
    for duration in durations:
        finish = heapq.heappop(free) + max(float(duration), 0.0)
        heapq.heappush(free, finish)
        end = max(end, finish)
    return end


def order_effect(durations: Sequence[float], slots: int, *, seed: int = 0) -> tuple[float, float] | None:
    """The stage's time (s) replayed in launch order, and its mean over random orders; ``durations`` are in
    launch order. ``None`` when there is nothing to replay: no slot count, or too many tasks to replay.
    """
    n = len(durations)
    if not slots or slots < 1 or n > REPLAYED_TASKS:
        return None
    in_order = greedy_makespan(durations, slots)
    if n <= slots:
        return in_order, in_order  # one wave: every task starts at once, whatever the order
    random = np.random.default_rng(seed)
    orders = max(5, min(50, REPLAYED_TASKS // n))
    return in_order, float(np.mean([greedy_makespan(random.permutation(durations), slots) for _ in range(orders)]))


def order_note(effects: Sequence[tuple[float, float] | None], slots: int) -> str | None:
    """The fitted model's note on a stage replayed over :data:`ORDER_EFFECT` and :data:`ORDER_SECONDS` slower
    in random order than in launch order (the mean over the runs), else ``None``."""
    known = [e for e in effects if e is not None]
    if not known:
        return None
    in_order, shuffled = np.mean(known, axis=0)
    if shuffled - in_order < ORDER_SECONDS or shuffled <= in_order * (1 + ORDER_EFFECT):
        return None
    return (f"its tasks' times depend on the order they ran in: replayed on {slots} slots in random order the "
            f"stage takes {shuffled:.4g} s, {100 * (shuffled / in_order - 1):.0f} % longer than in launch order "
            f"({in_order:.4g} s); the model draws task times independently, so it over-predicts this stage by "
            "about as much (a network-bound shuffle's tasks, for one, are long while the stage is full and short "
            "at its end)")
