"""The human-readable tables the commands print (``--json`` prints the dictionaries instead).

The tables of one evaluation (``spn solve``) live with the result they print, in
:mod:`spn.pipeline.summary`.

>>> print(_rows([("model", "m"), ("users (N)", "3")]))
model      m
users (N)  3
"""

from __future__ import annotations

from spn.pipeline.result import INTERVAL_KINDS
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
    """``spn plan``: the summary, any evidence against monotonicity, and every value solved with its verdict.

    An estimated value shows its interval, a simulated one its replications; where the values were
    answered by more than one method, each says which. A queue-share plan
    (``result.queue``) also shows each share's guaranteed containers and every class's R_c (the planner
    sees what the other classes pay, not only the targets'), and its notes.
    """
    from spn.studies.plan_result import shown

    queue = result.queue
    if queue is None:
        keys = list(dict.fromkeys(t.key for t in result.targets))
    else:
        keys = [k for k in result.points[0].metrics if not k.endswith(("_ci_low", "_ci_high"))]
    simulated = any("replications" in p.details for p in result.points)
    mixed = len({p.method for p in result.points}) > 1        # then each value says which method answered it
    table = [[result.path, *([f"{queue.name} containers"] if queue else []), *(f"{k} (s)" for k in keys),
              *(["method"] if mixed else []), *(["replications"] if simulated else []), "verdict"]]
    notes = {}      # a note -> the values it was said of (in order), printed once
    for p in result.points:
        cells = [shown(p.value)]
        if queue:
            cells.append(str(p.details["guaranteed_containers"]))
        for k in keys:
            estimated = f"{k}_ci_low" in p.metrics
            cells.append(_interval(p.metrics[k], p.metrics[f"{k}_ci_low"], p.metrics[f"{k}_ci_high"], 4)
                         if estimated else f"{p.metrics[k]:.6g}")
        if mixed:
            cells.append(p.method)
        if simulated:
            refined = (f" (refined to {100 * p.details['rel_precision']:.2g} %)" if p.details.get("refinements")
                       else "")
            cells.append(f"{p.details['replications']:,}{refined}" if "replications" in p.details else "")
        cells.append(p.verdict + ("  <- answer" if p.value == result.answer else ""))
        table.append(cells)
        for note in p.details.get("notes", ()):
            notes.setdefault(note, []).append(shown(p.value))
    lines = [result.summary()]
    lines += [f"evidence against monotonicity: {line}" for line in result.evidence]
    lines += _columns(table, right_aligned=len(table[0]) - 1)
    lines += [f"{result.path}={', '.join(values)}: {note}" for note, values in notes.items()]
    what = (f"{len(result.points)} values solved" if queue is None else
            f"{len(result.points)} of {len(queue.grid)} shares k/{queue.containers} solved")
    how = ""
    if simulated and result.simulation:
        sim = result.simulation
        how = (f"; simulated values: 95 % intervals to {100 * sim['rel_precision']:g} %, refined to "
               f"{100 * sim['refine_to']:g} % when straddling, seed {sim['seed']} at every value")
    lines.append(f"{what} ({result.method}{how}) in {result.seconds:.2f} s")
    # what the printed intervals are, as spn solve says it: never the range a real run falls in
    kinds = dict.fromkeys(p.method for p in result.points if p.method in INTERVAL_KINDS and p.method != "exact")
    lines += [f"intervals ({method}): {INTERVAL_KINDS[method]}" for method in kinds]
    return "\n".join(lines)
