"""The ``spn`` command.

    spn solve MODEL [--set PATH=VALUE]... [--method M] [--tol T] [--max-states N] [--json]
    spn simulate MODEL [--set ...] [--engine net|cluster] [--replications R] [--seed S] [--json]
    spn compare MODEL [--set ...]
    spn export MODEL [--format dot]
    spn draw MODEL -o net.svg|png|pdf
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
    solve.set_defaults(run=_solve)

    show_schema = commands.add_parser(
        "schema",
        help="print the JSON Schema of model descriptions",
        description="Print the JSON Schema (draft 2020-12) that model descriptions must satisfy.",
    )
    show_schema.set_defaults(run=_schema)
    _add_simulation_commands(commands)
    _add_drawing_commands(commands)
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


def _int_at_least_two(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 2:
        raise argparse.ArgumentTypeError(f"expected an integer >= 2, got {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def _probability(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0 < value < 1:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1), got {text!r}")
    return value


def _non_negative_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"expected a number >= 0, got {text!r}")
    return value


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a number > 0, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}")
    return value


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
