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
end of its parents and ends ``T`` later. Series and parallel compositions
are exact (a phase and its only child: the sum of their times; phases of the
same parents and children: the longest), so a series-parallel DAG (a fork,
then a join) reduces to one law; what is left, ends that share an ancestor
meeting at a join, is bounded (:func:`_latest`).

The result keeps three laws, on the grid: the point estimate and the laws
of ``R_low`` (``tau + X``, ``W/c``, ...) and ``R_high`` (``tau`` + the longest
of ``c`` fresh tasks, ...). The bounds are stochastic orders, not only on
means: ``R_low <= R <= R_high`` in law, so their CDFs bracket R's at every
time, ``low_cdf >= F_R >= high_cdf`` (the lower law's CDF is the highest),
and so do their percentiles. Each step keeps the order: sums and maxima of
independent times are monotone in each; Graham's ``W/c + (1 - 1/c) p_max``
adds two times that grow with the same tasks, so the upper law takes
``P(W/c + L <= t) >= max_s P(W/c <= s) P(L <= t - s)`` (they are associated);
at a join of ends that share an ancestor, the product of their CDFs is below
their joint CDF (upper law, and point estimate) and the smallest of them
above it (lower law). On the grid, each convolution takes the duration's CDF
at the end of the start's step that favours the bound (the point estimate at
its middle), so the bounding CDFs hold at every grid point, to rounding.
:meth:`AloneResult.percentile` and :meth:`AloneResult.probability` read them
with the grid step included. ``mean``, ``low`` and ``high`` are the three
laws' means (trapezoid rule: ``low`` and ``high`` within half a step).

>>> from spn.description import parse_description
>>> desc = parse_description({"name": "x", "workload": {"users": 1, "think_time": 1.0},
...     "cluster": {"containers": 2}, "phases": [{"name": "p", "tasks": 3, "task_time": 1.0, "shape": 1}]})
>>> result = job_alone(desc)
>>> round(result.mean, 3)        # tau ~ Exp(2), then the longer of two Exp(1): 0.5 + 1.5
2.0
>>> [round(t, 2) for t in result.percentile(90)]   # the 90th percentile and its bounds
[3.62, 2.97, 3.62]
>>> [round(p, 3) for p in result.probability(2.0)]  # P(R <= 2 s) and its bounds
[0.587, 0.586, 0.748]
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

import networkx as nx
import numpy as np
import scipy.fft
from scipy import stats

from spn.exceptions import ModelError

__all__ = ["AloneResult", "job_alone", "phase_time_cdfs", "GRID_POINTS"]

#: points of the time grid every law is computed on (its step is the job's scale over this)
GRID_POINTS = 1 << 15
#: the most memory the laws of a job's phases may take (3 laws of a phase: 0.75 MiB; 1 GiB is 1,365 phases)
MAX_BYTES = 1 << 30
#: antichains of the DAG checked for container contention before giving up
MAX_ANTICHAINS = 100_000


@dataclass(frozen=True)
class AloneResult:
    """R's law on a grid of ``step`` seconds: the point estimate's CDF and those of the laws bounding R.

    ``low_cdf`` is the CDF of the law below R (pointwise the highest), ``high_cdf`` that of the law
    above R (pointwise the lowest): ``low_cdf >= cdf >= high_cdf``, and R's own CDF is between the
    two at every grid point. ``mean``, ``low`` and ``high`` are the three laws' means (seconds).
    Past the arrays' end R's CDF is between ``high_cdf[-1]`` and 1 (the arrays stop where
    ``high_cdf`` reaches 1, or at the grid's end).

    >>> r = AloneResult(mean=1.0, low=1.0, high=1.0, step=0.5, cdf=np.array([0.0, 0.4, 1.0]),
    ...                 low_cdf=np.array([0.0, 0.5, 1.0]), high_cdf=np.array([0.0, 0.2, 1.0]))
    >>> [round(t, 4) for t in r.percentile(50)]  # the point CDF crosses 0.5 at 0.5 + 0.5 * 0.1 / 0.6
    [0.5833, 0.0, 1.0]
    >>> r.probability(0.5)        # P(R <= 0.5) is 0.4, and between 0.2 and 0.5
    (0.4, 0.2, 0.5)
    """

    mean: float
    low: float
    high: float
    step: float
    cdf: np.ndarray = field(repr=False, compare=False)
    low_cdf: np.ndarray = field(repr=False, compare=False)
    high_cdf: np.ndarray = field(repr=False, compare=False)
    method: str = "job alone: order statistics (exact tau, stationary residuals), bounds M >= X and M <= max of c"

    def __post_init__(self):
        cdf, low, high = (np.maximum.accumulate(np.clip(np.asarray(law, dtype=float), 0.0, 1.0))
                          for law in (self.cdf, self.low_cdf, self.high_cdf))
        # nondecreasing and ordered (the FFTs leave 1e-16 wiggles): raising the lower law's CDF, or
        # lowering the upper law's, only loosens them
        for name, law in (("cdf", cdf), ("low_cdf", np.maximum(low, cdf)), ("high_cdf", np.minimum(high, cdf))):
            law.flags.writeable = False
            object.__setattr__(self, name, law)

    @property
    def error_bound(self) -> float:
        """Relative half-width of what the bounds allow around the point estimate."""
        return max(self.mean - self.low, self.high - self.mean) / self.mean

    def percentile(self, q: float) -> tuple[float, float, float]:
        """R's ``q``-th percentile (0 < q < 100): ``(value, low, high)``, seconds, ``low <= R_q <= high``.

        ``value`` interpolates the point CDF linearly. The bounds are grid points: the one before
        the first where ``low_cdf`` reaches q (R's CDF is below q there) and the first where
        ``high_cdf`` does (R's is at or above) -- each within one step of the bounding law's own
        interpolated percentile; ``inf`` when ``high_cdf`` never reaches q.

        >>> r = AloneResult(1.0, 1.0, 1.0, 0.5, np.array([0.0, 1.0]), np.array([0.0, 1.0]), np.array([0.0, 1.0]))
        >>> r.percentile(25)
        (0.125, 0.0, 0.5)
        """
        if not 0 < q < 100:
            raise ModelError(f"a percentile is in (0, 100), got {q!r}")
        p = q / 100.0
        low = max(int(np.searchsorted(self.low_cdf, p)) - 1, 0) * self.step
        j = int(np.searchsorted(self.high_cdf, p))
        high = j * self.step if j < self.high_cdf.size else math.inf
        j = int(np.searchsorted(self.cdf, p))
        if j == 0:
            value = 0.0
        elif j == self.cdf.size:
            value = math.inf
        else:
            below, above = self.cdf[j - 1], self.cdf[j]
            value = (j - 1 + (p - below) / (above - below)) * self.step
        return float(min(max(value, low), high)), float(low), float(high)

    def percentiles(self, qs) -> dict[float, tuple[float, float, float]]:
        """``{q: (value, low, high)}`` for each percentile in ``qs``; see :meth:`percentile`."""
        return {float(q): self.percentile(float(q)) for q in qs}

    def probability(self, deadline: float) -> tuple[float, float, float]:
        """P(R <= ``deadline``): ``(value, low, high)``, the true probability within ``[low, high]``.

        ``value`` interpolates the point CDF; the bounds take the grid points around the deadline:
        P(R <= d) >= P(R <= t_j) >= high_cdf[j] for t_j <= d, and <= low_cdf[j'] for t_j' >= d.

        >>> r = AloneResult(1.0, 1.0, 1.0, 0.5, np.array([0.0, 1.0]), np.array([0.0, 1.0]), np.array([0.0, 1.0]))
        >>> r.probability(0.125)
        (0.25, 0.0, 1.0)
        """
        d = float(deadline)
        if d < 0:
            return 0.0, 0.0, 0.0
        last = self.cdf.size - 1
        below = math.floor(d / self.step)
        below -= below * self.step > d  # the division may round up
        above = math.ceil(d / self.step)
        above += above * self.step < d
        value = float(np.interp(d, np.arange(last + 1) * self.step, self.cdf))
        low = float(self.high_cdf[min(below, last)])
        high = float(self.low_cdf[above]) if above <= last else 1.0
        return float(min(max(value, low), high)), float(low), float(high)

    def percentile_error_bound(self, qs=(50, 90, 99)) -> float:
        """The largest relative half-width ``max(value - low, high - value) / value`` over ``qs``.

        >>> r = AloneResult(1.0, 1.0, 1.0, 0.5, np.array([0.0, 1.0]), np.array([0.0, 1.0]), np.array([0.0, 1.0]))
        >>> r.percentile_error_bound([50])
        1.0
        """
        worst = 0.0
        for value, low, high in self.percentiles(qs).values():
            finite = 0 < value and high < math.inf
            worst = max(worst, max(value - low, high - value) / value if finite else math.inf)
        return worst


def job_alone(desc) -> AloneResult:
    """The execution-time law of one job alone (one user), with bounds: mean, percentiles, P(R <= d).

    Raises :class:`~spn.exceptions.ModelError` when the method does not apply:
    more than one user, a law other than Erlang or exponential, or phases
    that can run together needing more than the containers (they would wait
    for one another) without being siblings.
    """
    from spn.description.model import ANALYTIC_DISTRIBUTIONS, require_single_class

    require_single_class(desc, "the job-alone method", instead="spn simulate")
    if desc.workload.users != 1:
        raise ModelError("the job-alone method needs one user (jobs of several users meet)")
    for phase in desc.phases:
        if phase.distribution not in ANALYTIC_DISTRIBUTIONS:
            raise ModelError(f"phase {phase.name}: the job-alone method takes Erlang and exponential laws, "
                             f"not {phase.distribution}")
    needed = 3 * 8 * (GRID_POINTS + 1) * len(desc.phases)     # three laws per phase on the grid
    if needed > MAX_BYTES:
        raise ModelError(f"the job-alone method would hold {needed / 2**30:.2g} GiB of laws for "
                         f"{len(desc.phases):,} phases, more than {MAX_BYTES / 2**30:g} GiB")
    return _job_alone(tuple(desc.phases), tuple(tuple(e) for e in desc.edges), desc.cluster.containers)


#: the jobs last asked, kept with their laws (0.8 MB each at most): the same job asked again (a
#: report's one-user point and its pilot's what-if point) is not computed again
KEPT_JOBS = 4


@functools.lru_cache(maxsize=KEPT_JOBS)
def _job_alone(phase_list: tuple, edges: tuple, containers: int) -> AloneResult:
    """:func:`job_alone` of the phases, edges and containers of a description it accepts."""
    dag = nx.DiGraph()
    dag.add_nodes_from(p.name for p in phase_list)
    dag.add_edges_from(edges)
    # a driver phase takes no container (0 held) and runs all its tasks at once (as many slots as tasks)
    held = {p.name: p.tasks if p.holds_containers else 0 for p in phase_list}
    slots = {p.name: containers if p.holds_containers else p.tasks for p in phase_list}
    dag, groups = _merge_siblings(dag, held, containers)
    phases = {p.name: p for p in phase_list}
    _check_no_contention(dag, {node: sum(held[m] for m in groups[node]) for node in dag}, containers)
    # every phase's time is below (waves + 1) long tasks, a long task being its 1 - 1e-13 quantile
    scale = sum((-(-p.tasks // min(p.tasks, slots[p.name])) + 1)
                * stats.gamma.ppf(1 - 1e-13, _shape(p), scale=p.task_time / _shape(p)) for p in phase_list)
    step = scale / GRID_POINTS
    grid = np.arange(GRID_POINTS + 1) * step
    laws = {node: (_group_time_cdfs([phases[m] for m in members], containers, grid) if len(members) > 1 else
                   phase_time_cdfs(phases[node].tasks, slots[node], _shape(phases[node]), phases[node].task_time,
                                   grid))
            for node, members in groups.items()}
    dag, laws = _series_parallel(dag, laws)
    ancestry = {node: nx.ancestors(dag, node) | {node} for node in dag}
    ends = {}
    for name in nx.topological_sort(dag):
        parents = list(dag.predecessors(name))
        start = [_latest([ends[q][v] for q in parents], [ancestry[q] for q in parents], v) if parents
                 else np.ones_like(grid) for v in range(3)]
        ends[name] = [_add(start[v], laws[name][v], v) for v in range(3)]
    sinks = [n for n in dag if dag.out_degree(n) == 0]
    finish = [_latest([ends[s][v] for s in sinks], [ancestry[s] for s in sinks], v) for v in range(3)]
    if finish[HIGH][-1] < 1 - 1e-9:
        raise ModelError("the job-alone grid did not reach the job's end: a phase is far longer than its mean says")
    mean, low, high = (_mean(f, step) for f in finish)
    # the upper law's CDF is the lowest and the lower law's the highest: their means bracket
    done = np.flatnonzero(finish[HIGH] >= 1.0)  # past it all three CDFs are 1: not kept
    keep = done[0] + 1 if done.size else grid.size
    return AloneResult(mean=mean, low=min(low, mean), high=max(high, mean), step=float(step),
                       cdf=finish[POINT][:keep], low_cdf=finish[LOW][:keep], high_cdf=finish[HIGH][:keep])


#: the three laws computed side by side: the point estimate, the law below R (highest CDF), above R (lowest)
POINT, LOW, HIGH = 0, 1, 2


def _series_parallel(dag: nx.DiGraph, laws: dict) -> tuple[nx.DiGraph, dict]:
    """The DAG reduced as far as series and parallel compositions go, and each node's duration laws.

    A node whose only child has no other parent runs it right after: one node, the sum of their
    times. Nodes of the same parents and the same children start together: one node, the longest
    of their times. Both are exact (the phases' times are independent), unlike the product of the
    CDFs of ends that share an ancestor: a series-parallel DAG (a fork, then a join) reduces to one
    node, and the joins left to :func:`_latest` are those of other DAGs.

    >>> one = [np.array([0.0, 1.0, 1.0])] * 3
    >>> fork_join = nx.DiGraph([("s", "a"), ("s", "b"), ("a", "z"), ("b", "z")])
    >>> list(_series_parallel(fork_join, dict.fromkeys("sabz", one))[0])
    [('series', ('series', 's', ('parallel', 'a', 'b')), 'z')]
    """
    dag, laws = dag.copy(), dict(laws)

    def replace(old: list, new, parents, children, law):
        dag.remove_nodes_from(old)
        dag.add_edges_from([(p, new) for p in parents] + [(new, c) for c in children])
        dag.add_node(new)
        laws[new] = law

    while True:
        families: dict = {}
        for node in dag:
            families.setdefault((frozenset(dag.predecessors(node)), frozenset(dag.successors(node))), []).append(node)
        twins = next((members for members in families.values() if len(members) > 1), None)
        if twins:  # tuples, never a phase's name (a string)
            parents, children = set(dag.predecessors(twins[0])), set(dag.successors(twins[0]))
            replace(twins, ("parallel", *twins), parents, children,
                    [np.prod([laws[m][v] for m in twins], axis=0) for v in range(3)])
            continue
        pair = next(((u, v) for u in dag for v in dag.successors(u)
                     if dag.out_degree(u) == 1 and dag.in_degree(v) == 1), None)
        if pair is None:
            return dag, laws
        u, v = pair
        replace([u, v], ("series", u, v), set(dag.predecessors(u)), set(dag.successors(v)),
                [_add(laws[u][w], laws[v][w], w) for w in range(3)])


def _latest(cdfs: list, ancestries: list, law: int) -> np.ndarray:
    """CDF of the latest of several phases' ends (a join, or the job's end), for one of the three laws.

    Ends whose phases share no ancestor are independent: the product of their CDFs. Ends that share
    one are associated (nondecreasing in the same tasks' times) and together below t more often than
    independent ones: the product is below their joint CDF, right for the upper law and close for
    the point estimate (which it lengthens a little), while the lower law, which must stay above, takes
    the smallest CDF of each set of ends tied by common ancestors (Frechet).
    """
    if law != LOW:
        return np.prod(cdfs, axis=0)
    groups: list[tuple[set, list]] = []
    for cdf, ancestry in zip(cdfs, ancestries):
        tied = [g for g in groups if g[0] & ancestry]
        groups = [g for g in groups if not g[0] & ancestry]
        groups.append((set(ancestry).union(*(g[0] for g in tied)), [cdf] + [c for g in tied for c in g[1]]))
    return np.prod([np.min(members, axis=0) for _, members in groups], axis=0)


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
    return [_add(start, law, v) for v, law in enumerate(laws)]


def _last_start_cdf(j: int, c: int, shape: int, rate: float, grid: np.ndarray) -> np.ndarray:
    """P(tau <= t): ``c`` containers busy since 0 have finished ``j`` tasks or more by ``t``."""
    return 1.0 - _fewer_done(j, c, shape, rate * grid)


#: each window of task counts leaves out less than e^-TAIL (3e-109) of its law's mass on either side: with
#: c containers, (2 c + 2) e^-TAIL in all, below 1e-100 up to 10^8 containers
TAIL = 250.0
#: grid points times FFT length transformed at once (memory: 16 bytes each, twice)
CHUNK = 1 << 22


def _count_window(m: int, shape: int, phases_mean: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Counts [low, high), per mean, holding a sum of ``m`` containers' counts but for 2 e^-TAIL of its mass.

    The sum N of m counts floor(P_i / k) lies in (S/k - m, S/k], S ~ Poisson(m mean): Bernstein's
    bounds, P(S >= mu + x) <= exp(-x^2 / (2 (mu + x/3))) and P(S <= mu - x) <= exp(-x^2 / (2 mu)),
    set to e^-TAIL, give the counts: a rigorous window, whatever the shape and the mean.
    """
    mu = m * phases_mean
    up = TAIL / 3 + np.sqrt(TAIL ** 2 / 9 + 2 * TAIL * mu)
    down = np.sqrt(2 * TAIL * mu)
    low = np.maximum(np.floor((mu - down) / shape) - m + 1, 0)
    high = np.floor((mu + up) / shape) + 1
    return low.astype(np.int64), high.astype(np.int64)


def _fewer_done(j: int, c: int, shape: int, phases_mean: np.ndarray) -> np.ndarray:
    """P(sum of c i.i.d. floor(P_i / k) < j), P_i ~ Poisson(``phases_mean``), for each of the means.

    Each mean's counts are kept to their window (:func:`_count_window`: the mass left out is below
    1e-100): the sum's is of width about sqrt(c n / k) + c for n = c mean / k tasks done, so a phase
    of n tasks costs about that per grid point, not n. Means whose sum's window is all below ``j``
    (or all at or above it) give 1 (or 0) without a convolution. The others are convolved c times
    at once, as the c-th power of one container's law in the Fourier domain, on a circle at least as
    long as the sum's window: what wraps around is the mass outside it.
    """
    out = np.zeros(phases_mean.size)
    first, last = _count_window(c, shape, phases_mean)
    out[last <= j] = 1.0
    rows = np.flatnonzero((first < j) & (last > j))
    if rows.size == 0:
        return out
    def circle(counts: int) -> int:
        return 1 << int(np.ceil(np.log2(max(counts, 1))))

    length = circle(int((last - first)[rows].max()))
    for chunk in np.array_split(rows, max(1, -(-rows.size * length // CHUNK))):
        lam = phases_mean[chunk]
        low, high = _count_window(1, shape, lam)
        high = np.minimum(high, j)  # a container's count of j or more makes the sum j or more: not asked
        width = int((high - low).max())
        length = max(length, circle(width))  # one container's window fits too (never wider than the sum's)
        counts = low[:, None] + np.arange(width + 1)[None, :]
        below = stats.poisson.cdf(counts * shape - 1, lam[:, None])  # P(done < m) = P(P < m k)
        one = np.where(counts[:, 1:] <= high[:, None], np.diff(below, axis=1), 0.0)  # P(done = m)
        total = np.fft.irfft(np.fft.rfft(one, length) ** c, length)
        # the circle's position p holds the count s = c low + p (mod length) within the sum's window
        start = first[chunk][:, None]
        counts = start + (c * low[:, None] + np.arange(length)[None, :] - start) % length
        out[chunk] = np.where(counts < j, total, 0.0).sum(axis=1)
    return np.clip(out, 0.0, 1.0)


def _group_time_cdfs(members, containers: int, grid: np.ndarray) -> list[np.ndarray]:
    """CDFs of the time of sibling phases that start together and share the containers (see _merge_siblings).

    Bounds of list scheduling (Graham), true for any order the free containers take the tasks in:
    W/c <= T <= W/c + (1 - 1/c) p_max, W the group's total work and p_max its longest task (both
    grow with the same tasks: the upper law is :func:`_sup_product`'s, not their convolution, which
    has the mean right but not the law). Point estimate: the phase of most work as a phase alone
    (tau + M), started after the others' work spread over the containers.
    """
    c = min(containers, sum(p.tasks for p in members))
    work = [stats.gamma.cdf(grid, p.tasks * _shape(p), scale=p.task_time / _shape(p) / c) for p in members]
    total = {LOW: work[0], HIGH: work[0]}
    for other in work[1:]:
        total = {v: _add(total[v], other, v) for v in total}
    longest = np.prod([stats.gamma.cdf(grid / (1 - 1 / c), _shape(p), scale=p.task_time / _shape(p)) ** p.tasks
                       for p in members], axis=0) if c > 1 else np.ones_like(grid)
    main = max(range(len(members)), key=lambda i: members[i].tasks * members[i].task_time)
    rest = None
    for i, law in enumerate(work):
        if i != main:
            rest = law if rest is None else _add(rest, law)
    p = members[main]
    alone = phase_time_cdfs(p.tasks, containers, _shape(p), p.task_time, grid)[0]
    low, high = total[LOW], _sup_product(total[HIGH], longest)
    point = np.clip(_add(rest, alone), high, low)  # inside the bounds: between the two CDFs
    return [point, low, high]


#: shifts of the second law that :func:`_sup_product` tries, at most (fewer only loosen the bound)
SUP_SHIFTS = 2000


def _sup_product(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A CDF below that of A + B for associated A and B (CDFs ``a``, ``b`` on the grid), any dependence
    of that kind: P(A + B <= t) >= P(A <= s, B <= t - s) >= a(s) b(t - s), the best s on the grid.

    >>> _sup_product(np.array([0.0, 0.5, 1.0, 1.0]), np.array([0.0, 0.5, 1.0, 1.0]))
    array([0.  , 0.  , 0.25, 0.5 ])
    """
    moving = np.flatnonzero((b > 0) & (b < 1))
    shifts = moving[np.linspace(0, moving.size - 1, min(moving.size, SUP_SHIFTS)).astype(int)]
    shifts = np.unique(np.concatenate([shifts, np.flatnonzero(b >= 1)[:1]]))  # past it b is 1: only the first
    out = np.zeros_like(a)
    for k in shifts:
        out[k:] = np.maximum(out[k:], a[:a.size - k] * b[k])
    return out


def _merge_siblings(dag: nx.DiGraph, tasks: dict, containers: int) -> tuple[nx.DiGraph, dict]:
    """The DAG with each group of sibling phases (same parents, same children) that need more than the
    containers together merged into one node; and node -> the phases it stands for. A phase that holds
    no container (``tasks`` 0: a driver phase) shares none, and is never merged.

    One group at a time, on the DAG merged so far (merging a family all at once re-created the
    parents a previous merge had removed).

    >>> crossed = nx.DiGraph([("b", "d"), ("b", "e"), ("c", "d"), ("c", "e")])
    >>> sorted(_merge_siblings(crossed, dict.fromkeys("bcde", 2), 2)[0].edges)
    [('b+c', 'd+e')]
    """
    merged = dag.copy()
    groups = {node: [node] for node in dag}
    while True:
        by_family: dict = {}
        for node in merged:
            if not any(tasks[p] for p in groups[node]):
                continue
            by_family.setdefault((frozenset(merged.predecessors(node)), frozenset(merged.successors(node))),
                                 []).append(node)
        crowded = next(((parents, children, members) for (parents, children), members in by_family.items()
                        if len(members) > 1 and sum(tasks[p] for m in members for p in groups[m]) > containers),
                       None)
        if crowded is None:
            return merged, groups
        parents, children, members = crowded
        phases = sorted(p for m in members for p in groups.pop(m))
        name = "+".join(phases)
        merged.remove_nodes_from(members)
        merged.add_node(name)
        merged.add_edges_from([(q, name) for q in parents] + [(name, q) for q in children])
        groups[name] = phases


def _residual_cdf(shape: int, rate: float, grid: np.ndarray) -> np.ndarray:
    """CDF of the stationary remaining time of an Erlang(k) task: 1..k phases left, equally likely.

    (1/k) sum_j P(Poisson(rate t) >= j) = E[min(P, k)] / k = (rate t F(k-2) + k (1 - F(k-1))) / k.
    """
    x = rate * grid
    return (x * stats.poisson.cdf(shape - 2, x) + shape * stats.poisson.sf(shape - 1, x)) / shape


def _add(start_cdf: np.ndarray, duration_cdf: np.ndarray, law: int = POINT) -> np.ndarray:
    """CDF of start + duration (independent) on the grid: the start's pmf convolved with the duration's CDF.

    The start's mass in a step (t - h, t] leaves the duration between t_j - t and t_j - t + h to
    end by t_j: the lower law (CDF above) takes the duration's CDF a step later, the upper law (CDF
    below) as is, which holds at every grid point; the point estimate takes the middle (linear
    interpolation), which removes the grid's first-order bias.

    >>> one_step = np.array([0.0, 1.0, 1.0])     # a time in (0, h]: the sum of two is in (0, 2h]
    >>> _add(one_step, one_step, LOW).round(12), _add(one_step, one_step, HIGH).round(12)
    (array([0., 1., 1.]), array([0., 0., 1.]))
    """
    pmf = np.diff(start_cdf, prepend=0.0)
    at_zero, pmf[0] = pmf[0], 0.0  # a start at exactly 0 (an atom) is not spread over a step
    later = {POINT: lambda f: np.append(0.5 * (f[:-1] + f[1:]), f[-1]),
             LOW: lambda f: np.append(f[1:], 1.0),  # past the grid: at most 1
             HIGH: lambda f: f}[law](duration_cdf)
    size = scipy.fft.next_fast_len(2 * pmf.size - 1, real=True)  # no wrap-around into the grid's points
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
    if sum(tasks.values()) <= containers:
        return
    order = list(nx.topological_sort(dag))
    if all(dag.has_edge(a, b) for a, b in zip(order, order[1:])):
        return      # one topological order: the phases run one after another (and a chain's closure is n² edges)
    closure = nx.transitive_closure_dag(dag)
    for count, group in enumerate(nx.antichains(closure)):
        if count >= MAX_ANTICHAINS:
            raise ModelError("the DAG has too many groups of phases that can run together to check")
        if sum(tasks[p] for p in group) > containers and len(group) > 1:
            raise ModelError(f"phases {', '.join(sorted(group))} can run together and need "
                             f"{sum(tasks[p] for p in group)} containers, more than {containers}: they would "
                             "wait for one another, which the job-alone method does not model")

