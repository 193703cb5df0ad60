"""A net as the flat arrays the compiled engine reads (:mod:`spn.statespace.compiled`).

Compiled code takes arrays, not Python objects. Two kinds are made here:

- :func:`group_arrays`: an activity group's arc tests (CSR per activity), token
  changes and constants (rates or weights, servers);
- :func:`gate_arrays`: the choice gates (:mod:`spn.net.choice`) of the
  instantaneous activities, as CSR tables: activity -> gates -> candidates ->
  eligibility tests, each test and key a linear form (columns, coefficients) of the
  marking; and which activities may fire in runs (neither they nor a rival are gated);
- :func:`link_arrays`: which activities a change of the marking can concern (the
  readers of each place, the rivals that can stop a run), so that the kernel looks
  at those rather than at every activity.

>>> from spn.net import Net, Place, InstantActivity, TimedActivity
>>> net = Net([Place("a", 1), Place("b")], [
...     TimedActivity("t", inputs={"b": 1}, outputs={"a": 1}, rate=1.0),
...     InstantActivity("i", inputs={"a": 1}, outputs={"b": 1})])
>>> runs, gated, tables, reals = gate_arrays(net, net.instant, np.zeros((1, 1), dtype=bool))
>>> runs.tolist(), gated.tolist(), tables[tables[GATE_PTR]:tables[GATE_PTR + 1]].tolist()   # no gates
([True], [False], [0, 0])
"""

from __future__ import annotations

import numpy as np

from spn.net import Net
from spn.statespace.activity_table import UNBOUNDED, ActivityTable


def group_arrays(table: ActivityTable):
    """An activity group as flat arrays: its arc tests per activity (CSR), token changes, constants."""
    tests = table._tests
    owner = np.array([t[0] for t in tests], dtype=np.int64)
    ptr = np.zeros(len(table) + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=len(table)), out=ptr[1:])
    order = np.argsort(owner, kind="stable")
    column = np.array([t[1] for t in tests], dtype=np.int64)[order]
    threshold = np.array([t[2] for t in tests], dtype=np.int64)[order]
    server_cap = np.minimum(table._server_cap, UNBOUNDED).astype(np.int64)
    return (ptr, column, threshold, table.delta.astype(np.int64), table._base.astype(float),
            table._server_column.astype(np.int64), table._server_divisor.astype(np.int64), server_cap)


def instant_arrays(net: Net, timed):
    """The instantaneous activities of ``net`` sorted by priority, highest first (so that a scan for the
    enabled ones of the highest priority stops at the first below them), as the kernel reads them:
    (their positions in ``net.instant``, :func:`group_arrays`, priorities, :func:`link_arrays` (with the
    timed activities' :func:`group_arrays` ``timed``), :func:`gate_arrays`)."""
    instant = net.instant                   # (a property that builds its tuple at each call)
    order = np.argsort([-a.priority for a in instant], kind="stable").astype(np.int16)
    by_priority = [instant[i] for i in order]
    priority = np.array([a.priority for a in by_priority], dtype=float)
    rivals = (priority[None, :] >= priority[:, None]) & ~np.eye(len(priority), dtype=bool)
    arrays = group_arrays(ActivityTable(net, by_priority))
    gates = gate_arrays(net, by_priority, rivals)
    return order, arrays, priority, link_arrays(timed, arrays, rivals, gates), gates


def change_arrays(delta: np.ndarray) -> np.ndarray:
    """The token changes of activities (rows of ``delta``), sparse, in one array: activity a changes the
    columns ``changes[changes[a]:changes[a + 1]]``, each by the entry K further on (K changes in all). An
    instantaneous activity moves a token or two among the dozens of places of a job-identity net.

    >>> change_arrays(np.array([[0, -1, 1], [2, 0, 0]])).tolist()   # offsets, columns, changes
    [3, 5, 6, 1, 2, 0, -1, 1, 2]
    """
    rows, columns = np.nonzero(delta)
    ptr = len(delta) + 1 + np.searchsorted(rows, np.arange(len(delta) + 1))
    return np.concatenate([ptr, columns, delta[rows, columns]]).astype(np.int64)


def link_arrays(timed, instant, rivals: np.ndarray, gates):
    """Which instantaneous activities a change of the marking can concern, so that the kernel looks at
    those rather than at every activity (``timed``, ``instant``: :func:`group_arrays`; n instantaneous
    activities, T timed ones). Two arrays (every array handed to the functions called per firing
    costs time there):

    A change can enable activity b only through an input arc of b on a place it raises, an inhibitor
    arc on a place it lowers, or a choice gate of b reading a place it changes (in either direction):
    b's other tests keep their value or get further from passing. Those are the activities the change
    *wakes*:

    - ``links``: the *stoppers* of instantaneous activity a, ``links[links[a]:links[a + 1]]``: its
      rivals (``rivals[a, b]``: b may fire instead of a) that a wakes. Any other rival keeps, during a
      run of a, the state it has where the run starts: disabled, since a is then the only choice.
      The last 6 n entries: each activity's second test, then its sentinel test (:func:`pick_sentinels`);
    - ``wakes``: bit sets of instantaneous activities, 64 a word (activity b: bit b % 64 of word b // 64):
      row a < n, those instantaneous activity a wakes; row n + t, those timed activity t wakes; rows
      n + T + t and n + 2 T + t, those whose sentinel, and whose second test, read a place timed activity
      t changes (:func:`pick_sentinels`); row n + 3 T, those any timed activity wakes; the last row,
      every activity. From a tangible marking (where none is enabled) only the activities woken on the
      way there can be enabled. (A container handed out wakes no other allocation: it lowers the pool
      they wait for.)

    >>> from spn.net import Net, Place, InstantActivity, TimedActivity
    >>> from spn.statespace.activity_table import ActivityTable
    >>> net = Net([Place("a", 1), Place("b"), Place("c"), Place("d")], [
    ...     TimedActivity("t", inputs={"d": 1}, outputs={"a": 1}, rate=1.0),
    ...     InstantActivity("ab", inputs={"a": 1}, outputs={"b": 1}),
    ...     InstantActivity("bc", inputs={"b": 1}, outputs={"c": 1})])
    >>> rivals = ~np.eye(2, dtype=bool)
    >>> links, wakes = link_arrays(group_arrays(ActivityTable(net, net.timed)),
    ...                            group_arrays(ActivityTable(net, net.instant)), rivals, gate_arrays(net, net.instant, rivals))
    >>> [links[links[a]:links[a + 1]].tolist() for a in (0, 1)], wakes[:, 0].tolist()   # t wakes ab; ab wakes bc
    ([[1], []], [2, 0, 1, 1, 1, 1, 3])
    """
    ptr, column, threshold, delta = instant[0], instant[1], instant[2], instant[3]
    n = len(ptr) - 1
    tests = [list(zip(column[ptr[a]:ptr[a + 1]].tolist(), threshold[ptr[a]:ptr[a + 1]].tolist()))
             for a in range(n)]
    rises = [{c for c, need in tests[a] if need > 0} for a in range(n)]         # input arcs: a rise may enable
    falls = [{c for c, need in tests[a] if need <= 0} for a in range(n)]        # inhibitor arcs: a fall may
    reads = [set() for a in range(n)]                                           # choice gates: any change may
    tables = gates[2]
    gate_ptr, candidate_ptr, key_form, need_ptr, need_form, form_ptr, form_column = (
        tables[tables[k]:tables[k + 1]] for k in (GATE_PTR, CANDIDATE_PTR, KEY_FORM, NEED_PTR, NEED_FORM, FORM_PTR,
                                                  FORM_COLUMN))
    for a in range(n):
        for c in range(candidate_ptr[gate_ptr[a]], candidate_ptr[gate_ptr[a + 1]]):
            for f in [key_form[c], *need_form[need_ptr[c]:need_ptr[c + 1]]]:
                reads[a].update(form_column[form_ptr[f]:form_ptr[f + 1]].tolist())

    def member(sets):       # activities by places: 1 where the activity's tests (of that kind) read the place
        table = np.zeros((n, delta.shape[1]), dtype=np.int64)
        for a, places in enumerate(sets):
            table[a, sorted(places)] = 1
        return table
    rise, fall, read = member(rises), member(falls), member(reads)

    def readers(changes):   # per row of token changes, the activities it may enable (as products: 35 ms
        up, down = (changes > 0).astype(np.int64), (changes < 0).astype(np.int64)   # in sets on MapReduce)
        hit = (up @ rise.T > 0) | (down @ fall.T > 0) | ((up + down) @ read.T > 0)
        return [np.flatnonzero(row).tolist() for row in hit]
    by_instant, by_timed = readers(delta), readers(timed[3])
    stoppers = [[b for b in by_instant[a] if rivals[a, b]] for a in range(n)]
    starts = len(stoppers) + 1 + np.cumsum([0] + [len(x) for x in stoppers])
    links = np.concatenate([starts, *[np.array(x, dtype=np.int64) for x in stoppers], np.zeros(6 * n)]).astype(np.int64)
    woken = by_instant + by_timed + [[]] * (2 * len(by_timed)) + [sorted(set().union(*by_timed))] + [range(n)]
    wakes = bit_sets(woken, n)
    # until markings are seen, a test of a place many activities read (a gap, a pool) is taken to fail most
    pick_sentinels((links, wakes), instant, timed[3], np.bincount(column, minlength=max(column, default=0) + 1)[column])
    return links, wakes


def bit_sets(rows, n: int) -> np.ndarray:
    """Sets of activities among n as rows of bits, 64 a word (activity b: bit b % 64 of word b // 64)."""
    bits = np.zeros((len(rows), (n + 63) // 64 or 1), dtype=np.uint64)
    for row, activities in enumerate(rows):
        for b in activities:
            bits[row, b // 64] |= np.uint64(1) << np.uint64(b % 64)
    return bits.view(np.int64)


def pick_sentinels(links, instant, timed_delta: np.ndarray, failing: np.ndarray) -> None:
    """Write into the last 6 n entries of ``links[0]`` each instantaneous activity's *sentinel*, the arc test
    of it most likely to fail (``failing``: a score per test), and its second test, the next most likely
    (the sentinel again where it has one test), each as (column, sign, bound), the test reading
    ``sign * m[column] >= bound``; and into ``links[1]``, per timed activity, the activities whose sentinel,
    and whose second test, read a place it changes (:func:`link_arrays`). A scan for enabled activities
    looks at the sentinel first: most activities are then rejected by one comparison. From a tangible
    marking, an activity one of whose two tests fails there stays disabled after a timed firing that
    leaves that test's place alone; and an activity that fails one of them after firing once fires once,
    not in a run. Which tests are picked changes only the speed."""
    ptr, column, threshold = instant[0], instant[1], instant[2]
    n = len(ptr) - 1
    picked = links[0][len(links[0]) - 6 * n:].reshape(2, n, 3)      # second tests, sentinels
    for a in range(n):
        if ptr[a] == ptr[a + 1]:                # no test: always passes
            picked[:, a] = (0, 0, 0)
            continue
        ranked = ptr[a] + np.argsort(-failing[ptr[a]:ptr[a + 1]], kind="stable")
        for which, t in ((1, ranked[0]), (0, ranked[min(1, len(ranked) - 1)])):
            need = threshold[t]
            picked[which, a] = (column[t], 1, need) if need > 0 else (column[t], -1, 1 + need)
    n_timed = len(timed_delta)
    changes = timed_delta != 0
    for which, row in ((1, n + n_timed), (0, n + 2 * n_timed)):
        tested = picked[which, :, 0]
        links[1][row:row + n_timed] = bit_sets([np.flatnonzero(c[tested] & (picked[which, :, 1] != 0))
                                                for c in changes], n)


def failing_tests(instant, markings: np.ndarray) -> np.ndarray:
    """The share of ``markings`` where each arc test of ``instant`` (:func:`group_arrays`) fails."""
    column, threshold = instant[1], instant[2]
    n, top = len(markings), int(markings.max(initial=0)) + 1
    if n == 0 or top > 1 << 12:
        values = markings[:, column].astype(np.int64)
        return np.where(threshold > 0, values < threshold, values >= -threshold).mean(axis=0)
    # from the counts of each value of each place (cumulated: below[c, v] markings have m[c] < v): a few
    # thousand numbers instead of a test per marking and arc (the kernel samples 8 times on a million states)
    places = markings.shape[1]
    counts = np.bincount((markings.astype(np.int64) + top * np.arange(places)).ravel(), minlength=places * top)
    below = np.zeros((places, top + 1), dtype=np.int64)
    np.cumsum(counts.reshape(places, top), axis=1, out=below[:, 1:])
    # an input arc fails below its threshold; an inhibitor arc (threshold -k) at k tokens or more
    fails = np.where(threshold > 0, below[column, np.clip(threshold, 0, top)],
                     n - below[column, np.clip(-threshold, 0, top)])
    return fails / n                        # (the share as mean() gives it: an exact count over n)


#: the integer tables of the choice gates, in the order :func:`gate_arrays` packs them
GATE_PTR, CANDIDATE_PTR, CHOSEN, KEY_FORM, NEED_PTR, NEED_FORM, NEED_BOUND, FORM_PTR, FORM_COLUMN, \
    FORM_COEFFICIENT = range(10)


def gate_arrays(net: Net, instant, rivals: np.ndarray):
    """The choice gates of the instantaneous activities ``instant`` of ``net`` (``rivals[a, b]``: b may
    fire instead of a), packed in four arrays, since every array handed to the function called per
    firing costs time there: (runs, gated, tables, reals).

    ``runs[a]``: a may fire in runs (neither it nor a rival is gated); ``gated[a]``: a has gates.
    ``tables`` starts with the offsets of ten integer tables (table k is
    ``tables[tables[k]:tables[k+1]]``, k as :data:`GATE_PTR` ...): activity a's gates are
    ``GATE_PTR[a]:GATE_PTR[a+1]``, gate g's candidates ``CANDIDATE_PTR[g]:CANDIDATE_PTR[g+1]`` (the
    chosen one ``CANDIDATE_PTR[g] + CHOSEN[g]``), candidate c's tests ``NEED_PTR[c]:NEED_PTR[c+1]``
    (form ``NEED_FORM[t]`` at least ``NEED_BOUND[t]``), its key form ``KEY_FORM[c]``; form f is the
    sum of ``FORM_COEFFICIENT`` times the marking at ``FORM_COLUMN`` over
    ``FORM_PTR[f]:FORM_PTR[f+1]`` (equal forms stored once). ``reals``: each gate's tie, then each
    candidate's scale (the key is its form over its scale).
    """
    view = net.view(np.zeros((0, len(net.places)), dtype=np.int64))
    forms, form_ptr, form_column, form_coefficient = {}, [0], [], []

    def form_id(form):
        if form not in forms:
            for place, coefficient in form:
                for column in view.columns(place):
                    form_column.append(column)
                    form_coefficient.append(coefficient)
            form_ptr.append(len(form_column))
            forms[form] = len(forms)
        return forms[form]

    gate_ptr, candidate_ptr, chosen, tie = [0], [0], [], []
    key_form, scale, need_ptr, need_form, need_bound = [], [], [0], [], []
    for activity in instant:
        for gate in activity.input_gates:
            choice = gate.predicate
            for candidate in choice.candidates:
                key_form.append(form_id(candidate.key))
                scale.append(candidate.scale)
                for form, bound in candidate.needs:
                    need_form.append(form_id(form))
                    need_bound.append(bound)
                need_ptr.append(len(need_form))
            candidate_ptr.append(len(key_form))
            chosen.append(choice.chosen)
            tie.append(choice.tie)
        gate_ptr.append(len(chosen))
    gated = np.diff(gate_ptr) > 0
    runs = ~gated & ~(rivals & gated[None, :]).any(axis=1)
    parts = [gate_ptr, candidate_ptr, chosen, key_form, need_ptr, need_form, need_bound, form_ptr, form_column,
             form_coefficient]
    offsets = np.cumsum([len(parts) + 1] + [len(part) for part in parts])
    tables = np.concatenate([offsets] + [np.array(part, dtype=np.int64) for part in parts]).astype(np.int64)
    return runs, gated, tables, np.array(tie + scale, dtype=float)


def work_arrays(n_places: int, n_instant: int, stack: int, pending: int):
    """Scratch arrays of the kernel, in small groups (a function gets only the groups it uses:
    passing large tuples of arrays to the functions called per firing slows them down a lot).

    - the marking expanded, its successor, and which activities fail their sentinel and their second
      test in it (bit sets, as :func:`link_arrays`'s ``wakes``);
    - a path: the marking resolved, its instantaneous choices, the depth-first stack (``stack`` rows),
      and the activities woken on the way to the marking and to each one on the stack (bit sets,
      as :func:`link_arrays`'s ``wakes``);
    - for the landings waiting to be looked up (``pending`` of them), their sources, weights and table
      slots (the markings themselves are stored as the rows are: :mod:`spn.statespace.compiled_landing`);
    - the levels: a successor, the table that merges equal markings, two levels of markings.
    """
    words = (n_instant + 63) // 64 or 1
    state = (np.empty(n_places, np.int64), np.empty(n_places, np.int64), np.empty((2, words), np.int64))
    path = (np.empty(n_places, np.int64), np.empty(n_instant, np.int64),
            np.empty((stack, n_places), np.int64), np.empty(stack), np.empty(words, np.int64),
            np.empty((stack, words), np.int64))
    landings = (np.empty(pending, np.int64), np.empty(pending),
                np.empty(pending, np.int64), np.empty(pending, np.int64), np.empty(pending, np.int64))
    levels = (np.empty(n_places, np.int64), np.zeros(4 * stack, np.int64),
              np.empty((stack, n_places), np.int64), np.empty(stack), np.empty(stack, np.int64))
    return state, path, landings, levels
