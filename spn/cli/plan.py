"""``spn plan`` (the smallest or largest value meeting targets) and ``spn sweep`` (a grid, streamed to a CSV)."""

from __future__ import annotations

import os
import sys

from spn.defaults import SEED
from spn.studies.plan import MAX_PROBES
from spn.cli import _args
from spn.cli.format import format_plan
from spn.exceptions import SpnError

#: worker processes of an embedded Dask cluster: more than a few per CPU only adds memory
MAX_WORKERS = max(4, 4 * (os.cpu_count() or 1))


def register(commands) -> None:
    plan = commands.add_parser(
        "plan",
        help="smallest value of a parameter (or share of a queue) that meets an execution-time target",
        description="Find the smallest value of one parameter (e.g. cluster.containers) whose solution meets "
        "every target (mean<=S, pQ<=S), by bisection; the metric is checked for monotonicity along every value "
        "solved, and evidence against it is reported. Each value is solved exactly where its chain fits "
        "--max-states, otherwise as spn solve would (job-alone bounds or a simulation; such a value meets a target "
        "only if its whole interval does; a simulated value whose interval straddles a bound is refined to "
        "--refine-to, then reported as undecided). With query classes, targets name a class (CLASS.mean<=S), and "
        "--vary queues.NAME.capacity=LO..HI finds the smallest share of queue NAME meeting them (the largest for a "
        "class of another queue): the shares are k/C, the other queue gets 1 - share (several others keep their "
        "proportions), and a max_capacity below a share's capacity is raised to it (the output says so).",
    )
    _args.add_source(plan)
    _args.add_log_inputs(plan)
    plan.add_argument("--vary", required=True, metavar="PATH=LO..HI",
                      help="the parameter and its integer range (or a list V1,V2,...), e.g. cluster.containers=1..400; "
                           "or a queue's share, queues.NAME.capacity=LO..HI with 0 < LO <= HI < 1")
    plan.add_argument("--target", required=True, action="append", metavar="TARGET",
                      help="[CLASS.]mean<=SECONDS or pQ<=SECONDS, e.g. 'mean<=120', 'p95<=150', "
                           "'dashboard.mean_execution_time<=30' (repeatable: all must hold)")
    _args.add_set(plan)
    plan.add_argument("--largest", action="store_true",
                      help="the largest value meeting the targets instead (e.g. how many users fit)")
    plan.add_argument("--probes", type=_args.bounded_int(0, MAX_PROBES), default=3, metavar="K",
                      help="interior values solved before bisecting, to check monotonicity (default: 3)")
    plan.add_argument("--exhaustive", action="store_true", help="solve every value of the range (no bisection)")
    plan.add_argument("--minimize", choices=("value", "cost"), default="value",
                      help="value (default): the smallest value meeting the targets; cost (--vary "
                           "spark.executor.instances or cluster.containers): also the cheapest, in executor-hours "
                           "(executors x mean execution time) and in money with --price, every value above the "
                           "smallest solved")
    _args.add_price(plan)
    _args.add_plot(plan, "every solved value's metrics against the varied parameter, the targets' bounds and the "
                   "answer")
    _args.add_solver_options(plan, tol_help="solver tolerance",
                             max_states_help="past N tangible states a value is estimated as spn solve would "
                                             "(default: %(default)s)")
    plan.add_argument("--rel-precision", type=_args.positive_float, default=None, metavar="E",
                      help="relative half-width of the 95 %% intervals when simulating (default: spn solve's 0.005)")
    plan.add_argument("--refine-to", type=_args.positive_float, default=None, metavar="E",
                      help="a simulated value whose interval straddles a bound is refined down to this "
                           "precision before it is called undecided (default: --rel-precision / 4)")
    plan.add_argument("--max-seconds", type=_args.positive_float, default=None, metavar="T",
                      help="each value's time budget, every method included (default: 30); an interval is used "
                           "either way")
    plan.add_argument("--seed", type=_args.bounded_int(0, _args.MAX_SEED), default=SEED, metavar="S",
                      help=f"random seed of every simulation (default: {SEED}, as every command; the same seed "
                           "at every value: common random numbers)")
    plan.set_defaults(run=run_plan)

    sweep = commands.add_parser(
        "sweep",
        help="solve a grid of configurations (on Dask), streaming rows to a CSV",
        description="Solve every combination of the --grid values and append one CSV row per point as it "
        "finishes (beside it, CSV.sweep.json records the sweep's settings, so that --resume continues only the same "
        "sweep); --resume continues an interrupted sweep without solving a finished point again. Points run "
        "in this process, on an embedded local Dask cluster (--workers N, N > 1) or an existing one (--scheduler). "
        "Each point is solved as spn solve solves it: by the most exact method that fits --max-states and "
        "--max-seconds (the method column says which; low and high are its interval); with query classes "
        "(e.g. models/two-queues.yaml) a row has each class's R and X (classes.C.mean_execution_time, "
        "classes.C.throughput) and each queue's utilisation (queues.Q.utilization). A queue's capacity on the "
        "grid (queues.bi.capacity=0.25,0.5) gives the queues off the grid 1 - that share in proportion to "
        "their capacities, as spn plan --vary queues.NAME.capacity does, so capacities still sum to 1.",
    )
    _args.add_source(sweep)
    sweep.add_argument("--grid", required=True, action="append", metavar="PATH=VALUES",
                       help="a parameter and its values: V1,V2,... or LO..HI (repeatable; the first varies slowest); "
                            "PATH as --set takes it, e.g. cluster.containers, classes.dashboard.users, "
                            "queues.bi.capacity")
    sweep.add_argument("--out", required=True, metavar="CSV", help="the results file (rows appended as points finish)")
    _args.add_set(sweep, "override a value at every point (repeatable)")
    _args.add_distribution(sweep)
    sweep.add_argument("--resume", action="store_true",
                       help="continue the sweep in --out: keep its rows, solve only the missing points")
    sweep.add_argument("--force", action="store_true", help="replace --out (and --plot) if they exist")
    sweep.add_argument("--workers", type=_args.bounded_int(0, MAX_WORKERS), default=None, metavar="N",
                       help="worker processes of an embedded Dask cluster when N > 1 (default: solve in this "
                       "process, without Dask's start-up)")
    sweep.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                       help="use the Dask cluster of this scheduler (its workers need spn installed)")
    sweep.add_argument("--plot", metavar="PNG",
                       help="draw execution time (with query classes: the mean over every job) against the "
                       "first --grid parameter, one line per value of "
                       "the second, with a band between the lowest and highest --percentiles (.png, .svg, .pdf "
                       "or .jpg; an existing file is replaced only with --force)")
    _args.add_solver_options(
        sweep, methods=_args.METHODS + ("exact", "simulation"), tol_help="solver tolerance",
        method_help="as spn solve: auto (default) takes the most exact method that fits each point's budget; "
                    "exact, simulation or a solver name: that method at every point",
        max_states_help="the exact method's budget at each point (default: %(default)s)",
        json_help="print a JSON summary instead of a line")
    sweep.add_argument("--rel-precision", type=_args.positive_float, default=None, metavar="E",
                       help="a point that simulates: relative half-width of the 95 %% intervals "
                            "(default: 0.005, as spn solve)")
    sweep.add_argument("--max-seconds", type=_args.positive_float, default=None, metavar="T",
                       help="each point's time budget, every method included (default: 30)")
    sweep.add_argument("--seed", type=_args.bounded_int(0, _args.MAX_SEED), default=SEED, metavar="S",
                       help=f"random seed of every simulated point (default: {SEED}, as every command; the same "
                            "at every point: common random numbers)")
    sweep.set_defaults(run=run_sweep)


@_args.resolving_logs("model")
def run_plan(args) -> int:
    """``spn plan``: the smallest (or largest) value of one parameter, or share of a queue, meeting the targets."""
    from spn.studies.cost import COSTED_PATHS
    from spn.studies.plan import plan
    from spn.studies.targets import parse_share_vary, parse_target, vary_values

    targets = [_args.parse_option("--target", parse_target, text) for text in args.target]
    share = _args.parse_option("--vary", parse_share_vary, args.vary)
    if share is None:
        _args.parse_option("--vary", vary_values, args.vary)
    if args.plot and share is not None:
        raise SpnError("--plot draws a plan over one parameter; a queue-share plan prints its shares")
    _args.check_plot(args)
    price = _args.price(args, COSTED_PATHS.get(args.vary.partition("=")[0].strip(), "executor"))
    if price is not None and args.minimize != "cost":
        raise SpnError("--price prices the cheapest configuration: give --minimize cost")
    simulation = {"seed": args.seed, "rel_precision": args.rel_precision, "refine_to": args.refine_to,
                  "max_seconds": args.max_seconds}
    result = plan(_args.source(args), args.vary, targets, sets=args.set, largest=args.largest,
                  probes=args.probes, exhaustive=args.exhaustive, minimize=args.minimize, price=price,
                  **_args.solver_options(args), **simulation)
    if args.plot:
        from spn.studies.plot import plot_plan

        plot_plan(result, args.plot, force=args.force)
    if args.json:
        _args.print_json(result.as_dict())
    else:
        print(format_plan(result))
        if result.resource is not None:
            print(format_cost(result))
        if args.plot:
            print(f"plot: {args.plot}")
    return 0


def format_cost(result) -> str:
    """``spn plan --minimize cost``: the smallest and the cheapest value meeting the targets, side by side."""
    cost = result.cost_dict()
    unit = f"{cost['resource']}_hours"
    money = cost["price"] is not None
    head = ["", result.path, "mean (s)", cost["unit"]] + ([f"cost ({cost['price']['currency']})"] if money else [])
    table = [head]
    for name in ("smallest", "cheapest"):
        row = cost[name]
        if row is not None:
            table.append([name, str(row["value"]), f"{row['mean_execution_time']:.6g}", f"{row[unit]:.4g}"]
                         + ([f"{row['money']:.4g}"] if money else []))
    if len(table) == 1:
        return f"no {result.path} meets the targets: nothing to cost"
    widths = [max(len(r[k]) for r in table) for k in range(len(head))]
    lines = ["  ".join(c.ljust(w) if k == 0 else c.rjust(w) for k, (c, w) in enumerate(zip(r, widths))).rstrip()
             for r in table]
    lines.append(f"{cost['unit']} = {cost['resource']}s x mean execution time / 3600 (the {cost['resource']}s' "
                 "allocation for the run, driver excluded)" + (f"; price: {cost['price']['how']}" if money else ""))
    return "\n".join(lines)


def run_sweep(args) -> int:
    """``spn sweep``: a grid of points, streamed to --out."""
    from spn.studies.sweep import parse_grid, run_sweep

    if args.scheduler is not None and args.workers is not None:
        raise SpnError("--workers starts a local cluster and --scheduler uses an existing one: give one of them")
    _args.parse_option("--grid", parse_grid, args.grid)
    if args.resume and args.force:
        raise SpnError("--resume and --force contradict each other: --resume keeps the rows of --out, "
                       "--force replaces the file")
    if os.path.isdir(args.out):
        raise SpnError(f"--out {args.out} is a directory")
    summary = run_sweep(_args.source(args), args.grid, args.out, sets=args.set, percentiles=args.percentiles or (),
                        deadline=args.deadline, resume=args.resume, force=args.force, workers=args.workers,
                        scheduler=args.scheduler, plot=args.plot, seed=args.seed,
                        rel_precision=args.rel_precision, max_seconds=args.max_seconds, **_args.solver_options(args))
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
