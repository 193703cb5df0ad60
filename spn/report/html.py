"""The report as one self-contained HTML page, rendered from the dict of :func:`spn.report.data.build_report`.

The page opens offline: its style is inline, its plots are inline SVG (:mod:`spn.studies.plot`, text
as text in the reader's own sans-serif font), and it has no script, link, image or font to fetch.
Every number shown comes from the dict and carries its place there and its exact value
(``<span data-key="what_if.rows.0.mean_execution_time" data-value="2126.4">2,126</span>``), so that a
script (and the browser test) can check the page against the JSON.

>>> number({"a": [{"b": 1234.5678}]}, "a.0.b", "{:,.1f}")
'<span class="n" data-key="a.0.b" data-value="1234.5678">1,234.6</span>'
"""

from __future__ import annotations

import html
import json

__all__ = ["render_html", "number", "GENERATOR"]

#: the page's generator mark: ``spn report`` replaces a file only if it carries it
GENERATOR = "spn report"

_STYLE = """
body{font-family:sans-serif;max-width:64rem;margin:1.5rem auto;padding:0 1rem;color:#222;line-height:1.4}
h1{font-size:1.5rem}h2{font-size:1.2rem;margin-top:2rem;border-bottom:1px solid #ccc}
table{border-collapse:collapse;font-size:.85rem;margin:.5rem 0}
th,td{padding:.2rem .5rem;border-bottom:1px solid #e4e4e4;text-align:right}
th:first-child,td:first-child{text-align:left}td.t,th.t{text-align:left}
.cards{display:flex;flex-wrap:wrap;gap:.6rem}.card{border:1px solid #ddd;border-radius:6px;padding:.5rem .8rem}
.card b{display:block;font-size:1.2rem}.note{color:#555;font-size:.85rem}
figure{margin:.5rem 0}figure svg{max-width:100%;height:auto}code{font-size:.8rem;word-break:break-all}
"""


def number(data: dict, key: str, fmt="{:,.4g}", missing: str = "-") -> str:
    """The value at ``key`` (dotted path into ``data``) formatted by ``fmt`` (a format string, or a function),
    marked with its key and exact value."""
    value = _at(data, key)
    if value is None:
        return missing
    shown = fmt(value) if callable(fmt) else fmt.format(value)
    return (f'<span class="n" data-key="{html.escape(key)}" data-value="{html.escape(json.dumps(value))}">'
            f"{html.escape(shown)}</span>")


def _at(data, key: str):
    for part in key.split("."):
        data = data[int(part)] if isinstance(data, list) else data[part]
    return data


def render_html(data: dict) -> str:
    """The page of ``data`` (a report dict)."""
    figures = report_figures(data)
    e = html.escape
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        f'<meta name="generator" content="{GENERATOR}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>spn report: {e(data['title'])}</title><style>{_STYLE}</style></head><body>",
        f"<h1>spn report: {e(data['title'])}</h1>",
        f"<p class=\"note\">Logs: {e(', '.join(data['inputs']))}. Pilot (the configuration with the fewest task "
        f"slots): {e(', '.join(data['pilot']['logs']))}, {data['pilot']['executors']} executors x "
        f"{data['pilot']['cores']} cores.</p>",
    ]
    parts += _summary(data)
    parts += _runs(data)
    parts += _detail(data, figures.get("timeline"))
    for name in _CURVES:
        parts += _what_if(data, name, figures.get(name))
    parts += _users(data, figures.get("users"))
    parts += _cost(data)
    parts += _about(data)
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def _summary(data: dict) -> list[str]:
    k = data["runs"].index(next(r for r in data["runs"] if r["log"] == data["pilot"]["log"]))
    base = f"runs.{k}"
    cards = [("execution time (s)", f"{base}.seconds", "{:,.1f}"),
             ("executor-hours held", f"{base}.executor_hours", "{:,.3g}"),
             ("idle executor-hours", f"{base}.idle_executor_hours", "{:,.3g}"),
             ("critical path (s)", f"{base}.critical_path_s", "{:,.1f}"),
             ("ideal time (s)", f"{base}.ideal_s", "{:,.1f}"),
             ("driver time (s)", f"{base}.driver_s", "{:,.1f}")]
    out = ["<h2>The pilot run</h2>", '<div class="cards">']
    out += [f'<div class="card">{label}<b>{number(data, key, fmt)}</b></div>' for label, key, fmt in cards]
    cheapest = data["cost"]["cheapest"]
    if cheapest is not None:
        k = data["cost"]["configurations"].index(cheapest)
        out.append(f'<div class="card">cheapest meeting {html.escape(data["settings"]["target"])}<b>'
                   f'{number(data, f"cost.configurations.{k}.executors", "{:d}")} executors</b></div>')
    out.append("</div>")
    out.append('<p class="note">Critical path: the run replayed on as many slots as it has tasks (driver time plus '
               "the longest chain of tasks: no number of executors does better). Ideal time: the driver time plus "
               "the task-seconds spread evenly over the run's slots (no slot idle while work is left). Both after "
               "Sparklens; idle executor-hours: hours an executor was held with no task running on it.</p>")
    return out


def _table(head: list[str], rows: list[list[str]], text_columns=()) -> list[str]:
    out = ["<table><thead><tr>" + "".join(f'<th{" class=t" if k in text_columns else ""}>{h}</th>'
                                          for k, h in enumerate(head)) + "</tr></thead><tbody>"]
    out += ["<tr>" + "".join(f'<td{" class=t" if k in text_columns else ""}>{c}</td>' for k, c in enumerate(r))
            + "</tr>" for r in rows]
    out.append("</tbody></table>")
    return out


def _runs(data: dict) -> list[str]:
    priced = data["settings"]["price"] is not None
    head = ["log", "executors x cores", "span (s)", "execution (s)", "executor-hours held", "idle executor-hours",
            "idle core-hours", "driver (s)", "critical path (s)", "ideal (s)"] + (["cost held"] if priced else [])
    rows = []
    for k, r in enumerate(data["runs"]):
        b = f"runs.{k}"
        rows.append([html.escape(r["log"]), f"{number(data, b + '.executors', '{:d}')} x "
                     f"{number(data, b + '.cores', '{:d}')}",
                     number(data, b + ".span_s", "{:,.1f}"), number(data, b + ".seconds", "{:,.1f}"),
                     number(data, b + ".executor_hours", "{:,.4g}"),
                     number(data, b + ".idle_executor_hours", "{:,.4g}"),
                     number(data, b + ".idle_core_hours", "{:,.4g}"), number(data, b + ".driver_s", "{:,.1f}"),
                     number(data, b + ".critical_path_s", "{:,.1f}"), number(data, b + ".ideal_s", "{:,.1f}")]
                    + ([number(data, f"cost.measured.{k}.held_money", "{:,.4g}")] if priced else []))
    return ["<h2>Runs</h2>"] + _table(head, rows) + [
        '<p class="note">Span: from the application\'s start to its end; execution: the span without the gaps in '
        "which no job ran that <code>spn fit</code> leaves out (an interactive session's waits); executor-hours "
        "held: over the span, as the executors were added and removed.</p>"]


def _detail(data: dict, svg: str | None) -> list[str]:
    detail = data["detail"]
    out = [f"<h2>Timeline of {html.escape(detail['log'])}</h2>"]
    if svg:
        out.append(f"<figure>{svg}</figure>")
    out.append('<p class="note">Executors held and running a task, tasks running: averages over slices of '
               f"{number(data, 'detail.timeline.slice_s', '{:.3g}')} s.</p>")
    head = ["stage", "job", "tasks", "attempts", "duration (s)", "mean task (s)", "median task (s)",
            "max task (s)", "skew (max/median)", "tasks per slot", "law", "KS D", "p", "verdict"]
    rows = []
    for k, st in enumerate(detail["stages"]):
        b = f"detail.stages.{k}"
        p = number(data, b + ".ks_p_value", "{:.2g}")
        rows.append([number(data, b + ".stage", "{:d}"), number(data, b + ".job", "{:d}"),
                     number(data, b + ".tasks", "{:,d}"), number(data, b + ".attempts", "{:,d}"),
                     number(data, b + ".duration_s", "{:,.4g}"), number(data, b + ".mean_task_s", "{:.4g}"),
                     number(data, b + ".median_task_s", "{:.4g}"), number(data, b + ".max_task_s", "{:.4g}"),
                     number(data, b + ".skew", "{:.3g}"), number(data, b + ".tasks_per_slot", "{:.3g}"),
                     html.escape(st["law"] or "-"), number(data, b + ".ks_distance", "{:.3f}"),
                     ("&le;" if st["ks_p_at_most"] else "") + p, html.escape(st["verdict"] or "-")])
    out.append("<h3>Stages</h3>")
    out += _table(head, rows, text_columns={10, 13})
    out.append('<p class="note">Tasks: successful attempts (attempts: all); skew: the longest task over the median; '
               "tasks per slot: the waves of tasks on the run's slots; law: the Erlang law fitted to the pilot's task "
               "times with its Kolmogorov-Smirnov distance, bootstrap p-value and verdict at 1 % "
               "(as <code>spn fit --report</code>).</p>")
    return out


def _size(size: float) -> str:
    from spn.logs.sizes import format_size

    return format_size(size)


#: the what-if curves: their title, the column of the value, its format, and what the page says of their rules
_CURVES = {
    "what_if": ("other executor counts", "executors", "{:d}",
                "Sparklens: the pilot's tasks replayed on that many slots; ideal scaling: the pilot's execution "
                "time times its slots over the slots."),
    "what_if_cores": ("other cores per executor", "cores", "{:d}",
                      "More cores are more task slots on the same executors and hosts, each slot with a CPU of its "
                      "own (<code>--what-if executor-cpus=N</code> of <code>spn predict</code> says otherwise). "
                      "Sparklens and ideal scaling as above, on executors x cores slots."),
    "what_if_input": ("other input sizes", "input", _size,
                      "An input stage keeps its split size (its task count follows the input), a shuffle stage's "
                      "tasks get more data each and their compute grows by the stage's fixed + per-byte line where "
                      "its tasks support one, else in proportion (docs/design.md &sect;8.4); Spark SQL's smaller "
                      "splits when the input per core is below <code>spark.sql.files.maxPartitionBytes</code> are "
                      "not modelled. Sparklens replays the pilot's tasks, so it has no time for another input; "
                      "ideal scaling: the pilot's time times the input's ratio."),
}


def _what_if(data: dict, name: str, svg: str | None) -> list[str]:
    w = data[name]
    title, column, fmt, rules = _CURVES[name]
    executors = name == "what_if"               # cost is of executor counts
    priced = executors and data["settings"]["price"] is not None
    judged = executors and data["settings"]["target"] is not None
    out = [f"<h2>What if: {title}</h2>"]
    if w["note"]:
        return out + [f'<p class="note">No curve: {html.escape(w["note"])}.</p>']
    if svg:
        out.append(f"<figure>{svg}</figure>")
    head = [column, "predicted (s)", "run interval (s)", "method", "Sparklens (s)", "ideal scaling (s)"] + (
        ["executor-hours"] if executors else []) + (["cost"] if priced else []) + (
        [f"meets {html.escape(data['settings']['target'])}"] if judged else [])
    rows = []
    for k, r in enumerate(w["rows"]):
        b = f"{name}.rows.{k}"
        c = f"cost.configurations.{k}"
        interval = "-" if r["prediction_interval"] is None else (
            f"{number(data, b + '.prediction_interval.low', '{:,.0f}')} &ndash; "
            f"{number(data, b + '.prediction_interval.high', '{:,.0f}')}")
        rows.append([number(data, b + ".value", fmt), number(data, b + ".mean_execution_time", "{:,.1f}"),
                     interval, html.escape(r["method"]), number(data, b + ".sparklens_s", "{:,.1f}"),
                     number(data, b + ".ideal_scaling_s", "{:,.1f}")]
                    + ([number(data, c + ".executor_hours", "{:,.4g}")] if executors else [])
                    + ([number(data, c + ".money", "{:,.4g}")] if priced else [])
                    + ([{True: "yes", False: "no", None: "-"}[data["cost"]["configurations"][k]["meets"]]]
                       if judged else []))
    out += _table(head, rows, text_columns={3})
    if w["interval_how"]:
        out.append(f'<p class="note">Run interval: {html.escape(w["interval_how"])}.</p>')
    out.append('<p class="note">Predicted: the mean time of one run alone, from the what-if rules applied to every '
               "log, the other settings at the pilot's (the same numbers as <code>" + html.escape(w["command"])
               + "</code>). " + rules + " Diamonds on the plot: the measured runs that differ from the pilot in "
               "this setting alone.</p>")
    return out


def _users(data: dict, svg: str | None) -> list[str]:
    u = data["users"]
    out = ["<h2>Several users</h2>",
           f'<p class="note">Users who each submit the application again after thinking '
           f"{number(data, 'users.think_time', '{:,.1f}')} s on average "
           f"({html.escape(data['settings']['think_time_how'])}"
           f"), at the pilot's configuration.</p>"]
    if svg:
        out.append(f"<figure>{svg}</figure>")
    rows = []
    for k, r in enumerate(u["rows"]):
        b = f"users.rows.{k}"
        rows.append([number(data, b + ".users", "{:d}"), number(data, b + ".mean_execution_time", "{:,.1f}"),
                     f"{number(data, b + '.ci_low', '{:,.1f}')} &ndash; {number(data, b + '.ci_high', '{:,.1f}')}",
                     number(data, b + ".p95", "{:,.1f}"), number(data, b + ".utilization", "{:.0%}"),
                     html.escape(r["method"])])
    out += _table(["users", "mean (s)", "method's interval (s)", "p95 (s)", "executors' cores busy", "method"], rows,
                  text_columns={5})
    out.append(f'<p class="note">As <code>{html.escape(u["command"])}</code>.</p>')
    return out


def _cost(data: dict) -> list[str]:
    cost = data["cost"]
    price = data["settings"]["price"]
    out = ["<h2>Cost</h2>",
           '<p class="note">Executor-hours: executors x execution time / 3600, the hours the executors are held '
           "for the run (the driver left out)"
           + (f"; money at {html.escape(price['how'])}" if price else "; give --price for money") + ".</p>"]
    if data["settings"]["target"] is not None:
        rows = []
        for name in ("smallest", "cheapest"):
            chosen = cost[name]
            if chosen is None:
                rows.append([name, "none meets the target", "-", "-"] + (["-"] if price else []))
                continue
            k = cost["configurations"].index(chosen)
            b = f"cost.configurations.{k}"
            rows.append([name, number(data, b + ".executors", "{:d}"), number(data, b + ".seconds", "{:,.1f}"),
                         number(data, b + ".executor_hours", "{:,.4g}")]
                        + ([number(data, b + ".money", "{:,.4g}")] if price else []))
        out.append(f"<p>Meeting {html.escape(data['settings']['target'])} (judged on the predicted "
                   f"{'mean' if data['settings']['target'].startswith('mean') else 'percentile of one run'}):</p>")
        out += _table(["", "executors", "predicted (s)", "executor-hours"] + ([f"cost ({price['currency']})"]
                                                                              if price else []), rows)
    return out


def _about(data: dict) -> list[str]:
    s, b = data["settings"], data["budget"]
    out = ["<h2>How this was computed</h2>",
           f"<p class=\"note\">Every configuration was asked of spn's pipeline (method {html.escape(s['method'])}; "
           f"simulations to {number(data, 'settings.rel_precision', '{:.2%}')} at seed "
           f"{number(data, 'settings.seed', '{:d}')}) within the report's "
           f"{number(data, 'budget.max_seconds', '{:g}')} s budget; the report took "
           f"{number(data, 'budget.seconds', '{:.1f}')} s.</p>"]
    out += [f'<p class="note">Budget: {html.escape(note)}.</p>' for note in b["notes"]]
    return out


def report_figures(data: dict) -> dict[str, str]:
    """The page's plots as ``<svg>`` elements: the pilot's timeline, the what-if curves, the multi-user curve."""
    from spn.studies.plot import curves_figure, figure_svg, timeline_figure

    figures = {"timeline": figure_svg(timeline_figure(data["detail"]["timeline"]), "timeline")}
    for name in _CURVES:
        rows = data[name]["rows"]
        if not rows:
            continue
        gb = 1e9 if name == "what_if_input" else 1      # an axis in GB, not in bytes
        x = [r["value"] / gb for r in rows]
        intervals = all(r["prediction_interval"] for r in rows)
        curves = [{"label": "predicted mean", "x": x, "y": [r["mean_execution_time"] for r in rows],
                   "low": [r["prediction_interval"]["low"] for r in rows] if intervals else None,
                   "high": [r["prediction_interval"]["high"] for r in rows] if intervals else None,
                   "band_label": f"{100 * data['settings']['level']:g} % run interval" if intervals else None}]
        for label, field in (("Sparklens replay", "sparklens_s"), ("ideal scaling", "ideal_scaling_s")):
            if all(r[field] is not None for r in rows):
                curves.append({"label": label, "x": x, "y": [r[field] for r in rows], "style": "dashed"})
        measured = data[name]["measured"]
        curves.append({"label": "measured runs", "x": [m["value"] / gb for m in measured],
                       "y": [m["seconds"] for m in measured], "style": "points"})
        axis = data[name]["label"] + (" (GB)" if gb > 1 else "")
        executors = name == "what_if"
        figures[name] = figure_svg(curves_figure(curves, xlabel=axis, logx=True,
                                                 bound=data["settings"]["target_bound"] if executors else None,
                                                 bound_label=data["settings"]["target"],
                                                 title=f"one run alone, by {data[name]['label']}"), name)
    users = data["users"]["rows"]
    if users:
        x = [r["users"] for r in users]
        curves = [{"label": "mean", "x": x, "y": [r["mean_execution_time"] for r in users],
                   "low": [r["ci_low"] for r in users], "high": [r["ci_high"] for r in users],
                   "band_label": "method's interval"},
                  {"label": "p95", "x": x, "y": [r["p95"] for r in users], "style": "dashed"}]
        figures["users"] = figure_svg(curves_figure(curves, xlabel="users", logx=True,
                                                    title="one job's time with several users"), "users")
    return figures
