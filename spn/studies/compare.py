"""Analytic solution and both simulators side by side (``spn compare``).

The analytic column comes from the pipeline's exact method (:func:`spn.pipeline.evaluate_description`) when every
phase's law is Erlang or exponential (and the state space fits ``max_states``);
each simulator gives a confidence interval. A *flag* is raised for every analytic
value outside a simulator's interval. With query classes the queue simulator is the one
simulator, and every class's R and X and every queue's utilisation are compared too
(``classes.<class>.mean_execution_time``, ``queues.<queue>.utilization``).

Under policy ``gate`` with several users the net (so the CTMC and the net simulator)
pools a phase's finished tasks across jobs, where a job-level system keeps each job's
tasks its own (docs/design.md §3.4). So that every column answers the same question, the
cluster simulator then runs with ``pool_finished_tasks=True`` unless told otherwise; run
per job (``pool_finished_tasks=False``), its flags are *explained*: they name the
difference (:data:`POOLING`) instead of counting as disagreements. ``notes`` say what
each column models.

A comparison is a check, not a measurement, so it is bounded by default: the
analytic part stops past :data:`COMPARE_MAX_STATES` tangible states (or when the
chain does not fit in memory) and says so, and the whole comparison takes at most
:data:`COMPARE_SECONDS`: after the analytic part, each simulator gets an equal share
of the time left (see ``max_seconds`` in :func:`~spn.simulation.simulate_description`).

>>> from spn.description import parse_description
>>> desc = parse_description({"name": "x", "workload": {"users": 2, "think_time": 5.0},
...     "cluster": {"containers": 2}, "scheduler": {"policy": "gate"},
...     "phases": [{"name": "map", "tasks": 2, "task_time": 1.0}, {"name": "reduce", "tasks": 1, "task_time": 2.0}]})
>>> c = compare_description(desc, seed=1, rel_precision=0.05)
>>> round(c.analytic["mean_execution_time"], 4), c.flags, c.pool_finished_tasks
(3.8631, [], True)
"""

from __future__ import annotations

from dataclasses import dataclass, field

import time

from spn.defaults import SEED
from spn.exceptions import StateSpaceLimitError
from spn.simulation.distributions import SimulationTimeout
from spn.simulation.runner import seed_sequence, simulate_description

MEASURES = ("mean_execution_time", "throughput", "utilization")
#: tangible states past which the analytic part is skipped (a CTMC this size solves in seconds)
COMPARE_MAX_STATES = 200_000
#: seconds a comparison takes at most, analytic part and both simulators together
COMPARE_SECONDS = 120.0
#: the share of ``max_seconds`` exploring the chain may take: past it the analytic part is
#: skipped, so that the simulators keep the rest (they need it to give any interval at all)
ANALYTIC_SHARE = 0.5
#: why the analytic value may lie outside a per-job cluster simulator's interval (docs/design.md §3.4)
POOLING = ("differs by model: under gate the net pools finished tasks across jobs (a phase's T-th finished "
           "task ends its oldest job), the cluster simulator here keeps each job's tasks its own; pooling them "
           "(spn compare's default, spn simulate --pool-finished-tasks) it models the same as the net")


@dataclass(frozen=True)
class Comparison:
    """Analytic values (or why there are none) and one :class:`SimulationReport` per engine."""

    model: str
    analytic: dict | None
    analytic_note: str | None
    simulations: dict = field(default_factory=dict)
    seed: int | None = None
    measures: tuple = MEASURES
    #: the cluster simulator pooled finished tasks across jobs, as the net does
    pool_finished_tasks: bool = False
    #: engine -> the known difference of model that explains its flags (e.g. :data:`POOLING`)
    explained: dict = field(default_factory=dict)
    #: what each column models, one line each
    notes: tuple = ()

    def _outside(self, explained: bool) -> list[str]:
        out = []
        if self.analytic is None:
            return out
        for engine, report in self.simulations.items():
            if (engine in self.explained) != explained:
                continue
            for measure in self.measures:
                est = estimate(report, measure)
                value = self.analytic[measure]
                if not est.contains(value):
                    out.append(
                        f"analytic {measure} {value:.6g} is outside the {engine} simulator's "
                        f"{100 * est.confidence:g}% interval [{est.ci_low:.6g}, {est.ci_high:.6g}]"
                        + (f": {self.explained[engine]}" if explained else "")
                    )
        return out

    @property
    def flags(self) -> list[str]:
        """One line per analytic value outside a simulator's confidence interval that no known
        difference of model explains: the disagreements (an interval misses now and then)."""
        return self._outside(explained=False)

    @property
    def explained_flags(self) -> list[str]:
        """The analytic values outside an interval of a simulator that models something else,
        each line ending with the difference (``differs by model: ...``)."""
        return self._outside(explained=True)

    def as_dict(self) -> dict:
        """The JSON object of ``spn compare --json``."""
        measures = {}
        for measure in self.measures:
            row = {"analytic": None if self.analytic is None else self.analytic[measure]}
            for engine, report in self.simulations.items():
                est = estimate(report, measure)
                row[engine] = {"value": est.value, "ci_low": est.ci_low, "ci_high": est.ci_high,
                               "contains_analytic": None if self.analytic is None
                               else est.contains(self.analytic[measure])}
            measures[measure] = row
        return {
            "model": self.model,
            "measures": measures,
            "analytic": self.analytic,
            "analytic_note": self.analytic_note,
            "simulations": {engine: r.as_dict() for engine, r in self.simulations.items()},
            "flags": self.flags,
            "explained_flags": self.explained_flags,
            "explained": dict(self.explained),
            "notes": list(self.notes),
            "pool_finished_tasks": self.pool_finished_tasks,
            "seed": self.seed,
        }


def _parts(measure: str) -> tuple[str, str, str]:
    """``"classes.etl.throughput"`` -> ``("classes", "etl", "throughput")``."""
    kind, rest = measure.split(".", 1)
    name, what = rest.rsplit(".", 1)
    return kind, name, what


def estimate(report, measure: str):
    """A simulator's estimate of ``measure``: a total (``throughput``), a class's
    (``classes.etl.throughput``) or a queue's (``queues.bi.utilization``)."""
    if measure in MEASURES:
        return getattr(report, measure)
    kind, name, what = _parts(measure)
    return getattr(report, kind)[name][what]


def _analytic(solved, measures) -> dict:
    """The analytic value of each measure, read from the solve report's JSON object."""
    result = solved.as_dict()
    values = {}
    for measure in measures:
        if measure in MEASURES:
            values[measure] = result[measure]
        else:
            kind, name, what = _parts(measure)
            values[measure] = result[kind][name][what]
    return values


def _measures_of(desc) -> tuple:
    """The measures compared for ``desc`` (every class and queue too, with classes)."""
    if not desc.classes:
        return MEASURES
    from spn.description.model import job_classes, queues_of

    return MEASURES + tuple(f"classes.{c.name}.{m}" for c in job_classes(desc)
                            for m in ("mean_execution_time", "throughput")) \
        + tuple(f"queues.{q.name}.utilization" for q in queues_of(desc))


def compare_description(desc, *, engines=None, seed=SEED, replications: int = 10,
                        confidence: float = 0.95, rel_precision: float | None = 0.01,
                        max_replications: int = 2000, max_seconds: float | None = COMPARE_SECONDS,
                        method: str = "auto", max_states: int = COMPARE_MAX_STATES,
                        pool_finished_tasks: bool | None = None, progress: bool = False) -> Comparison:
    """Solve ``desc`` analytically (if it can be) and simulate it with each engine.

    ``engines``: by default both for the ``gate`` policy, the cluster engine alone for a
    policy the net simulator does not model (``fifo``, ``fair``: the net solves them, the
    cluster simulator is their independent check). The engines get independent random
    streams spawned from ``seed`` (the project's default: the same numbers every run). ``max_seconds``
    bounds the whole comparison (None: no bound): exploring the chain may take
    :data:`ANALYTIC_SHARE` of it, and a chain the description already puts past ``max_states``
    (:func:`spn.analysis.choice.choose_method`) is not explored at all. ``pool_finished_tasks``: the
    cluster simulator's mode (see :func:`~spn.simulation.simulate_description`); None pools where the net does (policy
    ``gate``, one class, several users), so that it answers the analytic question; False
    there keeps each job's tasks its own, and its flags are explained by :data:`POOLING`.
    """
    from spn.analysis.choice import choose_method
    from spn.description.model import ANALYTIC_DISTRIBUTIONS, NET_POLICIES, job_classes

    started = time.perf_counter()
    if engines is None:
        net_models_it = desc.scheduler.policy in NET_POLICIES and not desc.classes
        engines = ("net", "cluster") if net_models_it else ("cluster",)
    analytic, note = None, None
    laws = sorted({p.distribution for c in job_classes(desc) for p in c.phases} - set(ANALYTIC_DISTRIBUTIONS))
    if laws:
        note = f"no exact CTMC for task-time laws {', '.join(laws)}"
    else:
        too_large = choose_method(desc, max_states)
        if too_large:
            note = f"state space too large: {too_large}"
    if note is None:
        from spn.exceptions import ConvergenceError
        from spn.pipeline import Budget, evaluate_description

        # the pipeline's exact method, as spn solve runs it (its budget: this share of the comparison's)
        budget = Budget(max_states=max_states, progress=progress,
                        max_seconds=None if max_seconds is None else ANALYTIC_SHARE * max_seconds)
        try:
            solved = evaluate_description(desc, method="exact" if method == "auto" else method, budget=budget)
        except StateSpaceLimitError as error:
            note = (f"exploring took too long (the analytic part may take {ANALYTIC_SHARE:.0%} of max_seconds): {error}"
                    if error.option == "max_seconds" else f"state space too large: {error}")
        except MemoryError:
            note = f"state space too large: it does not fit in memory (below max_states {max_states:,})"
        except ConvergenceError as error:
            note = f"the solver did not converge ({error})"
        else:
            analytic = _analytic(solved, _measures_of(desc))
            analytic["tangible_states"] = solved.details["tangible_states"]
            analytic["converged"] = bool(solved.details["solver"]["converged"])
    mixing = tasks_can_mix(desc)
    pooled = mixing if pool_finished_tasks is None else bool(pool_finished_tasks)
    # the compiled engine cannot pool: like a per-job cluster run, it models the per-job system
    explained = {e: POOLING for e in engines if mixing and e in ("cluster", "compiled")
                 and not (pooled and e == "cluster")}
    ss = seed_sequence(seed)
    children = ss.spawn(len(engines))
    simulations = {}
    for k, (engine, child) in enumerate(zip(engines, children)):
        share = None
        if max_seconds is not None:
            left = max_seconds - (time.perf_counter() - started)
            # a share too small for any replication still yields SimulationTimeout, with its message
            share = max(left / (len(engines) - k), 1e-3)
        try:
            simulations[engine] = simulate_description(
                desc, engine=engine, seed=child, replications=replications, confidence=confidence,
                rel_precision=rel_precision, max_replications=max_replications, max_seconds=share,
                pool_finished_tasks=pooled and engine == "cluster", progress=progress)
        except SimulationTimeout as error:
            raise SimulationTimeout(f"compare ({max_seconds:g} s in all, {share:.3g} s of them for the {engine} "
                                    f"simulator): {error}") from None
    return Comparison(desc.name, analytic, note, simulations, seed=int(ss.entropy), measures=_measures_of(desc),
                      pool_finished_tasks=pooled and "cluster" in engines, explained=explained,
                      notes=tuple(column_notes(desc, engines, pooled)))


def tasks_can_mix(desc) -> bool:
    """Whether the net's pooling of finished tasks across jobs (policy ``gate``) can matter:
    with one user, or with the job-identity net of ``fifo``/``fair``, no two jobs meet in a phase's places.

    >>> from spn.description import parse_description
    >>> data = {"name": "x", "workload": {"users": 2, "think_time": 1.0}, "cluster": {"containers": 1},
    ...         "scheduler": {"policy": "gate"}, "phases": [{"name": "p", "tasks": 1, "task_time": 1.0}]}
    >>> tasks_can_mix(parse_description(data)), tasks_can_mix(parse_description(data, ["workload.users=1"]))
    (True, False)
    """
    from spn.description.model import NET_POLICIES

    return desc.scheduler.policy in NET_POLICIES and not desc.classes and desc.workload.users >= 2


def column_notes(desc, engines, pooled: bool) -> list[str]:
    """One line per column of a comparison: what it models (``Comparison.notes``)."""
    if desc.classes:
        return ["analytic: the job-identity net of the classes and queues, as a CTMC; "
                "cluster: the queue simulator (jobs with identity, no net)"]
    if not tasks_can_mix(desc):
        net = ("the paper's net (one user: no two jobs meet)" if desc.scheduler.policy == "gate"
               else f"the job-identity net under {desc.scheduler.policy}")
        return [f"analytic: {net}, as a CTMC; " + ", ".join(
            f"{e}: " + ("the same net, simulated" if e == "net" else "the job-level simulator, the same model")
            for e in engines)]
    lines = ["analytic" + (" and net" if "net" in engines else "") + ": the paper's net under gate, a phase's "
             "finished tasks pooled across jobs (its T-th finished task ends the oldest job)"]
    for e in engines:
        if e == "cluster" and pooled:
            lines.append("cluster: the job-level simulator pooling finished tasks as the net does (the same "
                         "question, without the net); --per-job-tasks: each job counting its own")
        elif e in ("cluster", "compiled"):
            lines.append(f"{e}: the job-level simulator, each job counting its own finished tasks "
                         "(a per-job system): it differs from the net by model")
    return lines
