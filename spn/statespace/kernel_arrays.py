"""A net as the flat arrays the compiled engine reads (:mod:`spn.statespace.compiled`).

Compiled code takes arrays, not Python objects. Two kinds are made here:

- :func:`group_arrays`: an activity group's arc tests (CSR per activity), token
  changes and constants (rates or weights, servers);
- :func:`gate_arrays`: the choice gates (:mod:`spn.net.choice`) of the
  instantaneous activities, as CSR tables: activity -> gates -> candidates ->
  eligibility tests, each test and key a linear form (columns, coefficients) of the
  marking; and which activities may fire in runs (neither they nor a rival are gated).

>>> from spn.net import Net, Place, InstantActivity, TimedActivity
>>> net = Net([Place("a", 1), Place("b")], [
...     TimedActivity("t", inputs={"b": 1}, outputs={"a": 1}, rate=1.0),
...     InstantActivity("i", inputs={"a": 1}, outputs={"b": 1})])
>>> gates = gate_arrays(net, net.instant, np.zeros((1, 1), dtype=bool))
>>> gates[0].tolist(), gates[1].tolist()       # the one activity may run, and has no gates
([True], [0, 0])
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


def instant_arrays(net: Net):
    """The instantaneous activities of ``net`` sorted by priority, highest first (so that a scan for the
    enabled ones of the highest priority stops at the first below them), as the kernel reads them:
    (their positions in ``net.instant``, :func:`group_arrays`, priorities, rivals, :func:`gate_arrays`).
    ``rivals[a, b]``: b, of at least a's priority, may fire instead of a."""
    order = np.argsort([-a.priority for a in net.instant], kind="stable").astype(np.int16)
    by_priority = [net.instant[i] for i in order]
    priority = np.array([a.priority for a in by_priority], dtype=float)
    rivals = (priority[None, :] >= priority[:, None]) & ~np.eye(len(priority), dtype=bool)
    return (order, group_arrays(ActivityTable(net, by_priority)), priority, rivals,
            gate_arrays(net, by_priority, rivals))


def gate_arrays(net: Net, instant, rivals: np.ndarray):
    """The choice gates of the instantaneous activities ``instant`` of ``net`` (``rivals[a, b]``: b may
    fire instead of a).

    Returns (runs, gate_ptr, candidate_ptr, chosen, tie, key_form, scale, need_ptr, need_form,
    need_bound, form_ptr, form_column, form_coefficient): activity a's gates are
    ``gate_ptr[a]:gate_ptr[a+1]``, gate g's candidates ``candidate_ptr[g]:candidate_ptr[g+1]`` (the
    chosen one ``candidate_ptr[g] + chosen[g]``), candidate c's tests ``need_ptr[c]:need_ptr[c+1]``
    (form ``need_form[t]`` at least ``need_bound[t]``), its key form ``key_form[c]`` over ``scale[c]``;
    form f is the sum of ``form_coefficient`` times the marking at ``form_column`` over
    ``form_ptr[f]:form_ptr[f+1]``. Equal forms are stored once.
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
    ints = lambda values: np.array(values, dtype=np.int64)     # noqa: E731
    return (runs, ints(gate_ptr), ints(candidate_ptr), ints(chosen), np.array(tie, dtype=float), ints(key_form),
            np.array(scale, dtype=float), ints(need_ptr), ints(need_form), ints(need_bound), ints(form_ptr),
            ints(form_column), ints(form_coefficient))


def work_arrays(n_places: int, n_instant: int, stack: int, pending: int):
    """Scratch arrays of the kernel, in small groups (a function gets only the groups it uses:
    passing large tuples of arrays to the functions called per firing slows them down a lot).

    - the marking expanded and its successor;
    - a path: the marking resolved, its instantaneous choices, the depth-first stack (``stack`` rows);
    - the landings waiting to be looked up (``pending``), with their sources, weights and table slots;
    - the levels: a successor, the table that merges equal markings, two levels of markings.
    """
    state = (np.empty(n_places, np.int64), np.empty(n_places, np.int64))
    path = (np.empty(n_places, np.int64), np.empty(n_instant, np.int64),
            np.empty((stack, n_places), np.int64), np.empty(stack))
    landings = (np.empty((pending, n_places), np.int64), np.empty(pending, np.int64), np.empty(pending),
                np.empty(pending, np.int64), np.empty(pending, np.int64), np.empty(pending, np.int64))
    levels = (np.empty(n_places, np.int64), np.zeros(4 * stack, np.int64),
              np.empty((stack, n_places), np.int64), np.empty(stack), np.empty(stack, np.int64))
    return state, path, landings, levels
