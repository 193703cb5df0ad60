"""spn: predict big-data job execution times with stochastic activity networks.

The pipeline, one package per step: ``description`` -> ``models`` (the net of an
application, built from ``net``) -> ``statespace`` -> ``ctmc`` -> ``solvers`` ->
``measures``; ``analysis`` runs it end to end, ``simulation`` cross-checks it,
``logs`` and ``fit`` turn execution logs into descriptions; ``pipeline`` is what every command
runs (:func:`evaluate`: a description or logs in, one :class:`Result` out). See docs/design.md.

Names are loaded on first use, so that ``import spn`` (and ``spn --help``) stays quick.

>>> import spn
>>> net = spn.mapreduce_net(users=1, think_time=10.0, containers=4, map_tasks=4, map_time=2.0,
...                         reduce_tasks=4, reduce_time=3.0)
>>> ss = spn.explore(net)
>>> pi = spn.steady_state(ss.generator()).x
>>> round(spn.job_measures(ss, pi, users=1, think_time=10.0, end_activity="IAFR",
...                        think_place="PJ", container_place="PC", containers=4).mean_execution_time, 6)
10.416667
"""

import importlib

from spn.exceptions import (
    ConvergenceError,
    ImplausibleResultError,
    LogFormatError,
    ModelError,
    NotErgodicError,
    SpnError,
    StateSpaceLimitError,
    TimelessTrapError,
)

__version__ = "0.1.0"

#: public name -> the module that defines it (imported when the name is first used)
_LAZY = {
    "Erlang": "spn.net", "InputGate": "spn.net", "InstantActivity": "spn.net", "MarkingView": "spn.net",
    "Net": "spn.net", "OutputGate": "spn.net", "Place": "spn.net", "TimedActivity": "spn.net",
    "expand_erlang": "spn.net",
    "StateSpace": "spn.statespace", "explore": "spn.statespace",
    "SolverResult": "spn.solvers", "steady_state": "spn.solvers",
    "execution_time_distribution": "spn.solvers.passage", "passage_time": "spn.solvers.passage",
    "JobMeasures": "spn.measures", "expected_tokens": "spn.measures", "job_measures": "spn.measures",
    "probability": "spn.measures", "throughput": "spn.measures",
    "mapreduce_net": "spn.models.mapreduce",
    "ApplicationNet": "spn.models.dag", "build": "spn.models.dag", "build_application": "spn.models.dag",
    "SolveReport": "spn.analysis.solve", "solve_description": "spn.analysis.solve",
    "plan": "spn.studies.plan", "evaluate_description": "spn.pipeline",
    "run_sweep": "spn.studies.sweep",
    "ClusterSimulator": "spn.simulation", "Distribution": "spn.simulation", "NetSimulator": "spn.simulation",
    "compare_description": "spn.studies.compare", "distributions_from_description": "spn.simulation",
    "simulate_description": "spn.simulation",
    "fit_logs": "spn.fit.logs",
    "evaluate": "spn.pipeline", "Question": "spn.pipeline", "Budget": "spn.pipeline", "Result": "spn.pipeline",
}

__all__ = ["ConvergenceError", "ImplausibleResultError", "LogFormatError", "ModelError", "NotErgodicError", "SpnError",
           "StateSpaceLimitError", "TimelessTrapError", *_LAZY]


def __getattr__(name):
    if name not in _LAZY:
        raise AttributeError(f"module 'spn' has no attribute {name!r}")
    value = getattr(importlib.import_module(_LAZY[name]), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
