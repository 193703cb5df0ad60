"""The ``spn`` command.

    spn solve MODEL [--set PATH=VALUE]... [--method M] [--tol T] [--max-states N] [--json]
    spn simulate MODEL [--set ...] [--engine net|cluster] [--replications R] [--seed S] [--max-seconds T] [--json]
    spn compare MODEL [--set ...] [--max-seconds T] [--max-states N]
    spn export MODEL [--format dot|pnml|pnpro]
    spn draw MODEL -o net.svg|png|pdf [--force]
    spn fit LOG [LOG...] [--out MODEL [--force]] [--per-query] [--input-size SIZE] [--max-shape K] ...
    spn baseline LOG [LOG...] [--predict cores=4,8] [--scale 2 | --predict input-size=10GB] [--json]
    spn predict LOG [LOG...] --vary KEY=A..B [--what-if KEY=VALUE]... [--level L] [--json]
    spn backtest LOG [LOG...] [--pilot smallest|others] [--level L] [--json]
    spn report LOG [LOG...] -o report.html [--json FILE] [--target 'p95<=600'] [--price 0.05] [--max-seconds T]
    spn plan MODEL --vary PATH=LO..HI --target 'mean<=120' [--target 'p95<=150'] [--largest] [--json]
    spn sweep MODEL --grid PATH=V1,V2,... [--grid ...] --out CSV [--resume|--force] [--workers N]
              [--scheduler tcp://HOST:PORT] [--percentiles 50,90] [--plot PNG]
    spn schema
    spn --version

Exit status: 0 on success; 2 on bad input (a one-line ``spn: error: ...`` on
stderr, never a traceback), which includes what the input asks of the machine
(memory exhausted, a closed or full standard output); 1 on an unexpected failure
(one line too, and ``SPN_DEBUG=1`` shows the traceback) and, silently, when the
reader of a pipe left early (``spn export m.yaml | head -1``); 130 on Ctrl-C.
Files are written by the rule of :mod:`spn.io.output`: an existing file is
replaced only with ``--force``, and only by a complete one.

One module per group of commands (``solve``, ``simulate``, ``net``, ``plan``,
``fit``, ``predict``, ``report``), each with ``register(commands)``; shared options in ``_args``, tables
in ``format``. Nothing heavy is imported until a command runs.

>>> main(["solve", "models/mapreduce.yaml", "--json"])  # doctest: +SKIP
0
"""

from __future__ import annotations

import argparse
import gc
import os
import sys

from spn.cli import fit, net, plan, predict, report, simulate, solve
from spn.cli._args import one_line
from spn.cli.format import format_report
from spn.exceptions import SpnError

__all__ = ["command", "format_report", "main"]

#: the command modules, in the order of ``spn --help``
_COMMANDS = (solve, simulate, net, plan, fit, predict, report)


def main(argv=None) -> int:
    """Run ``spn`` with ``argv`` (default: the process arguments); return the exit status.

    >>> main(["schema"])  # doctest: +SKIP
    0
    """
    if sys.stdout is None:     # Python's stand-in for a closed file descriptor 1 (`spn ... >&-`)
        _error("standard output is closed: spn prints its results there (redirect it to a file or /dev/null)")
        return 2
    stdout = sys.stdout
    sys.stdout = _Stdout(stdout)
    args = None
    try:
        args = _parse(argv)
        if isinstance(args, int):
            return args
        status = args.run(args)
        sys.stdout.flush()     # a write error must surface here, not as a warning at exit
        return status
    except SpnError as error:
        _error((one_line(error) or type(error).__name__) + _flag_hint(error))
        return 2
    except BrokenPipeError:    # e.g. `spn export ... | head -1`: the reader left, nothing to say
        _silence(stdout)
        return 1
    except _OutputError as error:
        _silence(stdout)
        _error(f"cannot write to standard output: {error.args[0]}")
        return 2
    except KeyboardInterrupt:
        _error("interrupted")
        return 130
    except MemoryError:
        hint = "; lower --max-states or use a smaller configuration" if hasattr(args, "max_states") else ""
        _error(f"out of memory: the input needs more memory than this process may use{hint}")
        return 2
    except Exception as error:
        if os.environ.get("SPN_DEBUG", "") not in ("", "0"):
            raise
        _error(f"unexpected {type(error).__name__}: {one_line(error)} "
               "(rerun with SPN_DEBUG=1 to see the traceback)")
        return 1
    finally:
        sys.stdout = stdout


def command() -> int:
    """The ``spn`` script: :func:`main` on the process arguments, in a process that ends right after.

    Its objects are then frozen out of the garbage collector's reach: the interpreter's exit would
    otherwise sweep every one of them (Numba's and SciPy's registries: 0.15-0.25 s of a 1 s answer),
    to free memory the ending process gives back anyway.
    """
    status = main()
    gc.freeze()
    return status


def _parse(argv):
    """The parsed arguments, or the exit status when argparse stopped (--help, --version, a usage error)."""
    try:
        return _parser().parse_args(argv)
    except SystemExit as stop:
        return stop.code if isinstance(stop.code, int) else 0


class _OutputError(Exception):
    """Standard output refused a write (a full disk, a closed or broken file): not a bug of spn."""


class _Stdout:
    """``sys.stdout`` during a command: a failed write becomes :class:`_OutputError` (a broken pipe stays one)."""

    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._guard(self._stream.write, text)
        except _OutputError:
            if not isinstance(text, str):
                raise
        # a name from the command line that the terminal's encoding cannot show (undecodable bytes)
        encoding = getattr(self._stream, "encoding", None) or "utf-8"
        return self._guard(self._stream.write, text.encode(encoding, "backslashreplace").decode(encoding))

    def flush(self):
        return self._guard(self._stream.flush)

    def __getattr__(self, name):
        return getattr(self._stream, name)

    @staticmethod
    def _guard(call, *args):
        try:
            return call(*args)
        except BrokenPipeError:
            raise
        except (OSError, ValueError) as error:    # ValueError: the file object itself was closed
            raise _OutputError(str(getattr(error, "strerror", None) or error)) from None


def _silence(stream) -> None:
    """Point the file descriptor of ``stream`` at /dev/null, so that the flush at exit does not fail again."""
    try:
        os.dup2(os.open(os.devnull, os.O_WRONLY), stream.fileno())
    except (OSError, ValueError, AttributeError):    # not a real file (e.g. captured by a test)
        pass


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
    if sys.stderr is not None:
        # a name from the command line may hold undecodable bytes (lone surrogates): shown escaped, as on stdout
        encoding = getattr(sys.stderr, "encoding", None) or "utf-8"
        text = f"spn: error: {message}".encode(encoding, "backslashreplace").decode(encoding)
        print(text, file=sys.stderr)
