"""A group of activities evaluated together on a batch of markings.

:meth:`spn.net.Net.enabled` and :meth:`spn.net.Net.fire` look at one activity at a
time. State-space exploration asks the same questions of *every* timed (or every
instantaneous) activity for a whole frontier, and one activity at a time costs a
few NumPy calls per activity per step. An :class:`ActivityTable` answers for the
whole group with a fixed number of calls:

- enabling: one comparison of a whole column per arc (input arcs ``m[p] >= need``,
  inhibitor arcs ``m[p] < bound``), without selecting rows; only activities with
  input gates call their predicates, on the rows their arcs allow;
- firing a list of (marking, activity) pairs: ``marking + delta[activity]``, except
  for activities with gate functions, which go through :meth:`Net.fire`;
- rates and weights of such pairs: constants looked up, marking-dependent ones
  evaluated per activity.

The results are the same as those of the per-activity methods of :class:`Net`
(tests/test_activity_table.py checks them against each other).

>>> from spn.net import Net, Place, TimedActivity
>>> net = Net([Place("idle", 2), Place("busy")], [
...     TimedActivity("start", inputs={"idle": 1}, outputs={"busy": 1}, rate=1.0),
...     TimedActivity("stop", inputs={"busy": 1}, outputs={"idle": 1}, rate=2.0, servers="infinite")])
>>> table = ActivityTable(net, net.timed)
>>> m = np.array([[2, 0], [1, 1], [0, 2]])
>>> table.enabled(m).tolist()
[[True, False], [True, True], [False, True]]
>>> rows, acts = np.array([1, 2]), np.array([1, 1])
>>> table.rates(m, rows, acts).tolist(), table.fire(m, rows, acts).tolist()
([2.0, 4.0], [[2, 0], [1, 1]])
"""

from __future__ import annotations

import numpy as np

from spn.net import MARKING_DTYPE, InstantActivity, Net, TimedActivity


#: :meth:`ActivityTable.run_lengths` of a run that nothing stops
UNBOUNDED = 1 << 62


class ActivityTable:
    """Enabling, firing, rates and weights of ``activities`` (all of one net) on batches."""

    def __init__(self, net: Net, activities):
        self.net = net
        self.activities = tuple(activities)
        n_act, n_places = len(self.activities), len(net.places)
        self._tests = []                 # (activity, column, tokens needed) or (activity, column, -bound)
        self.delta = np.zeros((n_act, n_places), dtype=MARKING_DTYPE)
        for pos, a in enumerate(self.activities):
            need, produce, inhibit_idx, inhibit_bound = net.arc_vectors(a)
            self._tests += [(pos, int(j), int(need[j])) for j in np.flatnonzero(need)]
            self._tests += [(pos, int(j), -int(b)) for j, b in zip(inhibit_idx, inhibit_bound)]
            self.delta[pos] = produce - need
        # the same tests as linear conditions sign * m[column] >= bound (for run_lengths):
        # an inhibitor arc m < b reads -m >= 1 - b
        owner = np.array([t[0] for t in self._tests], dtype=np.intp)
        threshold = np.array([t[2] for t in self._tests], dtype=np.int64)
        self._column = np.array([t[1] for t in self._tests], dtype=np.intp)
        self._sign = np.where(threshold > 0, 1, -1)
        self._bound = np.where(threshold > 0, threshold, 1 + threshold)
        self._signed_delta = self.delta[:, self._column].astype(np.int64) * self._sign
        self._group_starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]]) if owner.size else owner
        self._grouped = owner[self._group_starts]      # the activity of each group of tests
        self._gated = [pos for pos, a in enumerate(self.activities) if a.input_gates]
        self._with_functions = [pos for pos, a in enumerate(self.activities)
                                if a.output_gates or any(g.function is not None for g in a.input_gates)]
        self._base, self._server_column, self._server_divisor, self._server_cap = self._constants()
        self._variable = [pos for pos, a in enumerate(self.activities)
                          if callable(getattr(a, "rate", None)) or callable(getattr(a, "weight", None))]

    def __len__(self) -> int:
        return len(self.activities)

    def enabled(self, markings: np.ndarray) -> np.ndarray:
        """(markings, activities) boolean array: which activity each marking enables."""
        ok = np.ones((len(markings), len(self.activities)), dtype=bool)
        for pos, column, threshold in self._tests:
            if threshold > 0:                               # input arc: m[column] >= need
                ok[:, pos] &= markings[:, column] >= threshold
            else:                                           # inhibitor arc: m[column] < bound
                ok[:, pos] &= markings[:, column] < -threshold
        for pos in self._gated:
            rows = np.flatnonzero(ok[:, pos])
            if rows.size:
                a = self.activities[pos]
                for gate in a.input_gates:
                    holds = self.net._call(a, gate.predicate, markings[rows], "input gate predicate")
                    keep = np.broadcast_to(np.asarray(holds, dtype=bool), rows.shape)
                    ok[rows[~keep], pos] = False
                    rows = rows[keep]
        return ok

    def fire(self, markings: np.ndarray, rows: np.ndarray, acts: np.ndarray, times=None) -> np.ndarray:
        """New marking after activity ``acts[i]`` fires in marking ``markings[rows[i]]`` (enabled there).

        ``times[i]`` repeats the firing (for activities without gate functions, see
        :meth:`run_lengths`).
        """
        if times is None:
            new = markings[rows] + self.delta[acts]
        else:
            new = markings[rows] + self.delta[acts] * times[:, None].astype(MARKING_DTYPE)
        for pos in self._with_functions:
            sel = np.flatnonzero(acts == pos)
            if sel.size:
                new[sel] = self.net.fire(self.activities[pos], markings[rows[sel]])
        return new

    def run_lengths(self, markings: np.ndarray, acts: np.ndarray, rivals: np.ndarray) -> np.ndarray:
        """How many times in a row activity ``acts[i]`` fires from ``markings[i]`` (where it is
        enabled and nothing stops it) before it is disabled or one of its rivals is enabled.

        ``rivals[a, b]`` says that b, once enabled, stops a run of a. After i firings a
        place holds ``m[p] + i * delta[a, p]``, so every arc test is a linear condition
        on i that holds on a half-line: the runs are found without stepping through
        them. Input gates are not linear; activities with them must be left out (as
        ``acts``, and as rivals). Where nothing ever stops a run the answer is
        :data:`UNBOUNDED`.

        >>> from spn.net import Net, Place, InstantActivity
        >>> net = Net([Place("free", 3), Place("waiting", 5), Place("running")], [
        ...     InstantActivity("allocate", inputs={"free": 1, "waiting": 1}, outputs={"running": 1})])
        >>> table = ActivityTable(net, net.instant)
        >>> table.run_lengths(np.array([[3, 5, 0], [4, 1, 0]]), np.array([0, 0]), np.zeros((1, 1), bool))
        array([3, 1])
        """
        n = len(markings)
        if not self._tests:
            return np.full(n, UNBOUNDED, dtype=np.int64)
        # test k holds after i firings  <=>  value + i * change >= bound
        value = markings[:, self._column].astype(np.int64) * self._sign
        change = self._signed_delta[acts]
        bound = self._bound
        step = np.where(change == 0, 1, np.abs(change))
        first = np.where(change > 0, -((value - bound) // step), 0)           # holds from i = first
        first = np.maximum(first, 0)
        end = np.where(change < 0, (value - bound) // step + 1, UNBOUNDED)    # ... up to i < end
        never = (change == 0) & (value < bound)
        first[never], end[never] = UNBOUNDED, 0
        # an activity is enabled on the intersection of its tests' half-lines
        lo = np.zeros((n, len(self.activities)), dtype=np.int64)
        hi = np.full((n, len(self.activities)), UNBOUNDED, dtype=np.int64)
        lo[:, self._grouped] = np.maximum.reduceat(first, self._group_starts, axis=1)
        hi[:, self._grouped] = np.minimum.reduceat(end, self._group_starts, axis=1)
        own_end = hi[np.arange(n), acts]
        stopped = rivals[acts] & (lo < hi)
        rival_start = np.where(stopped, np.maximum(lo, 1), UNBOUNDED).min(axis=1)
        return np.minimum(own_end, rival_start)

    def rates(self, markings: np.ndarray, rows: np.ndarray, acts: np.ndarray) -> np.ndarray:
        """Rate of timed activity ``acts[i]`` in marking ``markings[rows[i]]`` (servers included)."""
        rate = self._base[acts]
        multi = np.flatnonzero(self._server_column[acts] >= 0)
        if multi.size:
            a = acts[multi]
            busy = markings[rows[multi], self._server_column[a]] // self._server_divisor[a]
            rate[multi] *= np.minimum(busy, self._server_cap[a])
        for pos in self._variable:
            sel = np.flatnonzero(acts == pos)
            if sel.size:
                rate[sel] = self.net.rate(self.activities[pos], markings[rows[sel]])
        return rate

    def weights(self, markings: np.ndarray, rows: np.ndarray, acts: np.ndarray) -> np.ndarray:
        """Weight of instantaneous activity ``acts[i]`` in marking ``markings[rows[i]]``."""
        weight = self._base[acts]
        for pos in self._variable:
            sel = np.flatnonzero(acts == pos)
            if sel.size:
                weight[sel] = self.net.weight(self.activities[pos], markings[rows[sel]])
        return weight

    # ---- internals
    def _constants(self):
        """Constant rate (or weight) per activity, and the server multiplier's place, divisor and cap."""
        n_act = len(self.activities)
        base = np.ones(n_act)
        column = np.full(n_act, -1, dtype=np.intp)
        divisor = np.ones(n_act, dtype=np.int64)
        cap = np.full(n_act, np.iinfo(np.int64).max, dtype=np.int64)
        for pos, a in enumerate(self.activities):
            if isinstance(a, TimedActivity):
                if a.erlang is not None:
                    base[pos] = a.erlang.stage_rate
                elif not callable(a.rate):
                    base[pos] = float(a.rate)
                if a.servers != 1:
                    ((place, mult),) = a.inputs.items()
                    column[pos], divisor[pos] = self.net.place_index[place], mult
                    if a.servers != "infinite":
                        cap[pos] = a.servers
            elif isinstance(a, InstantActivity) and not callable(a.weight):
                base[pos] = float(a.weight)
        return base, column, divisor, cap


def row_any(flags: np.ndarray) -> np.ndarray:
    """``flags.any(axis=1)`` for a boolean matrix with few columns, one column at a time.

    (NumPy reduces short rows one row at a time, several times slower than
    combining whole columns.)

    >>> row_any(np.array([[False, True], [False, False]])).tolist()
    [True, False]
    """
    if flags.shape[1] == 0:
        return np.zeros(flags.shape[0], dtype=bool)
    out = flags[:, 0].copy()
    for j in range(1, flags.shape[1]):
        out |= flags[:, j]
    return out


def rows_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(a == b).all(axis=1)`` for matrices with few columns, one column at a time.

    >>> rows_equal(np.array([[1, 2], [3, 4]]), np.array([[1, 2], [3, 5]])).tolist()
    [True, False]
    """
    out = a[:, 0] == b[:, 0]
    for j in range(1, a.shape[1]):
        out &= a[:, j] == b[:, j]
    return out


def is_plain(net: Net) -> bool:
    """Arcs alone decide enabling and firing, and rates and weights are constants."""
    return not any(a.input_gates or a.output_gates
                   or callable(a.weight if isinstance(a, InstantActivity) else a.rate)
                   for a in net.activities)
