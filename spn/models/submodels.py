"""The building blocks of the composite DAG model (paper 002, Fig. 5): phase, fork, join, think.

Each function returns a :class:`~spn.compose.SubModel` with local place names and
an interface; :mod:`spn.models.dag` joins them with :func:`spn.net.compose.compose`.
All gates of the paper are written as arcs here: "all T tasks finished" is an
input arc of multiplicity T, "no task still waiting" an inhibitor arc of bound 1.

>>> sub = phase("map", tasks=4, task_time=2.0)
>>> sorted(sub.interface)
['containers', 'end', 'start']
>>> [a.name for a in phase("reduce", tasks=2, task_time=1.0, last=True).activities]
['IAS', 'IAGR', 'TAR', 'IAF', 'IAEJ']
>>> [a.name for a in phase("driver-job0", tasks=1, task_time=1.0, containers=False).activities]
['IAS', 'TAR', 'IAF']
"""

from __future__ import annotations

from spn.net.compose import SubModel
from spn.net import Erlang, InstantActivity, Place, TimedActivity


def phase(name: str, *, tasks: int, task_time: float, shape: int = 1, priority: float = 0,
          control_priority: float = 1, last: bool = False, containers: bool = True) -> SubModel:
    """A map/reduce phase, Tez vertex or Spark stage (Fig. 5a).

    A token in PS starts the phase: IAS creates ``tasks`` waiting tasks in PW;
    IAGR gives each a container from the shared pool PC (at ``priority``, which
    settles conflicts between phases); TAR runs it for an Erlang(shape, task_time)
    time and returns the container; when all tasks are in PF, IAF puts a token in PE.
    The ``last`` phase also holds the capacity-scheduler gate: IAS marks the job in
    PJiR, and IAEJ returns the token of PEJ once no task of the phase waits.
    Control activities (IAS, IAF, IAEJ) fire at ``control_priority``, above every
    allocation, so containers are handed out only once the job's control flow settled.

    ``containers=False`` is a driver phase: IAS puts its tasks straight in PR, and
    TAR returns nothing, so the phase has no PW, PC or IAGR and no ``containers``
    role. It is still a step of the job's DAG, and an infinite-server delay: every
    job in it runs its tasks at once. As its last phase, it gives the gate back
    as soon as it starts (no task of it ever waits).
    """
    places = [Place("PS"), Place("PR"), Place("PF"), Place("PE")]
    start_outputs = {"PR" if not containers else "PW": tasks}
    interface = {"start": "PS", "end": "PE"}
    if containers:
        places[1:1] = [Place("PW")]
        places.append(Place("PC"))
        interface["containers"] = "PC"
    if last:
        places += [Place("PJiR"), Place("PEJ")]
        start_outputs["PJiR"] = 1
        interface["gate"] = "PEJ"
    returned = {"PC": 1} if containers else {}
    activities = [
        InstantActivity("IAS", inputs={"PS": 1}, outputs=start_outputs, priority=control_priority),
        TimedActivity("TAR", inputs={"PR": 1}, outputs={"PF": 1, **returned},
                      erlang=Erlang(shape, task_time), servers="infinite"),
        InstantActivity("IAF", inputs={"PF": tasks}, outputs={"PE": 1}, priority=control_priority),
    ]
    if containers:
        activities.insert(1, InstantActivity("IAGR", inputs={"PC": 1, "PW": 1}, outputs={"PR": 1},
                                             priority=priority))
    if last:
        activities.append(InstantActivity("IAEJ", inputs={"PJiR": 1}, inhibitors={"PW": 1} if containers else {},
                                          outputs={"PEJ": 1}, priority=control_priority))
    return SubModel(name, places, activities, interface)


def fork(name: str, outputs: int, *, gate: bool = False, gate_tokens: int = 1,
         control_priority: float = 1) -> SubModel:
    """Parallel fork (Fig. 5b): a token in P0 puts a token in each of P1..Pn.

    The first fork (``gate=True``) also needs the capacity-scheduler token PEJ, of
    which it starts holding ``gate_tokens`` (1: one job may start at a time; 0 for the
    first forks of further jobs that share one token).
    """
    places = [Place("P0")] + [Place(f"P{i}") for i in range(1, outputs + 1)]
    inputs = {"P0": 1}
    interface = {"in": "P0", **{f"out{i}": f"P{i}" for i in range(1, outputs + 1)}}
    if gate:
        places.append(Place("PEJ", gate_tokens))
        inputs["PEJ"] = 1
        interface["gate"] = "PEJ"
    activity = InstantActivity("IA0", inputs=inputs, outputs={f"P{i}": 1 for i in range(1, outputs + 1)},
                               priority=control_priority)
    return SubModel(name, places, [activity], interface)


def join(name: str, inputs: int, *, control_priority: float = 1) -> SubModel:
    """Synchronisation join (Fig. 5c): a token in each of P1..Pn becomes one token in P0."""
    places = [Place(f"P{i}") for i in range(1, inputs + 1)] + [Place("P0")]
    interface = {"out": "P0", **{f"in{i}": f"P{i}" for i in range(1, inputs + 1)}}
    activity = InstantActivity("IA0", inputs={f"P{i}": 1 for i in range(1, inputs + 1)},
                               outputs={"P0": 1}, priority=control_priority)
    return SubModel(name, places, [activity], interface)


def think(users: int, think_time: float, name: str = "think") -> SubModel:
    """Think time (Fig. 5d): each of the N users in PJ thinks an exponential time of mean Z,
    then its job waits in PWJ."""
    return SubModel(name, [Place("PJ", users), Place("PWJ")], [
        TimedActivity("TAT", inputs={"PJ": 1}, outputs={"PWJ": 1}, rate=1.0 / think_time,
                      servers="infinite"),
    ], {"thinking": "PJ", "waiting": "PWJ"})


def pool(containers: int, name: str = "pool") -> SubModel:
    """The pool of C containers that every phase shares."""
    return SubModel(name, [Place("PC", containers)], [], {"containers": "PC"})
