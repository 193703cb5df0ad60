"""Execution-time distribution of a tagged job on a job-identity net (policies ``fifo`` and ``fair``).

It builds the tagged net and explores it (steps 2-3 below), so it lives with the analytic path, above
:mod:`spn.models` and :mod:`spn.statespace`; the passage time itself is :mod:`spn.solvers.passage`'s.

On the paper's net jobs leave in the order they came, so :func:`spn.solvers.passage.tagged_job_chain`
tags a job by counting completions. Under ``fifo`` and ``fair`` a younger job can end
first (its tasks may be shorter), so that count would follow the wrong job: the
percentiles would be those of a matching of arrivals to completions, not of any job's
execution time (only the mean, by Little's law, survives any matching).

The job-identity net knows each job's slot, so the tagged job is followed exactly:

1. arrivals in steady state: the transitions of the untagged chain that take a token
   from the think place, weighted ``pi_s * rate(s -> s')``, land in states ``s'``;
   the arriving job holds the highest occupied slot, ``N - think(s')``;
2. the same net with a tag place per slot (``build_jobs(..., tagged=True)``): the tag
   moves up with its job's places and is removed when its job ends. It is explored
   from the landing states, each with the tag on the newest job;
3. the states with a tag are transient, the others absorbing: the passage time from
   the arrival-weighted landing states to the loss of the tag is solved by
   uniformisation (:func:`~spn.solvers.passage.passage_time`).

The tagged chain is about as many times larger than the untagged one as there are jobs
in the system on average. Its mean equals R = N/X - Z (a check, not an input).

>>> from spn.description import parse_description
>>> from spn.models.jobs import build_jobs
>>> from spn.statespace import explore
>>> from spn.solvers import steady_state
>>> desc = parse_description({"name": "x", "workload": {"users": 2, "think_time": 2.0},
...     "cluster": {"containers": 2}, "scheduler": {"policy": "fifo"},
...     "phases": [{"name": "map", "tasks": 2, "task_time": 1.0}, {"name": "reduce", "tasks": 2, "task_time": 2.0}]})
>>> app = build_jobs(desc)
>>> ss = explore(app.net)
>>> d = slot_execution_time_distribution(desc, ss, steady_state(ss.generator()).x)
>>> round(d.mean, 9) == round(503 / 92, 9)           # R of the hand-solved fifo chain
True
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from spn.exceptions import ConvergenceError, ModelError
from spn.models.jobs import build_jobs, tag_place
from spn.solvers.passage import PassageDistribution, execution_time_distribution, passage_time
from spn.statespace import MAX_STATES, explore

__all__ = ["slot_execution_time_distribution", "tagged_job_distribution"]


def tagged_job_distribution(desc, app, ss, pi, **options) -> PassageDistribution:
    """The execution-time distribution of ``desc``'s application net ``app`` (explored as ``ss``,
    steady state ``pi``): by slot on a job-identity net (``fifo``, ``fair``), by completion
    count on the paper's net (``gate``, whose jobs leave in the order they came).
    ``options``: ``atol``, ``maxiter``, ``callback`` as for :func:`passage_time`."""
    if desc.scheduler.policy == "gate":
        return execution_time_distribution(ss, pi, users=app.users, end_activity=app.end_activity,
                                           think_place=app.think_place, **options)
    return slot_execution_time_distribution(desc, ss, pi, **options)


def slot_execution_time_distribution(desc, ss, pi, *, max_states: int | None = None, atol: float = 1e-12,
                                     maxiter: int | None = None, raise_on_nonconvergence: bool = True,
                                     callback: Callable | None = None) -> PassageDistribution:
    """Distribution of a tagged job's execution time on the job-identity net of ``desc``.

    ``ss`` and ``pi``: the untagged net's state space (``explore(build_jobs(desc).net)``)
    and steady state. Raises :class:`ConvergenceError` as :func:`passage_time` reports it,
    :class:`~spn.exceptions.StateSpaceLimitError` past ``max_states`` tagged states.
    """
    users = desc.workload.users
    pi = np.asarray(pi, dtype=float)
    if pi.shape != (ss.n_states,):
        raise ModelError(f"pi has shape {pi.shape}, the state space has {ss.n_states} states")
    thinking = ss.tokens("PJ").astype(np.int64)
    Q = ss.generator().tocoo()
    arrives = (Q.row != Q.col) & (thinking[Q.col] == thinking[Q.row] - 1)
    weight = np.bincount(Q.col[arrives], weights=pi[Q.row[arrives]] * Q.data[arrives], minlength=ss.n_states)
    if not weight.sum() > 0:
        raise ModelError("no job ever arrives in steady state (the arrival rate is 0)")
    landing = np.flatnonzero(weight > 0)

    tagged = build_jobs(desc, tagged=True).net
    column = {p.name: j for j, p in enumerate(tagged.places)}
    starts = np.zeros((landing.size, len(tagged.places)), dtype=np.int64)
    for j, place in enumerate(ss.net.places):
        starts[:, column[place.name]] = ss.markings[landing, j]
    newest = users - thinking[landing]
    if newest.min(initial=1) < 1:
        raise ModelError("internal error: an arrival landed in a state with no job in the system")
    tags = np.array([column[tag_place(k)] for k in range(1, users + 1)])
    starts[np.arange(landing.size), tags[newest - 1]] = 1

    tss = explore(tagged, starts=starts, max_states=max_states or MAX_STATES)
    has_tag = tss.markings[:, tags].sum(axis=1)
    if has_tag.max(initial=0) > 1:
        raise ModelError("internal error: two jobs carry the tag")
    transient = np.flatnonzero(has_tag == 1)
    position = np.full(tss.n_states, -1)
    position[transient] = np.arange(transient.size)
    G = tss.generator().tocsr()
    QT = G[transient][:, transient].tocsr()      # each row keeps its whole diagonal: the rest is absorption

    alpha = np.zeros(transient.size)
    found = _rows_of(tss.markings, starts.astype(tss.markings.dtype))
    np.add.at(alpha, position[found], weight[landing])
    alpha /= alpha.sum()
    result = passage_time(QT, alpha, atol=atol, maxiter=maxiter, callback=callback)
    if not result.converged and raise_on_nonconvergence:
        raise ConvergenceError(result)
    return result


def _rows_of(markings: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """The index in ``markings`` of each of ``rows`` (every one must be there)."""
    width = markings.dtype.itemsize * markings.shape[1]
    keys = np.ascontiguousarray(markings).view(np.dtype((np.void, width))).ravel()
    wanted = np.ascontiguousarray(rows).view(np.dtype((np.void, width))).ravel()
    order = np.argsort(keys)
    at = np.searchsorted(keys[order], wanted)
    at = np.minimum(at, keys.size - 1)
    if not np.all(keys[order][at] == wanted):
        raise ModelError("internal error: a landing state of a tagged job was not explored")
    return order[at]
