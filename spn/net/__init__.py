"""The formalism: places, timed and instantaneous activities, gates, nets, and ways to build them.

``core`` defines a net, ``compose`` joins sub-models on shared places, ``erlang``
expands Erlang activities into chains of exponential stages.

>>> from spn.net import Net, Place, TimedActivity
>>> Net([Place("up", 1), Place("down")],
...     [TimedActivity("fail", inputs={"up": 1}, outputs={"down": 1}, rate=1.0)]).initial_marking().tolist()
[1, 0]
"""

from spn.net.core import (
    MARKING_DTYPE,
    Erlang,
    InputGate,
    InstantActivity,
    MarkingView,
    Net,
    OutputGate,
    Place,
    TimedActivity,
)
from spn.net.compose import SubModel, compose
from spn.net.erlang import expand_erlang

__all__ = ["MARKING_DTYPE", "Erlang", "InputGate", "InstantActivity", "MarkingView", "Net", "OutputGate",
           "Place", "TimedActivity", "SubModel", "compose", "expand_erlang"]
