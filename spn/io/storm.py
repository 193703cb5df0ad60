"""Solve the same net with the Storm model checker (optional: needs ``stormpy``).

Used to cross-check spn against an independent tool, in tests and benchmarks.
The net goes to Storm as a GreatSPN ``.pnpro`` file (Storm's PNML reader has no
server semantics), is translated by Storm to a Markov automaton with the
maximal-progress assumption (instantaneous beats timed, as in spn), and each
asked quantity is a long-run average, ``LRAmax=? [ place >= k ]``. The expected
tokens of a place with at most ``b`` tokens are ``sum_k P(place >= k)``, k = 1..b.

Storm's long-run averages on Markov automata are computed by value iteration
until successive iterates differ by less than its ``--lra:precision`` setting
(1e-6 by default); ``precision`` sets it (1e-12 here, so that the answers can be
compared with spn's to 1e-8), ``exact=True`` asks for rational arithmetic
instead (slow, for small nets).

>>> from spn.net import Net, Place, TimedActivity
>>> net = Net([Place("up", 1), Place("down")],
...           [TimedActivity("fail", inputs={"up": 1}, outputs={"down": 1}, rate=1.0),
...            TimedActivity("repair", inputs={"down": 1}, outputs={"up": 1}, rate=3.0)])
>>> r = storm_expected_tokens(net, {"up": 1}, exact=True)   # doctest: +SKIP
>>> r.markovian_states, r.expected_tokens["up"]             # doctest: +SKIP
(2, 0.75)
"""

from __future__ import annotations

import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from spn.net.erlang import expand_erlang
from spn.io.pnml import identifier_names, to_pnpro


@dataclass(frozen=True)
class StormResult:
    """What Storm said: its state counts, the asked expectations, and its times."""

    states: int                 # all states of the Markov automaton (vanishing ones included)
    markovian_states: int       # states with timed transitions only: spn's tangible markings
    expected_tokens: dict
    build_s: float
    solve_s: float


_precision_set: list[float] = []     # Storm's settings can be given once per process


def _environment(precision: float):
    """A Storm environment whose long-run-average precision is ``precision``.

    That precision is only reachable through Storm's command-line settings, which
    an environment reads when it is built, and which can be set once per process.
    """
    import stormpy.developer

    if not _precision_set:
        stormpy.developer.set_from_exploded_string(["--lra:precision", repr(float(precision))])
        _precision_set.append(float(precision))
    elif _precision_set[0] != float(precision):
        raise ValueError(f"Storm's precision is already {_precision_set[0]:g} in this process "
                         f"(it can be set once per process); use a new process for {precision:g}")
    return stormpy.developer.EnvironmentBuilder.build_environment()


def storm_expected_tokens(net, bounds: dict, *, exact: bool = False, precision: float = 1e-12) -> StormResult:
    """Expected tokens in steady state of each place in ``bounds`` ({place: max tokens}), by Storm."""
    import stormpy
    import stormpy.gspn

    flat = expand_erlang(net)
    renamed = identifier_names(flat)
    names = dict(zip((p.name for p in flat.places), (p.name for p in renamed.places)))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "net.pnpro"
        path.write_text(to_pnpro(renamed))
        started = time.perf_counter()
        gspn = stormpy.gspn.load_gspn_file(str(path))
    jani, _ = stormpy.gspn.build_jani_model(gspn)
    text = "; ".join(f"LRAmax=? [ {names[p]} >= {k} ]" for p, b in bounds.items() for k in range(1, b + 1))
    properties = stormpy.parse_properties(text, jani) if text else []
    options = stormpy.BuilderOptions([p.get_raw_formula() for p in properties])
    options.set_apply_maximal_progress_assumption(True)
    builder = stormpy.build_model[stormpy.Rational] if exact else stormpy.build_model
    model = builder(jani, options=options)
    built = time.perf_counter()
    env = _environment(precision)
    if exact:
        env.solver().force_exact = True
    values = iter(float(stormpy.model_checking(model, p, environment=env).get_value(model.initial_states[0]))
                  for p in properties)
    expected = {p: sum(next(values) for _ in range(b)) for p, b in bounds.items()}
    return StormResult(model.nr_states, model.markovian_states.get_number_of_set_bits(), expected,
                       built - started, time.perf_counter() - built)
