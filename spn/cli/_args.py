"""Options shared by the commands, each defined once, and checked argparse types.

>>> positive_int("3"), probability("0.9")
(3, 0.9)
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import math
import sys
import warnings

from spn.defaults import MAX_STATES, RTOL, SEED
from spn.exceptions import ModelError, SpnError
from spn.limits import MAX_COUNT

METHODS = ("auto", "direct", "gmres", "bicgstab", "power", "sor", "gth")


def checked(convert, ok, expected: str):
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


def library_type(parse):
    """An argparse type from a library parser: its SpnError becomes the usage error."""

    def convert(text: str):
        try:
            return parse(text)
        except SpnError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    return convert


def bounded_int(low: int, high: int):
    """An argparse type for an integer in ``[low, high]``; the message says which bound was crossed.

    >>> bounded_int(1, 10)("10")
    10
    >>> bounded_int(1, 10)("1e30")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected an integer >= 1, got '1e30'
    >>> bounded_int(1, 10)("11")
    Traceback (most recent call last):
    ...
    argparse.ArgumentTypeError: expected an integer <= 10, got '11'
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:     # not an integer, or more digits than Python converts
            value = None
        if value is None or value < low:
            raise argparse.ArgumentTypeError(f"expected an integer >= {low}, got {text!r}")
        if value > high:
            raise argparse.ArgumentTypeError(f"expected an integer <= {high:,}, got {text!r}")
        return value

    return parse


# Upper bounds far beyond any real use, so that no option can ask for unbounded memory or
# overflow the C integers of NumPy and the engines.
#: tangible states: past about 10^8 no machine holds the chain anyway
MAX_STATES_OPTION = 1_000_000_000
#: replications of a simulation
MAX_REPLICATIONS = 1_000_000
#: the largest seed NumPy's SeedSequence uses whole (128 bits)
MAX_SEED = (1 << 128) - 1

non_negative_int = bounded_int(0, MAX_COUNT)
positive_int = bounded_int(1, MAX_COUNT)
probability = checked(float, lambda v: 0 < v < 1, "a number in (0, 1)")
non_negative_float = checked(float, lambda v: math.isfinite(v) and v >= 0, "a number >= 0")
positive_float = checked(float, lambda v: math.isfinite(v) and v > 0, "a number > 0")
#: the level of a prediction interval
level = checked(float, lambda v: 0.5 <= v <= 0.99, "a level in [0.5, 0.99]")


def parse_option(flag: str, parse, text):
    """``parse(text)`` for the value of ``flag``; a library error about it is restated as ``--flag: ...``.

    >>> parse_option("--vary", int, "3")
    3
    """
    try:
        return parse(text)
    except SpnError as error:
        message = str(error).removeprefix(flag.lstrip("-") + ": ")
        raise ModelError(f"{flag}: {message}") from None


def _percentiles(text: str) -> tuple:
    from spn.pipeline.question import parse_percentiles

    return library_type(parse_percentiles)(text)


# --------------------------------------------------------------------------
# Options
# --------------------------------------------------------------------------


def add_model(parser) -> None:
    parser.add_argument("model", metavar="MODEL", help="model description (.yaml, .yml or .json)")


def add_source(parser) -> None:
    """MODEL: a description, or a pilot's logs (:mod:`spn.pipeline.source`); read by :func:`source`."""
    parser.add_argument("model", nargs="+", metavar="MODEL",
                        help="a model description (.yaml, .yml or .json), or the logs of a pilot run (Spark event "
                             "logs, .jhist): then Spark keys (spark.executor.instances=...) apply the what-if rules")


def source(args):
    """The one path of MODEL, or the list of logs."""
    return args.model[0] if len(args.model) == 1 else list(args.model)


def add_set(parser, help: str = "override a value (repeatable)") -> None:
    parser.add_argument("--set", metavar="PATH=VALUE", action="append", default=[], help=help)


def add_method(parser, methods=METHODS, help: str = "steady-state solver (default: auto)") -> None:
    parser.add_argument("--method", choices=methods, default="auto", help=help)


def add_max_states(parser, help: str) -> None:
    parser.add_argument("--max-states", type=bounded_int(1, MAX_STATES_OPTION), default=MAX_STATES, metavar="N",
                        help=help)


def add_json(parser, help: str = "print one JSON object instead of a table") -> None:
    parser.add_argument("--json", action="store_true", help=help)


def add_solver_options(parser, *, tol_help: str = "solver tolerance (default: %(default)s)",
                       max_states_help: str = "stop exploring past N tangible states (default: %(default)s)",
                       json_help: str = "print one JSON object instead of a table", methods=METHODS,
                       method_help: str = "steady-state solver (default: auto)") -> None:
    """--method, --tol, --max-states and --json: what :func:`solver_options` reads."""
    add_method(parser, methods, method_help)
    parser.add_argument("--tol", type=positive_float, default=RTOL, metavar="T", help=tol_help)
    add_max_states(parser, max_states_help)
    add_json(parser, json_help)


def add_distribution(parser) -> None:
    """``--percentiles`` and ``--deadline``: the execution-time distribution of a tagged job."""
    parser.add_argument("--percentiles", type=_percentiles, default=None, metavar="Q,Q,...",
                        help="execution-time percentiles to report, e.g. 50,90,99 (from the distribution of a "
                        "tagged job's execution time; see docs/percentiles.md)")
    parser.add_argument("--deadline", type=positive_float, default=None, metavar="SECONDS",
                        help="also report P(execution time <= SECONDS)")


def add_log_inputs(parser) -> None:
    """Where logs may come from besides files (a folder, a History Server): the options :func:`log_inputs` reads."""
    group = parser.add_argument_group(
        "logs from a folder or a Spark History Server",
        "a LOG may also be a folder of event logs (spark.eventLog.dir: plain, compressed and rolling logs; "
        "those still being written are left out) or a History Server's URL (http://host:18080, or an "
        "application's page .../history/APP-ID), whose logs are downloaded to a temporary folder; these "
        "options choose among their applications (a model is of one application: give --app-name when they "
        "hold several)")
    group.add_argument("--app-name", metavar="NAME", help="the applications named NAME (exact, or a glob: 'q26*')")
    group.add_argument("--app-id", action="append", default=[], metavar="ID",
                       help="the application with this id (repeatable)")
    # the values spn.logs.inputs.STATUSES takes, spelled here so that building the parser imports no reader
    group.add_argument("--status", choices=("completed", "running", "any"), default="completed",
                       help="applications that ended (default), are still running, or any")
    group.add_argument("--since", metavar="DATE",
                       help="applications started at or after DATE (YYYY-MM-DD or YYYY-MM-DDTHH:MM, UTC unless "
                       "it says)")
    group.add_argument("--until", metavar="DATE", help="applications started at or before DATE")
    group.add_argument("--limit", type=positive_int, metavar="N", help="the N most recent applications")
    group.add_argument("--timeout", type=positive_float, default=30.0, metavar="SECONDS",
                       help="how long to wait for the History Server to connect or send more (default: 30)")


@contextlib.contextmanager
def log_inputs(args, items):
    """The local paths of ``items`` resolved by :func:`spn.logs.inputs.resolve_inputs` with the options of
    :func:`add_log_inputs`, one application; downloads are removed when the block ends. Notes go to stderr."""
    from spn.logs.inputs import resolve_inputs

    with resolve_inputs(items, app_name=args.app_name, app_id=args.app_id, status=args.status, since=args.since,
                        until=args.until, limit=args.limit, timeout=args.timeout, single=True) as inputs:
        for note in inputs.notes:
            print(f"spn: note: {one_line(note)}", file=sys.stderr)
        args.log_origins = dict(zip(inputs.paths, inputs.origins))
        yield inputs.paths


def resolving_logs(attribute: str = "logs"):
    """Decorate a command's ``run(args)`` so that it sees ``args.<attribute>`` as local paths, resolved by
    :func:`log_inputs` (a folder's logs, a History Server's downloads) for the time of the call."""

    def decorate(run):
        @functools.wraps(run)
        def resolved(args):
            with log_inputs(args, getattr(args, attribute)) as paths:
                setattr(args, attribute, paths)
                return run(args)

        return resolved

    return decorate


def add_seed(parser) -> None:
    parser.add_argument("--seed", type=bounded_int(0, MAX_SEED), default=SEED, metavar="S",
                        help=f"random seed (an integer >= 0; default: {SEED}, as every command); the same seed "
                             "repeats the run exactly")


def add_plot(parser, what: str) -> None:
    """--plot FILE (and --force to replace it): :func:`check_plot` checks it before any work."""
    parser.add_argument("--plot", metavar="FILE",
                        help=f"draw {what} (.png, .svg, .pdf or .jpg; an existing file is replaced only with --force)")
    parser.add_argument("--force", action="store_true", help="replace --plot if it exists")


def check_plot(args) -> None:
    """Refuse a --plot file that cannot be written, before any work."""
    if getattr(args, "plot", None):
        from spn.studies.plot import check_plot_target

        check_plot_target(args.plot, force=args.force)


def add_price(parser) -> None:
    """--price, --instance-type, --executors-per-instance and --currency: what :func:`price` reads."""
    parser.add_argument("--price", action="append", default=[], metavar="PER_HOUR|TYPE=PER_HOUR",
                        help="the price of an executor-hour (e.g. 0.05), or of an instance-hour by type, as on a "
                             "cloud bill (e.g. m5.xlarge=0.192; repeatable: a price list, --instance-type picks)")
    parser.add_argument("--instance-type", metavar="TYPE",
                        help="the instance type of the price list the executors run on")
    parser.add_argument("--executors-per-instance", type=positive_int, default=1, metavar="K",
                        help="executors one priced instance holds (default: 1): an executor-hour costs the "
                             "instance's price / K")
    parser.add_argument("--currency", default="USD", metavar="NAME", help="the currency of --price (default: USD)")


# --------------------------------------------------------------------------
# What the commands do with them
# --------------------------------------------------------------------------


def price(args, resource: str = "executor"):
    """The :class:`spn.studies.cost.Price` of --price and its companions (None: no --price); ``resource``
    names what one price-hour buys (``executor``, ``container``)."""
    from spn.studies.cost import parse_price

    return parse_price(args.price, instance_type=args.instance_type,
                       executors_per_instance=args.executors_per_instance, currency=args.currency,
                       resource=resource)


def solver_options(args) -> dict:
    """The keyword arguments of the library's solving functions, from --method/--tol/--max-states/--json."""
    return {"method": args.method, "rtol": args.tol, "max_states": args.max_states, "progress": progress(args)}


def question(args):
    """The :class:`spn.pipeline.Question` of --percentiles and --deadline."""
    from spn.pipeline import Question

    return Question(percentiles=getattr(args, "percentiles", None) or (), deadline=getattr(args, "deadline", None))


def budget(args):
    """The :class:`spn.pipeline.Budget` of --max-seconds, --max-states, --rel-precision, --tol, --seed;
    an option not given keeps the library's default."""
    from spn.pipeline import Budget

    given = {"max_seconds": getattr(args, "max_seconds", None), "max_states": getattr(args, "max_states", None),
             "rel_precision": getattr(args, "rel_precision", None), "rtol": getattr(args, "tol", None),
             "seed": getattr(args, "seed", None)}
    return Budget(progress=progress(args), **{key: value for key, value in given.items() if value is not None})


def progress(args) -> bool:
    """Progress on stderr: only to a terminal, and never beside --json."""
    return sys.stderr.isatty() and not args.json


def description(args):
    """The model description of MODEL with the --set overrides applied."""
    from spn.description import load_description

    return load_description(args.model, args.set)


def print_json(data) -> None:
    print(json.dumps(data, indent=2))


def print_result(args, result: dict, table) -> None:
    """``result`` as JSON with --json, else as the human ``table(result)``."""
    print(json.dumps(result, indent=2) if args.json else table(result))


def one_line(message) -> str:
    return " ".join(str(message).split())


@contextlib.contextmanager
def warnings_as_lines():
    """Warnings raised inside the block are printed as ``spn: warning: ...`` lines when it ends."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            for warning in caught:
                print(f"spn: warning: {one_line(warning.message)}", file=sys.stderr)
