"""One job alone on the cluster: its execution-time law from order statistics, with bounds.

With one user, a job never meets another, and when the phases that can run
at the same time never need more than the ``C`` containers together, every
phase runs with the containers it asks for. A phase of ``n`` tasks on
``c = min(n, C)`` containers (tasks i.i.d. Erlang(k), NBU) then takes

    T = tau + M,

``tau`` the time the last task starts (the ``(n - c)``-th task completion
while all ``c`` containers are busy) and ``M`` the longest remaining time of
the ``c`` tasks then running: the last one's whole time ``X`` and ``c - 1``
running ones. ``tau``'s law is exact: a container busy since 0 has finished
``floor(P / k)`` tasks by time ``t``, ``P ~ Poisson(k t / m)``, so

    P(tau <= t) = P(sum of c i.i.d. floor(P_i / k) >= n - c).

``M`` is the one approximation: the running tasks' remaining times are taken
independent with the stationary residual law (exact for exponential tasks,
and in the deterministic limit). Rigorous bounds hold whatever their law:
``M >= X`` (the last task runs whole), and ``M`` is at most the longest of
``c`` fresh tasks (a task's remaining time is never longer than a fresh one
for NBU laws, which Erlang laws are). A phase of ``n <= C`` tasks is the
longest of ``n`` tasks, exactly.

Sibling phases (same parents, same children) that need more than the
containers together are one group, bounded by list scheduling (Graham):
``W/c <= T <= W/c + (1 - 1/c) p_max`` whatever order their tasks take.

Phases compose along the DAG on one time grid: a phase starts at the latest
end of its parents (independent for series-parallel DAGs) and ends ``T``
later. ``mean`` is the point estimate, ``low`` and ``high`` the bounds.

>>> from spn.description import parse_description
>>> desc = parse_description({"name": "x", "workload": {"users": 1, "think_time": 1.0},
...     "cluster": {"containers": 2}, "phases": [{"name": "p", "tasks": 3, "task_time": 1.0, "shape": 1}]})
>>> result = job_alone(desc)
>>> round(result.mean, 3)        # tau ~ Exp(2), then the longer of two Exp(1): 0.5 + 1.5
2.0
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np
from scipy import stats

from spn.exceptions import ModelError

__all__ = ["AloneResult", "job_alone", "phase_time_cdfs", "GRID_POINTS"]

#: points of the time grid every law is computed on (its step is the job's scale over this)
GRID_POINTS = 1 << 15
#: antichains of the DAG checked for container contention before giving up
MAX_ANTICHAINS = 100_000


@dataclass(frozen=True)
class AloneResult:
    """The job's mean execution time (point estimate) and rigorous bounds, seconds; ``step`` of the grid."""

    mean: float
    low: float
    high: float
    step: float
    method: str = "job alone: order statistics (exact tau, stationary residuals), bounds M >= X and M <= max of c"

    @property
    def error_bound(self) -> float:
        """Relative half-width of what the bounds allow around the point estimate."""
        return max(self.mean - self.low, self.high - self.mean) / self.mean


def job_alone(desc) -> AloneResult:
    """The mean execution time of one job alone (one user), with bounds; see the module doc.

    Raises :class:`~spn.exceptions.ModelError` when the method does not apply:
    more than one user, a law other than Erlang or exponential, or phases
    that can run together needing more than the containers (they would wait
    for one another) without being siblings.
    """
    from spn.analysis.solve import ANALYTIC_DISTRIBUTIONS
    from spn.description.model import require_single_class

    require_single_class(desc, "the job-alone method", instead="spn simulate")
    if desc.workload.users != 1:
        raise ModelError("the job-alone method needs one user (jobs of several users meet)")
    for phase in desc.phases:
        if phase.distribution not in ANALYTIC_DISTRIBUTIONS:
            raise ModelError(f"phase {phase.name}: the job-alone method takes Erlang and exponential laws, "
                             f"not {phase.distribution}")
    dag = nx.DiGraph()
    dag.add_nodes_from(p.name for p in desc.phases)
    dag.add_edges_from(desc.edges)
    containers = desc.cluster.containers
    dag, groups = _merge_siblings(dag, {p.name: p.tasks for p in desc.phases}, containers)
    phases = {p.name: p for p in desc.phases}
    _check_no_contention(dag, {node: sum(phases[m].tasks for m in groups[node]) for node in dag}, containers)
    # every phase's time is below (waves + 1) long tasks, a long task being its 1 - 1e-13 quantile
    scale = sum((-(-p.tasks // min(p.tasks, containers)) + 1)
                * stats.gamma.ppf(1 - 1e-13, _shape(p), scale=p.task_time / _shape(p)) for p in desc.phases)
    step = scale / GRID_POINTS
    grid = np.arange(GRID_POINTS + 1) * step
    laws = {node: (_group_time_cdfs([phases[m] for m in members], containers, grid) if len(members) > 1 else
                   phase_time_cdfs(phases[node].tasks, containers, _shape(phases[node]), phases[node].task_time,
                                   grid))
            for node, members in groups.items()}
    ends = {}
    for name in nx.topological_sort(dag):
        parents = list(dag.predecessors(name))
        start = [np.prod([ends[q][v] for q in parents], axis=0) if parents else np.ones_like(grid)
                 for v in range(3)]
        ends[name] = [_add(start[v], laws[name][v]) for v in range(3)]
    sinks = [n for n in dag if dag.out_degree(n) == 0]
    finish = [np.prod([ends[s][v] for s in sinks], axis=0) for v in range(3)]
    if finish[2][-1] < 1 - 1e-9:
        raise ModelError("the job-alone grid did not reach the job's end: a phase is far longer than its mean says")
    mean, low, high = (_mean(f, step) for f in finish)
    # the upper law's CDF is the lowest and the lower law's the highest: their means bracket
    return AloneResult(mean=mean, low=min(low, mean), high=max(high, mean), step=step)


def phase_time_cdfs(n: int, containers: int, shape: int, mean: float, grid: np.ndarray) -> list[np.ndarray]:
    """The CDFs on ``grid`` of a phase's time: point estimate, lower and upper bound laws."""
    c = min(n, containers)
    rate = shape / mean
    task = stats.gamma.cdf(grid, shape, scale=1 / rate)
    if n <= c:
        longest = task ** n
        return [longest, longest, longest]
    start = _last_start_cdf(n - c, c, shape, rate, grid)
    residual = _residual_cdf(shape, rate, grid)
    laws = [task * residual ** (c - 1), task, task ** c]
    return [_add(start, law) for law in laws]


def _last_start_cdf(j: int, c: int, shape: int, rate: float, grid: np.ndarray) -> np.ndarray:
    """P(tau <= t): ``c`` containers busy since 0 have finished ``j`` tasks or more by ``t``."""
    cdf = np.zeros_like(grid)
    # the transition is where c containers have done about j tasks: compute only there, 0 before and 1 after
    centre = j * shape / (c * rate)
    spread = 12 * np.sqrt(j * shape / c) / rate + 20 * shape / rate
    inside = (grid > max(0.0, centre - spread)) & (grid < centre + spread)
    cdf[grid >= centre + spread] = 1.0
    rows = np.flatnonzero(inside)
    per_chunk = max(LAST_START_ROWS, 2_000_000 // j)  # few tasks: the counts are narrow anyway, take many rows
    for chunk in np.array_split(rows, max(1, -(-rows.size // per_chunk))):
        cdf[chunk] = 1.0 - _fewer_done(j, c, shape, rate * grid[chunk])
    return np.clip(cdf, 0.0, 1.0)


#: grid points whose task counts are convolved together (they share one window of counts), at least
LAST_START_ROWS = 8
#: sums of task counts are kept within this many standard deviations of their means (plus as many counts)
WINDOW_SD = 40


def _fewer_done(j: int, c: int, shape: int, phases_mean: np.ndarray) -> np.ndarray:
    """P(sum of c i.i.d. floor(P_i / k) < j), P_i ~ Poisson(``phases_mean``), for each of the means.

    A sum of m containers' counts is (nearly) all within ``WINDOW_SD`` standard deviations of its mean:
    each partial sum of the convolution is kept to that window (and below j, which is all that is
    asked). The mass left out is below 1e-100; a phase of n tasks costs about sqrt(n) per grid point
    instead of n.
    """
    lam_low, lam_high = phases_mean.min(), phases_mean.max()
    mean_low, mean_high = lam_low / shape - 1, lam_high / shape
    sd = np.sqrt(lam_high) / shape + 1  # a count's sd is at most its phases' over k, plus the rounding

    def window(m: int) -> tuple[int, int]:
        """Counts [low, high) that a sum of m containers' counts takes, in all but 1e-100 of its mass."""
        reach = WINDOW_SD * (np.sqrt(m) * sd + 1)
        return max(0, int(m * mean_low - reach)), min(j, int(m * mean_high + reach) + 1)

    low, high = window(c)
    if low >= j:
        return np.zeros(phases_mean.size)
    if high < j:
        return np.ones(phases_mean.size)
    lo, hi = window(1)
    edges = np.arange(lo, hi + 1)[None, :] * shape  # done >= m tasks <=> P >= m k
    below = stats.poisson.cdf(edges - 1, phases_mean[:, None])  # P(P_i < m k), m = lo..hi
    one = (lo, np.diff(below, axis=1), 1)  # P(done = m), m = lo..hi-1

    def add(x, y):
        """The law of the sum of two independent partial sums, kept to its window."""
        (ox, a, mx), (oy, b, my) = x, y
        width = a.shape[1] + b.shape[1] - 1
        size = 1 << int(np.ceil(np.log2(max(width, 1))))
        total = np.fft.irfft(np.fft.rfft(a, size) * np.fft.rfft(b, size), size)[:, :width].clip(min=0.0)
        first, last = window(mx + my)
        first, last = max(first, ox + oy), min(last, ox + oy + width)
        return first, total[:, first - ox - oy:max(first, last) - ox - oy], mx + my

    result, base, power = None, one, c
    while power:
        if power & 1:
            result = base if result is None else add(result, base)
        power >>= 1
        if power:
            base = add(base, base)
    return result[1].sum(axis=1)


def _group_time_cdfs(members, containers: int, grid: np.ndarray) -> list[np.ndarray]:
    """CDFs of the time of sibling phases that start together and share the containers (see _merge_siblings).

    Bounds of list scheduling (Graham), true for any order the free containers take the tasks in:
    W/c <= T <= W/c + (1 - 1/c) p_max, W the group's total work and p_max its longest task (the upper
    law adds p_max as if independent of W, which keeps its mean). Point estimate: the phase of most
    work as a phase alone (tau + M), started after the others' work spread over the containers.
    """
    c = min(containers, sum(p.tasks for p in members))
    work = [stats.gamma.cdf(grid, p.tasks * _shape(p), scale=p.task_time / _shape(p) / c) for p in members]
    total = work[0]
    for other in work[1:]:
        total = _add(total, other)
    longest = np.prod([stats.gamma.cdf(grid / (1 - 1 / c), _shape(p), scale=p.task_time / _shape(p)) ** p.tasks
                       for p in members], axis=0) if c > 1 else np.ones_like(grid)
    main = max(range(len(members)), key=lambda i: members[i].tasks * members[i].task_time)
    rest = None
    for i, law in enumerate(work):
        if i != main:
            rest = law if rest is None else _add(rest, law)
    p = members[main]
    alone = phase_time_cdfs(p.tasks, containers, _shape(p), p.task_time, grid)[0]
    low, high = total, _add(total, longest)
    point = np.clip(_add(rest, alone), high, low)  # inside the bounds: between the two CDFs
    return [point, low, high]


def _merge_siblings(dag: nx.DiGraph, tasks: dict, containers: int) -> tuple[nx.DiGraph, dict]:
    """The DAG with each group of sibling phases (same parents, same children) that need more than the
    containers together merged into one node; and node -> the phases it stands for."""
    by_family: dict = {}
    for node in dag:
        family = (frozenset(dag.predecessors(node)), frozenset(dag.successors(node)))
        by_family.setdefault(family, []).append(node)
    groups = {node: [node] for node in dag}
    merged = dag.copy()
    for (parents, children), members in by_family.items():
        if len(members) < 2 or sum(tasks[m] for m in members) <= containers:
            continue
        name = "+".join(sorted(members))
        merged.remove_nodes_from(members)
        merged.add_node(name)
        merged.add_edges_from((q, name) for q in parents)
        merged.add_edges_from((name, q) for q in children)
        for m in members:
            del groups[m]
        groups[name] = sorted(members)
    return merged, groups


def _residual_cdf(shape: int, rate: float, grid: np.ndarray) -> np.ndarray:
    """CDF of the stationary remaining time of an Erlang(k) task: 1..k phases left, equally likely.

    (1/k) sum_j P(Poisson(rate t) >= j) = E[min(P, k)] / k = (rate t F(k-2) + k (1 - F(k-1))) / k.
    """
    x = rate * grid
    return (x * stats.poisson.cdf(shape - 2, x) + shape * stats.poisson.sf(shape - 1, x)) / shape


def _add(start_cdf: np.ndarray, duration_cdf: np.ndarray) -> np.ndarray:
    """CDF of start + duration (independent) on the grid: the start's pmf convolved with the duration's CDF.

    The start's mass in a step (t - h, t] sits, on average, half a step early: the duration's CDF is
    taken half a step later (linear interpolation), which removes the grid's first-order bias.
    """
    pmf = np.diff(start_cdf, prepend=0.0)
    at_zero, pmf[0] = pmf[0], 0.0  # a start at exactly 0 (an atom) is not spread over a step
    later = np.append(0.5 * (duration_cdf[:-1] + duration_cdf[1:]), duration_cdf[-1])
    size = 1 << int(np.ceil(np.log2(2 * pmf.size)))
    total = np.fft.irfft(np.fft.rfft(pmf, size) * np.fft.rfft(later, size), size)[:pmf.size]
    total += at_zero * duration_cdf
    return np.clip(total, 0.0, 1.0)


def _mean(cdf: np.ndarray, step: float) -> float:
    """Mean of a law given by its CDF on the grid (trapezoid rule on the survival function)."""
    survival = 1.0 - cdf
    return float(step * (survival.sum() - 0.5 * (survival[0] + survival[-1])))


def _shape(phase) -> int:
    return 1 if phase.distribution == "exponential" else int(phase.shape)


def _check_no_contention(dag: nx.DiGraph, tasks: dict, containers: int) -> None:
    """Refuse a DAG whose phases that can run together need more than the containers."""
    if not nx.is_directed_acyclic_graph(dag):
        raise ModelError("the phases do not form a DAG")
    closure = nx.transitive_closure_dag(dag)
    for count, group in enumerate(nx.antichains(closure)):
        if count >= MAX_ANTICHAINS:
            raise ModelError("the DAG has too many groups of phases that can run together to check")
        if sum(tasks[p] for p in group) > containers and len(group) > 1:
            raise ModelError(f"phases {', '.join(sorted(group))} can run together and need "
                             f"{sum(tasks[p] for p in group)} containers, more than {containers}: they would "
                             "wait for one another, which the job-alone method does not model")

