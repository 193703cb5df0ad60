"""The SAN model of a MapReduce application (paper 002, Section 4.1, Fig. 3, Tables 1-2).

N users think (exponential, mean Z) and submit jobs. A waiting job starts only when
the capacity-scheduler gate PEJ holds a token; starting creates M waiting map tasks.
Each task takes a container from the pool PC instantly, runs for an Erlang time and
gives the container back. When all M maps finished the reduce phase starts with R
tasks and a token in PJiR ("a job is in its reduce phase"). As soon as every reduce
task of that job holds a container (PJiR > 0 and PWR empty), PEJ is returned and the
next job may start. When R reduces finished, the job ends and its user thinks again.

Places (initial tokens): PJ (N), PWJ, PEJ (1), PWM, PRM, PFM, PWR, PRR, PFR, PC (C), PJiR.
Activities: TAT (think), IASM (start job, gate OGSM), IAGRM (map gets container),
TAM (map task), IASR (start reduce, gates IGFM and OGSR), IAGRR (reduce gets
container), TAR (reduce task), IAFR (job finished, gate IGFR), IAEJ (return the
scheduler token, gate IGEJ).

>>> net = mapreduce_net(users=1, think_time=10.0, containers=2, map_tasks=2, map_time=1.0,
...                     reduce_tasks=1, reduce_time=1.0)
>>> [p.name for p in net.places][:4]
['PJ', 'PWJ', 'PEJ', 'PWM']
"""

from __future__ import annotations

from spn.net import Erlang, InputGate, InstantActivity, Net, OutputGate, Place, TimedActivity

#: the activity whose firing completes a job
END_ACTIVITY = "IAFR"


def _add(place, n):
    def function(m):
        m[place] = m[place] + n
    return function


def mapreduce_net(*, users: int, think_time: float, containers: int,
                  map_tasks: int, map_time: float, reduce_tasks: int, reduce_time: float,
                  map_shape: int = 1, reduce_shape: int = 1, name: str = "mapreduce") -> Net:
    """The net of Fig. 3 with N users, think time Z, C containers, M maps and R reduces.

    ``map_time``/``reduce_time`` are mean task times, ``*_shape`` their Erlang shapes
    (1 = exponential).
    """
    M, R = map_tasks, reduce_tasks

    def start_reduce_gate(m):          # IGFM predicate: all maps of a job finished
        return m["PFM"] >= M

    def consume_maps(m):               # IGFM function
        m["PFM"] = m["PFM"] - M

    def finished_gate(m):              # IGFR predicate: all reduces of a job finished
        return m["PFR"] >= R

    def consume_reduces(m):            # IGFR function
        m["PFR"] = m["PFR"] - R

    def reduces_placed(m):             # IGEJ predicate: a job in reduce, none of its reduces waiting
        return (m["PJiR"] > 0) & (m["PWR"] == 0)

    def leave_reduce(m):               # IGEJ function
        m["PJiR"] = m["PJiR"] - 1

    places = [
        Place("PJ", users), Place("PWJ"), Place("PEJ", 1),
        Place("PWM"), Place("PRM"), Place("PFM"),
        Place("PWR"), Place("PRR"), Place("PFR"),
        Place("PC", containers), Place("PJiR"),
    ]
    activities = [
        TimedActivity("TAT", inputs={"PJ": 1}, outputs={"PWJ": 1},
                      rate=1.0 / think_time, servers="infinite"),
        InstantActivity("IASM", inputs={"PWJ": 1, "PEJ": 1},
                        output_gates=[OutputGate(_add("PWM", M), "OGSM")]),
        InstantActivity("IAGRM", inputs={"PC": 1, "PWM": 1}, outputs={"PRM": 1}),
        TimedActivity("TAM", inputs={"PRM": 1}, outputs={"PFM": 1, "PC": 1},
                      erlang=Erlang(map_shape, map_time), servers="infinite"),
        InstantActivity("IASR", input_gates=[InputGate(start_reduce_gate, consume_maps, "IGFM")],
                        output_gates=[OutputGate(_add("PWR", R), "OGSR-PWR"),
                                      OutputGate(_add("PJiR", 1), "OGSR-PJiR")]),
        InstantActivity("IAGRR", inputs={"PC": 1, "PWR": 1}, outputs={"PRR": 1}),
        TimedActivity("TAR", inputs={"PRR": 1}, outputs={"PFR": 1, "PC": 1},
                      erlang=Erlang(reduce_shape, reduce_time), servers="infinite"),
        InstantActivity("IAFR", input_gates=[InputGate(finished_gate, consume_reduces, "IGFR")],
                        outputs={"PJ": 1}),
        InstantActivity("IAEJ", input_gates=[InputGate(reduces_placed, leave_reduce, "IGEJ")],
                        outputs={"PEJ": 1}),
    ]
    return Net(places, activities, name=name)
