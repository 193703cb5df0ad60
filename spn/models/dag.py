"""A DAG of phases becomes a composite net (paper 002, §4.3 and Fig. 6; docs/design.md §3.4).

think → first fork → phases → ... → end: the first fork (which holds the
capacity-scheduler token PEJ) starts every source phase; a phase with several
successors ends in a fork, a phase with several predecessors starts with a join,
and several sinks are joined into one end that returns the user to thinking.

Choices the paper leaves open, made here:

- The capacity-scheduler gate sits on the last phase in topological order (list
  order breaks ties). With one sink that is the sink; with several sinks it is the
  one listed last.
- Container conflicts: allocation activities carry their phase's ``priority``
  (higher first); phases of equal priority get a free container with equal
  probability. Control activities (phase start/end, forks, joins, the gate) fire
  before any allocation, so containers are handed out once the control flow of the
  marking has settled.

>>> import networkx as nx
>>> g = nx.DiGraph()
>>> g.add_node("map", tasks=2, task_time=1.0); g.add_node("reduce", tasks=1, task_time=1.0)
>>> g.add_edge("map", "reduce")
>>> app = build_application(g, users=1, think_time=5.0, containers=2)
>>> app.end_activity
'reduce.IAF'
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx

from spn.exceptions import ModelError
from spn.models import submodels
from spn.net import Net
from spn.net.compose import compose

#: sub-model names the builder uses for its own blocks
RESERVED = ("think", "pool", "start", "end")


@dataclass(frozen=True)
class ApplicationNet:
    """A composed application net and what the measures need to know about it."""

    net: Net
    end_activity: str          # its firing completes a job
    gate_phase: str            # the phase that returns the capacity-scheduler token
    users: int
    think_time: float
    containers: int
    think_place: str = "PJ"      # users who think hold a token here
    container_place: str = "PC"  # free containers


def dag_from_description(desc) -> nx.DiGraph:
    """The phase graph of a :class:`~spn.description.Description` (node attributes: the phase fields)."""
    graph = nx.DiGraph()
    for i, p in enumerate(desc.phases):
        graph.add_node(p.name, tasks=p.tasks, task_time=p.task_time, shape=p.shape,
                       priority=p.priority, order=i, containers=p.holds_containers)
    graph.add_edges_from(desc.edges)
    return graph


def build_application(graph: nx.DiGraph, *, users: int, think_time: float, containers: int,
                      name: str = "application") -> ApplicationNet:
    """Compose think, pool, forks, joins and phases for a DAG of phases.

    Node attributes: ``tasks``, ``task_time``, optional ``shape`` (1), ``priority`` (0),
    ``order`` (tie-break of the topological order; default: insertion order) and
    ``containers`` (True; False: a driver phase, which holds none).
    """
    check_graph(graph)
    control = max(float(graph.nodes[v].get("priority", 0)) for v in holding_containers(graph)) + 1
    flow = job_flow(graph, control=control, gate=True)
    parts = [submodels.think(users, think_time), submodels.pool(containers)] + flow.parts
    shared = {"PJ": [("think", "thinking"), flow.done], "PWJ": [("think", "waiting"), flow.entry],
              "PC": [("pool", "containers")] + flow.containers, "PEJ": flow.gate}
    for merged, members in flow.shared.items():
        if merged in shared:    # merged place names never repeat (a phase may be called "join")
            raise ModelError(f"two merged places would both be called {merged!r}")
        shared[merged] = members
    net = compose(parts, shared, name=name)
    return ApplicationNet(net, flow.end_activity, flow.gate_phase, users, think_time, containers)


@dataclass(frozen=True)
class JobFlow:
    """The sub-models of one job's control flow, before they join the rest of a net.

    ``parts`` are the first fork, the phases, their forks and joins and the end join;
    ``shared`` the places they merge among themselves. The caller merges the rest:
    ``entry`` (where a submitted job waits for the first fork), ``done`` (where the
    ended job's token arrives), ``containers`` (every phase's container place) and
    ``gate`` (the first fork's and the gate phase's capacity-scheduler token, when
    the flow has the gate).
    """

    parts: list
    shared: dict
    entry: tuple[str, str]
    done: tuple[str, str]
    containers: list
    gate: list
    end_activity: str
    gate_phase: str


def job_flow(graph: nx.DiGraph, *, control: float, prefix: str = "", gate: bool = False,
             gate_tokens: int = 1, allocation_priority=None) -> JobFlow:
    """One job's phases, forks and joins, with sub-model names that start with ``prefix``.

    ``gate``: the first fork takes the capacity-scheduler token (``gate_tokens`` of it start
    there) and the last phase in topological order gives it back. ``allocation_priority``
    maps a phase to the priority of its allocation activity (default: the phase's
    ``priority``); ``control`` is the priority of every control activity.
    """
    position = {v: graph.nodes[v].get("order", i) for i, v in enumerate(graph.nodes)}
    topo = list(nx.lexicographical_topological_sort(graph, key=lambda v: position[v]))
    sources = [v for v in topo if graph.in_degree(v) == 0]
    sinks = [v for v in topo if graph.out_degree(v) == 0]
    gate_phase = topo[-1]
    allocation_priority = allocation_priority or {}
    start, end = f"{prefix}start", f"{prefix}end"

    parts = [submodels.fork(start, len(sources), gate=gate, gate_tokens=gate_tokens, control_priority=control)]
    for v in topo:
        a = graph.nodes[v]
        parts.append(submodels.phase(f"{prefix}{v}", tasks=a["tasks"], task_time=a["task_time"],
                                     shape=a.get("shape", 1),
                                     priority=allocation_priority.get(v, a.get("priority", 0)),
                                     control_priority=control, last=gate and v == gate_phase,
                                     containers=a.get("containers", True)))
        if graph.out_degree(v) > 1:
            parts.append(submodels.fork(f"{prefix}fork@{v}", graph.out_degree(v), control_priority=control))
        if graph.in_degree(v) > 1:
            parts.append(submodels.join(f"{prefix}join@{v}", graph.in_degree(v), control_priority=control))
    if len(sinks) > 1:
        parts.append(submodels.join(end, len(sinks), control_priority=control))

    def leaving(u, v):          # the interface place a token for edge u -> v leaves from
        succ = sorted(graph.successors(u), key=position.get)
        return (f"{prefix}{u}", "end") if len(succ) == 1 else (f"{prefix}fork@{u}", f"out{succ.index(v) + 1}")

    def entering(u, v):         # the interface place a token for edge u -> v arrives at
        pred = sorted(graph.predecessors(v), key=position.get)
        return (f"{prefix}{v}", "start") if len(pred) == 1 else (f"{prefix}join@{v}", f"in{pred.index(u) + 1}")

    shared = {}
    def share(name, members):   # merged place names never repeat (a phase may be called "join")
        if name in shared:
            raise ModelError(f"two merged places would both be called {name!r}")
        shared[name] = members

    for i, v in enumerate(sources, start=1):
        share(f"{prefix}start->{v}", [(start, f"out{i}"), (f"{prefix}{v}", "start")])
    for u, v in sorted(graph.edges, key=lambda e: (position[e[0]], position[e[1]])):
        share(f"{prefix}{u}->{v}", [leaving(u, v), entering(u, v)])
    for v in topo:
        if graph.out_degree(v) > 1:
            share(f"{prefix}{v}->fork@{v}", [(f"{prefix}{v}", "end"), (f"{prefix}fork@{v}", "in")])
        if graph.in_degree(v) > 1:
            share(f"{prefix}join@{v}->{v}", [(f"{prefix}join@{v}", "out"), (f"{prefix}{v}", "start")])
    if len(sinks) > 1:
        for i, v in enumerate(sinks, start=1):
            share(f"{prefix}{v}->end", [(f"{prefix}{v}", "end"), (end, f"in{i}")])

    done = (f"{prefix}{sinks[0]}", "end") if len(sinks) == 1 else (end, "out")
    end_activity = f"{prefix}{sinks[0]}.IAF" if len(sinks) == 1 else f"{end}.IA0"
    gate_members = [(start, "gate"), (f"{prefix}{gate_phase}", "gate")] if gate else []
    containers = [(f"{prefix}{v}", "containers") for v in topo if graph.nodes[v].get("containers", True)]
    return JobFlow(parts, shared, (start, "in"), done, containers, gate_members, end_activity, gate_phase)


def holding_containers(graph: nx.DiGraph) -> list:
    """The phases of ``graph`` whose tasks take containers (all but its driver phases)."""
    return [v for v in graph.nodes if graph.nodes[v].get("containers", True)]


def build(desc) -> ApplicationNet:
    """The composed net of a model description."""
    from spn.description.model import require_single_class

    require_single_class(desc, "the application net")
    return build_application(dag_from_description(desc), users=desc.workload.users,
                             think_time=desc.workload.think_time,
                             containers=desc.cluster.containers, name=desc.name)


def check_graph(graph):
    """Raise :class:`ModelError` listing every problem of a phase graph (names, attributes, cycles)."""
    problems = []
    if graph.number_of_nodes() == 0:
        problems.append("the DAG has no phases")
    for v in graph.nodes:
        if v in RESERVED or "@" in str(v):
            problems.append(f"phase name {v!r} is reserved (reserved: {', '.join(RESERVED)}, and names with '@')")
        for key in ("tasks", "task_time"):
            if key not in graph.nodes[v]:
                problems.append(f"phase {v!r} has no {key}")
    if graph.number_of_nodes() and not holding_containers(graph):
        problems.append("every phase is a driver phase: a job needs at least one phase that holds containers")
    if graph.number_of_nodes() and not nx.is_directed_acyclic_graph(graph):
        cycle = nx.find_cycle(graph)
        problems.append("phases form a cycle: " + " -> ".join([u for u, _ in cycle] + [cycle[0][0]]))
    if problems:
        raise ModelError(problems)
