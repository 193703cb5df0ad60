"""``spn simulate`` (estimates with confidence intervals) and ``spn compare`` (analytic beside simulation)."""

from __future__ import annotations

import sys

from spn.cli import _args
from spn.cli.format import format_comparison, format_simulation


def register(commands) -> None:
    simulate = commands.add_parser(
        "simulate",
        help="estimate the measures by simulation, with confidence intervals",
        description="Simulate a model description (any task-time law) in independent replications and "
        "report the mean execution time, throughput and utilisation with Student-t confidence intervals.",
    )
    compare = commands.add_parser(
        "compare",
        help="analytic solution and the simulators side by side",
        description="Solve a model description analytically (Erlang/exponential laws only) and simulate it "
        "with the cluster simulator, and the net simulator too under scheduler.policy gate (the net models the gate "
        "only); flag analytic values outside a simulation interval. Under gate the net pools finished tasks across "
        "jobs, and the cluster simulator does the same so that every column answers one question (--per-job-tasks "
        "to keep each job's tasks its own: its flags then name the difference).",
    )
    for sub in (simulate, compare):
        _add_replication_options(sub)
    simulate.add_argument("--max-seconds", type=_args.positive_float, default=None, metavar="T",
                          help="stop after T seconds: the replication in progress is dropped, the finished ones "
                          "give the estimates (default: no limit)")
    # compare is a check, so it has a time budget by default (spn.studies.compare.COMPARE_SECONDS)
    compare.add_argument("--max-seconds", type=_args.positive_float, default=None, metavar="T",
                         help="stop after T seconds in all: the analytic solution first (its exploration gives up "
                         "after half of T), then each simulator gets an equal share of what is left (default: 120)")
    simulate.add_argument("--engine", choices=("net", "cluster", "compiled"), default=None,
                          help="net: the application net (the default under scheduler.policy gate, the "
                          "paper's model); cluster: the job-level simulator (the default for fifo, the policy of "
                          "a description that names none, and fair, which the net does not model; and the "
                          "only engine for query classes and queues); compiled: the job-level simulator "
                          "compiled with Numba, one class (tens of times faster; compiles once per install)")
    simulate.add_argument("--jobs", type=_args.positive_int, default=None, metavar="K",
                          help="job completions measured per replication (default: max(200, 20 N))")
    simulate.add_argument("--warmup-jobs", type=_args.non_negative_int, default=None, metavar="W",
                          help="job completions discarded at the start of each replication (default: 2 N + 10)")
    simulate.add_argument("--pool-finished-tasks", action="store_true",
                          help="cluster engine: count a phase's finished tasks across jobs, as the net does "
                          "(to measure what that modelling assumption changes)")
    simulate.set_defaults(run=run_simulate)
    _args.add_method(compare)
    # compare's own default (COMPARE_MAX_STATES) applies when the option is not given
    compare.add_argument("--max-states", type=_args.bounded_int(1, _args.MAX_STATES_OPTION), default=None,
                         metavar="N", help="skip the analytic solution past N tangible states (default: 200000)")
    compare.add_argument("--per-job-tasks", action="store_true",
                         help="cluster simulator: every job counts only its own finished tasks (a per-job system) "
                         "instead of pooling them as the net does under gate; analytic values outside its "
                         "intervals are then reported as a known difference of model")
    compare.set_defaults(run=run_compare)


def _add_replication_options(sub) -> None:
    """MODEL, --set, and how many replications, how precise, how long."""
    _args.add_model(sub)
    _args.add_set(sub, "override a value, e.g. workload.users=5 (repeatable)")
    replications = _args.bounded_int(2, _args.MAX_REPLICATIONS)
    sub.add_argument("--replications", type=replications, default=10, metavar="R",
                     help="replications run first (default: 10); with --rel-precision 0, exactly R")
    _args.add_seed(sub)
    sub.add_argument("--confidence", type=_args.probability, default=0.95, metavar="P",
                     help="confidence level of the intervals (default: 0.95)")
    sub.add_argument("--rel-precision", type=_args.non_negative_float, default=0.01, metavar="E",
                     help="add replications until the interval of the mean execution time has relative "
                     "half-width <= E (default: 0.01; 0 turns the rule off)")
    sub.add_argument("--max-replications", type=replications, default=2000, metavar="N",
                     help="stop adding replications at N (default: 2000)")
    _args.add_json(sub)


def _replication_options(args) -> dict:
    return {"seed": args.seed, "replications": args.replications, "confidence": args.confidence,
            "rel_precision": args.rel_precision, "max_replications": args.max_replications,
            "max_seconds": args.max_seconds, "progress": _args.progress(args)}


def run_simulate(args) -> int:
    """``spn simulate``: description -> replications -> estimates on stdout."""
    description = _args.description(args)
    from spn.simulation import simulate_description

    # no --engine: the net under the paper's gate, the cluster engine otherwise (runner.default_engine)
    report = simulate_description(description, engine=args.engine, jobs=args.jobs, warmup_jobs=args.warmup_jobs,
                                  pool_finished_tasks=args.pool_finished_tasks, **_replication_options(args))
    _warn_precision(report)
    _args.print_result(args, report.as_dict(), format_simulation)
    return 0


def run_compare(args) -> int:
    """``spn compare``: analytic vs the net and cluster simulators."""
    description = _args.description(args)
    from spn.studies.compare import compare_description

    options = _replication_options(args)
    given = {"max_states": args.max_states, "max_seconds": options.pop("max_seconds")}
    comparison = compare_description(description, method=args.method, **options,
                                     pool_finished_tasks=False if args.per_job_tasks else None,
                                     **{key: value for key, value in given.items() if value is not None})
    for report in comparison.simulations.values():
        _warn_precision(report)
    _args.print_result(args, comparison.as_dict(), format_comparison)
    return 0


def _warn_precision(report) -> None:
    # with query classes the rule is on the worst class's mean execution time
    widths = {f" (class {name})": c["mean_execution_time"].rel_half_width for name, c in report.classes.items()}
    which, width = max(widths.items(), key=lambda item: item[1]) if widths else (
        "", report.mean_execution_time.rel_half_width)
    if report.time_limited:
        print(f"spn: warning: {report.engine} simulation: stopped by --max-seconds after {report.replications} "
              f"replications, relative half-width {100 * width:.3g} %{which}",
              file=sys.stderr)
    elif not report.precision_met:
        print(f"spn: warning: {report.engine} simulation: relative half-width "
              f"{100 * width:.3g} %{which} is above --rel-precision "
              f"{100 * report.rel_precision:g} % after {report.replications} replications "
              f"(raise --max-replications or --max-seconds)", file=sys.stderr)
