"""``spn export`` (the composed net as DOT, PNML or .pnpro) and ``spn draw`` (rendered by Graphviz)."""

from __future__ import annotations

import sys

from spn.cli import _args
from spn.exceptions import SpnError

#: the largest net `spn draw` hands to Graphviz (2,400 nodes take about 2 s; time grows faster than size)
MAX_DRAW_NODES = 10_000


def register(commands) -> None:
    export = commands.add_parser(
        "export",
        help="print the composed net of a model (DOT)",
        description="Print the composed net of a model description, sub-models as clusters.",
    )
    _args.add_model(export)
    _args.add_set(export)
    export.add_argument("--format", choices=("dot", "pnml", "pnpro"), default="dot",
                        help="dot (drawing), pnml (PNML, Storm/GreatSPN dialect) or pnpro "
                        "(GreatSPN project; keeps server semantics for Storm) (default: dot)")
    export.set_defaults(run=run_export)

    draw = commands.add_parser(
        "draw",
        help="draw the composed net of a model with Graphviz",
        description="Draw the composed net of a model description to an SVG, PNG or PDF file "
        "(needs Graphviz's dot program).",
    )
    _args.add_model(draw)
    _args.add_set(draw)
    draw.add_argument("-o", "--output", required=True, metavar="FILE",
                      help="the drawing: .svg, .png or .pdf (written to a temporary file, then moved into place)")
    draw.add_argument("--force", action="store_true", help="replace FILE if it exists")
    draw.set_defaults(run=run_draw)


def _composed_net(args):
    from spn.models.jobs import application_net, build_classes

    description = _args.description(args)
    return build_classes(description).net if description.classes else application_net(description).net


def run_export(args) -> int:
    """``spn export``: the composed net on stdout, as DOT, PNML or GreatSPN .pnpro."""
    net = _composed_net(args)
    if args.format == "dot":
        from spn.io.dot import to_dot

        sys.stdout.write(to_dot(net))
    else:
        from spn.io import pnml

        sys.stdout.write(pnml.to_pnml(net) if args.format == "pnml" else pnml.to_pnpro(net))
    return 0


def run_draw(args) -> int:
    """``spn draw``: render the composed net with Graphviz; print what ``render`` reports."""
    from spn.io.dot import render, to_dot
    from spn.io.output import check_target

    # refused before the model is built: an existing drawing is kept unless --force
    check_target(args.output, force=args.force, what="drawing")
    net = _composed_net(args)
    nodes = len(net.places) + len(net.activities)
    if nodes > MAX_DRAW_NODES:
        raise SpnError(f"the net of {args.model} has {nodes:,} places and activities, more than Graphviz draws "
                       f"in reasonable time ({MAX_DRAW_NODES:,}); `spn export --format dot` writes the DOT text")
    print(render(to_dot(net), args.output, force=args.force))
    return 0
