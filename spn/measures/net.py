"""Measures of any solved net: mean tokens, probabilities of a condition, throughputs.

Every function takes the :class:`~spn.statespace.StateSpace` and a steady-state
vector ``pi`` over its tangible markings.

>>> from spn.net import Net, Place, TimedActivity
>>> from spn.statespace import explore
>>> from spn.solvers import steady_state
>>> net = Net([Place("up", 1), Place("down")],
...           [TimedActivity("fail", inputs={"up": 1}, outputs={"down": 1}, rate=1.0),
...            TimedActivity("repair", inputs={"down": 1}, outputs={"up": 1}, rate=3.0)])
>>> ss = explore(net)
>>> pi = steady_state(ss.generator()).x
>>> round(expected_tokens(ss, pi, "up"), 12), round(throughput(ss, pi, "fail"), 12)
(0.75, 0.75)
"""

from __future__ import annotations

import numpy as np

from spn.ctmc import expected_reward, instant_throughputs, timed_throughputs
from spn.net import InstantActivity


def expected_tokens(ss, pi, place: str) -> float:
    """Mean number of tokens in ``place`` in steady state."""
    return expected_reward(pi, ss.tokens(place))


def probability(ss, pi, predicate) -> float:
    """Steady-state probability that ``predicate(m)`` holds, ``m`` a MarkingView.

    >>> # probability(ss, pi, lambda m: m["PC"] == 0)   # all containers busy
    """
    holds = np.broadcast_to(np.asarray(predicate(ss.net.view(ss.markings)), dtype=bool), (ss.n_states,))
    return float(pi[holds].sum())


def throughput(ss, pi, activity: str) -> float:
    """Mean firings per unit time of a timed or instantaneous activity.

    An Erlang activity that was expanded answers by its last stage (its completions).
    """
    a = ss.net.activity(activity)
    if isinstance(a, InstantActivity):
        return float(instant_throughputs(pi, ss.impulses)[list(ss.net.instant).index(a)])
    return float(timed_throughputs(pi, ss.timed_rates)[list(ss.net.timed).index(a)])
