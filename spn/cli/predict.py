"""``spn predict``: predicted execution time over a range of configurations, from a pilot's logs."""

from __future__ import annotations

from spn.defaults import MAX_STATES, SEED
from spn.cli import _args


def register(commands) -> None:
    predict = commands.add_parser(
        "predict",
        help="predict the execution time over a range of configurations from a pilot's Spark logs",
        description="For each value of --vary, carry the pilot's task times to that configuration (the "
        "what-if rules of spn fit --what-if) and estimate the mean execution time; print one row per "
        "configuration with a prediction interval for one run on the cluster (widened by a backtest of the "
        "logs when they ran at several configurations, else by the project's validation errors), the "
        "method's own numerical interval, the method and the rules used.",
    )
    predict.add_argument("logs", nargs="+", metavar="LOG", help="Spark event log(s) of the pilot configuration "
                         "(files, a folder of logs or a History Server URL)")
    _args.add_log_inputs(predict)
    predict.add_argument("--vary", required=True, metavar="KEY=A..B",
                         help="the setting to vary: KEY=A..B (every whole number) or KEY=V1,V2,..., e.g. "
                         "spark.executor.instances=3..24 or input-size=1GB,2GB")
    predict.add_argument("--what-if", action="append", default=[], metavar="KEY=VALUE",
                         help="a setting held at another value than the pilot's (repeatable)")
    predict.add_argument("--users", type=_args.positive_int, default=1, metavar="N",
                         help="users submitting the application (default: 1, the application alone)")
    predict.add_argument("--think-time", type=_args.positive_float, metavar="Z",
                         help="mean think time in seconds (needed with several users)")
    predict.add_argument("--seed", type=_args.non_negative_int, default=SEED, metavar="S",
                         help="random seed of the simulations (default: %(default)s, as every command)")
    predict.add_argument("--rel-precision", type=_args.positive_float, default=0.005, metavar="E",
                         help="relative half-width of each 95 %% interval (default: %(default)s)")
    predict.add_argument("--max-seconds", type=_args.positive_float, default=None, metavar="T",
                         help="each configuration's time budget, every method included (default: 30)")
    predict.add_argument("--max-states", type=_args.bounded_int(1, _args.MAX_STATES_OPTION),
                         default=MAX_STATES, metavar="N",
                         help="solve a configuration exactly only while its chain has at most N tangible states "
                         "(default: %(default)s, as spn solve), else by the job-alone method or a simulation")
    _args.add_json(predict)
    predict.add_argument("--level", type=_args.level, default=0.9, metavar="L",
                         help="level of the prediction interval of one run (default: %(default)s)")
    _args.add_plot(predict, "the predicted time against the varied value, the run interval as a band and the logs' "
                   "measured runs as points")
    predict.set_defaults(run=run_predict)

    backtest = commands.add_parser(
        "backtest",
        help="predict every configuration among the logs from the others, against its real runs",
        description="Group the logs by configuration (executors, cores, input size), predict each "
        "configuration from the logs of the smallest (--pilot smallest, what a user with one pilot does) or "
        "from each other one (--pilot others), and print every run's error and whether it fell inside its "
        "prediction interval (each interval computed from the other configurations' errors).",
    )
    backtest.add_argument("logs", nargs="+", metavar="LOG", help="Spark event logs of one application "
                          "(files, a folder of logs or a History Server URL)")
    _args.add_log_inputs(backtest)
    backtest.add_argument("--pilot", choices=("smallest", "others"), default="smallest",
                          help="which configurations predict (default: %(default)s)")
    backtest.add_argument("--level", type=_args.level, default=0.9, metavar="L",
                          help="level of the prediction intervals (default: %(default)s)")
    backtest.add_argument("--seed", type=_args.non_negative_int, default=SEED, metavar="S",
                          help="random seed of any simulation (default: %(default)s)")
    _args.add_json(backtest)
    _args.add_plot(backtest, "each configuration's prediction against its executors, the prediction intervals as "
                   "bands and the measured runs as points")
    backtest.set_defaults(run=run_backtest)


@_args.resolving_logs()
def run_predict(args) -> int:
    from spn.studies.predict import parse_vary, predict
    from spn.exceptions import ModelError

    if args.users > 1 and args.think_time is None:
        raise ModelError("several users need a think time", option="think_time")
    _args.check_plot(args)
    with _args.warnings_as_lines():
        rows = predict(args.logs, parse_vary(args.vary), args.what_if, users=args.users,
                       think_time=args.think_time, seed=args.seed, rel_precision=args.rel_precision,
                       max_seconds=args.max_seconds, max_states=args.max_states, level=args.level)
    if args.plot:
        from spn.studies.plot import plot_predictions

        plot_predictions(rows, _measured(args.logs, rows[0].key), args.plot, force=args.force)
    if args.json:
        _args.print_json({"logs": list(args.logs), "rows": [row.as_dict() for row in rows]})
        return 0
    width = max(max(len(str(row.value)) for row in rows), len(rows[0].key))
    level = f"{100 * rows[0].prediction.level:g} % run" if rows[0].prediction else "run"
    print(f"{rows[0].key:>{width}}  predicted (s)  {level + ' interval (s)':<20}  method's interval    "
          f"configuration")
    for row in rows:
        band = f"[{row.ci_low:.5g}, {row.ci_high:.5g}]"
        run = "" if row.prediction is None else f"[{row.prediction.low:.5g}, {row.prediction.high:.5g}]"
        print(f"{row.value:>{width}}  {row.mean_s:13.5g}  {run:<20}  {band:<19}  {row.target}")
    methods = list(dict.fromkeys(row.method for row in rows))
    for method in methods:
        which = [str(row.value) for row in rows if row.method == method]
        print(f"method: {method}" + ("" if len(methods) == 1 else f" ({', '.join(which)})"))
    if rows[0].prediction is not None:
        print(f"run interval: {rows[-1].prediction.how}")
    print("method's interval: the numerical error of the method (not the spread of real runs)")
    print("rules (last configuration):")
    for rule in rows[-1].rules:
        print(f"  - {rule}")
    if args.plot:
        print(f"plot: {args.plot}")
    return 0


#: what a log's run says of a varied key: its executors, cores or input size
_MEASURED = {"spark.executor.instances": "executors", "spark.executor.cores": "cores", "input-size": "input_bytes"}


def _measured(logs, key: str) -> list[tuple[float, float]]:
    """``(value of key, measured seconds)`` of each log (as spn backtest reads them); none for another key."""
    from spn.studies.backtest import read_run

    if key not in _MEASURED:
        return []
    return [(getattr(run, _MEASURED[key]), run.seconds) for run in map(read_run, logs)]


@_args.resolving_logs()
def run_backtest(args) -> int:
    from spn.pipeline import Budget
    from spn.studies.backtest import backtest

    _args.check_plot(args)
    with _args.warnings_as_lines():
        result = backtest(args.logs, pilot=args.pilot, level=args.level, budget=Budget(seed=args.seed))
    if args.plot:
        from spn.studies.plot import plot_backtest

        plot_backtest(result, args.plot, force=args.force)
    if args.json:
        _args.print_json(result.as_dict())
    else:
        print(result.summary() + (f"\nplot: {args.plot}" if args.plot else ""))
    return 0
