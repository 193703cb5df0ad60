"""Baselines from the literature, to set beside the SAN model's prediction.

One module per method, plain functions over plain data:

- :mod:`spn.baselines.runs`: what the baselines read from a log (:class:`ReferenceRun`);
- :mod:`spn.baselines.peridot`: PERIDOT (stage groups, task waves, two reference runs; or one run for other cores);
- :mod:`spn.baselines.sparklens`: Sparklens' estimator (one run's tasks replayed on another number of slots);
- :mod:`spn.baselines.ideal`: ideal scaling (time proportional to input / cores);
- :mod:`spn.baselines.ernest`: Ernest (non-negative least squares on 1, D/n, log n, n);
- :mod:`spn.baselines.executors`: runtime against executors (Amdahl, Gustafson, a/n + b sqrt(n), a/n + b n^c);
- :mod:`spn.baselines.compare`: all of them and the SAN model for the same targets (``spn baseline``).

>>> from spn.baselines import ReferenceRun, ideal_scaling
>>> ideal_scaling([ReferenceRun("pilot", 10.0, 1000, 1)], input_bytes=4000, cores=2)
20.0
"""

from spn.baselines.compare import METHODS, BaselineReport, Prediction, Target, compare_logs, compare_runs
from spn.baselines.ernest import fit_ernest, predict_ernest
from spn.baselines.executors import LAWS, ExecutorFit, fit_executors, r_squared, runtime
from spn.baselines.ideal import ideal_scaling
from spn.baselines.peridot import (
    PeridotModel, PeridotSingleModel, fit_peridot, fit_peridot_single, predict_peridot, predict_peridot_single, waves,
)
from spn.baselines.runs import ReferenceRun, StageGroup, reference_run, stage_groups
from spn.baselines.sparklens import (
    SparklensEstimate, SparklensProfile, greedy_makespan, replay, sparklens_estimate, sparklens_profile,
    sparklens_replay,
)

__all__ = [
    "METHODS", "BaselineReport", "Prediction", "Target", "compare_logs", "compare_runs",
    "fit_ernest", "predict_ernest", "LAWS", "ExecutorFit", "fit_executors", "r_squared", "runtime",
    "ideal_scaling", "PeridotModel", "fit_peridot", "predict_peridot", "waves",
    "PeridotSingleModel", "fit_peridot_single", "predict_peridot_single",
    "ReferenceRun", "StageGroup", "reference_run", "stage_groups",
    "SparklensEstimate", "SparklensProfile", "greedy_makespan", "replay", "sparklens_estimate", "sparklens_profile",
    "sparklens_replay",
]
