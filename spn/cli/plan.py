"""``spn plan`` (the smallest or largest value meeting targets) and ``spn sweep`` (a grid, streamed to a CSV)."""

from __future__ import annotations

import os
import sys

from spn.analysis.plan import MAX_PROBES
from spn.cli import _args
from spn.cli.format import format_plan
from spn.exceptions import SpnError

#: worker processes of an embedded Dask cluster: more than a few per CPU only adds memory
MAX_WORKERS = max(4, 4 * (os.cpu_count() or 1))


def register(commands) -> None:
    plan = commands.add_parser(
        "plan",
        help="smallest value of a parameter that meets an execution-time target",
        description="Find the smallest value of one parameter (e.g. cluster.containers) whose solution meets "
        "every target (mean<=S, pQ<=S), by bisection; the metric is checked for monotonicity along every value "
        "solved, and evidence against it is reported.",
    )
    _args.add_model(plan)
    plan.add_argument("--vary", required=True, metavar="PATH=LO..HI",
                      help="the parameter and its integer range (or a list V1,V2,...), e.g. cluster.containers=1..400")
    plan.add_argument("--target", required=True, action="append", metavar="TARGET",
                      help="mean<=SECONDS or pQ<=SECONDS, e.g. 'mean<=120', 'p95<=150' (repeatable: all must hold)")
    _args.add_set(plan)
    plan.add_argument("--largest", action="store_true",
                      help="the largest value meeting the targets instead (e.g. how many users fit)")
    plan.add_argument("--probes", type=_args.bounded_int(0, MAX_PROBES), default=3, metavar="K",
                      help="interior values solved before bisecting, to check monotonicity (default: 3)")
    plan.add_argument("--exhaustive", action="store_true", help="solve every value of the range (no bisection)")
    _args.add_solver_options(plan, tol_help="solver tolerance")
    plan.set_defaults(run=run_plan)

    sweep = commands.add_parser(
        "sweep",
        help="solve a grid of configurations (on Dask), streaming rows to a CSV",
        description="Solve every combination of the --grid values and append one CSV row per point as it "
        "finishes; --resume continues an interrupted sweep without solving a finished point again. Points run "
        "on an embedded local Dask cluster (--workers), an existing one (--scheduler), or in this process "
        "(--workers 0).",
    )
    _args.add_model(sweep)
    sweep.add_argument("--grid", required=True, action="append", metavar="PATH=VALUES",
                       help="a parameter and its values: V1,V2,... or LO..HI (repeatable; the first varies slowest)")
    sweep.add_argument("--out", required=True, metavar="CSV", help="the results file (rows appended as points finish)")
    _args.add_set(sweep, "override a value at every point (repeatable)")
    _args.add_distribution(sweep)
    sweep.add_argument("--resume", action="store_true",
                       help="continue the sweep in --out: keep its rows, solve only the missing points")
    sweep.add_argument("--force", action="store_true", help="replace --out (and --plot) if they exist")
    sweep.add_argument("--workers", type=_args.bounded_int(0, MAX_WORKERS), default=None, metavar="N",
                       help="worker processes of the embedded Dask cluster (default: CPU count; "
                       "0: solve in this process without Dask)")
    sweep.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                       help="use the Dask cluster of this scheduler (its workers need spn installed)")
    sweep.add_argument("--plot", metavar="PNG",
                       help="draw execution time against the first --grid parameter, one line per value of "
                       "the second, with a band between the lowest and highest --percentiles (.png, .svg, .pdf "
                       "or .jpg; an existing file is replaced only with --force)")
    _args.add_solver_options(sweep, tol_help="solver tolerance",
                             max_states_help="a point past N tangible states fails (recorded in its error column)",
                             json_help="print a JSON summary instead of a line")
    sweep.set_defaults(run=run_sweep)


def run_plan(args) -> int:
    """``spn plan``: bisection over one parameter."""
    from spn.analysis.plan import parse_target, plan, vary_values

    _args.parse_option("--vary", vary_values, args.vary)
    targets = [_args.parse_option("--target", parse_target, text) for text in args.target]
    result = plan(args.model, args.vary, targets, sets=args.set, largest=args.largest, probes=args.probes,
                  exhaustive=args.exhaustive, **_args.solver_options(args))
    if args.json:
        _args.print_json(result.as_dict())
    else:
        print(format_plan(result))
    return 0


def run_sweep(args) -> int:
    """``spn sweep``: a grid of points, streamed to --out."""
    from spn.analysis.sweep import parse_grid, run_sweep

    if args.scheduler is not None and args.workers is not None:
        raise SpnError("--workers starts a local cluster and --scheduler uses an existing one: give one of them")
    _args.parse_option("--grid", parse_grid, args.grid)
    if args.resume and args.force:
        raise SpnError("--resume and --force contradict each other: --resume keeps the rows of --out, "
                       "--force replaces the file")
    if os.path.isdir(args.out):
        raise SpnError(f"--out {args.out} is a directory")
    summary = run_sweep(args.model, args.grid, args.out, sets=args.set, percentiles=args.percentiles or (),
                        deadline=args.deadline, resume=args.resume, force=args.force, workers=args.workers,
                        scheduler=args.scheduler, plot=args.plot, **_args.solver_options(args))
    if args.json:
        _args.print_json(summary.as_dict())
    else:
        print(f"{summary.out}: {summary.points} points ({summary.skipped} already there, {summary.computed} solved, "
              f"{summary.failed} failed) in {summary.seconds:.2f} s on {summary.runner}"
              + (f"; plot {summary.plot}" if summary.plot else ""))
    if summary.failed:
        print(f"spn: warning: {summary.failed} point(s) failed: see the error column of {summary.out}",
              file=sys.stderr)
    return 0
