"""Capacity planning of queue shares: the smallest share of a queue that meets a class's target.

``spn plan two-queues.yaml --vary queues.bi.capacity=0.05..0.95 --target dashboard.mean<=4.9``
answers "what share of the cluster must queue bi be guaranteed so that the dashboard
queries stay under 4.9 s?" for a description with query classes (docs/design.md §4.6, §5.7).
Each probe is the pipeline's simulation (``spn solve --method simulation``: the queue simulator),
and the search must live with noise:

- **Probes.** A share matters only through containers (the queue is guaranteed
  share · C and may hold floor(max_capacity · C)), so the shares searched are the grid k/C,
  k = 1..C-1, that lies in LO..HI. Capacities must sum to 1: with two queues the other one
  gets 1 - share; with more, the others are scaled in proportion to their capacities in the
  model. A queue whose capacity would exceed its ``max_capacity`` has the maximum raised to
  the capacity for that probe (a probe note says so): YARN requires max >= capacity, and
  raising the ceiling is the smallest change that keeps the probe a valid configuration.
- **Decision rule.** A target is met at a probe only if the whole 95 % interval of the
  class's R_c is within the bound, missed only if the whole interval is outside; an interval
  straddling the bound sends the probe back for more replications (a finer relative
  precision, down to ``refine_to``) and, if it still straddles, the probe is *undecided*:
  reported as such, never counted as met.
- **Search.** :func:`spn.studies.plan.find_boundary`'s bisection over the grid (both ends, then
  halves; no interior probes), assuming more share never hurts the classes of the
  varied queue (so the smallest share meeting a target on one of them is wanted) and never
  helps the classes of the other queues (a target on those asks for the *largest* share of
  the varied queue). The probes evaluated check that assumption: a class's interval moving
  the wrong way, or a target met below a share that misses it, is reported as evidence.
- **Common random numbers.** Every probe uses the same ``seed``, so replication i of every
  probe draws from the same stream: differences between probes are the share's, not noise's.

>>> share_grid(0.3, 0.8, containers=4)
(0.5, 0.75)
>>> from spn.description.model import Queue
>>> probe_queues((Queue("a", 0.5), Queue("b", 0.3, 0.4), Queue("c", 0.2)), "c", 0.6)[0]
{'a': (0.25, 1.0), 'b': (0.15, 0.4), 'c': (0.6, 1.0)}
"""

from __future__ import annotations

import copy
import math
import re
import sys
import time
from dataclasses import dataclass

from spn.studies.plan import Target, find_boundary, model_data
from spn.exceptions import ModelError, SpnError

__all__ = ["is_queue_share", "parse_share_vary", "share_grid", "probe_queues", "Probe", "QueueSharePlan",
           "plan_queue_share", "contradictions", "REL_PRECISION", "MET", "MISSED", "UNDECIDED"]

#: relative half-width of the 95 % interval of every class's R_c at a first evaluation
REL_PRECISION = 0.01
#: a straddling probe is refined down to this fraction of ``rel_precision`` (16 times the replications)
REFINE_FACTOR = 0.25
#: verdicts of a probe
MET, MISSED, UNDECIDED = "met", "missed", "undecided"

_PATH = re.compile(r"^queues\.(.+)\.capacity$")


# --------------------------------------------------------------------------- the question
def is_queue_share(vary: str) -> bool:
    """Does ``--vary`` ask for a queue's capacity (``queues.NAME.capacity=LO..HI``)?

    >>> is_queue_share("queues.bi.capacity=0.1..0.9"), is_queue_share("cluster.containers=1..9")
    (True, False)
    """
    return bool(_PATH.match(str(vary).partition("=")[0].strip()))


def parse_share_vary(text: str) -> tuple[str, float, float]:
    """``queues.NAME.capacity=LO..HI`` -> (NAME, LO, HI), shares in (0, 1).

    >>> parse_share_vary("queues.bi.capacity=0.1..0.9")
    ('bi', 0.1, 0.9)
    """
    path, _, spec = str(text).partition("=")
    match = _PATH.match(path.strip())
    if not match or ".." not in spec:
        raise ModelError(f"vary: expected queues.NAME.capacity=LO..HI with shares in (0, 1), got {text!r}")
    try:
        lo, hi = (float(x) for x in spec.split("..", 1))
    except ValueError:
        raise ModelError(f"vary: the shares must be numbers in (0, 1), got {spec.strip()!r}") from None
    for share in (lo, hi):
        if not 0 < share < 1:      # also refuses nan
            raise ModelError(f"vary: a queue's share must lie in (0, 1) (the other queues need some), got {share:g}")
    if hi < lo:
        raise ModelError(f"vary: empty range {spec.strip()!r} (LO must be <= HI)")
    return match.group(1), lo, hi


def share_grid(lo: float, hi: float, containers: int) -> tuple[float, ...]:
    """The shares k/C (k = 1..C-1) in ``lo..hi``: between two of them the containers are the same."""
    eps = 1e-12
    return tuple(k / containers for k in range(1, containers) if lo - eps <= k / containers <= hi + eps)


def probe_queues(queues, varied: str, share: float) -> tuple[dict, list]:
    """Every queue's (capacity, max_capacity) when ``varied`` gets ``share``, and notes on raised maxima.

    Two queues: the other gets 1 - share. More: the others keep their proportions.
    """
    rest = sum(q.capacity for q in queues if q.name != varied)
    out, notes = {}, []
    for q in queues:
        if q.name == varied:
            capacity = share
        else:
            capacity = 1.0 - share if len(queues) == 2 else q.capacity * (1.0 - share) / rest
        ceiling = q.max_capacity
        if ceiling < capacity:
            if capacity - ceiling > 1e-9:
                notes.append(f"{q.name}.max_capacity raised from {ceiling:g} to {capacity:.4g} (its capacity)")
            ceiling = capacity
        out[q.name] = (capacity, ceiling)
    return out, notes


# --------------------------------------------------------------------------- one probe
@dataclass(frozen=True)
class Probe:
    """One share simulated: every class's R_c interval, the verdict on the targets, how it was reached.

    ``queues``: {name: (capacity, max_capacity)}; ``classes``: {name: Estimate of R_c};
    ``targets``: {str(target): verdict}; ``rel_precision``: the last one asked of the
    simulation (finer than the first when the probe was refined ``refinements`` times).
    """

    share: float
    containers: int
    queues: dict
    notes: tuple
    classes: dict
    targets: dict
    verdict: str
    replications: int
    rel_precision: float
    refinements: int
    seconds: float

    def as_dict(self) -> dict:
        return {
            "share": self.share, "guaranteed_containers": self.containers,
            "capacities": {q: c for q, (c, _) in self.queues.items()},
            "max_capacities": {q: m for q, (_, m) in self.queues.items()}, "notes": list(self.notes),
            "verdict": self.verdict, "targets": dict(self.targets),
            "classes": {name: {"mean_execution_time": e.value, "ci_low": e.ci_low, "ci_high": e.ci_high,
                               "rel_half_width": e.rel_half_width} for name, e in self.classes.items()},
            "replications": self.replications, "rel_precision": self.rel_precision,
            "refinements": self.refinements, "seconds": self.seconds,
        }


def _verdict(estimate, target: Target) -> str:
    """The decision rule: met if the whole interval is within the bound, missed if wholly outside."""
    if target.met(estimate.ci_high):
        return MET
    if not target.met(estimate.ci_low):
        return MISSED
    return UNDECIDED


def _overall(verdicts) -> str:
    verdicts = list(verdicts)
    return MISSED if MISSED in verdicts else UNDECIDED if UNDECIDED in verdicts else MET


# --------------------------------------------------------------------------- the answer
@dataclass(frozen=True)
class QueueSharePlan:
    """What :func:`plan_queue_share` found.

    ``answer``: the smallest share (``largest``: the largest) of ``queue`` shown to meet
    every target, or None; ``neighbour``: the grid share next to it on the other side, which
    was evaluated and missed or stayed undecided; ``probes``: every share evaluated, in
    increasing order; ``evidence``: what contradicts the monotone assumption.
    """

    model: str
    queue: str
    range: tuple
    containers: int
    grid: tuple
    targets: tuple
    largest: bool
    answer: float | None
    neighbour: float | None
    probes: tuple
    evidence: tuple
    rel_precision: float
    refine_to: float
    seed: int
    seconds: float

    def probe(self, share) -> Probe | None:
        return next((p for p in self.probes if abs(p.share - share) < 1e-12), None)

    def summary(self) -> str:
        """The answer in one or two sentences, with what is undecided and how much to trust it."""
        what = "largest" if self.largest else "smallest"
        targets = " and ".join(str(t) for t in self.targets)
        lo, hi = self.range
        undecided = [f"{p.share:.4g}" for p in self.probes if p.verdict == UNDECIDED]
        if self.answer is None:
            text = f"no share of queue {self.queue} in {lo:g}..{hi:g} is shown to meet {targets}"
        else:
            k = round(self.answer * self.containers)
            text = (f"{what} share of queue {self.queue} meeting {targets}: {self.answer:.4g} "
                    f"({k} of {self.containers} containers guaranteed)")
            near = self.probe(self.neighbour) if self.neighbour is not None else None
            if near is not None:
                text += (f"; {near.share:.4g} misses it" if near.verdict == MISSED else
                         f"; {near.share:.4g} is undecided (its interval straddles the bound at "
                         f"{100 * near.rel_precision:.2g} % precision), so it may meet it too")
        if undecided:
            text += f". Undecided: {', '.join(undecided)} (reported, not guessed)"
        text += (". The probes contradict the assumption that more share never hurts the queue's classes"
                 if self.evidence else ". The probes agree with the monotone assumption")
        return text + "."

    def as_dict(self) -> dict:
        return {
            "model": self.model, "path": f"queues.{self.queue}.capacity", "queue": self.queue,
            "range": list(self.range), "containers": self.containers, "grid": list(self.grid),
            "targets": [str(t) for t in self.targets], "want": "largest" if self.largest else "smallest",
            "answer": self.answer,
            "answer_containers": None if self.answer is None else round(self.answer * self.containers),
            "neighbour": self.neighbour, "monotone": not self.evidence, "evidence": list(self.evidence),
            "method": {"name": "simulation", "engine": "cluster", "confidence": 0.95,
                       "rel_precision": self.rel_precision, "refine_to": self.refine_to, "seed": self.seed,
                       "common_random_numbers": True},
            "probes": [p.as_dict() for p in self.probes], "summary": self.summary(), "seconds": self.seconds,
        }


def plan_queue_share(model, vary: str, targets, *, sets=(), seed: int = 1, rel_precision: float = REL_PRECISION,
                     refine_to: float | None = None, max_seconds: float | None = 60.0,
                     progress: bool = False) -> QueueSharePlan:
    """The smallest share of a queue meeting every target (see the module docstring).

    ``targets``: :class:`~spn.studies.plan.Target` (or text) naming classes, means only.
    ``refine_to``: the finest relative precision a straddling probe is refined to (default
    ``rel_precision / 4``); ``max_seconds`` bounds each simulation.
    """
    from spn.studies.plan import parse_target
    from spn.description import parse_description
    from spn.description.model import queues_of

    name, lo, hi = parse_share_vary(vary)
    targets = tuple(t if isinstance(t, Target) else parse_target(t) for t in targets)
    refine_to = rel_precision * REFINE_FACTOR if refine_to is None else refine_to
    if not targets:
        raise ModelError("give at least one target")
    if not 0 < refine_to <= rel_precision:
        raise ModelError(f"refine_to {refine_to:g} must lie in (0, rel_precision {rel_precision:g}]",
                         option="refine_to")
    data = model_data(model, sets)
    base = parse_description(data, source=str(model))
    queues, classes = queues_of(base), {c.name: c for c in base.classes}
    if not base.queues:
        raise ModelError(f"vary: model {base.name} has no queues to share (queues.{name}.capacity needs a "
                         f"description with classes and queues, docs/design.md §4.6)")
    index = next((i for i, q in enumerate(queues) if q.name == name), None)
    if index is None and name.isdigit() and int(name) < len(queues):
        index = int(name)
    if index is None:
        raise ModelError(f"vary: unknown queue {name!r} in queues.{name}.capacity "
                         f"(queues: {', '.join(q.name for q in queues)})")
    queue = queues[index].name
    problems = [_target_problem(t, classes) for t in targets]
    if any(problems):
        raise ModelError([p for p in problems if p])
    helped = {classes[t.query_class].queue == queue for t in targets}
    if len(helped) > 1:
        raise ModelError(f"target: {', '.join(map(str, targets))} mix classes of queue {queue} (which want the "
                         f"smallest share) with classes of other queues (which want the largest): plan them apart")
    largest = helped == {False}
    C = base.cluster.containers
    grid = share_grid(lo, hi, C)
    if not grid:
        raise ModelError(f"vary: no share k/{C} (a whole number of the {C} containers) lies in {lo:g}..{hi:g}")

    started = time.perf_counter()
    seed = int(seed)
    probes: dict[int, Probe] = {}

    def solve(k: int) -> dict:
        """Probe ``k`` guaranteed containers: every class's R_c and its interval, as the search reads them."""
        share = k / C
        layout, notes = probe_queues(queues, queue, share)
        probe_data = copy.deepcopy(data)
        for item, q in zip(probe_data["queues"], queues):   # parsed in list order
            item["capacity"], item["max_capacity"] = layout[q.name]
        try:
            desc = parse_description(probe_data, source=str(model))
            probe = _simulate_probe(desc, share, k, layout, notes, targets, seed=seed,
                                    rel_precision=rel_precision, refine_to=refine_to, max_seconds=max_seconds)
        except SpnError as error:
            located = type(error)(f"at queues.{queue}.capacity={share:.4g}: {error}")
            located.option = error.option
            raise located from None
        probes[k] = probe
        if progress:
            print(f"plan: {queue} share {probe.share:.4g}: {probe.verdict} ({probe.replications} replications, "
                  f"{probe.seconds:.1f} s)", file=sys.stderr, flush=True)
        metrics = {"method": "simulation"}
        for name, r in probe.classes.items():
            metrics |= {f"{name}.mean": r.value, f"{name}.mean_ci_low": r.ci_low, f"{name}.mean_ci_high": r.ci_high}
        return metrics

    # plan's search over the grid's containers, without interior probes: both ends, then bisection
    # (an undecided probe is "not shown to meet", so the answer is always a probe that met)
    search = find_boundary([round(share * C) for share in grid], solve, targets, largest=largest, probes=0)
    found = tuple(probes[k] for k in sorted(probes))
    return QueueSharePlan(
        model=base.name, queue=queue, range=(lo, hi), containers=C, grid=grid, targets=targets,
        largest=largest, answer=None if search.answer is None else search.answer / C,
        neighbour=None if search.neighbour is None else search.neighbour / C, probes=found,
        evidence=tuple(contradictions(found, classes, queue, largest)), rel_precision=rel_precision,
        refine_to=refine_to, seed=seed, seconds=time.perf_counter() - started)


def _target_problem(target: Target, classes: dict) -> str | None:
    if target.query_class is None:
        return (f"target {target}: name the class, e.g. {next(iter(classes))}.{target.metric}"
                f"{target.op}{target.bound:g} (classes: {', '.join(classes)})")
    if target.query_class not in classes:
        return f"target {target}: unknown class {target.query_class!r} (classes: {', '.join(classes)})"
    if target.metric != "mean":
        return (f"target {target}: a queue plan simulates, and its simulation estimates mean execution times "
                f"only (use CLASS.mean<=S)")
    return None


def _simulate_probe(desc, share, containers, layout, notes, targets, *, seed, rel_precision, refine_to,
                    max_seconds) -> Probe:
    """Simulate one probe; refine while a target's interval straddles its bound (see the decision rule)."""
    from spn.pipeline import Budget, evaluate_description

    started = time.perf_counter()
    precision, refinements = rel_precision, 0
    while True:
        report = evaluate_description(desc, budget=Budget(rel_precision=precision, seed=seed, max_seconds=max_seconds),
                                      method="simulation").report.simulation
        estimates = {name: c["mean_execution_time"] for name, c in report.classes.items()}
        verdicts = {str(t): _verdict(estimates[t.query_class], t) for t in targets}
        verdict = _overall(verdicts.values())
        if verdict != UNDECIDED or precision <= refine_to * (1 + 1e-9) or not report.precision_met:
            break
        # ask for the precision that would decide the closest straddling target, at least halving it
        gaps = [abs(estimates[t.query_class].value - t.bound) / abs(estimates[t.query_class].value)
                for t in targets if verdicts[str(t)] == UNDECIDED and estimates[t.query_class].value]
        gap = min(gaps, default=0.0) if all(math.isfinite(g) for g in gaps) else 0.0
        precision = max(refine_to, min(precision / 2, 0.8 * gap))
        refinements += 1
    return Probe(share=share, containers=containers, queues=layout, notes=tuple(notes), classes=estimates,
                 targets=verdicts, verdict=verdict, replications=report.replications, rel_precision=precision,
                 refinements=refinements, seconds=time.perf_counter() - started)


def contradictions(probes, classes, queue, largest) -> list[str]:
    """Where the probes contradict "more share never hurts the varied queue's classes (nor helps the others')"."""
    evidence = []
    for name, query_class in classes.items():
        mine = query_class.queue == queue
        pairs = ((low, high) for a, low in enumerate(probes) for high in probes[a + 1:]
                 if _significant(low.classes[name], high.classes[name], mine))
        low, high = next(pairs, (None, None))
        if low is not None:
            r1, r2 = low.classes[name], high.classes[name]
            evidence.append(f"R_{name} {'rises' if mine else 'falls'} from [{r1.ci_low:.4g}, {r1.ci_high:.4g}] s "
                            f"at share {low.share:.4g} to [{r2.ci_low:.4g}, {r2.ci_high:.4g}] s at "
                            f"{high.share:.4g}, though {'more' if mine else 'less'} share went to its queue")
    decided = [p for p in probes if p.verdict != UNDECIDED]
    if largest:
        decided = decided[::-1]
    for a, p in enumerate(decided):
        later = next((q for q in decided[a + 1:] if q.verdict == MISSED), None)
        if p.verdict == MET and later is not None:
            evidence.append(f"the targets are met at share {p.share:.4g} but missed at {later.share:.4g}")
            break
    return evidence


def _significant(before, after, worse_is_up: bool) -> bool:
    """``after``'s interval lies wholly on the wrong side of ``before``'s."""
    return after.ci_low > before.ci_high if worse_is_up else after.ci_high < before.ci_low
