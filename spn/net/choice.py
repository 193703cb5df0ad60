"""Choice gates: the predicate "this candidate is the one the scheduler picks".

A scheduler hands a free container to one of several candidates (the jobs of a
fair queue, the queues of a cluster): among the *eligible* ones, the first whose
*key* is smallest. Eligibility and keys are linear in the marking: a job is
eligible when its waiting tasks number at least 1, its key is its running tasks
times an integer step; a queue is eligible below its limit, its key is its used
containers over its guaranteed ones. Written as data rather than as a Python
function, such a gate is evaluated the same way by both exploration engines: the
NumPy engine calls it on a batch of markings (:meth:`ChoiceGate.__call__`), the
compiled engine reads its forms as arrays (:mod:`spn.statespace.kernel_arrays`).

Candidate i holds when it is eligible, its key is within ``tie`` of the smallest
key among the eligible candidates, and no candidate before it is (ties go to the
first). Keys are compared exactly when they are integers (``scale`` 1, ``tie``
0); otherwise as ``sum / scale`` in floating point.

>>> import numpy as np
>>> from spn.net import MarkingView
>>> jobs = [Candidate(key=((f"run{j}", 1),), needs=((((f"wait{j}", 1),), 1),)) for j in (1, 2)]
>>> view = MarkingView(np.array([[2, 1, 1, 1], [2, 1, 0, 1], [1, 1, 2, 1]]),
...                    {"run1": 0, "wait1": 1, "run2": 2, "wait2": 3})
>>> ChoiceGate(tuple(jobs), chosen=1)(view).tolist()      # job 2 runs fewer tasks in rows 0 and 1
[True, True, False]
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spn.limits import MAX_COUNT

#: an integer form whose coefficients could take it past this is summed in Python integers
_EXACT_INT64 = 1 << 62


@dataclass(frozen=True)
class Candidate:
    """One candidate of a :class:`ChoiceGate`.

    ``key``: (place, coefficient) pairs, summed as coefficient times tokens, then divided by
    ``scale``; ``needs``: pairs (form, bound), each form's sum at least its bound for the
    candidate to be eligible.
    """

    key: tuple[tuple[str, int], ...]
    needs: tuple[tuple[tuple[tuple[str, int], ...], int], ...] = ()
    scale: float = 1.0

    def __post_init__(self):
        if not self.scale > 0:
            raise ValueError(f"a candidate's scale must be > 0, got {self.scale!r}")
        if not all(isinstance(need, tuple) and len(need) == 2 and isinstance(need[1], int) for need in self.needs):
            raise ValueError(f"needs are (form, integer bound) pairs, got {self.needs!r}")
        for form in [self.key] + [need[0] for need in self.needs]:
            if not all(isinstance(pair, tuple) and len(pair) == 2 and isinstance(pair[0], str)
                       and isinstance(pair[1], int) for pair in form):
                raise ValueError(f"a form is (place, integer coefficient) pairs, got {form!r}")


@dataclass(frozen=True)
class ChoiceGate:
    """Input-gate predicate: candidate ``chosen`` (0-based) is the scheduler's pick (module doc)."""

    candidates: tuple[Candidate, ...]
    chosen: int
    tie: float = 0.0

    def __post_init__(self):
        if not 0 <= self.chosen < len(self.candidates):
            raise ValueError(f"chosen candidate {self.chosen} out of 0..{len(self.candidates) - 1}")
        if not self.tie >= 0:
            raise ValueError(f"a choice gate's tie must be >= 0, got {self.tie!r}")

    @property
    def integral(self) -> bool:
        """Are the keys integers compared exactly (every scale 1, no tie tolerance)?"""
        return self.tie == 0 and all(c.scale == 1 for c in self.candidates)

    def largest_sum(self) -> int:
        """A bound on the absolute value of any form's sum (each place holds at most MAX_COUNT tokens)."""
        forms = [c.key for c in self.candidates] + [form for c in self.candidates for form, _ in c.needs]
        return max((sum(abs(k) for _, k in form) * MAX_COUNT for form in forms), default=0)

    def __call__(self, m) -> np.ndarray:
        """Over a :class:`~spn.net.MarkingView`: does the chosen candidate get the container, per marking?"""
        n = len(self.candidates)
        forms = [c.key for c in self.candidates] + [form for c in self.candidates for form, _ in c.needs]
        sums = m.sums(forms, dtype=np.int64 if self.largest_sum() < _EXACT_INT64 else object)
        eligible = np.ones((len(m), n), dtype=bool)
        at = n
        for i, c in enumerate(self.candidates):
            for _, bound in c.needs:
                eligible[:, i] &= sums[:, at] >= bound
                at += 1
        if self.integral:
            keys = sums[:, :n]
            never = keys.max(initial=0) + 1 if keys.dtype == object else np.iinfo(np.int64).max
            keys = np.where(eligible, keys, never)
            return eligible.any(axis=1) & (np.argmin(keys, axis=1) == self.chosen)
        keys = np.where(eligible, sums[:, :n].astype(float) / np.array([c.scale for c in self.candidates]), np.inf)
        best = keys.min(axis=1)
        first = np.argmax(keys <= best[:, None] + self.tie, axis=1)
        return np.isfinite(best) & (first == self.chosen)
