"""spn: predict big-data job execution times with stochastic activity networks.

The pipeline, one step per module: description -> net -> state space -> CTMC -> steady state -> measures.

>>> import spn
>>> net = spn.mapreduce_net(users=1, think_time=10.0, containers=4, map_tasks=4, map_time=2.0,
...                         reduce_tasks=4, reduce_time=3.0)
>>> ss = spn.explore(net)
>>> pi = spn.steady_state(ss.generator()).x
>>> round(spn.job_measures(ss, pi, users=1, think_time=10.0, end_activity="IAFR",
...                        containers=4).mean_execution_time, 6)
10.416667
"""

from spn.exceptions import (
    ConvergenceError,
    LogFormatError,
    ModelError,
    NotErgodicError,
    SpnError,
    StateSpaceLimitError,
    TimelessTrapError,
)
from spn.expand import expand_erlang
from spn.io.logmodel import fit_logs
from spn.measures import JobMeasures, expected_tokens, job_measures, probability, throughput
from spn.models.mapreduce import mapreduce_net
from spn.net import Erlang, InputGate, InstantActivity, MarkingView, Net, OutputGate, Place, TimedActivity
from spn.models.dag import ApplicationNet, build, build_application
from spn.pipeline import SolveReport, solve_description
from spn.simulation import (
    ClusterSimulator,
    Distribution,
    NetSimulator,
    compare_description,
    distributions_from_description,
    simulate_description,
)
from spn.plan import plan, solve_with_distribution
from spn.solvers import SolverResult, steady_state
from spn.solvers.passage import execution_time_distribution, passage_time
from spn.sweep import run_sweep
from spn.statespace import StateSpace, explore

__version__ = "0.1.0"

__all__ = [
    "ConvergenceError", "LogFormatError", "ModelError", "NotErgodicError", "SpnError",
    "StateSpaceLimitError", "TimelessTrapError",
    "Erlang", "InputGate", "InstantActivity", "MarkingView", "Net", "OutputGate", "Place",
    "TimedActivity", "expand_erlang", "StateSpace", "explore", "SolverResult", "steady_state",
    "JobMeasures", "expected_tokens", "job_measures", "probability", "throughput",
    "mapreduce_net", "SolveReport", "solve_description", "ApplicationNet", "build",
    "build_application", "ClusterSimulator", "Distribution", "NetSimulator", "compare_description",
    "distributions_from_description", "simulate_description", "plan", "solve_with_distribution",
    "execution_time_distribution", "passage_time", "run_sweep", "fit_logs",
]
