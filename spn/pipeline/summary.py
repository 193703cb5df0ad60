"""The tables of an evaluation: what ``spn solve`` prints, and :meth:`spn.pipeline.Result.summary`.

Each function reads the JSON object of a result (``Result.as_dict()``), so that the table and
``--json`` show the same numbers.

>>> print(_rows([("model", "m"), ("users (N)", "3")]))
model      m
users (N)  3
"""

from __future__ import annotations

#: label width of the solve table's extra rows (percentiles, deadline, distribution)
_SOLVE_WIDTH = len("mean execution time")


def _rows(rows) -> str:
    """``label  value`` lines, the labels padded to the longest."""
    width = max(len(label) for label, _ in rows)
    return "\n".join(f"{label:<{width}}  {value}" for label, value in rows)


def _columns(table, right_aligned: int = 0) -> list:
    """The rows of ``table`` (lists of cells) with padded columns; the first ``right_aligned`` are right-aligned."""
    widths = [max(len(row[k]) for row in table) for k in range(len(table[0]))]
    return ["  ".join(cell.rjust(w) if k < right_aligned else cell.ljust(w)
                      for k, (cell, w) in enumerate(zip(row, widths))).rstrip() for row in table]


def _interval(value, low, high, digits=6) -> str:
    return f"{value:.{digits}g}  [{low:.{digits}g}, {high:.{digits}g}]"


def format_report(result: dict) -> str:
    """The human table of ``spn solve`` for a report's ``as_dict()``.

    >>> print(format_report({"model": "m", "users": 3, "think_time": 10.0, "containers": 4,
    ...     "mean_execution_time": 12.5, "throughput": 0.133, "utilization": 0.5,
    ...     "tangible_states": 10, "transitions": 30,
    ...     "solver": {"method": "direct", "iterations": 1, "residual": 1e-16, "converged": True},
    ...     "timings": {"explore_s": 0.01, "solve_s": 0.002, "total_s": 0.015}}).splitlines()[5])
    mean execution time  12.5 s
    """
    if result.get("method") == "simulation":
        return _format_simulated(result)
    if result.get("method") == "job-alone":
        return _format_alone(result)
    if result.get("method") == "decomposition":
        return _format_decomposition(result)
    if "classes" in result:
        return _format_exact_classes(result)
    solver = result["solver"]
    timings = result["timings"]
    converged = "converged" if solver["converged"] else "NOT CONVERGED"
    return _rows([
        ("model", result["model"]),
        ("method", "exact (CTMC)"),
        *_policy_row(result),
        ("users (N)", f"{result['users']}"),
        ("think time (Z)", f"{result['think_time']:g} s"),
        ("containers (C)", f"{result['containers']}"),
        ("mean execution time", f"{result['mean_execution_time']:.6g} s"),
        ("throughput", f"{result['throughput']:.6g} jobs/s"),
        ("utilisation", f"{100 * result['utilization']:.2f} %"),
        ("tangible states", f"{result['tangible_states']:,}"),
        ("transitions", f"{result['transitions']:,}"),
        ("solver", f"{solver['method']}, {solver['iterations']} iterations, "
                   f"residual {solver['residual']:.3g}, {converged}"),
        ("time", f"explore {timings['explore_s']:.3f} s, solve {timings['solve_s']:.3f} s, "
                 f"total {timings['total_s']:.3f} s"),
    ])


def _policy_row(result: dict) -> list:
    """The ``scheduling policy`` row, when the result names one: a description that names none gets
    ``fifo``, not the paper's ``gate``, and the two give different numbers."""
    return [("scheduling policy", result["policy"])] if result.get("policy") else []


def _format_alone(result: dict) -> str:
    """The ``spn solve`` table when the job-alone method answered: R, its bounds and why not exact."""
    return _rows([
        ("model", result["model"]),
        ("method", "job alone (one user, order statistics)" + _why(result)),
        ("users (N)", "1"),
        ("think time (Z)", f"{result['think_time']:g} s"),
        ("containers (C)", f"{result['containers']}"),
        ("mean execution time", f"{result['mean_execution_time']:.6g} s  bounds [{result['low']:.6g}, "
                                f"{result['high']:.6g}] (+/- {100 * result['error_bound']:.2g} % at most)"),
        ("throughput", f"{result['throughput']:.6g} jobs/s"),
        ("utilisation", f"{100 * result['utilization']:.2f} %"),
        ("time", f"total {result['timings']['total_s']:.3f} s"),
    ])


def _format_decomposition(result: dict) -> str:
    """The ``spn solve`` table when the decomposition answered: R, its interval and what it is made of."""
    curve = result["throughput_curve"]
    return _rows([
        ("model", result["model"]),
        ("method", "decomposition (flow-equivalent server)" + _why(result)),
        *_policy_row(result),
        ("users (N)", f"{result['users']}"),
        ("think time (Z)", f"{result['think_time']:g} s"),
        ("containers (C)", f"{result['containers']}"),
        ("mean execution time", f"{result['mean_execution_time']:.6g} s  [{result['low']:.6g}, {result['high']:.6g}] "
                                f"(+/- {100 * result['error_bound']:.2g} %: X(k) intervals and model error "
                                f"{result['model_error_s']:.3g} s)"),
        ("throughput", f"{result['throughput']:.6g} jobs/s"),
        ("utilisation", f"{100 * result['utilization']:.2f} %"),
        ("X(k)", ", ".join(f"{x['k']}: {x['X']:.4g}" for x in curve) + " jobs/s"),
        ("time", f"total {result['timings']['total_s']:.3f} s"),
    ])


def _format_simulated(result: dict) -> str:
    """The ``spn solve`` table when the answer comes from a simulation: the interval and why."""
    r = result["mean_execution_time"]
    classes = result.get("classes")
    who = ([("classes", f"{len(classes)}, {result['users']} users in all")] if classes else
           [*_policy_row(result), ("users (N)", f"{result['users']}"),
            ("think time (Z)", f"{result['think_time']:g} s")])
    table = _rows([
        ("model", result["model"]),
        ("method", f"simulation ({result['engine']} engine)" + _why(result)),
        *who,
        ("containers (C)", f"{result['containers']}"),
        ("mean execution time", f"{r:.6g} s  [{result['ci_low']:.6g}, {result['ci_high']:.6g}] "
                                f"({100 * result['confidence']:g} % interval, "
                                f"+/- {100 * result['rel_half_width']:.2g} %)"),
        ("throughput", f"{result['throughput']:.6g} jobs/s"),
        ("utilisation", f"{100 * result['utilization']:.2f} %"),
        ("replications", f"{result['replications']:,} x {result['jobs_per_replication']:,} jobs, seed "
                         f"{result['seed']}"),
        ("time", f"total {result['timings']['total_s']:.3f} s"),
    ])
    return table + ("\n\n" + _format_classes(result, f"{100 * result['confidence']:g}% CI") if classes else "")


def _why(result: dict) -> str:
    """``: why no more exact method answered``, when the result says."""
    return f": {result['reason']}" if result.get("reason") else ""


def format_distribution(result: dict) -> str:
    """The solve table plus the execution-time distribution (percentiles, P(R <= deadline)), each
    with the method's interval where it has one, and the result's notices.

    >>> print(format_distribution({"model": "m", "method": "job-alone", "reason": "one user", "think_time": 1.0,
    ...     "containers": 2, "mean_execution_time": 2.0, "low": 1.9, "high": 2.1, "error_bound": 0.05,
    ...     "throughput": 0.33, "utilization": 0.5, "timings": {"total_s": 0.1},
    ...     "percentiles": {"95": 4.5}, "percentile_intervals": {"95": {"low": 4.4, "high": 4.6}}}).splitlines()[-1])
    P95 execution time   4.5 s  [4.4, 4.6]
    """
    width = _SOLVE_WIDTH
    lines = [format_report(result)]
    intervals = result.get("percentile_intervals", {})
    for key, seconds in result.get("percentiles", {}).items():
        around = intervals.get(key)
        shown = f"{seconds:.6g} s" + (f"  [{around['low']:.6g}, {around['high']:.6g}]" if around else "")
        lines.append(f"{'P' + key + ' execution time':<{width}}  {shown}")
    if result.get("deadline") is not None:
        label = f"P(R <= {result['deadline']:g} s)"
        around = result.get("deadline_probability_interval")
        shown = f"{result['deadline_probability']:.6g}" + (
            f"  [{around['low']:.6g}, {around['high']:.6g}]" if around else "")
        lines.append(f"{label:<{width}}  {shown}")
    d = result.get("execution_time_distribution")
    if d is not None:
        lines.append(f"{'distribution':<{width}}  {d['method']}, {d['iterations']:,} steps, "
                     f"{d['transient_states']:,} states, {d['seconds']:.3f} s")
    if result.get("interval_kind"):
        lines.append(f"{'intervals':<{width}}  {result['interval_kind']}")
    for notice in result.get("notices", ()):
        lines.append(f"{'note':<{width}}  {notice}")
    return "\n".join(lines)


def _format_exact_classes(result: dict) -> str:
    """The ``spn solve`` tables of an exact answer for several classes: totals, then per class and queue."""
    solver, timings = result["solver"], result["timings"]
    converged = "converged" if solver["converged"] else "NOT CONVERGED"
    table = _rows([
        ("model", result["model"]),
        ("method", "exact (CTMC of the job-identity net)"),
        ("classes", f"{len(result['classes'])}, {result['users']} users in all"),
        ("containers (C)", f"{result['containers']}"),
        ("all jobs: mean time", f"{result['mean_execution_time']:.6g} s"),
        ("throughput", f"{result['throughput']:.6g} jobs/s"),
        ("utilisation", f"{100 * result['utilization']:.2f} %"),
        ("tangible states", f"{result['tangible_states']:,}"),
        ("solver", f"{solver['method']}, {solver['iterations']} iterations, "
                   f"residual {solver['residual']:.3g}, {converged}"),
        ("time", f"explore {timings['explore_s']:.3f} s, solve {timings['solve_s']:.3f} s, "
                 f"total {timings['total_s']:.3f} s"),
    ])
    classes = [["class", "queue", "users", "think time (s)", "mean execution time (s)", "throughput (jobs/s)"]]
    for name, c in result["classes"].items():
        classes.append([name, c["queue"], f"{c['users']}", f"{c['think_time']:g}",
                        f"{c['mean_execution_time']:.6g}", f"{c['throughput']:.6g}"])
    queues = [["queue", "capacity", "max capacity", "policy", "utilisation (%)"]]
    for name, q in result["queues"].items():
        queues.append([name, f"{q['capacity']:g}", f"{q['max_capacity']:g}", q["policy"],
                       f"{100 * q['utilization']:.4g}"])
    return table + "\n\n" + "\n".join(_columns(classes) + [""] + _columns(queues))


def _format_classes(result: dict, level: str) -> str:
    """Per class R_c and X_c, per queue its utilisation, each with its interval.

    >>> print(_format_classes({"classes": {"etl": {"queue": "etl", "users": 2, "think_time": 120.0,
    ...     "mean_execution_time": 61.0, "ci_low": 60.0, "ci_high": 62.0, "rel_half_width": 0.016,
    ...     "throughput": 0.011, "throughput_ci_low": 0.0109, "throughput_ci_high": 0.0111}},
    ...     "queues": {"etl": {"capacity": 1.0, "max_capacity": 1.0, "policy": "fifo", "utilization": 0.5,
    ...     "utilization_ci_low": 0.49, "utilization_ci_high": 0.51}}}, "95% CI"))
    class  queue  users  think time (s)  mean execution time (s) [95% CI]  +/- %  throughput (jobs/s) [95% CI]
    etl    etl    2      120             61  [60, 62]                      1.6    0.011  [0.0109, 0.0111]
    <BLANKLINE>
    queue  capacity  max capacity  policy  utilisation (%) [95% CI]
    etl    1         1             fifo    50  [49, 51]
    """
    classes = [["class", "queue", "users", "think time (s)", f"mean execution time (s) [{level}]", "+/- %",
                f"throughput (jobs/s) [{level}]"]]
    for name, c in result["classes"].items():
        classes.append([name, c["queue"], f"{c['users']}", f"{c['think_time']:g}",
                        _interval(c["mean_execution_time"], c["ci_low"], c["ci_high"]),
                        f"{100 * c['rel_half_width']:.2g}",
                        _interval(c["throughput"], c["throughput_ci_low"], c["throughput_ci_high"])])
    queues = [["queue", "capacity", "max capacity", "policy", f"utilisation (%) [{level}]"]]
    for name, q in result["queues"].items():
        queues.append([name, f"{q['capacity']:g}", f"{q['max_capacity']:g}", q["policy"],
                       _interval(100 * q["utilization"], 100 * q["utilization_ci_low"],
                                 100 * q["utilization_ci_high"], 4)])
    return "\n".join(_columns(classes) + [""] + _columns(queues))
