"""Draw a net: Graphviz DOT text, sub-models as clusters (``spn export --format dot``, ``spn draw``).

Places are circles labelled with their initial tokens, timed activities filled
boxes, instantaneous activities thin white bars.
Input arcs run place → activity, output arcs activity → place, inhibitor arcs end
in a small circle; multiplicities other than 1 label the arc. Gates are code, so
the places they read are not known: their names are listed under the activity.
A place or activity named ``sub.x`` (as :func:`spn.net.compose.compose` names them) is
drawn inside the cluster ``sub``; shared places stay outside every cluster.

>>> from spn.net import Net, Place, TimedActivity
>>> net = Net([Place("a", 1), Place("b")], [TimedActivity("t", inputs={"a": 1}, outputs={"b": 2}, rate=1.0)])
>>> print(to_dot(net).splitlines()[0])
digraph "net" {
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from spn.exceptions import SpnError
from spn.net import InstantActivity, Net

#: how long Graphviz may take to draw a net (a few thousand nodes take seconds)
DOT_SECONDS = 120


def _quote(text) -> str:
    return '"' + str(text).replace('"', '\\"') + '"'


def _cluster_of(name: str) -> tuple[str | None, str]:
    sub, dot, local = name.partition(".")
    return (sub, local) if dot else (None, name)


def to_dot(net: Net, *, title: str | None = None) -> str:
    """The DOT text of ``net``."""
    clusters: dict[str | None, list[str]] = {}
    for place in net.places:
        sub, local = _cluster_of(place.name)
        tokens = str(place.tokens) if place.tokens else ""
        clusters.setdefault(sub, []).append(
            f'{_quote("p:" + place.name)} [shape=circle, width=0.3, fixedsize=true, '
            f'label={_quote(tokens)}, xlabel={_quote(local)}];')
    edges = []
    for a in net.activities:
        sub, local = _cluster_of(a.name)
        gates = [g.name or "gate" for g in (*a.input_gates, *a.output_gates)]
        label = local + (f"\\n[{', '.join(gates)}]" if gates else "")
        if isinstance(a, InstantActivity):
            style = "shape=box, style=filled, fillcolor=white, height=0.05, width=0.5"
        else:
            style = "shape=box, style=filled, fillcolor=black, fontcolor=white"
        node = _quote("a:" + a.name)
        clusters.setdefault(sub, []).append(f"{node} [{style}, label={_quote(label)}];")
        for place, k in a.inputs.items():
            edges.append(f'{_quote("p:" + place)} -> {node}' + (f" [label={k}]" if k != 1 else "") + ";")
        for place, k in a.outputs.items():
            edges.append(f'{node} -> {_quote("p:" + place)}' + (f" [label={k}]" if k != 1 else "") + ";")
        for place, k in a.inhibitors.items():
            label = f", label={k}" if k != 1 else ""
            edges.append(f'{_quote("p:" + place)} -> {node} [arrowhead=odot{label}];')
    lines = [f"digraph {_quote(title or net.name)} {{", "  rankdir=LR;", "  node [fontsize=10];"]
    for sub, nodes in clusters.items():
        if sub is None:
            lines += [f"  {n}" for n in nodes]
        else:
            lines.append(f"  subgraph {_quote('cluster_' + sub)} {{")
            lines.append(f"    label={_quote(sub)}; style=rounded; color=gray50;")
            lines += [f"    {n}" for n in nodes]
            lines.append("  }")
    lines += [f"  {e}" for e in edges]
    lines.append("}")
    return "\n".join(lines) + "\n"


def render(dot_text: str, output: str | Path, *, force: bool = False, timeout: float = DOT_SECONDS) -> Path:
    """Render DOT text to ``output`` (.svg, .png or .pdf) with Graphviz's ``dot``.

    An existing ``output`` is refused unless ``force``; the drawing is written to a
    temporary file beside it and moved into place once complete
    (:mod:`spn.io.output`). ``dot`` running longer than ``timeout`` seconds is stopped.
    """
    from spn.io.output import check_target, discard, publish, temporary_beside

    output = Path(output)
    fmt = output.suffix.lstrip(".").lower()
    if fmt not in ("svg", "png", "pdf"):
        raise SpnError(f"{output}: the drawing format is chosen by the extension: .svg, .png or .pdf")
    check_target(output, force=force, what="drawing")
    exe = shutil.which("dot")
    if exe is None:
        raise SpnError("Graphviz's `dot` program is not installed (e.g. apt-get install graphviz); "
                       "`spn export MODEL --format dot` writes the DOT text without it")
    partial = temporary_beside(output)
    try:
        done = subprocess.run([exe, f"-T{fmt}", "-o", str(partial)], input=dot_text.encode(),
                              capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        discard(partial)
        raise SpnError(f"dot did not finish drawing within {timeout:g} s: the net is too large to draw; "
                       "`spn export MODEL --format dot` writes the DOT text") from None
    except BaseException:
        discard(partial)
        raise
    if done.returncode != 0:
        discard(partial)
        raise SpnError(f"dot failed: {done.stderr.decode(errors='replace').strip().splitlines()[-1:]}")
    return publish(partial, output, force=force)
