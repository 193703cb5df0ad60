"""PERIDOT: execution time for another input size and core count, from two small reference runs.

After the paper "PERIDOT: quick predictions from two small reference runs"
(Spark applications; section IV). Two runs of the application at input
sizes ``D1 != D2`` on the same ``E`` cores give:

1. the **stage groups** of each run in scheduling order (stages scheduled
   together form one group; see :func:`spn.baselines.runs.stage_groups`),
   matched by position between the runs;
2. a group is **fixed** when its task count ``P`` (partitions) is the same
   in both runs, **variable** otherwise;
3. for a variable group ``i``: waves ``N_i = ceil(P_i / E)`` and wave time
   ``W_i = S_i / N_i`` in each run (``S_i``: first launch to last end of its
   tasks); ``W_i`` is the mean over the two runs;
4. the **fixed time** ``F = T - sum_var S_i`` (everything the variable groups
   do not explain: fixed groups, start-up, driver work), mean over the runs;
5. prediction for ``(D, E')``: partitions grow in proportion to the input,
   ``P_i' = D / mean(D1, D2) * mean(P_i)``, and
   ``T' = F + sum_var ceil(P_i' / E') * W_i``.

**From a single run**, when only the cores change (the input, hence every
group's partition count, stays): every group is timed by its waves in the one
run, ``W_i = S_i / ceil(P_i / E)``, the fixed time is ``F = T - sum_i S_i``
and ``T' = F + sum_i ceil(P_i / E') * W_i`` (:func:`fit_peridot_single`,
:func:`predict_peridot_single`).

>>> from spn.baselines.runs import ReferenceRun, StageGroup
>>> small = ReferenceRun("a", 30.0, 100, 2, (StageGroup((0,), 4, 10.0), StageGroup((1,), 2, 5.0)))
>>> large = ReferenceRun("b", 50.0, 200, 2, (StageGroup((0,), 8, 22.0), StageGroup((1,), 2, 5.0)))
>>> model = fit_peridot(small, large)
>>> model.groups[0].wave_seconds, model.fixed_seconds      # (10/2 + 22/4) / 2; (20 + 28) / 2
(5.25, 24.0)
>>> predict_peridot(model, input_bytes=400, cores=4)       # P' = 400/150 * 6 = 16: 4 waves
45.0
>>> one = fit_peridot_single(small)                       # W = 10/2 and 5/1; F = 30 - 15
>>> predict_peridot_single(one, cores=4)                  # 15 + 1 x 5 + 1 x 5
25.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from spn.exceptions import ModelError

__all__ = ["PeridotGroup", "PeridotModel", "waves", "fit_peridot", "predict_peridot", "PeridotWaves",
           "PeridotSingleModel", "fit_peridot_single", "predict_peridot_single"]


@dataclass(frozen=True)
class PeridotGroup:
    """One stage group of the model: its stages (first run's ids), task counts and times in both runs.

    ``wave_seconds`` is the mean wave time ``W`` of a variable group, ``None`` for a fixed one.
    """

    stage_ids: tuple[int, ...]
    partitions: tuple[int, int]
    seconds: tuple[float, float]
    wave_seconds: float | None

    @property
    def variable(self) -> bool:
        return self.wave_seconds is not None


@dataclass(frozen=True)
class PeridotModel:
    """PERIDOT's parameters: the groups, the fixed time ``F`` (s) and the references' mean input size (bytes)."""

    groups: tuple[PeridotGroup, ...]
    fixed_seconds: float
    reference_bytes: float
    reference_cores: int


def waves(partitions: float, cores: int) -> int:
    """Task waves of a stage group: ``ceil(P / E)`` (a partition count within 1e-9 of a whole number is one).

    >>> waves(8, 2), waves(9, 2), waves(16.000000001, 4)
    (4, 5, 4)
    """
    return max(math.ceil(partitions / cores - 1e-9), 0)


def fit_peridot(first, second) -> PeridotModel:
    """PERIDOT's model from two :class:`~spn.baselines.runs.ReferenceRun` at different input sizes, same cores.

    Raises :class:`~spn.exceptions.ModelError` when the runs cannot serve as
    PERIDOT's references (same input size, different cores, no stage groups,
    or different sequences of stage groups).
    """
    if first.cores != second.cores:
        raise ModelError(f"PERIDOT needs two runs on the same cores, got {first.cores} and {second.cores}")
    if first.input_bytes <= 0 or second.input_bytes <= 0 or first.input_bytes == second.input_bytes:
        raise ModelError("PERIDOT needs two runs at different (known) input sizes, got "
                         f"{first.input_bytes} and {second.input_bytes} bytes")
    if not first.groups or not second.groups:
        raise ModelError("PERIDOT needs the stage groups of Spark event logs")
    if len(first.groups) != len(second.groups):
        raise ModelError(f"PERIDOT's references have different stage groups ({len(first.groups)} vs "
                         f"{len(second.groups)}): not two runs of one application")
    cores = first.cores
    groups = []
    for a, b in zip(first.groups, second.groups):
        wave = None
        if a.partitions != b.partitions:
            wave = (a.seconds / waves(a.partitions, cores) + b.seconds / waves(b.partitions, cores)) / 2
        groups.append(PeridotGroup(a.stage_ids, (a.partitions, b.partitions), (a.seconds, b.seconds), wave))
    fixed = [run.seconds - sum(g.seconds[r] for g in groups if g.variable) for r, run in enumerate((first, second))]
    return PeridotModel(tuple(groups), sum(fixed) / 2, (first.input_bytes + second.input_bytes) / 2, cores)


def predict_peridot(model: PeridotModel, input_bytes: float, cores: int) -> float:
    """Predicted execution time (s) for ``input_bytes`` of input on ``cores`` cores (equation 4 of the paper)."""
    if cores < 1:
        raise ModelError(f"cores must be >= 1, got {cores}")
    total = model.fixed_seconds
    for group in model.groups:
        if group.variable:
            partitions = input_bytes / model.reference_bytes * (sum(group.partitions) / 2)
            total += waves(partitions, cores) * group.wave_seconds
    return total


# --------------------------------------------------------------------------
# From a single run: another core count, the same input
# --------------------------------------------------------------------------


@dataclass(frozen=True)
class PeridotWaves:
    """A stage group of a single run: its stages, task count ``P``, time ``S`` (s), wave time ``W = S / ceil(P/E)``."""

    stage_ids: tuple[int, ...]
    partitions: int
    seconds: float
    wave_seconds: float


@dataclass(frozen=True)
class PeridotSingleModel:
    """PERIDOT from one run: its groups, fixed time ``F = T - sum S`` (s), the run's cores ``E`` and input (bytes)."""

    groups: tuple[PeridotWaves, ...]
    fixed_seconds: float
    cores: int
    input_bytes: int
    source: str = ""


def fit_peridot_single(run) -> PeridotSingleModel:
    """PERIDOT's wave model from one :class:`~spn.baselines.runs.ReferenceRun`, for other core counts at its input.

    Raises :class:`~spn.exceptions.ModelError` when the run has no stage groups (not a Spark event log).
    """
    if not run.groups:
        raise ModelError("PERIDOT needs the stage groups of Spark event logs")
    if run.cores < 1:
        raise ModelError(f"PERIDOT needs the cores of the run, got {run.cores}")
    groups = tuple(PeridotWaves(g.stage_ids, g.partitions, g.seconds,
                                g.seconds / max(waves(g.partitions, run.cores), 1)) for g in run.groups)
    fixed = run.seconds - sum(g.seconds for g in groups)
    return PeridotSingleModel(groups, fixed, run.cores, run.input_bytes, run.source)


def predict_peridot_single(model: PeridotSingleModel, cores: int) -> float:
    """Predicted execution time (s) on ``cores`` cores: ``F + sum_i ceil(P_i / cores) * W_i``."""
    if cores < 1:
        raise ModelError(f"cores must be >= 1, got {cores}")
    return model.fixed_seconds + sum(waves(g.partitions, cores) * g.wave_seconds for g in model.groups)
