"""Stochastic simulation of the application model, to cross-check the analytic numbers
and to go where the state space is too large or task times are not Erlang.

- :class:`NetSimulator` simulates a net (the same, un-expanded net the analytic path
  solves) with any task-time :class:`Distribution` per timed activity.
- :class:`ClusterSimulator` simulates jobs, containers and the capacity scheduler
  directly, without the net, to check the net's modelling assumptions;
  :class:`QueueSimulator` does the same for several query classes sharing the
  cluster through capacity-scheduler queues.
- :func:`simulate_description` runs independent replications of either engine with
  confidence intervals and a stopping rule (:func:`spn.studies.compare.compare_description`
  puts the analytic solution and both simulators side by side).

>>> from spn.description import load_description
>>> desc = load_description("models/mapreduce.yaml")                        # doctest: +SKIP
>>> simulate_description(desc, seed=1).mean_execution_time                  # doctest: +SKIP
Estimate(value=13.3..., ci_low=..., ci_high=..., confidence=0.95, n=...)
"""

from spn.simulation.cluster import ClusterReplication, ClusterSimulator
from spn.simulation.distributions import Distribution, distributions_from_description, phase_distribution
from spn.simulation.engine import NetSimulator, Replication
from spn.simulation.queues import QueueReplication, QueueSimulator
from spn.simulation.runner import SimulationReport, seed_sequence, simulate_description
from spn.simulation.statistics import Estimate, mean_estimate, ratio_estimate

__all__ = [
    "ClusterReplication", "ClusterSimulator",
    "Distribution", "distributions_from_description", "phase_distribution",
    "NetSimulator", "Replication", "QueueReplication", "QueueSimulator", "SimulationReport", "seed_sequence", "simulate_description",
    "Estimate", "mean_estimate", "ratio_estimate",
]
