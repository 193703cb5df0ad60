"""The human-readable tables the commands print (``--json`` prints the dictionaries instead).

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
        ("method", f"job alone (one user, order statistics): {result['reason']}"),
        ("users (N)", "1"),
        ("think time (Z)", f"{result['think_time']:g} s"),
        ("containers (C)", f"{result['containers']}"),
        ("mean execution time", f"{result['mean_execution_time']:.6g} s  bounds [{result['low']:.6g}, "
                                f"{result['high']:.6g}] (+/- {100 * result['error_bound']:.2g} % at most)"),
        ("throughput", f"{result['throughput']:.6g} jobs/s"),
        ("utilisation", f"{100 * result['utilization']:.2f} %"),
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
        ("method", f"simulation ({result['engine']} engine): {result['reason']}"),
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


def format_distribution(result: dict) -> str:
    """``spn solve --percentiles/--deadline``: the solve table plus the execution-time distribution."""
    width = _SOLVE_WIDTH
    lines = [format_report(result)]
    for key, seconds in result.get("percentiles", {}).items():
        lines.append(f"{'P' + key + ' execution time':<{width}}  {seconds:.6g} s")
    if result.get("deadline") is not None:
        label = f"P(R <= {result['deadline']:g} s)"
        lines.append(f"{label:<{width}}  {result['deadline_probability']:.6g}")
    d = result["execution_time_distribution"]
    lines.append(f"{'distribution':<{width}}  {d['method']}, {d['iterations']:,} steps, "
                 f"{d['transient_states']:,} states, {d['seconds']:.3f} s")
    return "\n".join(lines)


def format_net_report(result: dict) -> str:
    """``spn solve net.pnml``: mean tokens of every place and throughput of every activity."""
    solver = result["solver"]
    lines = [f"{'net':<22}{result['model']}", f"{'tangible states':<22}{result['tangible_states']}",
             f"{'transitions':<22}{result['transitions']}",
             f"{'solver':<22}{solver['method']}, {solver['iterations']} iterations, residual "
             f"{solver['residual']:.2g}, {'converged' if solver['converged'] else 'NOT converged'}",
             "", f"{'place':<30}{'mean tokens':>14}"]
    lines += [f"{name:<30}{value:>14.6g}" for name, value in result["places"].items()]
    lines += ["", f"{'activity':<30}{'throughput':>14}"]
    lines += [f"{name:<30}{value:>14.6g}" for name, value in result["activities"].items()]
    return "\n".join(lines)


def format_simulation(result: dict) -> str:
    """The human table of ``spn simulate`` for a report's ``as_dict()``; with query classes, a table
    of the classes and one of the queues follow (:func:`_format_classes`)."""
    level = f"{100 * result['confidence']:g}% CI"
    precision = result["rel_precision"]
    classes = result.get("classes")
    rule = ("fixed count" if precision is None else
            f"precision {100 * precision:g} % {'met' if result['precision_met'] else 'NOT MET'}"
            + (" (worst class)" if classes else ""))
    mean = _interval(result["mean_execution_time"], result["ci_low"], result["ci_high"])
    if classes:
        who = [("classes", f"{len(classes)}, {result['users']} users in all"),
               ("containers (C)", f"{result['containers']}"),
               ("all jobs: mean time", f"{mean} s  ({level})")]
    else:
        who = [*_policy_row(result),
               ("users (N)", f"{result['users']}"),
               ("think time (Z)", f"{result['think_time']:g} s"),
               ("containers (C)", f"{result['containers']}"),
               ("mean execution time", f"{mean} s  ({level}, +/-{100 * result['rel_half_width']:.2g} %)")]
    table = _rows([
        ("model", result["model"]),
        ("engine", result["engine"] + (" (finished tasks pooled across jobs, as in the net)"
                                       if result.get("pool_finished_tasks") else "")),
        *who,
        ("throughput", f"{_interval(result['throughput'], result['throughput_ci_low'], result['throughput_ci_high'])}"
                       f" jobs/s"),
        ("utilisation", _interval(100 * result["utilization"], 100 * result["utilization_ci_low"],
                                  100 * result["utilization_ci_high"], 4) + " %"),
        ("replications", f"{result['replications']} x {result['jobs_per_replication']} jobs "
                         f"(warm-up {result['warmup_jobs']}), {rule}"),
        ("events", f"{result['events']:,} timed, {result['instant_firings']:,} instantaneous"),
        ("seed", f"{result['seed']}"),
        ("time", f"{result['seconds']:.3f} s"),
    ])
    return table + ("\n\n" + _format_classes(result, level) if classes else "")


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


def format_comparison(result: dict) -> str:
    """The human table of ``spn compare`` for a comparison's ``as_dict()``."""
    labels = {"mean_execution_time": "mean execution time (s)", "throughput": "throughput (jobs/s)",
              "utilization": "utilisation"}
    engines = list(result["simulations"])
    level = next(iter(result["simulations"].values()))["confidence"] if engines else 0.95
    pooled = result.get("pool_finished_tasks")
    explained = result.get("explained", {})
    table = [["measure", "analytic"] + [f"{e} simulation{', pooled' if pooled and e == 'cluster' else ''} "
                                        f"({100 * level:g}% CI)" for e in engines]]
    def label(measure):     # "classes.etl.throughput" -> "class etl: throughput (jobs/s)"
        if measure in labels:
            return labels[measure]
        kind, rest = measure.split(".", 1)
        name, what = rest.rsplit(".", 1)
        return f"{kind[:-2] if kind == 'classes' else kind[:-1]} {name}: {labels[what]}"

    for measure, row in result["measures"].items():
        line = [label(measure), "n/a" if row["analytic"] is None else f"{row['analytic']:.6g}"]
        for e in engines:
            cell = row[e]
            mark = "" if cell["contains_analytic"] is not False else " ~" if e in explained else " *"
            line.append(f"{_interval(cell['value'], cell['ci_low'], cell['ci_high'])}{mark}")
        table.append(line)
    lines = [f"model {result['model']}"]
    if result["analytic"] is not None:
        lines[0] += f" (analytic: {result['analytic']['tangible_states']:,} tangible states)"
    lines += _columns(table)
    if result["analytic_note"]:
        lines.append(f"analytic: {result['analytic_note']}")
    for engine, sim in result["simulations"].items():
        lines.append(f"{engine}: {sim['replications']} replications, {sim['events']:,} events, "
                     f"{sim['seconds']:.2f} s")
    lines += [f"models: {note}" for note in result.get("notes", ())]
    if result["flags"]:
        lines.append("* analytic value outside the simulation interval:")
        lines += [f"  {flag}" for flag in result["flags"]]
    # the reason once, then its flags: every explained flag of an engine ends with the same reason
    for reason in dict.fromkeys(explained.values()):
        flags = [flag.removesuffix(f": {reason}") for flag in result.get("explained_flags", ())
                 if flag.endswith(f": {reason}")]
        if flags:
            lines.append(f"~ analytic value outside the interval, explained: {reason}:")
            lines += [f"  {flag}" for flag in flags]
    lines.append(f"seed {result['seed']}")
    return "\n".join(lines)


def format_plan(result) -> str:
    """``spn plan``: the answer, any evidence against monotonicity, and every value solved."""
    metrics = list(dict.fromkeys(t.metric for t in result.targets))
    table = [[result.path, *(f"{m} (s)" for m in metrics), "meets"]]
    for p in result.points:
        mark = "  <- answer" if p.value == result.answer else ""
        table.append([str(p.value), *(f"{p.metrics[m]:.6g}" for m in metrics), ("yes" if p.met else "no") + mark])
    lines = [result.summary()]
    lines += [f"evidence against monotonicity: {line}" for line in result.evidence]
    lines += _columns(table, right_aligned=len(table[0]) - 1)
    lines.append(f"{len(result.points)} values solved ({result.method}) in {result.seconds:.2f} s")
    return "\n".join(lines)


def format_queue_plan(result) -> str:
    """``spn plan --vary queues.NAME.capacity=...``: the answer, evidence, every probe with every class's R_c.

    ``result`` is a :class:`~spn.analysis.plan_queues.QueueSharePlan`; undecided probes are marked so,
    never as met.
    """
    table = [["share", f"{result.queue} containers",
              *(f"R {name} (s) [95% CI]" for name in result.probes[0].classes), "verdict", "replications", "s"]]
    notes = []
    for p in result.probes:
        mark = "  <- answer" if result.answer is not None and abs(p.share - result.answer) < 1e-12 else ""
        refined = f" (refined to {100 * p.rel_precision:.2g} %)" if p.refinements else ""
        table.append([f"{p.share:.4g}", f"{p.containers}",
                      *(_interval(e.value, e.ci_low, e.ci_high, 4) for e in p.classes.values()),
                      p.verdict + mark, f"{p.replications:,}{refined}", f"{p.seconds:.1f}"])
        notes += [f"share {p.share:.4g}: {note}" for note in p.notes]
    lines = [result.summary()]
    lines += [f"evidence against monotonicity: {line}" for line in result.evidence]
    lines += _columns(table)
    lines += notes
    lines.append(f"{len(result.probes)} of {len(result.grid)} shares k/{result.containers} simulated (cluster engine, "
                 f"95 % intervals to {100 * result.rel_precision:g} %, refined to {100 * result.refine_to:g} % "
                 f"when straddling; seed {result.seed} at every share) in {result.seconds:.1f} s")
    return "\n".join(lines)
