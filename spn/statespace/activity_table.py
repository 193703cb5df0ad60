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

from spn.exceptions import ModelError
from spn.limits import MAX_TOKENS
from spn.net import MARKING_DTYPE, InstantActivity, Net, TimedActivity
from spn.net.choice import ChoiceGate


#: integers up to this are exact in a double (the compiled engine compares choice-gate keys as doubles)
EXACT_DOUBLE = 1 << 53
#: :meth:`ActivityTable.run_lengths` of a run that nothing stops
UNBOUNDED = 1 << 62
#: token changes are kept as a dense (activities, places) matrix up to this many entries; past
#: it (thousands of activities times thousands of places) they are kept sparse, per activity
DENSE_ENTRIES = 1 << 22
#: elements of the temporary (markings, tests) arrays made at once
_CHUNK = 1 << 20
#: tests up to which enabling compares a whole column per test (past it, per block of markings)
_COLUMN_TESTS = 48


class ActivityTable:
    """Enabling, firing, rates and weights of ``activities`` (all of one net) on batches."""

    def __init__(self, net: Net, activities):
        self.net = net
        self.activities = tuple(activities)
        n_act, n_places = len(self.activities), len(net.places)
        index = net.place_index
        self._tests = []                 # (activity, column, tokens needed) or (activity, column, -bound)
        ptr, columns, changes = [0], [], []     # token changes per activity (CSR)
        for pos, a in enumerate(self.activities):
            need: dict[int, int] = {}
            for place, mult in a.inputs.items():
                need[index[place]] = need.get(index[place], 0) + mult
            change = {j: -k for j, k in need.items()}
            for place, mult in a.outputs.items():
                change[index[place]] = change.get(index[place], 0) + mult
            self._tests += [(pos, j, need[j]) for j in sorted(need)]
            self._tests += [(pos, index[q], -int(b)) for q, b in a.inhibitors.items()]
            moved = sorted(j for j, k in change.items() if k)
            columns += moved
            changes += [change[j] for j in moved]
            ptr.append(len(columns))
        self._delta_ptr = np.array(ptr, dtype=np.int64)
        self._delta_col = np.array(columns, dtype=np.intp)
        self._delta_val = np.array(changes, dtype=MARKING_DTYPE)
        self._dense = None
        if n_act * n_places <= DENSE_ENTRIES:
            self._dense = self._delta_rows(np.arange(n_act))
        # the same tests as linear conditions sign * m[column] >= bound (for run_lengths):
        # an inhibitor arc m < b reads -m >= 1 - b
        owner = np.array([t[0] for t in self._tests], dtype=np.intp)
        threshold = np.array([t[2] for t in self._tests], dtype=np.int64)
        self._column = np.array([t[1] for t in self._tests], dtype=np.intp)
        self._sign = np.where(threshold > 0, 1, -1)
        self._sign8 = self._sign.astype(np.int8)    # (keeps sign * marking in the marking's width)
        self._bound = np.where(threshold > 0, threshold, 1 + threshold)
        self._signed_delta = None
        if n_act * len(self._tests) <= DENSE_ENTRIES:
            self._signed_delta = self._test_changes(np.arange(n_act))
        self._group_starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]]) if owner.size else owner
        self._grouped = owner[self._group_starts]      # the activity of each group of tests
        self._owner = owner
        self._test_ptr = np.searchsorted(owner, np.arange(n_act + 1))     # tests of each activity
        if self._dense is None:
            self._sentinels(n_places)
        if self._signed_delta is None:
            # a large net: runs are computed over the activities whose tests read a place that
            # the running activity changes (the others cannot start or stop during the run)
            order = np.argsort(self._column, kind="stable")
            self._column_ptr = np.searchsorted(self._column[order], np.arange(n_places + 1))
            self._column_owner = owner[order]
        self._gated = [pos for pos, a in enumerate(self.activities) if a.input_gates]
        self._with_functions = [pos for pos, a in enumerate(self.activities)
                                if a.output_gates or any(g.function is not None for g in a.input_gates)]
        self._base, self._server_column, self._server_divisor, self._server_cap = self._constants()
        self._variable = [pos for pos, a in enumerate(self.activities)
                          if callable(getattr(a, "rate", None)) or callable(getattr(a, "weight", None))]

    def __len__(self) -> int:
        return len(self.activities)

    @property
    def delta(self) -> np.ndarray:
        """(activities, places): the tokens each activity's arcs add (or remove, negative).

        Made on each use for a net past :data:`DENSE_ENTRIES`.
        """
        if self._dense is not None:
            return self._dense
        return self._delta_rows(np.arange(len(self.activities)))

    def enabled(self, markings: np.ndarray) -> np.ndarray:
        """(markings, activities) boolean array: which activity each marking enables."""
        n = len(markings)
        if self._dense is None:         # a large net: only what the marked places lead to
            ok = self._enabled_by_sentinels(markings)
        elif len(self._tests) <= _COLUMN_TESTS:
            ok = np.ones((n, len(self.activities)), dtype=bool)
            for pos, column, threshold in self._tests:
                if threshold > 0:                               # input arc: m[column] >= need
                    ok[:, pos] &= markings[:, column] >= threshold
                else:                                           # inhibitor arc: m[column] < bound
                    ok[:, pos] &= markings[:, column] < -threshold
        else:
            # many tests: a fixed number of calls per block of markings, rather than calls per test
            ok = np.ones((n, len(self.activities)), dtype=bool)
            step = max(1, _CHUNK // len(self._tests))
            for start in range(0, n, step):
                block = markings[start:start + step, self._column]
                passed = block * self._sign8 >= self._bound
                ok[start:start + step, self._grouped] = np.logical_and.reduceat(passed, self._group_starts, axis=1)
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

    def _sentinels(self, n_places: int):
        """For a large net: each activity with input arcs is looked at only where its sentinel, the
        input place that the fewest tests read, holds tokens (elsewhere it cannot be enabled), so
        that enabling costs what the marked places lead to, not a test of every activity."""
        n_act = len(self.activities)
        readers = np.bincount(self._column, minlength=n_places)
        inputs = np.flatnonzero(self._sign > 0)
        order = np.lexsort((readers[self._column[inputs]], self._owner[inputs]))
        first = np.r_[True, np.diff(self._owner[inputs][order]) != 0] if inputs.size else np.zeros(0, bool)
        chosen = inputs[order][first]           # per activity with inputs: its least read input test
        watched = self._owner[chosen]
        self._free = np.setdiff1d(np.arange(n_act), watched)
        by_column = np.argsort(self._column[chosen], kind="stable")
        self._sentinel_act = watched[by_column]
        self._sentinel_ptr = np.searchsorted(self._column[chosen][by_column], np.arange(n_places + 1))

    def _enabled_by_sentinels(self, markings):
        n = len(markings)
        ok = np.zeros((n, len(self.activities)), dtype=bool)
        rows, columns = np.nonzero(markings)
        counts = self._sentinel_ptr[columns + 1] - self._sentinel_ptr[columns]
        pair_rows = np.concatenate([np.repeat(rows, counts), np.repeat(np.arange(n), len(self._free))])
        pair_acts = np.concatenate([self._sentinel_act[_ranges(self._sentinel_ptr, columns)], np.tile(self._free, n)])
        tests = _ranges(self._test_ptr, pair_acts)
        per_pair = self._test_ptr[pair_acts + 1] - self._test_ptr[pair_acts]
        passed = markings[np.repeat(pair_rows, per_pair), self._column[tests]] * self._sign8[tests] >= self._bound[tests]
        holds = np.ones(len(pair_acts), dtype=bool)
        tested = np.flatnonzero(per_pair)
        if tested.size:
            holds[tested] = np.logical_and.reduceat(passed, (np.cumsum(per_pair) - per_pair)[tested])
        ok[pair_rows, pair_acts] = holds
        return ok

    def fire(self, markings: np.ndarray, rows: np.ndarray, acts: np.ndarray, times=None) -> np.ndarray:
        """New marking after activity ``acts[i]`` fires in marking ``markings[rows[i]]`` (enabled there).

        ``times[i]`` repeats the firing (for activities without gate functions, see
        :meth:`run_lengths`). A place past :data:`~spn.limits.MAX_TOKENS` tokens is a
        :class:`~spn.exceptions.ModelError`: the net is taken as unbounded.
        """
        dtype = np.result_type(markings.dtype, MARKING_DTYPE)
        if times is None:
            new = markings[rows].astype(dtype)
            self._add_changes(new, acts, None)
        else:                           # in 64 bits: a long run of a large multiplicity
            new = markings[rows].astype(np.int64)
            self._add_changes(new, acts, times.astype(np.int64))
        for pos in self._with_functions:
            sel = np.flatnonzero(acts == pos)
            if sel.size:
                new[sel] = self.net.fire(self.activities[pos], markings[rows[sel]])
        if new.size and new.max() > MAX_TOKENS:
            self._too_many_tokens(new, markings, rows, acts)
        return new if new.dtype == dtype else new.astype(dtype)

    def changes(self, act: int) -> bool:
        """Does firing activity ``act`` (by its arcs) change the marking?"""
        return bool(self._delta_ptr[act + 1] > self._delta_ptr[act])

    def _add_changes(self, new, acts, times):
        """Add the token changes of ``acts`` (``times`` over) to the rows of ``new``, in place."""
        if self._dense is not None:
            new += self._dense[acts] if times is None else self._dense[acts] * times[:, None]
            return
        row, column, change = self._entries(acts)
        new[row, column] += change if times is None else change * times[row]

    def _entries(self, acts):
        """The sparse token changes of ``acts``: (position in acts, place column, change)."""
        counts = self._delta_ptr[np.asarray(acts) + 1] - self._delta_ptr[acts]
        entry = _ranges(self._delta_ptr, acts)
        return np.repeat(np.arange(len(counts)), counts), self._delta_col[entry], self._delta_val[entry]

    def _delta_rows(self, acts) -> np.ndarray:
        """(len(acts), places) token changes of ``acts``."""
        if self._dense is not None:
            return self._dense[acts]
        out = np.zeros((len(acts), len(self.net.places)), dtype=MARKING_DTYPE)
        row, column, change = self._entries(acts)
        out[row, column] = change
        return out

    def _test_changes(self, acts) -> np.ndarray:
        """(len(acts), tests): how one firing of each of ``acts`` changes sign * m[column] of each test."""
        if self._signed_delta is not None:
            return self._signed_delta[acts]
        return self._delta_rows(acts)[:, self._column].astype(np.int64) * self._sign

    def _too_many_tokens(self, new, markings, rows, acts):
        row, column = np.argwhere(new > MAX_TOKENS)[0]
        raise ModelError(
            f"place {self.net.places[column].name!r} would hold {int(new[row, column]):,} tokens when "
            f"{self.activities[acts[row]].name!r} fires in marking {self.net.describe(markings[rows[row]])}: "
            f"more than {MAX_TOKENS:,}, so the net is taken as unbounded (activities produce tokens "
            f"without end)")

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
        step = max(1, _CHUNK // max(len(self._tests), len(self.activities)))
        if n > step:                    # the temporaries are (markings, tests) and (markings, activities)
            return np.concatenate([self.run_lengths(markings[i:i + step], acts[i:i + step], rivals)
                                   for i in range(0, n, step)])
        if self._signed_delta is None:
            return self._sparse_run_lengths(markings, acts, rivals)
        # test k holds after i firings  <=>  value + i * change >= bound
        value = markings[:, self._column].astype(np.int64) * self._sign
        lo, hi = _windows(value, self._signed_delta[acts], self._bound, self._group_starts, self._grouped,
                          len(self.activities))
        own_end = hi[np.arange(n), acts]
        stopped = rivals[acts] & (lo < hi)
        rival_start = np.where(stopped, np.maximum(lo, 1), UNBOUNDED).min(axis=1)
        return np.minimum(own_end, rival_start)

    def _sparse_run_lengths(self, markings, acts, rivals):
        """:meth:`run_lengths` over the activities that matter: the running ones, and those with
        a test on a place they change (any other rival is disabled now and stays so)."""
        n = len(markings)
        kinds = _unique(acts)
        changed = _unique(self._delta_col[_ranges(self._delta_ptr, kinds)])
        involved = _unique(np.concatenate([kinds, self._column_owner[_ranges(self._column_ptr, changed)]]))
        tests = _ranges(self._test_ptr, involved)
        column, sign, owner = self._column[tests], self._sign[tests], self._owner[tests]
        value = markings[:, column].astype(np.int64) * sign
        change = self._delta_rows(acts)[:, column].astype(np.int64) * sign
        starts = np.flatnonzero(np.r_[True, owner[1:] != owner[:-1]]) if owner.size else owner
        lo, hi = _windows(value, change, self._bound[tests], starts, np.searchsorted(involved, owner[starts]),
                          len(involved))
        own_end = hi[np.arange(n), np.searchsorted(involved, acts)]
        stopped = rivals[acts][:, involved] & (lo < hi)
        rival_start = np.where(stopped, np.maximum(lo, 1), UNBOUNDED).min(axis=1, initial=UNBOUNDED)
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


def _windows(value, change, bound, starts, grouped, n_activities):
    """For each row and activity, the firings i of a run in [lo, hi) after which the activity is
    enabled: test k holds after i firings when value + i * change >= bound, on a half-line,
    and an activity is enabled on the intersection of its tests' half-lines (``starts``:
    the first test of each activity ``grouped``)."""
    step = np.where(change == 0, 1, np.abs(change))
    first = np.where(change > 0, -((value - bound) // step), 0)           # holds from i = first
    first = np.maximum(first, 0)
    end = np.where(change < 0, (value - bound) // step + 1, UNBOUNDED)    # ... up to i < end
    never = (change == 0) & (value < bound)
    first[never], end[never] = UNBOUNDED, 0
    lo = np.zeros((len(value), n_activities), dtype=np.int64)
    hi = np.full((len(value), n_activities), UNBOUNDED, dtype=np.int64)
    if len(starts):
        lo[:, grouped] = np.maximum.reduceat(first, starts, axis=1)
        hi[:, grouped] = np.minimum.reduceat(end, starts, axis=1)
    return lo, hi


def _unique(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)``, cheaper on the short arrays of one round (no hashing set-up)."""
    values = np.sort(values)
    return values[np.r_[True, values[1:] != values[:-1]]] if values.size else values


def _ranges(ptr: np.ndarray, items: np.ndarray) -> np.ndarray:
    """The positions ptr[i] .. ptr[i + 1] - 1 of every i in ``items``, one after the other.

    >>> _ranges(np.array([0, 2, 2, 5]), np.array([0, 2])).tolist()
    [0, 1, 2, 3, 4]
    """
    starts = ptr[items]
    counts = ptr[np.asarray(items) + 1] - starts
    return np.arange(int(counts.sum())) + np.repeat(starts - (np.cumsum(counts) - counts), counts)


class Rivals:
    """``rivals[acts]``: for each activity of ``acts``, the activities that stop a run of it (the
    others of the same or a higher priority), as :meth:`ActivityTable.run_lengths` takes them.

    Rows are made when asked for: the whole matrix has a square of the activities' number of
    entries (81 million for 9,000 activities).

    >>> Rivals([0, 1, 1])[np.array([1, 0])].tolist()
    [[False, False, True], [False, True, True]]
    """

    def __init__(self, priorities):
        self.priorities = np.asarray(priorities, dtype=float)

    def __getitem__(self, acts) -> np.ndarray:
        acts = np.asarray(acts)
        rows = self.priorities[None, :] >= self.priorities[acts][:, None]
        rows[np.arange(len(acts)), acts] = False
        return rows

    def any_of(self, among: np.ndarray) -> np.ndarray:
        """For each activity, whether some activity with ``among`` true is among its rivals.

        >>> Rivals([0, 1, 1]).any_of(np.array([False, True, False])).tolist()
        [True, False, True]
        """
        marked = np.sort(self.priorities[among])
        at_least = len(marked) - np.searchsorted(marked, self.priorities, side="left")
        return at_least - among > 0


def row_any(flags: np.ndarray) -> np.ndarray:
    """``flags.any(axis=1)`` for a boolean matrix with few columns, one column at a time.

    (NumPy reduces short rows one row at a time, several times slower than
    combining whole columns.)

    >>> row_any(np.array([[False, True], [False, False]])).tolist()
    [True, False]
    """
    if flags.shape[1] == 0:
        return np.zeros(flags.shape[0], dtype=bool)
    if flags.shape[1] > 16:         # long rows: NumPy's own reduction is the faster one
        return flags.any(axis=1)
    out = flags[:, 0].copy()
    for j in range(1, flags.shape[1]):
        out |= flags[:, j]
    return out


def rows_equal(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``(a == b).all(axis=1)`` for matrices with few columns, one column at a time.

    >>> rows_equal(np.array([[1, 2], [3, 4]]), np.array([[1, 2], [3, 5]])).tolist()
    [True, False]
    """
    if a.shape[1] > 16:             # long rows: NumPy's own reduction is the faster one
        return (a == b).all(axis=1)
    out = a[:, 0] == b[:, 0]
    for j in range(1, a.shape[1]):
        out &= a[:, j] == b[:, j]
    return out


def is_plain(net: Net, *, choices: bool = False) -> bool:
    """Arcs alone decide enabling and firing, and rates and weights are constants.

    ``choices=True`` also lets instantaneous activities have choice gates
    (:class:`spn.net.choice.ChoiceGate`, without functions), which the compiled engine
    evaluates from their forms, as long as every sum they compare is exact in a double.
    """
    def plain_gates(a):
        return not a.input_gates or (choices and isinstance(a, InstantActivity) and all(
            isinstance(g.predicate, ChoiceGate) and g.function is None and g.predicate.largest_sum() < EXACT_DOUBLE
            for g in a.input_gates))
    return all(plain_gates(a) and not a.output_gates
               and not callable(a.weight if isinstance(a, InstantActivity) else a.rate)
               for a in net.activities)
