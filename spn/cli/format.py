"""The human-readable tables the commands print (``--json`` prints the dictionaries instead).

The tables of one evaluation (``spn solve``) live with the result they print, in
:mod:`spn.pipeline.summary`.

>>> print(_rows([("model", "m"), ("users (N)", "3")]))
model      m
users (N)  3
"""

from __future__ import annotations

from spn.pipeline.summary import (  # noqa: F401  (the solve tables, shared with the library)
    _columns, _format_classes, _interval, _policy_row, _rows, format_distribution, format_report,
)


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

    ``result`` is a :class:`~spn.studies.plan_queues.QueueSharePlan`; undecided probes are marked so,
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
