"""Exploration of plain nets in compiled code (Numba), one marking at a time.

:mod:`spn.statespace` explores any net a frontier at a time with NumPy calls. For a
*plain* net — arcs decide enabling and firing, rates and weights are constants (any
servers), the only gates are choice gates (:mod:`spn.net.choice`, read as linear
forms), as in every model :mod:`spn.models` builds — this module does the same job
in a compiled loop, several times faster:

- each tangible marking, in id order, fires its enabled timed activities;
- each successor is followed through vanishing markings a level of firings at a
  time (highest priority first, ties split by weight, equal markings of a level
  merged; a run of one ungated activity that stays the only choice is taken in
  one step, as :meth:`ActivityTable.run_lengths` does);
- tangible landings are looked up in an open-addressing hash table of the
  markings seen (linear probing, a hash tag beside each id), new ones appended;
  markings are stored packed and hashed and compared a 64-bit word at a time
  (:mod:`spn.statespace.compiled_landing`).

The chain is the one :mod:`spn.statespace` builds (states may be numbered in
another order). Where this engine would be slow or not exact — vanishing loops,
very many interleavings, a zero total weight — it gives up and
:func:`spn.statespace.explore` uses the NumPy engine (which reports traps).

>>> from spn.net import Net, Place, TimedActivity, InstantActivity
>>> net = Net([Place("idle", 1), Place("ready"), Place("busy")], [
...     TimedActivity("arrive", inputs={"idle": 1}, outputs={"ready": 1}, rate=1.0),
...     InstantActivity("start", inputs={"ready": 1}, outputs={"busy": 1}),
...     TimedActivity("serve", inputs={"busy": 1}, outputs={"idle": 1}, rate=2.0)])
>>> is_plain(net, choices=True)
True
>>> parts = explore_plain(net, max_states=10)
>>> parts.markings.tolist(), parts.src.tolist(), parts.dst.tolist(), parts.rate.tolist()
([[1, 0, 0], [0, 0, 1]], [0, 1], [1, 0], [1.0, 2.0])
"""

from __future__ import annotations

import sys
import time
import numpy as np
from numba import njit

from spn.defaults import MAX_STATES
from spn.exceptions import StateSpaceLimitError
from spn.limits import MAX_TOKENS
from spn.net import Net
from spn.statespace import guards
from spn.statespace.activity_table import ActivityTable, is_plain  # noqa: F401 (the doctest uses is_plain)
from spn.statespace.compiled_choices import choices, enabled, failing, may_enable, run_length
from spn.statespace.compiled_landing import flush, land, pending_marks, rehash, row_width, spread_bits, words
# the kernel's answers, numbered once beside the lookup that gives some of them
from spn.statespace.compiled_landing import (
    CHUNK_ENDED as _CHUNK, DONE as _DONE, GIVE_UP as _GIVE_UP, ROOM_IMPULSES as _ROOM_IMPULSES,
    ROOM_STATES as _ROOM_STATES, ROOM_TIMED as _ROOM_TIMED, ROOM_TRANSITIONS as _ROOM_TRANSITIONS, SPLIT as _SPLIT,
    TOO_MANY as _TOO_MANY, WIDER as _WIDER,
)
from spn.statespace.kernel_arrays import (change_arrays, failing_tests, group_arrays, instant_arrays, pick_sentinels,
                                          work_arrays)
from spn.statespace.space import Parts, progress_line

#: vanishing markings followed depth first from one timed firing before merging paths instead
DEPTH_FIRST_LIMIT = 64
#: vanishing markings visited from one timed firing before giving up (a loop)
PATH_LIMIT = 100_000
#: depth of a vanishing path (after runs are jumped) taken as a loop
DEPTH_LIMIT = 10_000
#: vanishing markings on the depth-first stack, or in two consecutive levels of firings
STACK_SIZE = 1 << 14
#: tangible markings expanded per kernel call (between progress lines)
CHUNK = 1 << 16
#: tangible markings from which each instantaneous activity's sentinel test is chosen (kernel_arrays.pick_sentinels)
SAMPLE = 1 << 12
#: tangible landings looked up together (their table slots and rows are fetched in one pass): as many as
#: have rows of BATCH_BYTES in all (so that what is fetched stays in the core's cache until the probes),
#: a power of two between the bounds
BATCH_BYTES, BATCH = 1 << 17, (1 << 10, 1 << 14)
#: room for the landings of the marking that fills a batch
_PENDING = BATCH[1] + (1 << 16)


def explore_plain(net: Net, *, max_states: int = MAX_STATES, progress: bool = False,
                  started: float | None = None, max_seconds: float | None = None) -> Parts | None:
    """Explore an Erlang-expanded plain net (within ``max_seconds`` of ``started``); None where the
    NumPy engine must take over."""
    if not guards.small_and_plain(net):     # (large nets: the NumPy engine keeps their arrays sparse)
        return None
    started = time.perf_counter() if started is None else started
    clock = guards.TimeBudget(max_seconds, started=started, max_states=max_states)
    timed = group_arrays(ActivityTable(net, net.timed))
    order, instant, priority, links, gates = instant_arrays(net, timed)    # highest priority first (choices)
    gates = gates if gates[1].any() else None       # a plain net's kernel is compiled without the gates
    changes = change_arrays(instant[3])
    m0 = net.initial_marking().astype(np.int64)
    n_places = len(m0)

    dtype = next(t for t in (np.uint8, np.uint16, np.uint32) if np.iinfo(t).max >= 2 * m0.max())
    rows = np.zeros((1 << 12, row_width(n_places, dtype)), dtype=dtype)   # padded to whole words (compiled_landing)
    slots = np.zeros(1 << 13, dtype=np.int64)
    timed_counts = np.zeros(len(rows), dtype=np.int32)
    id_dtype = np.int32 if max_states < 2**31 - 1 else np.int64
    src, dst, rate = np.empty(1 << 12, id_dtype), np.empty(1 << 12, id_dtype), np.empty(1 << 12)
    timed_cols, timed_vals = np.empty(1 << 12, np.int16), np.empty(1 << 12)
    imp_rows, imp_cols, imp_vals = np.empty(1 << 12, id_dtype), np.empty(1 << 12, np.int16), np.empty(1 << 12)
    state, path, landings, levels = work_arrays(n_places, len(priority), STACK_SIZE, _PENDING)
    marks = pending_marks(_PENDING, n_places, dtype)
    batch = int(np.clip(1 << int(np.log2(BATCH_BYTES / (marks.itemsize * marks.shape[1]))), *BATCH))
    # states, next state to expand (-1: the initial marking first), transitions, timed entries,
    # impulses, how many transitions are the initial marking's landings (src -1), and the
    # states and transitions a lack of room asked for
    counts = np.zeros(8, dtype=np.int64)
    counts[1] = -1
    last_report, budget = time.perf_counter(), guards.MemoryBudget()
    sampled = 0
    while True:
        if counts[0] >= max(2 * sampled, SAMPLE):    # sentinels from the markings seen (first after SAMPLE)
            sampled = int(counts[0])
            pick_sentinels(links, instant, timed[3], failing_tests(instant, rows[sampled - SAMPLE:sampled]))
        status = _expand(m0, rows, words(rows), slots, timed_counts, src, dst, rate, timed_cols, timed_vals,
                         imp_rows, imp_cols, imp_vals, order, counts, timed, instant, changes, gates, links, priority,
                         state, path, (marks, *landings, words(marks)), levels, max_states,
                         CHUNK if sampled else SAMPLE, batch, PATH_LIMIT, DEPTH_LIMIT)
        if status == _DONE:
            break
        if status == _GIVE_UP:
            return None
        budget.check(states=int(counts[0]), expanded=max(int(counts[1]), 0), transitions=int(counts[2]),
                     row_bytes=rows.itemsize * rows.shape[1])
        clock.check(states=int(counts[0]), expanded=max(int(counts[1]), 0))
        if status == _TOO_MANY:
            raise StateSpaceLimitError.beyond(max_states)
        if status == _ROOM_STATES:
            need = int(counts[6])
            if need >= len(rows):
                rows.resize((max(need + 1, 2 * len(rows)), rows.shape[1]), refcheck=False)
                timed_counts.resize(len(rows), refcheck=False)
            if 2 * need >= len(slots):
                size = len(slots)
                while 2 * need >= size:
                    size *= 2
                slots = np.zeros(size, dtype=np.int64)
                rehash(words(rows), int(counts[0]), slots)
        elif status == _ROOM_TRANSITIONS:
            for a in (src, dst, rate):
                a.resize(max(int(counts[7]), 2 * len(a)), refcheck=False)
        elif status == _ROOM_TIMED:
            for a in (timed_cols, timed_vals):
                a.resize(2 * len(a), refcheck=False)
        elif status == _ROOM_IMPULSES:
            for a in (imp_rows, imp_cols, imp_vals):
                a.resize(2 * len(a), refcheck=False)
        elif status == _WIDER:
            if rows.dtype == np.uint32:     # past MAX_TOKENS: the NumPy engine says where
                return None
            wider = {np.uint8: np.uint16, np.uint16: np.uint32, np.uint32: np.uint64}[rows.dtype.type]
            n = int(counts[0])
            widened = np.zeros((len(rows), row_width(n_places, wider)), dtype=wider)
            widened[:n, :n_places] = rows[:n, :n_places]
            rows, marks = widened, pending_marks(_PENDING, n_places, wider)
            slots[:] = 0                    # the words hashed are not the same
            rehash(words(rows), n, slots)
        if progress and sys.stderr.isatty() and time.perf_counter() - last_report > 0.5:
            last_report = time.perf_counter()
            progress_line(int(counts[0]), int(counts[0] - max(counts[1], 0)), started)
    if progress and sys.stderr.isatty():
        print(file=sys.stderr)
    n, n_tr, n_tv, n_imp, n_initial = (int(c) for c in counts[[0, 2, 3, 4, 5]])
    rows = _trimmed(rows, n, n_places)
    for a, size in ((src, n_tr), (dst, n_tr), (rate, n_tr), (timed_cols, n_tv), (timed_vals, n_tv),
                    (imp_rows, n_imp), (imp_cols, n_imp), (imp_vals, n_imp), (timed_counts, n)):
        a.resize(size, refcheck=False)
    return Parts(markings=rows, initial_ids=dst[:n_initial].copy(), initial_weights=rate[:n_initial].copy(),
                 src=src[n_initial:], dst=dst[n_initial:], rate=rate[n_initial:],
                 timed_counts=timed_counts, timed_cols=timed_cols, timed_vals=timed_vals,
                 imp_rows=imp_rows, imp_cols=imp_cols, imp_vals=imp_vals)


def _trimmed(rows: np.ndarray, n: int, n_places: int) -> np.ndarray:
    """The first n rows without their padding, moved within their own memory (a copy to fresh memory
    took 40-80 ms on a million rows, most of it the page faults of the new array)."""
    width = rows.shape[1]
    flat = rows.reshape(-1)                 # (a view: rows are C-contiguous)
    i = 1
    while i < n and width > n_places:      # row blocks whose new place ends before their old one starts
        k = min(n - i, max(1, i * (width - n_places) // n_places))
        flat[i * n_places:(i + k) * n_places].reshape(k, n_places)[...] = rows[i:i + k, :n_places]
        i += k
    del flat
    rows.resize((n, n_places), refcheck=False)     # (keeps the first n * n_places counts: those moved)
    return rows


# --------------------------------------------------------------------------- the compiled part
def _compiled(function):
    """Compiled on first use, and cached on disk for later processes."""
    return njit(cache=True, nogil=True)(function)


def _unreferenced(function):
    """Compiled without reference counts on its arrays (the kernel makes none, and its arrays outlive
    the call). With them, Numba counts every array a function is handed, and a pass then removes the
    counting it can prove useless; on functions as large as the kernel it fails as soon as their
    control flow grows a little (a loop or a division more in :func:`_resolve`), and every firing
    paid two atomic updates per array. Without them, :func:`_resolve` can be compiled into
    :func:`_expand` too, which saves handing it some 40 arrays per firing."""
    return njit(cache=True, nogil=True, _nrt=False)(function)


def _inlined(function):
    """Compiled into its callers: the small helpers run several times per marking."""
    return njit(cache=True, nogil=True, inline="always")(function)


@_inlined
def _hash(m):
    h = np.uint64(0x9E3779B97F4A7C15)
    for j in range(m.shape[0]):
        h = (h ^ np.uint64(m[j])) * np.uint64(0x100000001B3)
        h ^= h >> np.uint64(29)
    return spread_bits(h)


@_inlined
def _forget(table, level_slot, first, n):
    """Empty the merge table of the n markings of a level starting at ``first``."""
    for q in range(first, first + n):
        if level_slot[q] >= 0:
            table[level_slot[q]] = 0


@_compiled
def _resolve_levels(source, start, weight, k, top_count, imp_rows, imp_cols, imp_vals, order, counts,
                    instant, gates, links, priority, path, pending, level_work, path_limit, depth_limit):
    """:func:`_resolve` from a marking where paths split: one level of instantaneous firings
    at a time, equal markings of a level merged (their weights summed), so that
    independent activities firing in every order do not multiply the work."""
    delta, base = instant[3], instant[4]
    m, choice = path[0], path[1]
    everyone = links[1][links[1].shape[0] - 1]      # (merging levels is rare: every activity is looked at)
    woken = path[4]                                 # (a copy: choices() takes out of it what it finds disabled)
    marks, sources, weights = pending[0], pending[1], pending[2]
    successor, table, levels, level_weight, level_slot = level_work
    half = levels.shape[0] // 2                 # two levels: [0, half) and [half, 2 half)
    mask = len(table) - 1
    for j in range(start.shape[0]):             # (a loop: slice assignment is far slower here)
        levels[0, j] = start[j]
    level_weight[0] = weight
    first, n_level, depth, pops = 0, 1, 0, 0
    while n_level:
        first_next, n_next = half - first, 0
        for item in range(first, first + n_level):
            for j in range(m.shape[0]):
                m[j] = levels[item, j]
            w = level_weight[item]
            pops += 1
            for i in range(len(woken)):
                woken[i] = everyone[i]
            n_choices, total = choices(m, instant, gates, priority, links, woken, choice)
            status = _DONE
            if n_choices == 0:                      # tangible: to be looked up with others
                status = land(m, source, w, k, top_count, marks, sources, weights)
                if status == _DONE:
                    k += 1
            elif total <= 0 or pops > path_limit or depth >= depth_limit:
                status = _GIVE_UP                   # a trap (reported by the NumPy engine), or too long
            else:
                times = run_length(m, choice[0], instant, gates, links) if n_choices == 1 else 1
                for c in range(n_choices):
                    a = choice[c]
                    p = w * base[a] / total
                    if source >= 0:
                        n = counts[4]
                        if n >= len(imp_rows):
                            status = _ROOM_IMPULSES
                            break
                        imp_rows[n], imp_cols[n], imp_vals[n] = source, order[a], p * times
                        counts[4] = n + 1
                    for j in range(m.shape[0]):
                        successor[j] = m[j] + times * delta[a, j]
                    if n_level == 1 and n_choices == 1:     # a single path goes on: nothing to merge
                        for j in range(m.shape[0]):
                            levels[first_next, j] = successor[j]
                        level_weight[first_next], level_slot[first_next] = p, -1
                        n_next = 1
                        break
                    at = np.int64(_hash(successor) & np.uint64(mask))
                    while True:                     # merge into the next level
                        entry = table[at]
                        if entry == 0:
                            if n_next >= half:
                                status = _GIVE_UP
                                break
                            q = first_next + n_next
                            for j in range(m.shape[0]):
                                levels[q, j] = successor[j]
                            level_weight[q], level_slot[q] = p, at
                            table[at] = n_next + 1
                            n_next += 1
                            break
                        q = first_next + entry - 1
                        same = True
                        for j in range(m.shape[0]):
                            if levels[q, j] != successor[j]:
                                same = False
                                break
                        if same:
                            level_weight[q] += p
                            break
                        at = (at + 1) & mask
                    if status != _DONE:
                        break
            if status != _DONE:
                _forget(table, level_slot, first_next, n_next)
                return status, k
        _forget(table, level_slot, first_next, n_next)
        first, n_level = first_next, n_next
        depth += 1
    return _DONE, k


@_inlined
def _resolve(source, timed, start, weight, k, top_count, imp_rows, imp_cols, imp_vals, order, counts,
             instant, changes, gates, links, priority, path, pending):
    """Follow ``start`` (reached from tangible ``source`` at rate ``weight`` by timed activity ``timed``,
    -1 for the initial marking) to tangible markings, which are appended to the pending landings from
    position k. Returns (status, new k). Only the instantaneous activities woken on the way are looked at
    (those the timed firing may have enabled: ``path[4]``, filled by the caller).

    Depth first: cheap while paths rarely split. Where they split often (independent
    activities that may fire in any order) the same interleavings would be followed
    again and again: past :data:`DEPTH_FIRST_LIMIT` markings this answer is taken
    back (status _SPLIT: the caller drops the landings and impulses recorded since
    the call) and :func:`_resolve_levels` merges the paths instead. (Taking back
    here, or calling from here, slows this loop down several times over.)

    Along a path the marking changes only where the activity fired changes it (``changes``:
    :func:`~spn.statespace.kernel_arrays.change_arrays`), not over every place.
    """
    delta, base = instant[3], instant[4]
    further = np.uint64((len(changes) - len(priority) - 1) // 2)    # from a change's column to its size
    m, choice, stack, stack_weight, woken, stack_woken = path
    wakes = links[1]
    marks, sources, weights = pending[0], pending[1], pending[2]
    for j in range(start.shape[0]):         # (a loop: slice assignment is far slower here)
        m[j] = start[j]
    w = weight
    if timed < 0:                           # the initial marking: every one (else the caller filled woken)
        for i in range(wakes.shape[1]):
            woken[i] = wakes[wakes.shape[0] - 1, i]
    top, pops = 0, 0
    while True:
        if pops:                                    # (the first path starts from start, not from the stack)
            if top == 0:
                break
            top -= 1
            for j in range(m.shape[0]):
                m[j] = stack[top, j]
            for i in range(wakes.shape[1]):
                woken[i] = stack_woken[top, i]
            w = stack_weight[top]
        while True:                                 # along the path while it does not split
            pops += 1
            if pops > DEPTH_FIRST_LIMIT:            # the caller takes it back and calls _resolve_levels
                return _SPLIT, k
            n_choices, total = choices(m, instant, gates, priority, links, woken, choice)
            if n_choices == 0:                      # tangible: to be looked up with others
                status = land(m, source, w, k, top_count, marks, sources, weights)
                if status != _DONE:
                    return status, k
                k += 1
                break
            if total <= 0 or top + n_choices > stack.shape[0]:
                return _GIVE_UP, k                  # a timeless trap (reported by the NumPy engine) or too wide
            times = run_length(m, choice[0], instant, gates, links) if n_choices == 1 else 1
            for c in range(n_choices):
                a = choice[c]
                p = w * base[a] / total
                if source >= 0:
                    n = counts[4]
                    if n >= len(imp_rows):
                        return _ROOM_IMPULSES, k
                    imp_rows[n], imp_cols[n], imp_vals[n] = source, order[a], p * times   # (its place in net.instant)
                    counts[4] = n + 1
                if n_choices == 1:                  # one successor: m itself goes on (no copy to the stack)
                    for t in range(np.uint64(changes[a]), np.uint64(changes[a + 1])):
                        m[np.uint64(changes[t])] += times * changes[t + further]
                    for i in range(wakes.shape[1]):
                        woken[i] |= wakes[a, i]
                    w = p
                    break
                for j in range(m.shape[0]):
                    stack[top, j] = m[j] + times * delta[a, j]
                for i in range(wakes.shape[1]):
                    stack_woken[top, i] = woken[i] | wakes[a, i]
                stack_weight[top] = p
                top += 1
            if n_choices > 1:
                break
    return _DONE, k


@_inlined
def _room(counts, rows, slots, src, timed_cols, imp_rows, n_timed, impulses, batch):
    """_DONE when the arrays have room for one more batch (its landings, taken as twice the batch: the
    marking that fills it usually adds a few; its timed firings; twice the ``impulses`` of the last one),
    or the lack of room to grow first: asked for between batches, where nothing is taken back (past
    this estimate, a batch that runs out is expanded again). A larger margin (the most a batch can
    hold, 81,920 landings) grew the table early: on MapReduce ``fifo`` N = C = 6 (988,702 states) to
    4 million slots, a rehash of 966,000 rows near the end, where 2 million hold them at load 0.47."""
    room = 2 * batch
    if counts[0] + room >= rows.shape[0] or 2 * (counts[0] + room) >= len(slots):
        counts[6] = counts[0] + room
        return _ROOM_STATES
    if counts[2] + room > len(src):
        counts[7] = counts[2] + room
        return _ROOM_TRANSITIONS
    if counts[3] + batch + n_timed > len(timed_cols):
        return _ROOM_TIMED
    if counts[4] + 2 * impulses + n_timed > len(imp_rows):
        return _ROOM_IMPULSES
    return _DONE


@_unreferenced
def _expand(m0, rows, row_words, slots, timed_counts, src, dst, rate, timed_cols, timed_vals,
            imp_rows, imp_cols, imp_vals, order, counts, timed, instant, changes, gates, links, priority,
            state, path, pending, levels, max_states, chunk, batch, path_limit, depth_limit):
    """Expand tangible markings in id order from counts[1] (-1: resolve the initial marking first).

    Landings wait in a batch until it is full or no known marking is left to
    expand. On a lack of room everything since the last batch is taken back,
    so that the call can be repeated once the arrays have grown.
    """
    ptr, column, threshold, delta, base = timed[0], timed[1], timed[2], timed[3], timed[4]
    server_column, server_divisor, server_cap = timed[5], timed[6], timed[7]
    m, nxt, fails = state
    top_count = min(np.iinfo(rows.dtype).max, MAX_TOKENS)
    if counts[1] < 0:
        status, k = _resolve(-1, -1, m0, 1.0, 0, top_count, imp_rows, imp_cols, imp_vals, order, counts,
                             instant, changes, gates, links, priority, path, pending)
        if status == _SPLIT:                        # (the initial marking records no impulses)
            status, k = _resolve_levels(-1, m0, 1.0, 0, top_count, imp_rows, imp_cols, imp_vals, order, counts,
                                        instant, gates, links, priority, path, pending, levels, path_limit,
                                        depth_limit)
        if status == _DONE:
            status = flush(k, rows, row_words, slots, src, dst, rate, counts, pending)
        if status != _DONE:
            return status
        counts[1], counts[5] = 0, counts[2]
    s, k = counts[1], 0
    saved_timed, saved_impulses = counts[3], counts[4]
    stop = s + chunk
    status = _room(counts, rows, slots, src, timed_cols, imp_rows, len(base), 0, batch)
    if status != _DONE:
        return status
    while True:
        if k >= batch or s == counts[0] or s >= stop:
            status = flush(k, rows, row_words, slots, src, dst, rate, counts, pending)
            if status != _DONE:                     # take back the markings expanded since the last batch
                counts[3], counts[4] = saved_timed, saved_impulses
                return status
            counts[1], k = s, 0
            impulses = counts[4] - saved_impulses
            saved_timed, saved_impulses = counts[3], counts[4]
            if counts[0] > max_states:
                return _TOO_MANY
            if s == counts[0]:
                return _DONE
            if s >= stop:
                return _CHUNK
            status = _room(counts, rows, slots, src, timed_cols, imp_rows, len(base), impulses, batch)
            if status != _DONE:
                return status
        for j in range(m.shape[0]):
            m[j] = rows[s, j]
        failing(m, links, len(priority), len(base), fails)
        n_enabled = 0
        for a in range(len(base)):
            if not enabled(m, ptr, column, threshold, a):
                continue
            r = base[a]
            if server_column[a] >= 0:
                busy = m[server_column[a]]
                if server_divisor[a] != 1:
                    busy //= server_divisor[a]
                r *= min(busy, server_cap[a])
            if r <= 0:
                continue
            n = counts[3]
            if n >= len(timed_cols):
                counts[3], counts[4] = saved_timed, saved_impulses
                return _ROOM_TIMED
            timed_cols[n], timed_vals[n] = a, r
            counts[3] = n + 1
            n_enabled += 1
            for j in range(m.shape[0]):
                nxt[j] = m[j] + delta[a, j]
            k_before, impulses_before = k, counts[4]
            may_enable(links, len(priority), len(base), a, fails, path[4])
            status, k = _resolve(s, a, nxt, r, k, top_count, imp_rows, imp_cols, imp_vals, order, counts,
                                 instant, changes, gates, links, priority, path, pending)
            if status == _SPLIT:
                counts[4] = impulses_before
                status, k = _resolve_levels(s, nxt, r, k_before, top_count, imp_rows, imp_cols, imp_vals, order, counts,
                                            instant, gates, links, priority, path, pending, levels, path_limit,
                                            depth_limit)
            if status != _DONE:
                counts[3], counts[4] = saved_timed, saved_impulses
                return status
        timed_counts[s] = n_enabled
        s += 1
