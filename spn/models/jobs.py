"""The application net with job identity: one slot of places per job in the system (docs/design.md §3.4).

The paper's net (:mod:`spn.models.dag`) keeps one set of places per phase for every
job, so the tokens of consecutive jobs mix. Here each of the N users' jobs, while it
is in the system, owns a *slot*: a copy of the job's places (phases, forks, joins),
``job1/...`` for the oldest job in the system, ``job2/...`` for the next, and so on.
Slots stay in order of submission and without gaps:

- a submitted job takes the first free slot (``slot<k>.admit``: slot k-1 taken, slot k
  free), so ``job1`` is always the oldest;
- when the job of slot k ends (``slot<k>.end``), slot k is left with a gap, and the
  jobs behind move up one slot: ``shift<k>.<place>`` moves the tokens of slot k+1 into
  slot k one at a time, each place at its own priority (one order, so no interleavings
  to explore), then ``shift<k>.next`` passes the gap on to slot k+1, or ``shift<k>.close``
  closes it when no job was behind. Moving is done before anything else happens.

The moves are written after Erlang expansion, so they carry the stage places of
running tasks too, and the net stays plain (arcs only). Since every job counts its own
finished tasks, no job can end with another's, and the scheduling policies can tell
jobs apart (``scheduler.policy``, as the cluster simulator reads it):

- ``fifo``: a free container goes to the oldest job with a waiting task (allocation
  priority by slot, then by phase priority);
- ``fair``: to the job with the fewest running tasks, ties to the oldest (an input gate
  on each allocation compares the slots); with classes, the fewest running tasks divided
  by the class's ``weight``, compared exactly (:func:`fair_steps`);
- ``gate``: the paper's start gate with jobs kept apart: a job's first fork needs the
  capacity-scheduler token, which the last phase of the job before gives back once it
  has containers for all its tasks; a free container goes to a phase (by priority, ties
  equally likely) and within it to the oldest job.

Within a job, phases of higher priority get containers first and ties are equally
likely, as in the cluster simulator (:mod:`spn.simulation.cluster`), which states the
same model without a net and checks this one. A driver phase has no allocation: it waits
for no container, holds none and counts in no policy's tally of waiting or running tasks.

A description with query classes and queues (docs/design.md §4.6) becomes one net too
(:func:`build_classes`): every class has its own users (``<class>/PJ``), every queue its own
slots, and a slot can hold a job of any class of its queue (``<queue>/job<k>/<class>/...``).
A free container goes to the queue with the smallest used / guaranteed containers among
those with a waiting task below their maximum (ties: the queue listed first), an input
gate on each allocation; inside the queue, by the queue's ``fifo`` or ``fair``, as above.
This is the model of :mod:`spn.simulation.queues`.

>>> from spn.description import load_description
>>> app = build_jobs(load_description("models/mapreduce.yaml"), policy="fifo")
>>> app.end_activity, [p.name for p in app.net.places][:4]
('finish', ['PJ', 'PWJ', 'PC', 'job1/submitted'])
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from fractions import Fraction

from spn.description.model import POLICIES, RATIO_TIE, job_classes, queue_limits, queues_of
from spn.exceptions import ModelError
from spn.models import submodels
from spn.models.dag import ApplicationNet, build, check_graph, dag_from_description, holding_containers, job_flow
from spn.net import InputGate, InstantActivity, Net, Place
from spn.net.choice import Candidate, ChoiceGate
from spn.net.compose import compose
from spn.net.erlang import expand_erlang

@dataclass(frozen=True)
class ClassNet:
    """What the measures need to know about one class of a job-identity net."""

    name: str
    users: int
    think_time: float
    think_place: str
    end_activity: str


@dataclass(frozen=True)
class QueueNet:
    """One queue of a job-identity net: ``running`` lists the places of its running tasks."""

    name: str
    running: tuple[str, ...]
    limit: int


@dataclass(frozen=True)
class ClassesNet:
    """A job-identity net of several query classes and queues."""

    net: Net
    classes: tuple[ClassNet, ...]
    queues: tuple[QueueNet, ...]
    containers: int
    container_place: str = "PC"


def slot_prefix(k: int) -> str:
    """The prefix of the places and activities of the job in slot k (1: the oldest) of a one-class net."""
    return f"job{k}/"


def tag_place(k: int) -> str:
    """The place of a tagged one-class net (``build_jobs(..., tagged=True)``) marking the job in slot k."""
    return f"{slot_prefix(k)}tag"


def application_net(desc) -> ApplicationNet:
    """The net of a one-class description under its ``scheduler.policy``: the paper's net for
    ``gate``, the job-identity net for ``fifo`` and ``fair``.

    ``gate`` keeps the paper's model, token mixing included, so that its numbers stay
    comparable with the paper's and with Storm's; ``build_jobs(desc, policy="gate")`` is
    the same gate with jobs kept apart.
    """
    if desc.scheduler.policy == "gate":
        return build(desc)
    return build_jobs(desc)


def build_jobs(desc, *, policy: str | None = None, tagged: bool = False) -> ApplicationNet:
    """The job-identity net of a one-class description under ``policy`` (default: the description's).

    The returned net is already Erlang-expanded (the slot moves need the stage places).
    ``tagged=True`` adds a place :func:`tag_place` per slot: a token there marks one job
    (the tagged job of a passage time) and moves up with the job's places when older jobs
    end; when the tagged job ends, its token is removed. Nothing else depends on it, so
    the tagged net's markings without a tag behave as the untagged net's.
    """
    policy = desc.scheduler.policy if policy is None else policy
    if policy not in POLICIES:
        raise ModelError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    graph = dag_from_description(desc)
    check_graph(graph)
    users, containers = desc.workload.users, desc.cluster.containers
    layout = _Layout(single=True)
    net = _build(layout, [(desc.name, graph, users, desc.workload.think_time, "default")],
                 [("default", 1.0, containers, policy)], containers, policy, desc.name, tagged=tagged)
    gate_phase = job_flow(graph, control=0).gate_phase
    return ApplicationNet(net, "finish", gate_phase, users, desc.workload.think_time, containers)


def build_classes(desc) -> ClassesNet:
    """The job-identity net of a description with query classes (and queues).

    >>> from spn.description import load_description
    >>> two = build_classes(load_description("models/two-queues.yaml"))
    >>> [c.think_place for c in two.classes], [q.name for q in two.queues]
    (['etl/PJ', 'dashboard/PJ'], ['etl', 'bi'])
    """
    classes, queues = job_classes(desc), queues_of(desc)
    C = desc.cluster.containers
    specs = []
    for c in classes:
        graph = dag_from_description(c)
        check_graph(graph)
        specs.append((c.name, graph, c.workload.users, c.workload.think_time, c.queue))
    queue_specs = [(q.name, q.capacity, limit, q.policy) for q, limit in zip(queues, queue_limits(desc))]
    layout = _Layout(single=False)
    net = _build(layout, specs, queue_specs, C, None, desc.name, weights={c.name: c.weight for c in classes})
    class_nets = tuple(ClassNet(name, users, Z, layout.think(name), layout.finish(name))
                       for name, _, users, Z, _ in specs)
    queue_nets = []
    for qname, _, limit, _ in queue_specs:
        running = tuple(f"{layout.job(qname, k, c)}{v}.PR" for k, c, graph in layout.slots_of(qname, specs)
                        for v in holding_containers(graph))
        queue_nets.append(QueueNet(qname, running, limit))
    return ClassesNet(net, class_nets, tuple(queue_nets), C)


class _Layout:
    """The names of a job-identity net: short for one class, with queue and class otherwise."""

    def __init__(self, single: bool):
        self.single = single

    def think(self, c):
        return "PJ" if self.single else f"{c}/PJ"

    def waiting(self, c):
        return "PWJ" if self.single else f"{c}/PWJ"

    def ended(self, c):
        return "PD" if self.single else f"{c}/PD"

    def finish(self, c):
        return "finish" if self.single else f"{c}/finish"

    def slot(self, q, k):       # what moves when the jobs behind a gap move up
        return f"job{k}/" if self.single else f"{q}/job{k}/"

    def job(self, q, k, c):     # the places of a class-c job in slot k
        return self.slot(q, k) if self.single else f"{q}/job{k}/{c}/"

    def marker(self, q, k, what):
        return f"slot{k}.{what}" if self.single else f"{q}/slot{k}.{what}"

    def per_class(self, q, k, what, c):
        return f"slot{k}.{what}" if self.single else f"{q}/slot{k}.{what}.{c}"

    @staticmethod
    def slots_of(q, specs):
        """(slot, class, graph) of queue q: one slot per user of the queue's classes."""
        members = [(c, graph, users) for c, graph, users, _, queue in specs if queue == q]
        n = sum(users for _, _, users in members)
        return [(k, c, graph) for k in range(1, n + 1) for c, graph, _ in members]


def _build(layout, specs, queues, containers, gate_policy, name, weights=None, tagged=False):
    """Compose the slots of every queue, add admission, job ends and the policies, expand, add the moves.

    ``specs``: (class, phase graph, users, think time, queue); ``queues``: (name, capacity,
    most containers, policy); ``gate_policy``: the one-class policy, None with classes;
    ``weights``: the classes' fair-share weights (absent: 1).
    """
    ranks = sorted({float(g.nodes[v].get("priority", 0)) for _, g, _, _, _ in specs for v in holding_containers(g)})
    rank = {p: r for r, p in enumerate(ranks)}
    levels = len(ranks)
    sizes = {q: sum(users for _, _, users, _, queue in specs if queue == q) for q, _, _, _ in queues}
    policy_of = {q: policy for q, _, _, policy in queues}
    control = max([sizes[q] * levels for q in sizes if policy_of[q] == "fifo"] + [levels])
    gate = gate_policy == "gate"

    parts, shared = [], {"PC": [("pool", "containers")], "PEJ": []}
    for c, _, users, Z, _ in specs:
        parts.append(submodels.think(users, Z, name="think" if layout.single else f"{c}/think"))
        shared[layout.think(c)] = [(parts[-1].name, "thinking")]
        shared[layout.waiting(c)] = [(parts[-1].name, "waiting")]
    parts.append(submodels.pool(containers))
    roles = {}      # allocation or first-fork activity -> (queue, slot, class, phase or None)
    for q, _, _, _ in queues:
        for k, c, graph in layout.slots_of(q, specs):
            prefix = layout.job(q, k, c)
            allocation = {v: rank[float(graph.nodes[v].get("priority", 0))] for v in holding_containers(graph)}
            if policy_of[q] == "fifo":      # older slots first, then the phase's priority
                allocation = {v: (sizes[q] - k) * levels + r for v, r in allocation.items()}
            flow = job_flow(graph, control=control, prefix=prefix, gate=gate, gate_tokens=int(k == 1),
                            allocation_priority=allocation)
            parts += flow.parts
            shared["PC"] += flow.containers
            shared["PEJ"] += flow.gate
            shared[f"{prefix}submitted"] = [flow.entry]
            shared[f"{prefix}done"] = [flow.done]
            shared.update(flow.shared)
            roles[f"{prefix}start.IA0"] = (q, k, c, None)
            roles.update({f"{prefix}{v}.IAGR": (q, k, c, v) for v in holding_containers(graph)})
    if not gate:
        del shared["PEJ"]
    net = compose(parts, shared, name=name)

    places = list(net.places) + [Place(layout.ended(c)) for c, *_ in specs]
    slots = {q: sizes[q] for q in sizes}
    if tagged:      # under the slot's prefix, so that the moves carry the tag with its job
        places += [Place(tag_place(k)) for k in range(1, slots["default"] + 1)]
    for what in ("taken", "gap"):
        places += [Place(layout.marker(q, k, what)) for q in slots for k in range(1, slots[q] + 1)]
    decorate = _Policies(layout, specs, queues, containers, gate_policy, weights or {})
    activities = [decorate(a, roles.get(a.name)) for a in net.activities]
    for q in slots:
        for k, c, _ in layout.slots_of(q, specs):
            prefix, taken = layout.job(q, k, c), layout.marker(q, k, "taken")
            older = {layout.marker(q, k - 1, "taken"): 1} if k > 1 else {}
            activities.append(InstantActivity(
                layout.per_class(q, k, "admit", c), inputs={layout.waiting(c): 1, **older},
                inhibitors={taken: 1}, outputs={**older, taken: 1, f"{prefix}submitted": 1}, priority=control))
            end = InstantActivity(
                layout.per_class(q, k, "end", c), inputs={f"{prefix}done": 1, taken: 1},
                outputs={layout.ended(c): 1, layout.marker(q, k, "gap"): 1}, priority=control)
            if tagged:  # the tagged job's end takes its tag (before any move could bring another one in)
                activities.append(dataclasses.replace(end, inhibitors={tag_place(k): 1}))
                end = dataclasses.replace(end, name=f"{end.name}.tagged", inputs={**end.inputs, tag_place(k): 1})
            activities.append(end)
    for c, *_ in specs:
        activities.append(InstantActivity(layout.finish(c), inputs={layout.ended(c): 1},
                                          outputs={layout.think(c): 1}, priority=control))
    expanded = expand_erlang(Net(places, activities, name=name))
    moves = [m for q in slots for m in _moves(expanded, layout, q, slots[q], control)]
    return Net(expanded.places, list(expanded.activities) + moves, name=name, aggregates=expanded.aggregates,
               activity_aliases=expanded.activity_aliases)


class _Policies:
    """Adds to an allocation or first fork what the scheduling rules need (arcs or input gates)."""

    def __init__(self, layout, specs, queues, containers, gate_policy, weights):
        self.layout, self.gate_policy = layout, gate_policy
        self.slots = {q: layout.slots_of(q, specs) for q, _, _, _ in queues}
        self.queues = queues
        self.policy_of = {q: policy for q, _, _, policy in queues}
        self.containers = containers
        # per queue, each class's running tasks count fair_steps times in the fair order
        self.steps = {q: fair_steps({c: weights.get(c, 1.0) for c, _, _, _, queue in specs if queue == q})
                      for q, _, _, _ in queues}

    def __call__(self, activity, role):
        if role is None:
            return activity
        q, k, c, phase = role
        layout = self.layout
        if phase is None:       # a first fork: under the gate, jobs pass it in order of submission
            if self.gate_policy == "gate" and k > 1:
                return dataclasses.replace(activity, inhibitors={
                    **activity.inhibitors, f"{layout.job(q, k - 1, c)}submitted": 1})
            return activity
        if self.gate_policy == "gate":      # within a phase, the oldest job's task first
            older = {f"{layout.job(q, j, c)}{phase}.PW": 1 for j in range(1, k)}
            return dataclasses.replace(activity, inhibitors={**activity.inhibitors, **older})
        gates = []
        if len(self.queues) > 1:
            gates.append(InputGate(self._chosen_queue(q), name=f"queue {q} is furthest below its share"))
        if self.policy_of[q] == "fair":
            gates.append(InputGate(self._fewest_running(q, k), name=f"{layout.slot(q, k)} runs fewest tasks"))
        if not gates:
            return activity
        return dataclasses.replace(activity, input_gates=activity.input_gates + tuple(gates))

    def _places(self, q, k, place, steps=None):
        """The (place, coefficient) pairs of slot k of queue q: the ``place`` (PW or PR) of every container
        phase of its classes (driver phases neither wait for containers nor hold any), each class's counted
        ``steps[class]`` times (default once)."""
        return tuple((f"{self.layout.job(q, j, c)}{v}.{place}", 1 if steps is None else steps[c])
                     for j, c, graph in self.slots[q] if j == k for v in holding_containers(graph))

    def _fewest_running(self, q, k):
        """Slot k holds the job of queue q with a waiting task whose running tasks / weight is smallest,
        oldest first (exactly: running times the class's integer step, :func:`fair_steps`)."""
        slots = sorted({j for j, _, _ in self.slots[q]})
        return ChoiceGate(tuple(Candidate(key=self._places(q, j, "PR", self.steps[q]),
                                          needs=((self._places(q, j, "PW"), 1),)) for j in slots),
                          chosen=slots.index(k))

    def _chosen_queue(self, q):
        """Queue q gets the next free container (capacity scheduler, no preemption): of the queues with
        a waiting task below their maximum, the one with the smallest used / guaranteed containers."""
        candidates = []
        for name, capacity, limit, _ in self.queues:
            slots = sorted({j for j, _, _ in self.slots[name]})
            waiting = tuple(pair for j in slots for pair in self._places(name, j, "PW"))
            used = tuple(pair for j in slots for pair in self._places(name, j, "PR"))
            below_limit = (tuple((place, -1) for place, _ in used), 1 - limit)
            candidates.append(Candidate(key=used, needs=((waiting, 1), below_limit),
                                        scale=capacity * self.containers))
        return ChoiceGate(tuple(candidates), chosen=[name for name, *_ in self.queues].index(q), tie=RATIO_TIE)


def fair_steps(weights) -> dict:
    """The integer each running task of a class counts in a fair queue: ``{class: weight}`` -> ``{class: step}``.

    running / weight orders jobs as running · step does, with step = L / weight the smallest
    integers proportional to 1 / weight; each weight is read as the shortest decimal that
    gives it back, so equal ratios tie exactly (3 tasks at weight 0.3 and 1 at 0.1) and equal
    weights all step 1 (the unweighted order).

    >>> fair_steps({"a": 2.0, "b": 1.0, "c": 0.5})
    {'a': 1, 'b': 2, 'c': 4}
    >>> fair_steps({"a": 0.3, "b": 0.1}), fair_steps({"a": 2.5, "b": 2.5})
    ({'a': 1, 'b': 3}, {'a': 1, 'b': 1})
    """
    inverse = {c: 1 / Fraction(repr(float(w))) for c, w in weights.items()}
    scale = math.lcm(*(f.denominator for f in inverse.values()))
    steps = {c: int(f * scale) for c, f in inverse.items()}
    common = math.gcd(*steps.values())
    return {c: step // common for c, step in steps.items()}


def _moves(net, layout, q, slots, control):
    """The activities that move the jobs of queue q behind a gap up one slot (after Erlang expansion)."""
    moves = []
    for k in range(1, slots + 1):
        gap, here, behind = layout.marker(q, k, "gap"), layout.slot(q, k), layout.slot(q, k + 1)
        name = layout.marker(q, k, "").replace("slot", "shift")      # shift<k>. or <queue>/shift<k>.
        if k == slots:
            moves.append(InstantActivity(f"{name}close", inputs={gap: 1}, priority=control + 1))
            continue
        source = [p.name for p in net.places if p.name.startswith(behind)]
        for i, place in enumerate(source):
            moves.append(InstantActivity(f"{name}{place[len(behind):]}", inputs={gap: 1, place: 1},
                                         outputs={gap: 1, here + place[len(behind):]: 1},
                                         priority=control + 2 + i))
        after = layout.marker(q, k + 1, "taken")
        moves.append(InstantActivity(
            f"{name}next", inputs={gap: 1, after: 1}, inhibitors={place: 1 for place in source},
            outputs={layout.marker(q, k, "taken"): 1, layout.marker(q, k + 1, "gap"): 1}, priority=control + 1))
        moves.append(InstantActivity(f"{name}close", inputs={gap: 1}, inhibitors={after: 1}, priority=control + 1))
    return moves
