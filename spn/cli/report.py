"""``spn report``: a run's logs as one self-contained HTML page (and its JSON)."""

from __future__ import annotations

import sys

from spn.cli import _args
from spn.defaults import SEED
from spn.exceptions import SpnError


def register(commands) -> None:
    from spn.cli.fit import _add_logs

    report = commands.add_parser(
        "report",
        help="a self-contained HTML report of Spark runs: timeline, stages, what-if and multi-user curves, cost",
        description="Read the event logs of one application and write one HTML page that opens offline (inline "
        "plots, no script or font to fetch): the pilot run's timeline (stages, executors busy and idle), a table "
        "of its stages (tasks, duration, skew, tasks per slot, the fit of their task-time laws), its critical "
        "path, ideal time and idle executor-hours, the predicted time over executor counts, cores per executor "
        "and input sizes with prediction intervals beside Sparklens and ideal scaling and the measured runs, the "
        "time with several users, and "
        "the cost of each configuration in executor-hours (and money with --price), with the smallest and the "
        "cheapest meeting --target. --json writes the same content for scripts. The pilot is the configuration "
        "with the fewest task slots; every point is asked of spn's pipeline within --max-seconds in all.",
    )
    _add_logs(report)
    report.add_argument("-o", "--out", required=True, metavar="HTML", help="the page to write")
    report.add_argument("--json", metavar="FILE", help="also write the report's content as JSON")
    report.add_argument("--force", action="store_true",
                        help="replace --out and --json if they exist (reports spn wrote only)")
    report.add_argument("--executors", type=_int_list, metavar="N,N,...",
                        help="executor counts of the what-if curve (default: those of the logs and the smallest "
                             "times 1, 2, 4 and 8)")
    report.add_argument("--cores", type=_int_list, metavar="N,N,...",
                        help="cores per executor of the what-if curve over cores, at the pilot's executors (default: "
                             "1, 2, 4, 8 and the pilot's)")
    report.add_argument("--input-sizes", type=_size_list, metavar="SIZE,SIZE,...",
                        help="input sizes of the what-if curve over the input, at the pilot's executors and cores "
                             "(e.g. 100GB,400GB; default: the pilot's times 0.5, 1, 2 and 4)")
    report.add_argument("--users", type=_int_list, default=None, metavar="N,N,...",
                        help="users of the multi-user curve (default: 1,2,4,8)")
    report.add_argument("--think-time", type=_args.positive_float, metavar="Z",
                        help="mean think time of the users, seconds (default: the pilot's measured time)")
    report.add_argument("--target", metavar="TARGET",
                        help="mean<=SECONDS or p95<=SECONDS (the prediction level's upper percentile): the smallest "
                             "and the cheapest executor count meeting it")
    _args.add_price(report)
    report.add_argument("--level", type=_args.level, default=0.9, metavar="L",
                        help="level of the prediction intervals (default: %(default)s)")
    report.add_argument("--method", choices=("auto", "exact", "job-alone", "simulation"), default="auto",
                        help="the pipeline's method at every point (default: auto, the most exact that fits)")
    report.add_argument("--max-seconds", type=_args.positive_float, default=None, metavar="T",
                        help="the time of all the report's evaluations together (default: 60); a point that would "
                             "overrun it is simulated, or left out, and the page says so")
    report.add_argument("--rel-precision", type=_args.positive_float, default=None, metavar="E",
                        help="relative half-width of a simulated point's 95 %% interval (default: 0.01)")
    report.add_argument("--seed", type=_args.non_negative_int, default=SEED, metavar="S",
                        help="random seed of the simulations (default: %(default)s, as every command)")
    report.set_defaults(run=run_report)


def _int_list(text: str) -> tuple[int, ...]:
    import argparse

    try:
        values = tuple(int(v) for v in text.split(","))
    except ValueError:
        values = ()
    if not values or min(values) < 1 or max(values) > 1_000_000:
        raise argparse.ArgumentTypeError(f"expected whole numbers from 1 to 1,000,000 separated by commas, "
                                         f"got {text!r}")
    return values


def _size_list(text: str) -> tuple[int, ...]:
    import argparse

    from spn.fit.whatif import parse_changes

    try:
        return tuple(parse_changes({"input-size": v})["input-size"] for v in text.split(","))
    except SpnError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("what-if input-size: ")) from None


@_args.resolving_logs()
def run_report(args) -> int:
    from spn.report.data import MAX_SECONDS, REL_PRECISION, USERS, build_report
    from spn.report.output import check_outputs, write_outputs
    from spn.studies.targets import parse_target

    for option, values in (("--executors", args.executors), ("--cores", args.cores),
                           ("--input-sizes", args.input_sizes)):
        if values is not None and len(set(values)) > 64:
            raise SpnError(f"{option}: more than 64 values in one report")
    target = None if args.target is None else _args.parse_option("--target", parse_target, args.target)
    price = _args.price(args)
    check_outputs(args.out, args.json, force=args.force, inputs=args.logs)
    with _args.warnings_as_lines():
        data = build_report(args.logs, executors=args.executors, cores=args.cores, input_sizes=args.input_sizes,
                            users=args.users or USERS,
                            think_time=args.think_time, target=target, price=price, level=args.level, seed=args.seed,
                            rel_precision=args.rel_precision or REL_PRECISION,
                            max_seconds=args.max_seconds or MAX_SECONDS, method=args.method,
                            progress=sys.stderr.isatty())
        write_outputs(data, args.out, args.json, force=args.force)
    print(f"wrote {args.out}" + (f" and {args.json}" if args.json else "") +
          f": {len(data['runs'])} run(s), {len(data['what_if']['rows'])} executor counts, "
          f"{len(data['what_if_cores']['rows'])} core counts, {len(data['what_if_input']['rows'])} input sizes, "
          f"{len(data['users']['rows'])} user counts in {data['budget']['seconds']:.1f} s")
    for note in data["budget"]["notes"]:
        print(f"spn: note: {note}", file=sys.stderr)
    return 0
