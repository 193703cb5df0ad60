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
  on each allocation compares the slots);
- ``gate``: the paper's start gate with jobs kept apart: a job's first fork needs the
  capacity-scheduler token, which the last phase of the job before gives back once it
  has containers for all its tasks; a free container goes to a phase (by priority, ties
  equally likely) and within it to the oldest job.

Within a job, phases of higher priority get containers first and ties are equally
likely, as in the cluster simulator (:mod:`spn.simulation.cluster`), which states the
same model without a net and checks this one.

>>> from spn.description import load_description
>>> app = build_jobs(load_description("models/mapreduce.yaml"), policy="fifo")
>>> app.end_activity, [p.name for p in app.net.places][:4]
('finish', ['PJ', 'PWJ', 'PC', 'job1/submitted'])
"""

from __future__ import annotations

import dataclasses

import numpy as np

from spn.description.model import POLICIES
from spn.exceptions import ModelError
from spn.models import submodels
from spn.models.dag import ApplicationNet, build, check_graph, dag_from_description, job_flow
from spn.net import InputGate, InstantActivity, Net, Place
from spn.net.compose import compose
from spn.net.erlang import expand_erlang

def slot_prefix(k: int) -> str:
    """The prefix of the places and activities of the job in slot k (1: the oldest)."""
    return f"job{k}/"


def application_net(desc) -> ApplicationNet:
    """The net of a description under its ``scheduler.policy``: the paper's net for ``gate``,
    the job-identity net for ``fifo`` and ``fair``.

    ``gate`` keeps the paper's model, token mixing included, so that its numbers stay
    comparable with the paper's and with Storm's; ``build_jobs(desc, policy="gate")`` is
    the same gate with jobs kept apart.
    """
    if desc.scheduler.policy == "gate":
        return build(desc)
    return build_jobs(desc)


def build_jobs(desc, *, policy: str | None = None) -> ApplicationNet:
    """The job-identity net of a description under ``policy`` (default: the description's).

    The returned net is already Erlang-expanded (the slot moves need the stage places).
    """
    policy = desc.scheduler.policy if policy is None else policy
    if policy not in POLICIES:
        raise ModelError(f"policy must be one of {', '.join(POLICIES)}, got {policy!r}")
    graph = dag_from_description(desc)
    check_graph(graph)
    users, containers = desc.workload.users, desc.cluster.containers
    net, flow = _slots(graph, users=users, think_time=desc.workload.think_time, containers=containers,
                       policy=policy, name=desc.name)
    return ApplicationNet(net, "finish", flow.gate_phase, users, desc.workload.think_time, containers)


def _slots(graph, *, users, think_time, containers, policy, name):
    """Compose the N slots, add admission, job ends and the policy, expand, add the moves."""
    ranks = {p: r for r, p in enumerate(sorted({float(graph.nodes[v].get("priority", 0)) for v in graph}))}
    phase_rank = {v: ranks[float(graph.nodes[v].get("priority", 0))] for v in graph}
    levels = len(ranks)
    if policy == "fifo":        # older slots first, then the phase's priority
        allocation = {k: {v: (users - k) * levels + r for v, r in phase_rank.items()} for k in range(1, users + 1)}
        control = users * levels
    else:
        allocation = {k: phase_rank for k in range(1, users + 1)}
        control = levels
    gate = policy == "gate"

    parts = [submodels.think(users, think_time), submodels.pool(containers)]
    shared = {"PJ": [("think", "thinking")], "PWJ": [("think", "waiting")],
              "PC": [("pool", "containers")], "PEJ": []}
    flows = {}
    for k in range(1, users + 1):
        flow = job_flow(graph, control=control, prefix=slot_prefix(k), gate=gate, gate_tokens=int(k == 1),
                        allocation_priority=allocation[k])
        flows[k] = flow
        parts += flow.parts
        shared["PC"] += flow.containers
        shared["PEJ"] += flow.gate
        shared[f"{slot_prefix(k)}submitted"] = [flow.entry]
        shared[f"{slot_prefix(k)}done"] = [flow.done]
        for merged, members in flow.shared.items():
            shared[merged] = members
    if not gate:
        del shared["PEJ"]
    net = compose(parts, shared, name=name)

    places = list(net.places) + [Place("PD")]
    places += [Place(f"slot{k}.taken") for k in range(1, users + 1)]
    places += [Place(f"slot{k}.gap") for k in range(1, users + 1)]
    activities = [_with_policy(a, policy, graph, users) for a in net.activities]
    for k in range(1, users + 1):
        p = slot_prefix(k)
        taken = {f"slot{k - 1}.taken": 1} if k > 1 else {}
        activities.append(InstantActivity(
            f"slot{k}.admit", inputs={"PWJ": 1, **taken}, inhibitors={f"slot{k}.taken": 1},
            outputs={**taken, f"slot{k}.taken": 1, f"{p}submitted": 1}, priority=control))
        activities.append(InstantActivity(
            f"slot{k}.end", inputs={f"{p}done": 1, f"slot{k}.taken": 1}, outputs={"PD": 1, f"slot{k}.gap": 1},
            priority=control))
    activities.append(InstantActivity("finish", inputs={"PD": 1}, outputs={"PJ": 1}, priority=control))
    expanded = expand_erlang(Net(places, activities, name=name))
    moves = _moves(expanded, users, control)
    return Net(expanded.places, list(expanded.activities) + moves, name=name, aggregates=expanded.aggregates,
               activity_aliases=expanded.activity_aliases), flows[1]


def _with_policy(activity, policy, graph, users):
    """An activity of the composed slots, with what the policy adds to it."""
    if policy == "gate" and activity.name.endswith(".IA0") and "/start." in activity.name:
        # jobs pass the gate in order of submission
        k = _slot_of(activity.name)
        if k > 1:
            return dataclasses.replace(activity, inhibitors={**activity.inhibitors,
                                                             f"{slot_prefix(k - 1)}submitted": 1})
        return activity
    if not activity.name.endswith(".IAGR"):
        return activity
    k = _slot_of(activity.name)
    if policy == "gate":        # within a phase, the oldest job's task first
        phase = activity.name[len(slot_prefix(k)):-len(".IAGR")]
        older = {f"{slot_prefix(j)}{phase}.PW": 1 for j in range(1, k)}
        return dataclasses.replace(activity, inhibitors={**activity.inhibitors, **older})
    if policy == "fair":
        return dataclasses.replace(activity, input_gates=activity.input_gates + (
            InputGate(_fewest_running(k, list(graph.nodes), users), name=f"job{k} runs fewest tasks"),))
    return activity


def _slot_of(activity_name: str) -> int:
    return int(activity_name[len("job"):activity_name.index("/")])


def _fewest_running(k, phases, users):
    """Predicate: slot k is the job with a waiting task that runs the fewest tasks, oldest first."""
    def predicate(m):
        running = np.stack([sum(m[f"{slot_prefix(j)}{v}.PR"] for v in phases) for j in range(1, users + 1)])
        waiting = np.stack([sum(m[f"{slot_prefix(j)}{v}.PW"] for v in phases) for j in range(1, users + 1)])
        key = np.where(waiting > 0, running.astype(np.int64), np.iinfo(np.int64).max)
        return np.argmin(key, axis=0) == k - 1        # argmin takes the first (oldest) of equal keys
    return predicate


def _moves(net, users, control):
    """The activities that move the jobs behind a gap up one slot (after Erlang expansion)."""
    moves = []
    for k in range(1, users + 1):
        gap, here, behind = f"slot{k}.gap", slot_prefix(k), slot_prefix(k + 1)
        if k == users:
            moves.append(InstantActivity(f"shift{k}.close", inputs={gap: 1}, priority=control + 1))
            continue
        source = [p.name for p in net.places if p.name.startswith(behind)]
        for i, place in enumerate(source):
            target = here + place[len(behind):]
            moves.append(InstantActivity(f"shift{k}.{place[len(behind):]}", inputs={gap: 1, place: 1},
                                         outputs={gap: 1, target: 1}, priority=control + 2 + i))
        moves.append(InstantActivity(
            f"shift{k}.next", inputs={gap: 1, f"slot{k + 1}.taken": 1},
            inhibitors={place: 1 for place in source}, outputs={f"slot{k}.taken": 1, f"slot{k + 1}.gap": 1},
            priority=control + 1))
        moves.append(InstantActivity(f"shift{k}.close", inputs={gap: 1}, inhibitors={f"slot{k + 1}.taken": 1},
                                     priority=control + 1))
    return moves
