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

One module per group of commands (``solve``, ``simulate``, ``net``, ``plan``,
``fit``), each with ``register(commands)``; shared options in ``_args``, tables
in ``format``. Nothing heavy is imported until a command runs.

>>> main(["solve", "models/mapreduce.yaml", "--json"])  # doctest: +SKIP
0
"""

from __future__ import annotations

import argparse
import os
import sys

from spn.cli import fit, net, plan, simulate, solve
from spn.cli._args import one_line
from spn.cli.format import format_report
from spn.exceptions import SpnError

__all__ = ["format_report", "main"]

#: the command modules, in the order of ``spn --help``
_COMMANDS = (solve, simulate, net, plan, fit)


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
        _error((one_line(error) or type(error).__name__) + _flag_hint(error))
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
        _error(f"unexpected {type(error).__name__}: {one_line(error)} "
               "(rerun with SPN_DEBUG=1 to see the traceback)")
        return 1


class _Parser(argparse.ArgumentParser):
    """argparse, but usage errors are one line: ``spn: error: ...``."""

    def error(self, message):
        self.exit(2, f"spn: error: {message} (see '{self.prog} --help')\n")


class _Version(argparse.Action):
    """``--version``, looked up only when asked (package metadata is slow to import)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest, nargs=0, default=default,
                         help=help or "show program's version number and exit")

    def __call__(self, parser, namespace, values, option_string=None):
        print(f"spn {_version()}")
        parser.exit()


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="spn",
        description="Predict big-data job execution times with stochastic Petri nets solved as CTMCs.",
    )
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser, required=True)
    for module in _COMMANDS:
        module.register(commands)
    return parser


def _version() -> str:
    """The installed version, or the package's own ``__version__`` in a source checkout."""
    import importlib.metadata

    try:
        return importlib.metadata.version("spn")
    except importlib.metadata.PackageNotFoundError:
        import spn

        return getattr(spn, "__version__", "(unknown version)")


def _flag_hint(error: SpnError) -> str:
    """The flag that sets the keyword argument the library error names, e.g. `` (--max-states)``."""
    return f" (--{error.option.replace('_', '-')})" if error.option else ""


def _error(message: str) -> None:
    print(f"spn: error: {message}", file=sys.stderr)
