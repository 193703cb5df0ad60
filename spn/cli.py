"""The ``spn`` command.

    spn solve MODEL [--set PATH=VALUE]... [--method M] [--tol T] [--max-states N] [--json]
    spn simulate MODEL [--set ...] [--engine net|cluster] [--replications R] [--seed S] [--json]
    spn compare MODEL [--set ...]
    spn export MODEL [--format dot]
    spn draw MODEL -o net.svg|png|pdf
    spn fit LOG [LOG...] [--out MODEL [--force]] [--per-query] [--input-size SIZE] [--max-shape K] ...
    spn baseline LOG [LOG...] [--predict cores=4,8] [--scale 2 | --predict input-size=10GB] [--json]
    spn plan MODEL --vary PATH=LO..HI --target 'mean<=120' [--target 'p95<=150'] [--largest] [--json]
    spn sweep MODEL --grid PATH=V1,V2,... [--grid ...] --out CSV [--resume|--force] [--workers N]
              [--scheduler tcp://HOST:PORT] [--percentiles 50,90] [--plot PNG]
    spn schema
    spn --version

Exit status: 0 on success; 2 on bad input (a one-line ``spn: error: ...`` on
stderr, never a traceback); 1 on an unexpected failure (one line too, and
``SPN_DEBUG=1`` shows the traceback). Only ``spn draw`` writes a file, the one
named by ``-o``, and only once the drawing is complete.

>>> main(["solve", "models/mapreduce.yaml", "--json"])  # doctest: +SKIP
0
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import math
import os
import sys

from spn.exceptions import SpnError
from spn.io.description import load_description, schema

METHODS = ("auto", "direct", "gmres", "bicgstab", "power", "sor")


def main(argv=None) -> int:
    """Run ``spn`` with ``argv`` (default: the process arguments); return the exit status.

    >>> main(["schema"])  # doctest: +SKIP
    0
    """
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as stop:  # --help, --version, or a usage error already printed
        return stop.code if isinstance(stop.code, int) else 0
    try:
        return args.run(args)
    except SpnError as error:
        _error(_one_line(error) or type(error).__name__)
        return 2
    except BrokenPipeError:  # e.g. `spn solve ... --json | head -1`: the reader left
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # quiet exit-time flush
        return 1
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except Exception as error:
        if os.environ.get("SPN_DEBUG", "") not in ("", "0"):
            raise
        _error(
            f"unexpected {type(error).__name__}: {_one_line(error)} "
            "(rerun with SPN_DEBUG=1 to see the traceback)"
        )
        return 1


# --------------------------------------------------------------------------
# Commands
# --------------------------------------------------------------------------


def _solve(args) -> int:
    """``spn solve``: description -> pipeline -> report on stdout."""
    if str(args.model).lower().endswith(".pnml"):
        return _solve_pnml(args)
    description = load_description(args.model, args.set)
    if args.percentiles is not None or args.deadline is not None:
        return _solve_distribution(args, description)  # issue 7: the tagged job's distribution
    from spn.pipeline import solve_description  # imported here: the heavy part, only when solving

    report = solve_description(
        description,
        method=args.method,
        tol=args.tol,
        max_states=args.max_states,
        progress=sys.stderr.isatty() and not args.json,
    )
    result = report.as_dict()
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(format_report(result))
    return 0


def _solve_pnml(args) -> int:
    """``spn solve net.pnml``: a plain net written by another tool; mean tokens and throughputs."""
    if args.set:
        raise SpnError("--set applies to model descriptions, not to PNML nets")
    from spn.io.pnml import load_pnml
    from spn.pipeline import solve_net

    report = solve_net(load_pnml(args.model), method=args.method, tol=args.tol,
                       max_states=args.max_states, progress=sys.stderr.isatty() and not args.json)
    result = report.as_dict()
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    solver = result["solver"]
    lines = [f"{'net':<22}{result['model']}", f"{'tangible states':<22}{result['tangible_states']}",
             f"{'transitions':<22}{result['transitions']}",
             f"{'solver':<22}{solver['method']}, {solver['iterations']} iterations, residual "
             f"{solver['residual']:.2g}, {'converged' if solver['converged'] else 'NOT converged'}",
             "", f"{'place':<30}{'mean tokens':>14}"]
    lines += [f"{name:<30}{value:>14.6g}" for name, value in result["places"].items()]
    lines += ["", f"{'activity':<30}{'throughput':>14}"]
    lines += [f"{name:<30}{value:>14.6g}" for name, value in result["activities"].items()]
    print("\n".join(lines))
    return 0


def _schema(args) -> int:
    """``spn schema``: the JSON Schema of model descriptions."""
    print(json.dumps(schema(), indent=2))
    return 0


def format_report(result: dict) -> str:
    """The human table of ``spn solve`` for a report's ``as_dict()``.

    >>> print(format_report({"model": "m", "users": 3, "think_time": 10.0, "containers": 4,
    ...     "mean_execution_time": 12.5, "throughput": 0.133, "utilization": 0.5,
    ...     "tangible_states": 10, "transitions": 30,
    ...     "solver": {"method": "direct", "iterations": 1, "residual": 1e-16, "converged": True},
    ...     "timings": {"explore_s": 0.01, "solve_s": 0.002, "total_s": 0.015}}).splitlines()[4])
    mean execution time  12.5 s
    """
    solver = result["solver"]
    timings = result["timings"]
    converged = "converged" if solver["converged"] else "NOT CONVERGED"
    rows = [
        ("model", result["model"]),
        ("users (N)", f"{result['users']}"),
        ("think time (Z)", f"{result['think_time']:g} s"),
        ("containers (C)", f"{result['containers']}"),
        ("mean execution time", f"{result['mean_execution_time']:.6g} s"),
        ("throughput", f"{result['throughput']:.6g} jobs/s"),
        ("utilisation", f"{100 * result['utilization']:.2f} %"),
        ("tangible states", f"{result['tangible_states']:,}"),
        ("transitions", f"{result['transitions']:,}"),
        (
            "solver",
            f"{solver['method']}, {solver['iterations']} iterations, "
            f"residual {solver['residual']:.3g}, {converged}",
        ),
        (
            "time",
            f"explore {timings['explore_s']:.3f} s, solve {timings['solve_s']:.3f} s, "
            f"total {timings['total_s']:.3f} s",
        ),
    ]
    width = max(len(label) for label, _ in rows)
    return "\n".join(f"{label:<{width}}  {value}" for label, value in rows)


# --------------------------------------------------------------------------
# Arguments
# --------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line: ``spn: error: ...``."""

    def error(self, message):
        self.exit(2, f"spn: error: {message} (see '{self.prog} --help')\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="spn",
        description="Predict big-data job execution times with stochastic Petri nets solved as CTMCs.",
    )
    parser.add_argument("--version", action="version", version=f"spn {_version()}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser, required=True)

    solve = commands.add_parser(
        "solve",
        help="solve a model description analytically",
        description="Solve a model description as a CTMC and report the mean execution time.",
    )
    solve.add_argument("model", metavar="MODEL", help="model description (.yaml, .yml or .json)")
    solve.add_argument(
        "--set",
        metavar="PATH=VALUE",
        action="append",
        default=[],
        help="override a value, e.g. workload.users=5, cluster.containers=8, phases.map.tasks=10 (repeatable)",
    )
    solve.add_argument("--method", choices=METHODS, default="auto", help="steady-state solver (default: auto)")
    solve.add_argument(
        "--tol", type=_positive_float, default=1e-10, metavar="T", help="solver tolerance (default: 1e-10)"
    )
    solve.add_argument(
        "--max-states",
        type=_positive_int,
        default=2_000_000,
        metavar="N",
        help="stop exploring past N tangible states (default: 2000000)",
    )
    solve.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    _add_distribution_options(solve)
    solve.set_defaults(run=_solve)

    show_schema = commands.add_parser(
        "schema",
        help="print the JSON Schema of model descriptions",
        description="Print the JSON Schema (draft 2020-12) that model descriptions must satisfy.",
    )
    show_schema.set_defaults(run=_schema)
    _add_simulation_commands(commands)
    _add_drawing_commands(commands)
    _add_planning_commands(commands)
    _add_fit_command(commands)
    _add_baseline_command(commands)
    return parser


# --------------------------------------------------------------------------
# spn export / spn draw
# --------------------------------------------------------------------------


def _add_drawing_commands(commands) -> None:
    """The ``export`` and ``draw`` sub-commands."""
    export = commands.add_parser(
        "export",
        help="print the composed net of a model (DOT)",
        description="Print the composed net of a model description, sub-models as clusters.",
    )
    export.add_argument("model", metavar="MODEL", help="model description (.yaml, .yml or .json)")
    export.add_argument("--set", metavar="PATH=VALUE", action="append", default=[],
                        help="override a value (repeatable)")
    export.add_argument("--format", choices=("dot", "pnml", "pnpro"), default="dot",
                        help="dot (drawing), pnml (PNML, Storm/GreatSPN dialect) or pnpro "
                        "(GreatSPN project; keeps server semantics for Storm) (default: dot)")
    export.set_defaults(run=_export)
    draw = commands.add_parser(
        "draw",
        help="draw the composed net of a model with Graphviz",
        description="Draw the composed net of a model description to an SVG, PNG or PDF file "
        "(needs Graphviz's dot program).",
    )
    draw.add_argument("model", metavar="MODEL", help="model description (.yaml, .yml or .json)")
    draw.add_argument("--set", metavar="PATH=VALUE", action="append", default=[],
                      help="override a value (repeatable)")
    draw.add_argument("-o", "--output", required=True, metavar="FILE",
                      help="the drawing: .svg, .png or .pdf (replaced only once complete)")
    draw.set_defaults(run=_draw)


def _composed_dot(args) -> str:
    from spn.io.dot import to_dot
    from spn.models.dag import build

    return to_dot(build(load_description(args.model, args.set)).net)


def _export(args) -> int:
    """``spn export``: the composed net on stdout, as DOT, PNML or GreatSPN .pnpro."""
    if args.format == "dot":
        sys.stdout.write(_composed_dot(args))
        return 0
    from spn.io import pnml
    from spn.models.dag import build

    net = build(load_description(args.model, args.set)).net
    sys.stdout.write(pnml.to_pnml(net) if args.format == "pnml" else pnml.to_pnpro(net))
    return 0


def _draw(args) -> int:
    """``spn draw``: render the composed net with Graphviz."""
    from spn.io.dot import render

    print(render(_composed_dot(args), args.output))
    return 0


# --------------------------------------------------------------------------
# spn fit (issue 6)
# --------------------------------------------------------------------------


def _add_fit_command(commands) -> None:
    """The ``fit`` sub-command: execution logs -> model description."""
    fit = commands.add_parser(
        "fit",
        help="fit a model description to Spark event logs or MapReduce .jhist files",
        description="Fit a runnable model description to execution logs: phases = stages, edges from their "
        "parents, jobs chained in submission order, Erlang task times, containers = executor cores seen, "
        "driver delays as 1-task phases. Several logs of one application are pooled; --per-query models one "
        "query repeated in a log; --input-size predicts another input size from logs at different sizes.",
    )
    fit.add_argument("logs", nargs="+", metavar="LOG",
                     help="Spark event log (file, .gz, or eventlog_v2_* folder) or MapReduce .jhist")
    fit.add_argument("-o", "--out", metavar="MODEL",
                     help="write the description here (.yaml with provenance comments, or .json); default: stdout")
    fit.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    fit.add_argument("--per-query", action="store_true",
                     help="model one query that the application ran repeatedly (users told apart by job group); "
                     "task times pooled over the repetitions, think time from the gaps")
    fit.add_argument("--warmup-runs", type=_non_negative_int, default=0, metavar="K",
                     help="with --per-query: leave out the first K runs of the query (a cold JVM)")
    fit.add_argument("--input-size", metavar="SIZE",
                     help="predict this input size (bytes, or with a unit: 64MB, 10GB, 2GiB) from two or more "
                     "logs at different input sizes")
    fit.add_argument("--max-shape", type=_positive_int, default=10, metavar="K",
                     help="cap on every Erlang shape, so that `spn solve` stays tractable (default: 10)")
    fit.add_argument("--method", choices=("mle", "moments"), default="mle",
                     help="Erlang fitting method (default: mle)")
    fit.add_argument("--empirical", action="store_true",
                     help="keep the measured task times (distribution: empirical; for `spn simulate`)")
    fit.add_argument("--think-time", type=_positive_float, metavar="Z",
                     help="mean think time in seconds (default: estimated with --per-query)")
    fit.add_argument("--users", type=_positive_int, metavar="N",
                     help="users in the model (default: the users seen with --per-query, else 1)")
    fit.add_argument("--containers", type=_positive_int, metavar="C",
                     help="containers in the model (default: the executor cores the log saw)")
    fit.add_argument("--stage-groups", action="store_true",
                     help="merge the stages of a job that ran at the same time into one phase")
    fit.add_argument("--no-delays", action="store_true",
                     help="leave out the driver delay phases (model task time only)")
    fit.add_argument("--allow-incomplete", action="store_true",
                     help="fit the jobs that finished in the log of an application that did not finish")
    fit.add_argument("--name", help="model name (default: from the first log's name)")
    fit.set_defaults(run=_fit)


def _fit(args) -> int:
    """``spn fit``: logs -> description file (or stdout)."""
    import warnings

    from spn.exceptions import ModelError
    from spn.io.logmodel import fit_logs, write_model

    if args.out and os.path.exists(args.out) and not args.force:
        raise ModelError(f"{args.out}: already exists; give --force to overwrite it")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model = fit_logs(
                args.logs, per_query=args.per_query, input_size=args.input_size, max_shape=args.max_shape,
                method=args.method, empirical=args.empirical, think_time=args.think_time, users=args.users,
                containers=args.containers, stage_groups=args.stage_groups, delays=not args.no_delays,
                allow_incomplete=args.allow_incomplete, name=args.name, warmup_runs=args.warmup_runs,
            )
        finally:
            for warning in caught:
                print(f"spn: warning: {_one_line(warning.message)}", file=sys.stderr)
    for note in model.warnings:
        print(f"spn: note: {_one_line(note)}", file=sys.stderr)
    if not args.out:
        sys.stdout.write(model.to_yaml())
        return 0
    write_model(model, args.out, force=args.force)
    desc = model.description
    delays = sum(1 for name in model.phase_notes if name.startswith("driver-"))
    print(f"wrote {args.out}: {len(desc['phases'])} phases ({len(desc['phases']) - delays} stage, {delays} delay), "
          f"{desc['cluster']['containers']} containers, {desc['workload']['users']} user(s); "
          f"next: spn solve {args.out}" + ("" if not args.empirical else f" / spn simulate {args.out}"))
    return 0


def _add_baseline_command(commands) -> None:
    """The ``baseline`` sub-command: the literature's formulas beside the SAN model (issue 8)."""
    baseline = commands.add_parser(
        "baseline",
        help="predict with PERIDOT, ideal scaling, Ernest, Amdahl, Gustafson, ... beside the SAN model",
        description="From the same logs, predict the execution time of each target (input size x cores) with "
        "the baselines of the literature and with the SAN model (spn fit + spn solve), in one table. A method "
        "that cannot use the given logs says why instead of giving a number.",
    )
    baseline.add_argument("logs", nargs="+", metavar="LOG",
                          help="Spark event log (file, .gz, or eventlog_v2_* folder) or MapReduce .jhist")
    baseline.add_argument("--predict", action="append", default=[], type=_baseline_targets,
                          metavar="KEY=V1,V2,...",
                          help="cores=4,8 (default: the cores of the logs), input-size=1GB,2GB or scale=2,4 "
                          "(x the largest input of the logs; default 1) (repeatable)")
    baseline.add_argument("--scale", type=_baseline_targets_of("scale"), metavar="S1,S2,...",
                          help="same as --predict scale=S1,S2,...")
    baseline.add_argument("--cores-range", type=_cores_range, metavar="LO..HI",
                          help="where to look for the cores with the least fitted runtime "
                          "(default: 1..4 x the most cores of a log or target)")
    baseline.add_argument("--no-san", action="store_true", help="leave out the SAN model (no fit, no solve)")
    baseline.add_argument("--max-shape", type=_positive_int, default=10, metavar="K",
                          help="cap on the Erlang shapes of the SAN model, as in spn fit (default: 10)")
    baseline.add_argument("--max-states", type=_positive_int, default=2_000_000, metavar="N",
                          help="stop exploring the SAN model past N tangible states (default: 2000000)")
    baseline.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    baseline.set_defaults(run=_baseline)


def _baseline(args) -> int:
    """``spn baseline``: every method's prediction for every target, in one table."""
    from spn.baselines.compare import Target, compare_logs, format_table
    from spn.baselines.runs import reference_run

    asked = {}
    for key, values in args.predict + ([args.scale] if args.scale else []):
        if key in asked:
            raise SpnError(f"--predict {key}=... given twice: list all values in one")
        asked[key] = values
    if "scale" in asked and "input-size" in asked:
        raise SpnError("give the target input either as input-size=... or as scale=..., not both")
    references = [reference_run(path) for path in args.logs]
    largest = max(r.input_bytes for r in references)
    if "input-size" in asked:
        sizes = asked["input-size"]
    elif largest > 0:
        sizes = [round(s * largest) for s in asked.get("scale", [1.0])]
    elif asked.get("scale", [1.0]) != [1.0]:
        raise SpnError("--scale needs the input size of the logs, and they report none (Input Metrics)")
    else:
        sizes = [0]
    cores = asked.get("cores") or sorted({r.cores for r in references})
    targets = [Target(int(size), int(k)) for size in sizes for k in cores]
    report = compare_logs(args.logs, targets, cores_range=args.cores_range, san=not args.no_san,
                          max_shape=args.max_shape, max_states=args.max_states, references=references)
    print(json.dumps(report.as_dict(), indent=2) if args.json else format_table(report))
    return 0


def _baseline_targets(text: str) -> tuple:
    """``KEY=V1,V2,...`` of ``spn baseline --predict``: cores (integers >= 1), input-size, or scale (> 0)."""
    key, sep, values = text.partition("=")
    key = key.strip()
    if not sep or key not in ("cores", "input-size", "scale"):
        raise argparse.ArgumentTypeError(f"expected cores=..., input-size=... or scale=..., got {text!r}")
    return _baseline_targets_of(key)(values)


def _baseline_targets_of(key: str):
    convert = {"cores": _positive_int, "scale": _positive_float, "input-size": _input_size}[key]

    def parse(text: str) -> tuple:
        items = [item.strip() for item in text.split(",")]
        if not text.strip() or any(not item for item in items):
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of values for {key}, got {text!r}")
        return key, sorted(set(convert(item) for item in items))

    return parse


def _input_size(text: str) -> int:
    from spn.io.logmodel import parse_size

    try:
        return parse_size(text)
    except SpnError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _cores_range(text: str) -> tuple:
    low, sep, high = text.partition("..")
    try:
        low, high = int(low), int(high)
    except ValueError:
        low = high = 0
    if not sep or not 1 <= low <= high:
        raise argparse.ArgumentTypeError(f"expected LO..HI with 1 <= LO <= HI, got {text!r}")
    return low, high


# --------------------------------------------------------------------------
# spn simulate / spn compare (issue 5)
# --------------------------------------------------------------------------


def _add_simulation_commands(commands) -> None:
    """The ``simulate`` and ``compare`` sub-commands."""
    simulate = commands.add_parser(
        "simulate",
        help="estimate the measures by simulation, with confidence intervals",
        description="Simulate a model description (any task-time law) in independent replications and "
        "report the mean execution time, throughput and utilisation with Student-t confidence intervals.",
    )
    compare = commands.add_parser(
        "compare",
        help="analytic solution and both simulators side by side",
        description="Solve a model description analytically (Erlang/exponential laws only) and simulate it "
        "with the net and the cluster simulators; flag analytic values outside a simulation interval.",
    )
    for sub in (simulate, compare):
        sub.add_argument("model", metavar="MODEL", help="model description (.yaml, .yml or .json)")
        sub.add_argument("--set", metavar="PATH=VALUE", action="append", default=[],
                         help="override a value, e.g. workload.users=5 (repeatable)")
        sub.add_argument("--replications", type=_int_at_least_two, default=10, metavar="R",
                         help="replications run first (default: 10); with --rel-precision 0, exactly R")
        sub.add_argument("--seed", type=_seed, default=None, metavar="S",
                         help="random seed (an integer >= 0); the same seed repeats the run exactly")
        sub.add_argument("--confidence", type=_probability, default=0.95, metavar="P",
                         help="confidence level of the intervals (default: 0.95)")
        sub.add_argument("--rel-precision", type=_non_negative_float, default=0.01, metavar="E",
                         help="add replications until the interval of the mean execution time has relative "
                         "half-width <= E (default: 0.01; 0 turns the rule off)")
        sub.add_argument("--max-replications", type=_int_at_least_two, default=2000, metavar="N",
                         help="stop adding replications at N (default: 2000)")
        sub.add_argument("--max-seconds", type=_positive_float, default=None, metavar="T",
                         help="stop adding replications after T seconds of simulation")
        sub.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    simulate.add_argument("--engine", choices=("net", "cluster"), default="net",
                          help="net: the application net (default); cluster: the job-level simulator")
    simulate.add_argument("--jobs", type=_positive_int, default=None, metavar="K",
                          help="job completions measured per replication (default: max(200, 20 N))")
    simulate.add_argument("--warmup-jobs", type=_non_negative_int, default=None, metavar="W",
                          help="job completions discarded at the start of each replication (default: 2 N + 10)")
    simulate.add_argument("--pool-finished-tasks", action="store_true",
                          help="cluster engine: count a phase's finished tasks across jobs, as the net does "
                          "(to measure what that modelling assumption changes)")
    simulate.set_defaults(run=_simulate)
    compare.add_argument("--method", choices=METHODS, default="auto", help="steady-state solver (default: auto)")
    compare.add_argument("--max-states", type=_positive_int, default=2_000_000, metavar="N",
                         help="skip the analytic solution past N tangible states (default: 2000000)")
    compare.set_defaults(run=_compare)


def _simulate(args) -> int:
    """``spn simulate``: description -> replications -> estimates on stdout."""
    description = load_description(args.model, args.set)
    from spn.simulation import simulate_description

    report = simulate_description(
        description, engine=args.engine, seed=args.seed, replications=args.replications,
        confidence=args.confidence, rel_precision=args.rel_precision, max_replications=args.max_replications,
        max_seconds=args.max_seconds, jobs=args.jobs, warmup_jobs=args.warmup_jobs,
        pool_finished_tasks=args.pool_finished_tasks, progress=sys.stderr.isatty() and not args.json,
    )
    _warn_precision(report)
    result = report.as_dict()
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(format_simulation(result))
    return 0


def _compare(args) -> int:
    """``spn compare``: analytic vs the net and cluster simulators."""
    description = load_description(args.model, args.set)
    from spn.simulation import compare_description

    comparison = compare_description(
        description, seed=args.seed, replications=args.replications, confidence=args.confidence,
        rel_precision=args.rel_precision, max_replications=args.max_replications, max_seconds=args.max_seconds,
        method=args.method, max_states=args.max_states, progress=sys.stderr.isatty() and not args.json,
    )
    for report in comparison.simulations.values():
        _warn_precision(report)
    if args.json:
        print(json.dumps(comparison.as_dict(), indent=2))
    else:
        print(format_comparison(comparison.as_dict()))
    return 0


def _warn_precision(report) -> None:
    if not report.precision_met:
        print(f"spn: warning: {report.engine} simulation: relative half-width "
              f"{100 * report.mean_execution_time.rel_half_width:.3g} % is above --rel-precision "
              f"{100 * report.rel_precision:g} % after {report.replications} replications "
              f"(raise --max-replications or --max-seconds)", file=sys.stderr)


def _interval(value, low, high, digits=6) -> str:
    return f"{value:.{digits}g}  [{low:.{digits}g}, {high:.{digits}g}]"


def format_simulation(result: dict) -> str:
    """The human table of ``spn simulate`` for a report's ``as_dict()``."""
    level = f"{100 * result['confidence']:g}% CI"
    precision = result["rel_precision"]
    rule = ("fixed count" if precision is None else
            f"precision {100 * precision:g} % {'met' if result['precision_met'] else 'NOT MET'}")
    rows = [
        ("model", result["model"]),
        ("engine", result["engine"] + (" (finished tasks pooled across jobs, as in the net)"
                                       if result.get("pool_finished_tasks") else "")),
        ("users (N)", f"{result['users']}"),
        ("think time (Z)", f"{result['think_time']:g} s"),
        ("containers (C)", f"{result['containers']}"),
        ("mean execution time", f"{_interval(result['mean_execution_time'], result['ci_low'], result['ci_high'])} s"
                                f"  ({level}, +/-{100 * result['rel_half_width']:.2g} %)"),
        ("throughput", f"{_interval(result['throughput'], result['throughput_ci_low'], result['throughput_ci_high'])}"
                       f" jobs/s"),
        ("utilisation", _interval(100 * result["utilization"], 100 * result["utilization_ci_low"],
                                  100 * result["utilization_ci_high"], 4) + " %"),
        ("replications", f"{result['replications']} x {result['jobs_per_replication']} jobs "
                         f"(warm-up {result['warmup_jobs']}), {rule}"),
        ("events", f"{result['events']:,} timed, {result['instant_firings']:,} instantaneous"),
        ("seed", f"{result['seed']}"),
        ("time", f"{result['seconds']:.3f} s"),
    ]
    width = max(len(label) for label, _ in rows)
    return "\n".join(f"{label:<{width}}  {value}" for label, value in rows)


def format_comparison(result: dict) -> str:
    """The human table of ``spn compare`` for a comparison's ``as_dict()``."""
    labels = {"mean_execution_time": "mean execution time (s)", "throughput": "throughput (jobs/s)",
              "utilization": "utilisation"}
    engines = list(result["simulations"])
    level = next(iter(result["simulations"].values()))["confidence"] if engines else 0.95
    header = ["measure", "analytic"] + [f"{e} simulation ({100 * level:g}% CI)" for e in engines]
    table = [header]
    for measure, row in result["measures"].items():
        line = [labels[measure], "n/a" if row["analytic"] is None else f"{row['analytic']:.6g}"]
        for e in engines:
            cell = row[e]
            mark = " *" if cell["contains_analytic"] is False else ""
            line.append(f"{_interval(cell['value'], cell['ci_low'], cell['ci_high'])}{mark}")
        table.append(line)
    widths = [max(len(r[k]) for r in table) for k in range(len(header))]
    lines = [f"model {result['model']}"]
    if result["analytic"] is not None:
        lines[0] += f" (analytic: {result['analytic']['tangible_states']:,} tangible states)"
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in table]
    if result["analytic_note"]:
        lines.append(f"analytic: {result['analytic_note']}")
    for engine, sim in result["simulations"].items():
        lines.append(f"{engine}: {sim['replications']} replications, {sim['events']:,} events, "
                     f"{sim['seconds']:.2f} s")
    if result["flags"]:
        lines.append("* analytic value outside the simulation interval:")
        lines += [f"  {flag}" for flag in result["flags"]]
    lines.append(f"seed {result['seed']}")
    return "\n".join(lines)


# --------------------------------------------------------------------------
# spn solve --percentiles/--deadline, spn plan, spn sweep (issue 7)
# --------------------------------------------------------------------------


def _add_distribution_options(sub) -> None:
    """``--percentiles`` and ``--deadline``: the execution-time distribution of a tagged job."""
    sub.add_argument("--percentiles", type=_percentile_list, default=None, metavar="Q,Q,...",
                     help="execution-time percentiles to report, e.g. 50,90,99 (from the distribution of a "
                     "tagged job's execution time; see docs/percentiles.md)")
    sub.add_argument("--deadline", type=_positive_float, default=None, metavar="SECONDS",
                     help="also report P(execution time <= SECONDS)")


def _solve_distribution(args, description) -> int:
    """``spn solve`` with percentiles or a deadline: the report plus the distribution."""
    from spn.plan import percentile_key, solve_with_distribution

    evaluation = solve_with_distribution(
        description, percentiles=args.percentiles or (), deadline=args.deadline, distribution=True,
        method=args.method, tol=args.tol, max_states=args.max_states,
        progress=sys.stderr.isatty() and not args.json,
    )
    result = evaluation.as_dict()
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    lines = [format_report(result)]
    width = len("mean execution time")
    for q, t in evaluation.percentiles.items():
        lines.append(f"{'P' + percentile_key(q) + ' execution time':<{width}}  {t:.6g} s")
    if evaluation.deadline is not None:
        lines.append(f"{f'P(R <= {evaluation.deadline:g} s)':<{width}}  {evaluation.deadline_probability:.6g}")
    d = result["execution_time_distribution"]
    lines.append(f"{'distribution':<{width}}  {d['method']}, {d['iterations']:,} steps, "
                 f"{d['transient_states']:,} states, {d['seconds']:.3f} s")
    print("\n".join(lines))
    return 0


def _add_planning_commands(commands) -> None:
    """The ``plan`` and ``sweep`` sub-commands."""
    plan = commands.add_parser(
        "plan",
        help="smallest value of a parameter that meets an execution-time target",
        description="Find the smallest value of one parameter (e.g. cluster.containers) whose solution meets "
        "every target (mean<=S, pQ<=S), by bisection; the metric is checked for monotonicity along every value "
        "solved, and evidence against it is reported.",
    )
    plan.add_argument("model", metavar="MODEL", help="model description (.yaml, .yml or .json)")
    plan.add_argument("--vary", required=True, metavar="PATH=LO..HI",
                      help="the parameter and its integer range (or a list V1,V2,...), e.g. cluster.containers=1..400")
    plan.add_argument("--target", required=True, action="append", metavar="TARGET",
                      help="mean<=SECONDS or pQ<=SECONDS, e.g. 'mean<=120', 'p95<=150' (repeatable: all must hold)")
    plan.add_argument("--set", metavar="PATH=VALUE", action="append", default=[],
                      help="override a value (repeatable)")
    plan.add_argument("--largest", action="store_true",
                      help="the largest value meeting the targets instead (e.g. how many users fit)")
    plan.add_argument("--probes", type=_non_negative_int, default=3, metavar="K",
                      help="interior values solved before bisecting, to check monotonicity (default: 3)")
    plan.add_argument("--exhaustive", action="store_true", help="solve every value of the range (no bisection)")
    plan.add_argument("--method", choices=METHODS, default="auto", help="steady-state solver (default: auto)")
    plan.add_argument("--tol", type=_positive_float, default=1e-10, metavar="T", help="solver tolerance")
    plan.add_argument("--max-states", type=_positive_int, default=2_000_000, metavar="N",
                      help="stop exploring past N tangible states (default: 2000000)")
    plan.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    plan.set_defaults(run=_plan)

    sweep = commands.add_parser(
        "sweep",
        help="solve a grid of configurations (on Dask), streaming rows to a CSV",
        description="Solve every combination of the --grid values and append one CSV row per point as it "
        "finishes; --resume continues an interrupted sweep without solving a finished point again. Points run "
        "on an embedded local Dask cluster (--workers), an existing one (--scheduler), or in this process "
        "(--workers 0).",
    )
    sweep.add_argument("model", metavar="MODEL", help="model description (.yaml, .yml or .json)")
    sweep.add_argument("--grid", required=True, action="append", metavar="PATH=VALUES",
                       help="a parameter and its values: V1,V2,... or LO..HI (repeatable; the first varies slowest)")
    sweep.add_argument("--out", required=True, metavar="CSV", help="the results file (rows appended as points finish)")
    sweep.add_argument("--set", metavar="PATH=VALUE", action="append", default=[],
                       help="override a value at every point (repeatable)")
    _add_distribution_options(sweep)
    sweep.add_argument("--resume", action="store_true",
                       help="continue the sweep in --out: keep its rows, solve only the missing points")
    sweep.add_argument("--force", action="store_true", help="replace --out if it exists")
    sweep.add_argument("--workers", type=_non_negative_int, default=None, metavar="N",
                       help="worker processes of the embedded Dask cluster (default: CPU count; "
                       "0: solve in this process without Dask)")
    sweep.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                       help="use the Dask cluster of this scheduler (its workers need spn installed)")
    sweep.add_argument("--plot", metavar="PNG",
                       help="draw execution time against the first --grid parameter, one line per value of "
                       "the second, with a band between the lowest and highest --percentiles")
    sweep.add_argument("--method", choices=METHODS, default="auto", help="steady-state solver (default: auto)")
    sweep.add_argument("--tol", type=_positive_float, default=1e-10, metavar="T", help="solver tolerance")
    sweep.add_argument("--max-states", type=_positive_int, default=2_000_000, metavar="N",
                       help="a point past N tangible states fails (recorded in its error column)")
    sweep.add_argument("--json", action="store_true", help="print a JSON summary instead of a line")
    sweep.set_defaults(run=_sweep)


def _plan(args) -> int:
    """``spn plan``: bisection over one parameter."""
    from spn.plan import plan

    result = plan(args.model, args.vary, args.target, sets=args.set, largest=args.largest, probes=args.probes,
                  exhaustive=args.exhaustive, method=args.method, tol=args.tol, max_states=args.max_states,
                  progress=sys.stderr.isatty() and not args.json)
    if args.json:
        print(json.dumps(result.as_dict(), indent=2))
        return 0
    metrics = list(dict.fromkeys(t.metric for t in result.targets))
    table = [[result.path, *(f"{m} (s)" for m in metrics), "meets"]]
    for p in result.points:
        mark = "  <- answer" if p.value == result.answer else ""
        table.append([str(p.value), *(f"{p.metrics[m]:.6g}" for m in metrics), ("yes" if p.met else "no") + mark])
    widths = [max(len(row[k]) for row in table) for k in range(len(table[0]))]
    print(result.summary())
    for line in result.evidence:
        print(f"evidence against monotonicity: {line}")
    print("\n".join("  ".join(c.rjust(w) if k < len(widths) - 1 else c for k, (c, w) in enumerate(zip(row, widths)))
                    for row in table))
    print(f"{len(result.points)} values solved ({result.method}) in {result.seconds:.2f} s")
    return 0


def _sweep(args) -> int:
    """``spn sweep``: a grid of points, streamed to --out."""
    from spn.sweep import run_sweep

    if args.scheduler is not None and args.workers is not None:
        raise SpnError("--workers starts a local cluster and --scheduler uses an existing one: give one of them")
    summary = run_sweep(args.model, args.grid, args.out, sets=args.set, percentiles=args.percentiles or (),
                        deadline=args.deadline, resume=args.resume, force=args.force, workers=args.workers,
                        scheduler=args.scheduler, method=args.method, tol=args.tol, max_states=args.max_states,
                        progress=sys.stderr.isatty() and not args.json, plot=args.plot)
    if args.json:
        print(json.dumps(summary.as_dict(), indent=2))
    else:
        print(f"{summary.out}: {summary.points} points ({summary.skipped} already there, {summary.computed} solved, "
              f"{summary.failed} failed) in {summary.seconds:.2f} s on {summary.runner}"
              + (f"; plot {summary.plot}" if summary.plot else ""))
    if summary.failed:
        print(f"spn: warning: {summary.failed} point(s) failed: see the error column of {summary.out}",
              file=sys.stderr)
    return 0


def _percentile_list(text: str) -> tuple:
    from spn.plan import parse_percentiles

    try:
        return parse_percentiles(text)
    except SpnError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _checked(convert, ok, expected: str):
    """An argparse type: ``convert`` the text, then insist on ``ok(value)``; else say what was expected."""

    def parse(text: str):
        try:
            value = convert(text)
        except ValueError:
            value = None
        if value is None or not ok(value):
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
        return value

    return parse


_int_at_least_two = _checked(int, lambda v: v >= 2, "an integer >= 2")
_non_negative_int = _checked(int, lambda v: v >= 0, "an integer >= 0")
_seed = _non_negative_int
_probability = _checked(float, lambda v: 0 < v < 1, "a number in (0, 1)")
_non_negative_float = _checked(float, lambda v: math.isfinite(v) and v >= 0, "a number >= 0")
_positive_float = _checked(float, lambda v: math.isfinite(v) and v > 0, "a number > 0")
_positive_int = _checked(int, lambda v: v >= 1, "an integer >= 1")


def _version() -> str:
    """The installed version, or the package's own ``__version__`` in a source checkout."""
    try:
        return importlib.metadata.version("spn")
    except importlib.metadata.PackageNotFoundError:
        import spn

        return getattr(spn, "__version__", "(unknown version)")


def _error(message: str) -> None:
    print(f"spn: error: {message}", file=sys.stderr)


def _one_line(error) -> str:
    return " ".join(str(error).split())


if __name__ == "__main__":
    sys.exit(main())
