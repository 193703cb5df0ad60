"""A stage's compute as a fixed cost per task plus a cost per byte, fitted from the spread of its task sizes.

The what-if rules (:mod:`spn.fit.whatif`) carry a task's compute to a target
where each task reads ``g`` times as much (``g = (D'/D)(n/n')``). Scaling it by
``g`` assumes compute is all per-byte; small tasks are not (JVM work,
operator set-up, per-task bookkeeping), so proportional scaling over-predicts
when tasks grow and under-predicts when they shrink. The tasks of one stage
differ in size (skewed partitions, the last split), and that spread is what
:func:`affine_compute_cost` fits::

    compute_task = a + b x size_task

with ``size`` what the task read (:func:`~spn.logs.task_profile.task_sizes`:
input plus shuffle-read bytes; records read when the log counts no bytes).

**The rule** (every threshold is a constant here):

- only tasks with a measured run time and a known size count, and at least
  :data:`MIN_TASKS` of them;
- their sizes must spread: coefficient of variation at least
  :data:`MIN_SIZE_CV`. The fitted line is extrapolated to ``g`` times the
  sizes; its standard error there is ``(s/sqrt(n)) sqrt(1 + (g - 1)^2/CV^2)``
  for residual spread ``s``, so a CV of 0.2 already leaves 5 times the
  error of a mean at ``g = 2`` and 15 times at ``g = 4``: below that the fixed
  part cannot be told from noise;
- compute must grow with size: Kendall's tau between size and compute positive
  with a two-sided p-value below :data:`ALPHA` (a rank test: task times are
  skewed and their spread grows with their size, which an OLS t-test's normal,
  equal-variance residuals would ignore);
- the line is Theil-Sen's (``b`` the median of the pairwise slopes, ``a`` the
  median of ``compute - b x size``), the estimator that goes with Kendall's
  tau: up to 29 % of tasks may be stragglers (garbage collection, a slow host,
  a cold JVM) without moving it, where one straggler with a large partition
  tilts a least-squares line (on the Q26 3-executor log, stage 5: OLS slope
  p = 6e-29, Kendall p = 0.49); over :data:`MAX_THEIL_SEN_TASKS` tasks the
  slope is taken from that many, evenly spread over the sizes;
- ``a >= 0`` and ``b >= 0`` (a negative fixed cost is an extrapolation
  artefact);
- the line must be a cost of the stage that ran: for its largest task it may
  not give more compute than the whole stage took, first launch to last finish
  (``stage_span``, when given; such a line is steeper than anything the stage
  did, a fit to noise, and extrapolating it would make one task outlast the stage).

Otherwise the stage keeps proportional scaling and :attr:`AffineCost.reason`
says why. A task of the target then computes ``c x (a + b g x) / (a + b x)``:
its pilot compute ``c``, carried along the fitted line from its size ``x`` to
``g x`` (its distance from the line kept as a ratio), so ``a = 0`` is the
proportional rule, ``g = 1`` keeps every task, and a task on the line computes
``a + b g x`` exactly.

>>> import numpy as np
>>> from spn.logs.task_profile import TaskParts
>>> sizes = np.linspace(50e6, 150e6, 12)                     # bytes read: CV 0.32
>>> parts = TaskParts(wall=np.full(12, 2.0), compute=0.4 + 2e-8 * sizes, input_bytes=sizes.astype(int))
>>> cost = affine_compute_cost(parts)
>>> round(cost.fixed, 6), round(cost.per_unit * 1e9, 6), cost.accepted
(0.4, 20.0, True)
>>> round(float(cost.factors(sizes, 4.0)[0] * (0.4 + 2e-8 * 50e6)), 6)   # 0.4 + 4 x 1.0 s
4.4
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from spn.logs.task_profile import TaskParts, task_sizes

__all__ = ["ALPHA", "MAX_THEIL_SEN_TASKS", "MIN_SIZE_CV", "MIN_TASKS", "AffineCost", "affine_compute_cost"]

#: the fewest tasks (measured, with a size) a stage's line is fitted from
MIN_TASKS = 10
#: the least coefficient of variation of their sizes (see the module's docstring)
MIN_SIZE_CV = 0.2
#: Kendall's tau test of size against compute: the largest two-sided p-value accepted
ALPHA = 0.05
#: Theil-Sen's pairwise slopes take memory in the square of the tasks: a larger stage is thinned to this many
MAX_THEIL_SEN_TASKS = 1000

_PER = {"byte": (1e6, "s per MB"), "record": (1e6, "s per million records")}


@dataclass(frozen=True)
class AffineCost:
    """A stage's compute per task as ``fixed + per_unit x size`` (:func:`affine_compute_cost`).

    ``unit`` is what a size counts (``"byte"``, ``"record"``, ``None`` when the
    log counts neither); ``tasks`` the tasks fitted; ``size_cv`` their sizes'
    coefficient of variation; ``tau`` and ``p_value`` Kendall's test of size
    against compute; ``fixed`` (s) and ``per_unit`` (s per unit) the
    Theil-Sen line. ``reason`` says why the line is not used (``None``: used).
    """

    unit: str | None
    tasks: int
    size_cv: float | None = None
    tau: float | None = None
    p_value: float | None = None
    fixed: float | None = None
    per_unit: float | None = None
    reason: str | None = None

    @property
    def accepted(self) -> bool:
        return self.reason is None

    def factors(self, sizes: np.ndarray, g: float) -> np.ndarray:
        """Per task of size ``sizes`` (``nan``: unknown, taken as the mean size), its compute at the target over
        its compute in the pilot when each task reads ``g`` times as much: ``(a + b g x) / (a + b x)``, or ``g``
        when the line is not used (or is 0 at ``x``)."""
        sizes = np.asarray(sizes, dtype=float)
        if not self.accepted or g == 1.0:
            return np.full(sizes.shape, float(g))
        known = sizes[~np.isnan(sizes)]
        x = np.where(np.isnan(sizes), known.mean() if known.size else 0.0, sizes)
        line = self.fixed + self.per_unit * x
        safe = np.where(line > 0, line, 1.0)
        return np.where(line > 0, (self.fixed + self.per_unit * g * x) / safe, float(g))

    def describe(self) -> str:
        """The line and its evidence, for the what-if's provenance (only when :attr:`accepted`)."""
        scale, per = _PER[self.unit]
        return (f"compute = a + b x {self.unit}s read (a = {self.fixed:.3g} s, b = {self.per_unit * scale:.3g} {per}; "
                f"Theil-Sen over {self.tasks} tasks, size CV {self.size_cv:.2g}, Kendall tau {self.tau:.2f}, "
                f"p = {self.p_value:.2g})")


def affine_compute_cost(parts: TaskParts, stage_span: float | None = None) -> AffineCost:
    """The fixed + per-byte line of a stage's compute (its tasks' ``parts``; ``stage_span``: the seconds from its
    first launch to its last finish), or why there is none (the rule: the module's docstring)."""
    sizes, unit = task_sizes(parts)
    if unit is None:
        return AffineCost(None, 0, reason="the log counts no bytes or records read by its tasks")
    compute = parts.compute
    use = parts.measured & ~np.isnan(sizes)
    x, c = sizes[use], compute[use]
    n = int(x.size)
    if n < MIN_TASKS:
        return AffineCost(unit, n, reason=f"{n} task(s) with a measured run time and a size, fewer than {MIN_TASKS}")
    cv = float(x.std() / x.mean()) if x.mean() > 0 else 0.0
    if cv < MIN_SIZE_CV:
        return AffineCost(unit, n, size_cv=cv, reason=f"task sizes too alike to tell a fixed cost from a per-{unit} "
                                                      f"one (CV {cv:.2g} < {MIN_SIZE_CV})")
    import scipy.stats  # here, not at the top: importing spn.fit stays quick

    tau, p = scipy.stats.kendalltau(x, c)
    tau, p = float(tau), float(p)
    if not np.isfinite(p) or p >= ALPHA or tau <= 0:
        how = ("compute does not vary" if not np.isfinite(p) else
               f"compute falls as size grows (Kendall tau {tau:.2f}, p = {p:.2g})" if tau < 0 and p < ALPHA else
               f"compute does not grow with size significantly (Kendall tau {tau:.2f}, p = {p:.2g} >= {ALPHA})")
        return AffineCost(unit, n, size_cv=cv, tau=tau if np.isfinite(tau) else None,
                          p_value=p if np.isfinite(p) else None, reason=how)
    pick = np.arange(n)
    if n > MAX_THEIL_SEN_TASKS:  # evenly spread over the sizes, the smallest and the largest kept
        pick = np.argsort(x, kind="stable")[np.linspace(0, n - 1, MAX_THEIL_SEN_TASKS).round().astype(int)]
    b = float(scipy.stats.theilslopes(c[pick], x[pick]).slope)
    a = float(np.median(c - b * x))
    fitted = dict(size_cv=cv, tau=tau, p_value=p, fixed=a, per_unit=b)
    if b < 0:
        return AffineCost(unit, n, **fitted, reason=f"negative cost per {unit} (b = {b:.3g} s)")
    if a < 0:
        return AffineCost(unit, n, **fitted, reason=f"negative fixed cost (a = {a:.3g} s)")
    largest = a + b * float(x.max())
    if stage_span is not None and largest > stage_span:
        return AffineCost(unit, n, **fitted, reason=(
            f"the line gives the largest task {largest:.3g} s of compute, longer than the whole stage took "
            f"({stage_span:.3g} s): not a cost of this stage"))
    return AffineCost(unit, n, **fitted)
