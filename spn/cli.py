"""The ``spn`` command.

    spn solve MODEL [--set PATH=VALUE]... [--method M] [--tol T] [--max-states N] [--json]
    spn schema
    spn --version

Exit status: 0 on success; 2 on bad input (a one-line ``spn: error: ...`` on
stderr, never a traceback); 1 on an unexpected failure (one line too, and
``SPN_DEBUG=1`` shows the traceback). The command never writes a file.

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
    return parser


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
