"""``spn fit`` (execution logs -> model description) and ``spn baseline`` (the literature's predictions)."""

from __future__ import annotations

import argparse
import os
import sys

from spn.cli import _args
from spn.exceptions import ModelError, SpnError
from spn.limits import MAX_SHAPE

#: the most cores `spn baseline --cores-range` searches (every value of the range is evaluated)
MAX_CORES = 1_000_000
#: the largest --scale: a thousand times the largest input is already far outside what logs can predict
MAX_SCALE = 1e6
#: the largest input size a prediction is asked for (an exbibyte), so that sizes stay 64-bit integers
MAX_INPUT_BYTES = 1 << 60


def register(commands) -> None:
    _register_fit(commands)
    _register_baseline(commands)


def _add_logs(parser) -> None:
    parser.add_argument("logs", nargs="+", metavar="LOG",
                        help="Spark event log (a file in any codec, or an eventlog_v2_* folder), MapReduce .jhist, "
                        "a folder of logs, or a History Server URL")
    _args.add_log_inputs(parser)


def _add_max_shape(parser, help: str) -> None:
    parser.add_argument("--max-shape", type=_args.bounded_int(1, MAX_SHAPE), default=MAX_SHAPE, metavar="K",
                        help=f"{help} (default: %(default)s)")


def _register_fit(commands) -> None:
    fit = commands.add_parser(
        "fit",
        help="fit a model description to Spark event logs or MapReduce .jhist files",
        description="Fit a runnable model description to execution logs: phases = stages, edges from their "
        "parents, jobs chained in submission order, Erlang task times, containers = executor cores seen, "
        "driver delays as 1-task phases. Several logs of one application are pooled; --per-query models one "
        "query repeated in a log; --input-size predicts another input size from logs at different sizes.",
    )
    _add_logs(fit)
    fit.add_argument("-o", "--out", metavar="MODEL",
                     help="write the description here (.yaml with provenance comments, or .json); default: stdout")
    fit.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    fit.add_argument("--per-query", action="store_true",
                     help="model one query that the application ran repeatedly (users told apart by job group); "
                     "task times pooled over the repetitions, think time from the gaps")
    fit.add_argument("--warmup-runs", type=_args.non_negative_int, default=0, metavar="K",
                     help="with --per-query: leave out the first K runs of the query (a cold JVM)")
    fit.add_argument("--input-size", metavar="SIZE",
                     help="predict this input size (bytes, or with a unit: 64MB, 10GB, 2GiB) from two or more "
                     "logs at different input sizes")
    _add_max_shape(fit, "cap on every Erlang shape (the same default as spn predict and every command that fits; spn solve answers wide chains by the job-alone method or simulation)")
    fit.add_argument("--method", choices=("mle", "moments"), default="mle",
                     help="Erlang fitting method (default: mle)")
    fit.add_argument("--empirical", action="store_true",
                     help="keep the measured task times (distribution: empirical; for `spn simulate`)")
    fit.add_argument("--think-time", type=_args.positive_float, metavar="Z",
                     help="mean think time in seconds (default: estimated with --per-query)")
    fit.add_argument("--users", type=_args.positive_int, metavar="N",
                     help="users in the model (default: the users seen with --per-query, else 1); more than one "
                     "needs --think-time unless --per-query measures it")
    fit.add_argument("--containers", type=_args.positive_int, metavar="C",
                     help="containers in the model (default: the executor cores the log saw)")
    fit.add_argument("--stage-groups", action="store_true",
                     help="merge the stages of a job that ran at the same time into one phase")
    fit.add_argument("--no-delays", action="store_true",
                     help="leave out the driver delay phases (model task time only)")
    fit.add_argument("--allow-incomplete", action="store_true",
                     help="fit the jobs that finished in the log of an application that did not finish")
    fit.add_argument("--name", help="model name (default: from the first log's name)")
    fit.add_argument("--what-if", action="append", default=[], metavar="KEY=VALUE",
                     help="fit the configuration the logs did not run: spark.executor.instances, "
                     "spark.executor.cores, spark.sql.shuffle.partitions, spark.default.parallelism, input-size, "
                     "hosts, executor-cpus (repeatable; rules in docs/design.md)")
    fit.add_argument("--report", action="store_true",
                     help="print how well each phase's law fits its task times: samples, mean, shape, "
                     "Kolmogorov-Smirnov distance and p-value, verdict at 1 %%, and what the shape cap changed "
                     "(on stdout with --out, else on stderr so that the model alone goes to stdout)")
    fit.set_defaults(run=run_fit)


@_args.resolving_logs()
def run_fit(args) -> int:
    """``spn fit``: logs -> description file (or stdout)."""
    from spn.fit import fit_logs, write_model

    if args.out and os.path.exists(args.out) and not args.force:
        raise ModelError(f"{args.out}: already exists; give --force to overwrite it")
    if args.out and os.path.exists(args.out) and any(
            os.path.exists(log) and os.path.samefile(args.out, log) for log in args.logs):
        raise ModelError(f"{args.out}: is one of the logs read; the model goes to another file", option="out")
    with _args.warnings_as_lines():
        model = fit_logs(
            args.logs, per_query=args.per_query, input_size=args.input_size, max_shape=args.max_shape,
            method=args.method, empirical=args.empirical, think_time=args.think_time, users=args.users,
            containers=args.containers, stage_groups=args.stage_groups, delays=not args.no_delays,
            allow_incomplete=args.allow_incomplete, name=args.name, warmup_runs=args.warmup_runs,
            what_if=args.what_if, origins=[args.log_origins.get(log, log) for log in args.logs],
        )
    for note in model.warnings:
        print(f"spn: note: {_args.one_line(note)}", file=sys.stderr)
    for warning in model.law_warnings:
        print(f"spn: warning: {_args.one_line(warning)}", file=sys.stderr)
    if not args.out:
        sys.stdout.write(model.to_yaml())
        if args.report:
            _print_report(model, sys.stderr)
        return 0
    write_model(model, args.out, force=args.force)
    desc = model.description
    delays = sum(1 for name in model.phase_notes if name.startswith("driver-"))
    from spn.description.model import THINK_TIME_PLACEHOLDER

    # the placeholder is right for this one user only: say so where the user looks first
    placeholder = (f" (think time {desc['workload']['think_time']:g} s: a placeholder, give "
                   "--set workload.think_time=SECONDS with more users)"
                   if THINK_TIME_PLACEHOLDER in desc["reference"] else "")
    print(f"wrote {args.out}: {len(desc['phases'])} phases ({len(desc['phases']) - delays} stage, {delays} delay), "
          f"{desc['cluster']['containers']} containers, {desc['workload']['users']} user(s){placeholder}; "
          f"next: spn solve {args.out}" + ("" if not args.empirical else f" / spn simulate {args.out}"))
    if args.report:
        _print_report(model, sys.stdout)
    return 0


def _print_report(model, stream) -> None:
    """``spn fit --report``: the goodness-of-fit table (:func:`spn.fit.write.fit_report`)."""
    from spn.fit.write import fit_report

    print(fit_report(model.description), file=stream)


# --------------------------------------------------------------------------
# spn baseline
# --------------------------------------------------------------------------


def _register_baseline(commands) -> None:
    baseline = commands.add_parser(
        "baseline",
        help="predict with PERIDOT, Sparklens, ideal scaling, Ernest, Amdahl, ... beside the SAN model",
        description="From the same logs, predict the execution time of each target (input size x cores) with "
        "the baselines of the literature and with the SAN model (spn fit + spn solve), in one table. A method "
        "that cannot use the given logs says why instead of giving a number. Cores are task slots (executors x "
        "cores per executor); the single-run methods (PERIDOT from one run, Sparklens' replay of the run's own "
        "tasks) predict other core counts at a log's own input size.",
    )
    _add_logs(baseline)
    baseline.add_argument("--predict", action="append", default=[], type=_targets, metavar="KEY=V1,V2,...",
                          help="cores=4,8 (task slots, executors x cores per executor; default: the cores "
                          "of the logs), input-size=1GB,2GB or scale=2,4 "
                          "(x the largest input of the logs; default 1) (repeatable)")
    baseline.add_argument("--scale", type=_targets_of("scale"), metavar="S1,S2,...",
                          help="same as --predict scale=S1,S2,...")
    baseline.add_argument("--cores-range", type=_cores_range, metavar="LO..HI",
                          help="where to look for the cores with the least fitted runtime "
                          "(default: 1..4 x the most cores of a log or target)")
    baseline.add_argument("--no-san", action="store_true", help="leave out the SAN model (no fit, no solve)")
    _add_max_shape(baseline, "cap on the Erlang shapes of the SAN model, as in spn fit")
    _args.add_max_states(baseline, "stop exploring the SAN model past N tangible states (default: %(default)s)")
    _args.add_json(baseline)
    _args.add_plot(baseline, "each method's prediction against the cores (or the input size) and the measured runs")
    baseline.set_defaults(run=run_baseline)


@_args.resolving_logs()
def run_baseline(args) -> int:
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
    _args.check_plot(args)
    with _args.warnings_as_lines():
        references = [reference_run(path) for path in args.logs]
    largest = max(r.input_bytes for r in references)
    if "input-size" in asked:
        sizes = asked["input-size"]
    elif largest > 0:
        sizes = [round(s * largest) for s in asked.get("scale", [1.0])]
        if min(sizes) < 1:
            raise SpnError(f"--scale {min(asked['scale']):g} of the logs' {largest:,} bytes of input is "
                           "less than a byte", option="scale")
    elif asked.get("scale", [1.0]) != [1.0]:
        raise SpnError("--scale needs the input size of the logs, and they report none (Input Metrics)")
    else:
        sizes = [0]
    cores = asked.get("cores") or sorted({r.cores for r in references})
    targets = [Target(int(size), int(k)) for size in sizes for k in cores]
    with _args.warnings_as_lines():
        report = compare_logs(args.logs, targets, cores_range=args.cores_range, san=not args.no_san,
                              max_shape=args.max_shape, max_states=args.max_states, references=references)
    if args.plot:
        from spn.studies.plot import plot_baseline

        plot_baseline(report, args.plot, force=args.force)
    if args.json:
        _args.print_json(report.as_dict())
    else:
        print(format_table(report) + (f"\nplot: {args.plot}" if args.plot else ""))
    return 0


def _targets(text: str) -> tuple:
    """``KEY=V1,V2,...`` of ``spn baseline --predict``: cores (integers >= 1), input-size, or scale (> 0)."""
    key, sep, values = text.partition("=")
    key = key.strip()
    if not sep or key not in ("cores", "input-size", "scale"):
        raise argparse.ArgumentTypeError(f"expected cores=..., input-size=... or scale=..., got {text!r}")
    return _targets_of(key)(values)


def _input_size(text: str) -> int:
    from spn.logs.sizes import parse_size

    size = _args.library_type(parse_size)(text)
    if size > MAX_INPUT_BYTES:
        raise argparse.ArgumentTypeError(f"expected an input size of at most 1 EiB, got {text!r}")
    return size


def _targets_of(key: str):
    convert = {"cores": _args.bounded_int(1, MAX_CORES), "scale": _scale, "input-size": _input_size}[key]

    def parse(text: str) -> tuple:
        items = [item.strip() for item in text.split(",")]
        if not text.strip() or any(not item for item in items):
            raise argparse.ArgumentTypeError(f"expected a comma-separated list of values for {key}, got {text!r}")
        return key, sorted(set(convert(item) for item in items))

    return parse


_scale = _args.checked(float, lambda v: 0 < v <= MAX_SCALE, f"a number > 0 and <= {MAX_SCALE:g}")


def _cores_range(text: str) -> tuple:
    low, sep, high = text.partition("..")
    try:
        low, high = int(low), int(high)
    except ValueError:
        low = high = 0
    if not sep or not 1 <= low <= high <= MAX_CORES:
        raise argparse.ArgumentTypeError(f"expected LO..HI with 1 <= LO <= HI <= {MAX_CORES:,}, got {text!r}")
    return low, high
