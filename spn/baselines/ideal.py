"""Ideal scaling: execution time proportional to the input size and inversely to the cores.

The naive baseline of the paper "PERIDOT: quick predictions from two small
reference runs": doubling the cores halves the time, doubling the input
doubles it. From one reference run ``(T_r, D_r, E_r)`` the prediction for
``(D, E)`` is ``T_r * (D / D_r) * (E_r / E)``; with several references it is
the mean of their predictions.

>>> from spn.baselines.runs import ReferenceRun
>>> ideal_scaling([ReferenceRun("a", 40.0, 100, 2)], input_bytes=300, cores=4)   # 40 * 3 * 2/4
60.0
>>> ideal_scaling([ReferenceRun("a", 40.0, 100, 2), ReferenceRun("b", 60.0, 200, 2)], 200, 2)  # (80 + 60) / 2
70.0
"""

from __future__ import annotations

from spn.exceptions import ModelError

__all__ = ["ideal_scaling"]


def ideal_scaling(references, input_bytes: float, cores: int) -> float:
    """Predicted execution time (s): mean over ``references`` of ``T_r * (D / D_r) * (E_r / E)``."""
    references = list(references)
    if not references:
        raise ModelError("ideal scaling needs at least one reference run")
    if cores < 1:
        raise ModelError(f"cores must be >= 1, got {cores}")
    for run in references:
        if run.input_bytes <= 0:
            raise ModelError(f"ideal scaling needs the input size of every reference ({run.source}: unknown)")
    scaled = [run.seconds * (input_bytes / run.input_bytes) * (run.cores / cores) for run in references]
    return sum(scaled) / len(scaled)
