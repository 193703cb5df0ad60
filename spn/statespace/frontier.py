"""The NumPy exploration engine: a frontier of markings at a time, any net.

Enabling, rates and firing are evaluated for a whole block of markings with
:class:`~spn.statespace.activity_table.ActivityTable`; vanishing markings are
followed a round of instantaneous firings at a time, and where they loop the
absorption probabilities are solved for (:meth:`_Explorer._resolve_by_solving`).
:func:`explore_frontier` returns the arrays of :class:`~spn.statespace.space.Parts`.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import scipy.sparse as sp
from scipy.sparse.csgraph import connected_components
from scipy.sparse.linalg import splu

from spn.exceptions import StateSpaceLimitError, TimelessTrapError
from spn.net import MARKING_DTYPE, Net
from spn.statespace import guards
from spn.statespace.activity_table import UNBOUNDED, ActivityTable, Rivals, row_any
from spn.statespace.marking_index import MarkingIndex
from spn.statespace.space import Parts, progress_line

#: markings of one frontier processed together (bounds the memory of one step)
FRONTIER_BLOCK = 1 << 16
#: rounds of instantaneous firings followed before vanishing markings are checked for cycles
_ACYCLIC_ROUNDS = 64
#: vanishing markings of one step past which their memory is compared with what is available,
#: and the copies of them one step makes (enabling, firing, merging)
_WIDE_BYTES = 1 << 26
_COPIES = 8
#: entries of the dense matrices solved for where vanishing markings form cycles (landing
#: probabilities and firings: vanishing markings times tangible ones and activities)
MAX_LOOP_ENTRIES = 1 << 24


def explore_frontier(net: Net, max_states: int, progress: bool, started: float, starts=None,
                     max_seconds: float | None = None) -> Parts:
    """Explore an Erlang-expanded net a frontier at a time, from its initial marking or from
    each row of ``starts`` (markings, equally weighted in ``initial``), within ``max_seconds``
    of ``started`` (None: no limit)."""
    return _Explorer(net, max_states, progress, guards.TimeBudget(max_seconds, started=started, max_states=max_states)).run(started, starts)


def _merge(src: np.ndarray, markings: np.ndarray, weight: np.ndarray):
    """Sum ``weight`` over equal (src, marking) pairs."""
    if len(src) <= 1:
        return src, markings, weight
    rows = np.concatenate([src[:, None].astype(np.int64).view(np.int32).reshape(len(src), 2),
                           markings], axis=1)
    rows = np.ascontiguousarray(rows, dtype=np.int32)
    keys = rows.view(np.dtype((np.void, 4 * rows.shape[1]))).ravel()
    _, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    return src[first], markings[first], np.bincount(inverse.ravel(), weights=weight)


class _Buffer:
    """A 1-d array that grows at its end (capacity doubles; the allocator can often grow it in place)."""

    def __init__(self, dtype):
        self.data = np.empty(1 << 12, dtype=dtype)
        self.n = 0

    def append(self, values: np.ndarray) -> None:
        end = self.n + len(values)
        if end > len(self.data):
            self.data.resize(max(end, 2 * len(self.data)), refcheck=False)   # no views exist yet
        self.data[self.n:end] = values
        self.n = end

    def array(self) -> np.ndarray:
        """The values appended, handed over (the buffer is trimmed in place, not copied)."""
        self.data.resize(self.n, refcheck=False)
        return self.data


class _Explorer:
    def __init__(self, net: Net, max_states: int, progress: bool, clock: guards.TimeBudget):
        self.net = net
        self.clock = clock
        self.max_states = max_states
        self.progress = progress and sys.stderr.isatty()
        self.timed = net.timed
        self.instant = net.instant
        priorities = np.array([a.priority for a in self.instant], dtype=float)
        #: positions of the instantaneous activities of each priority, highest first
        self.levels = [np.flatnonzero(priorities == p) for p in sorted(set(priorities), reverse=True)]
        # runs of one instantaneous activity are jumped over in one step (ActivityTable.run_lengths)
        # when the activity and every activity that could interrupt it are plain arcs
        gated = np.array([bool(a.input_gates) for a in self.instant], dtype=bool)
        plain = np.array([not (a.input_gates or a.output_gates or callable(a.weight))
                          for a in self.instant], dtype=bool)
        self.rivals = Rivals(priorities)
        self.jumpable = plain & ~self.rivals.any_of(gated)
        self.timed_table = ActivityTable(net, self.timed)
        self.instant_table = ActivityTable(net, self.instant)
        self.index = MarkingIndex(len(net.places))
        # the arrays of a block are (markings, activities) and (markings, places): fewer markings
        # per block for nets of thousands of them
        self.block = max(256, min(FRONTIER_BLOCK, (1 << 24) // max(1, len(net.activities) + len(net.places))))
        self.budget = guards.MemoryBudget()
        self.expanded = 0
        # transitions are kept in the narrowest integer types their ids need
        self.id_dtype = np.int32 if max_states < 2**31 - 1 else np.int64
        self.act_dtype = np.int16 if len(net.activities) < 2**15 else np.int32
        self.src, self.dst, self.rate = _Buffer(self.id_dtype), _Buffer(self.id_dtype), _Buffer(float)
        # timed_rates is built row by row (states are expanded in id order): per state
        # the number of enabled timed activities, then their positions and rates
        self.timed_counts = _Buffer(np.int8 if len(self.timed) < 128 else np.int64)
        self.timed_cols, self.timed_vals = _Buffer(self.act_dtype), _Buffer(float)
        self.imp_rows, self.imp_cols, self.imp_vals = _Buffer(self.id_dtype), _Buffer(self.act_dtype), _Buffer(float)

    # ---- the instantaneous part
    def _instant_choices(self, markings: np.ndarray):
        """For a batch of markings: which instantaneous activities may fire, with what probability.

        Returns (vanishing mask, rows, activity positions, probabilities): marking
        ``rows[i]`` fires instantaneous activity ``acts[i]`` with probability ``prob[i]``.
        """
        n = len(markings)
        enabled = self.instant_table.enabled(markings)
        vanishing = row_any(enabled)
        if not vanishing.any():
            empty = np.empty(0, dtype=np.int64)
            return vanishing, empty, empty, np.empty(0)
        if len(self.levels) > 1:    # only the highest enabled priority may fire
            taken = np.zeros(n, dtype=bool)
            for level in self.levels:
                enabled[:, level] &= ~taken[:, None]
                taken |= row_any(enabled[:, level])
        rows, acts = np.nonzero(enabled)
        weights = self.instant_table.weights(markings, rows, acts)
        total = np.bincount(rows, weights=weights, minlength=n)
        stuck = vanishing & (total <= 0)
        if stuck.any():
            row = int(np.flatnonzero(stuck)[0])
            names = [self.instant[j].name for j in np.flatnonzero(enabled[row])]
            raise TimelessTrapError(
                f"instantaneous activities {names} are enabled with zero total weight in marking "
                f"{self.net.describe(markings[row])}"
            )
        return vanishing, rows, acts, weights / total[rows]

    def _resolve(self, src, weight, markings):
        """Follow markings through vanishing ones until tangible.

        ``src`` tags each item (the tangible source state, or -1 for the initial
        marking) and ``weight`` is its rate (or probability). Returns the tangible
        (src, marking, weight) items; instantaneous firings are recorded as impulses.
        """
        out_src, out_mark, out_w = [], [], []
        seen_vanishing: set[bytes] = set()
        recent: set[str] = set()
        rounds = 0
        while len(src):
            vanishing, rows, acts, prob = self._instant_choices(markings)
            tangible = ~vanishing
            out_src.append(src[tangible])
            out_mark.append(markings[tangible])
            out_w.append(weight[tangible])
            if rows.size == 0:
                break
            rounds += 1
            self.clock.check(states=len(self.index))
            if rounds > guards.MAX_ROUNDS - 100:        # the activities of the last rounds, for the message
                recent.update(self.instant[j].name for j in acts[:10])
                if rounds > guards.MAX_ROUNDS:
                    raise guards.too_many_rounds(self.net, recent, markings[rows[0]])
            n_vanishing = int(vanishing.sum())
            if rounds > _ACYCLIC_ROUNDS:   # long paths are rare: only then count what they visit
                keys = np.ascontiguousarray(markings[vanishing]).view(
                    np.dtype((np.void, markings.dtype.itemsize * markings.shape[1]))).ravel()
                seen_vanishing.update(keys.tolist())
            if rounds > _ACYCLIC_ROUNDS + len(seen_vanishing) + 1:
                # past the first rounds, a path longer than the number of distinct vanishing
                # markings it visited repeats one: the vanishing markings have a cycle;
                # solve for the absorption into tangible markings exactly
                s, m, w = self._resolve_by_solving(src[vanishing], weight[vanishing], markings[vanishing])
                out_src.append(s)
                out_mark.append(m)
                out_w.append(w)
                break
            times = self._run_lengths(markings, rows, acts) if rounds > 1 else None
            src, weight = src[rows], weight[rows] * prob
            self._impulse(src, acts, weight if times is None else weight * times)
            markings = self.instant_table.fire(markings, rows, acts, times)
            if len(src) > n_vanishing:
                # a choice split some paths: merge the ones that met again, or the
                # interleavings of independent activities would multiply
                src, markings, weight = _merge(src, markings, weight)
                self._check_width(markings)
        # equal (src, marking) pairs left here become duplicate transitions, summed in Q
        return np.concatenate(out_src), np.concatenate(out_mark), np.concatenate(out_w)

    def _run_lengths(self, markings, rows, acts):
        """How often each chosen firing repeats before anything else can happen (None: once each).

        A marking where one activity is the only choice, and stays the only choice
        for its next firings (allocating containers one by one, for instance), goes
        through those vanishing markings in one step.
        """
        alone = np.bincount(rows, minlength=len(markings))[rows] == 1
        candidates = np.flatnonzero(alone & self.jumpable[acts])
        if candidates.size == 0:
            return None
        runs = self.instant_table.run_lengths(markings[rows[candidates]], acts[candidates], self.rivals)
        endless = np.flatnonzero(runs >= UNBOUNDED)
        for i in endless:       # a run that nothing stops, and that changes the marking: a trap
            a = acts[candidates[i]]
            if self.instant_table.changes(a):
                raise guards.endless_run(self.net, self.instant[a], markings[rows[candidates[i]]])
        times = np.ones(len(rows), dtype=np.int64)
        times[candidates] = np.where(runs >= UNBOUNDED, 1, runs)   # a self-loop: left to the cycle check
        return times

    def _check_width(self, markings):
        """Stop where instantaneous activities may fire in so many orders that the vanishing
        markings of one step (and the temporaries made from them) would not fit in memory."""
        if markings.nbytes > _WIDE_BYTES and _COPIES * markings.nbytes > guards.SHARE * self.budget.available:
            raise StateSpaceLimitError(
                f"{len(markings):,} vanishing markings at once ({markings.nbytes / 1e9:.1f} GB): instantaneous "
                f"activities that may fire in very many orders (a wide fork?); solve a smaller configuration, "
                f"or estimate it by simulation")

    def _impulse(self, src, acts, w):
        """Record that activities ``acts`` fire ``w`` times per unit time on leaving states ``src``."""
        keep = src >= 0
        self.imp_rows.append(src[keep])
        self.imp_cols.append(np.broadcast_to(acts, src.shape)[keep])
        self.imp_vals.append(w[keep])

    def _resolve_by_solving(self, src, weight, markings):
        """Exact absorption into tangible markings when vanishing markings form cycles.

        Builds the graph of all vanishing markings reachable from the items and
        solves (I - P_VV) X = P_VT for the landing probabilities and
        (I - P_VV) Y = F for the expected instantaneous firings.
        """
        vindex = MarkingIndex(markings.shape[1])
        tindex = MarkingIndex(markings.shape[1])
        item_ids, frontier = vindex.add(markings)
        vv, vt, fires = [], [], []              # (from, to, prob) / (from, tangible, prob) / (from, act, prob)
        while frontier.size:
            known = len(vindex)
            block = vindex.markings()[frontier].astype(MARKING_DTYPE)
            _, rows, acts, prob = self._instant_choices(block)
            succ = self.instant_table.fire(block, rows, acts)
            fires.append((frontier[rows], acts, prob))
            succ_vanishing = self._instant_choices(succ)[0]
            tv = np.flatnonzero(~succ_vanishing)
            if tv.size:
                ids, _ = tindex.add(succ[tv])
                vt.append((frontier[rows[tv]], ids, prob[tv]))
            vv_rows = np.flatnonzero(succ_vanishing)
            if vv_rows.size:
                ids, _ = vindex.add(succ[vv_rows])
                vv.append((frontier[rows[vv_rows]], ids, prob[vv_rows]))
            frontier = np.arange(known, len(vindex), dtype=np.int64)
            if len(vindex) * (len(tindex) + len(self.instant)) > MAX_LOOP_ENTRIES:
                raise TimelessTrapError(
                    f"instantaneous activities lead in zero time from marking {self.net.describe(markings[0])} "
                    f"to more than {len(vindex):,} vanishing markings, some in cycles: their tokens grow "
                    f"without end, or there are too many to solve for")
        nv, nt, ni = len(vindex), len(tindex), len(self.instant)

        def coo(parts, shape):
            if not parts:
                return sp.csr_matrix(shape)
            r, c, v = (np.concatenate(x) for x in zip(*parts))
            return sp.csr_matrix((v, (r, c)), shape=shape)

        P_vv, P_vt, F = coo(vv, (nv, nv)), coo(vt, (nv, nt)), coo(fires, (nv, ni))
        self._check_traps(P_vv, P_vt, F, vindex.markings())
        lu = splu(sp.csc_matrix(sp.identity(nv) - P_vv))
        X = lu.solve(P_vt.toarray()) if nt else np.zeros((nv, 0))
        Y = lu.solve(F.toarray())
        # items -> tangible landings and impulses
        landing = X[item_ids] * weight[:, None]
        r, c = np.nonzero(landing)
        for j in range(ni):
            self._impulse(src, np.int64(j), weight * Y[item_ids, j])
        return src[r], tindex.markings()[c].astype(MARKING_DTYPE), landing[r, c]

    def _check_traps(self, P_vv, P_vt, F, vmarkings):
        n, labels = connected_components(P_vv, directed=True, connection="strong")
        exits = np.asarray(P_vt.sum(axis=1)).ravel()
        coo = P_vv.tocoo()
        leaves = np.zeros(n, dtype=bool)
        leaves[labels[coo.row][labels[coo.row] != labels[coo.col]]] = True
        for c in range(n):
            members = np.flatnonzero(labels == c)
            if leaves[c] or exits[members].sum() > 0:
                continue
            acts = sorted({self.instant[j].name for j in F[members].tocoo().col})
            raise TimelessTrapError(
                f"timeless trap: instantaneous activities {acts} fire forever among "
                f"{len(members)} vanishing marking(s), e.g. {self.net.describe(vmarkings[members[0]])}"
            )

    # ---- the timed part
    def _expand_block(self, ids: np.ndarray, block: np.ndarray):
        self.expanded += len(ids)
        rows, acts = np.nonzero(self.timed_table.enabled(block))
        rates = self.timed_table.rates(block, rows, acts)
        positive = rates > 0
        if not positive.all():
            acts, rows, rates = acts[positive], rows[positive], rates[positive]
        self.timed_counts.append(np.bincount(rows, minlength=len(ids)))
        self.timed_cols.append(acts)
        self.timed_vals.append(rates)
        if rows.size == 0:
            return
        marks = self.timed_table.fire(block, rows, acts)
        src, mark, w = self._resolve(ids[rows], rates, marks)
        dst, _ = self._add_states(mark)
        keep = dst != src
        self.src.append(src[keep])
        self.dst.append(dst[keep])
        self.rate.append(w[keep])

    def _add_states(self, markings):
        ids, new = self.index.add(markings)
        if len(self.index) > self.max_states:
            raise StateSpaceLimitError.beyond(self.max_states)
        self.budget.check(states=len(self.index), expanded=self.expanded, transitions=self.src.n,
                          row_bytes=self.index.row_bytes)
        self.clock.check(states=len(self.index), expanded=self.expanded)
        return ids, new

    def run(self, started: float, starts=None) -> Parts:
        net = self.net
        m0 = net.initial_marking()[None, :] if starts is None else np.asarray(starts, dtype=MARKING_DTYPE)
        src0, mark0, w0 = self._resolve(np.full(len(m0), -1), np.full(len(m0), 1 / len(m0)), m0)
        ids0, frontier = self._add_states(mark0)
        last_report = time.perf_counter()
        while frontier.size:
            known = len(self.index)
            for start in range(0, frontier.size, self.block):
                ids = frontier[start:start + self.block]
                self._expand_block(ids, self.index.markings()[ids].astype(MARKING_DTYPE))
            frontier = np.arange(known, len(self.index), dtype=np.int64)
            if self.progress and time.perf_counter() - last_report > 0.5:
                last_report = time.perf_counter()
                progress_line(len(self.index), frontier.size, started)
        if self.progress:
            print(file=sys.stderr)
        return Parts(
            markings=self.index.release_markings(), initial_ids=ids0, initial_weights=w0,
            src=self.src.array(), dst=self.dst.array(), rate=self.rate.array(),
            timed_counts=self.timed_counts.array(), timed_cols=self.timed_cols.array(),
            timed_vals=self.timed_vals.array(), imp_rows=self.imp_rows.array(),
            imp_cols=self.imp_cols.array(), imp_vals=self.imp_vals.array())
