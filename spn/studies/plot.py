"""Every figure spn draws (matplotlib, off screen with the Agg backend).

- :func:`plot_sweep`: a sweep's CSV, the mean execution time (and percentiles) against one parameter,
  one line per combination of the other parameters; a numeric x axis is sorted by value. The CSV
  is read row by row, keeping only the columns drawn;
- :func:`curves_figure`: curves against one parameter, with bands (prediction intervals) and
  measured points: ``--plot`` of ``predict``, ``plan``, ``baseline`` and ``backtest``, and the
  report's curves;
- :func:`timeline_figure`: a run's stages and executors over time (the report).

A file is written by :func:`save_figure`, by the rule of :mod:`spn.io.output` (an existing file
only with ``force``, and only once complete); :func:`figure_svg` gives an ``<svg>`` for a page.

>>> _sort_key("10") < _sort_key("9.5x")
True
"""

from __future__ import annotations

import os

from spn.studies.sweep_files import PLOT_FORMATS, RESULT_COLUMNS, csv_records
from spn.exceptions import ModelError, SpnError

#: lines one plot draws (one per combination of the other grid values); a legend is shown up to LEGEND
MAX_LINES = 100
LEGEND = 20


def plot_sweep(csv_path, png_path, *, x: str | None = None, series: str | None = None,
               bands: bool = True, force: bool = False) -> str:
    """Plot a sweep CSV: mean execution time against ``x`` (default: the first grid column),
    one line per value of ``series`` (default: the second grid column; further grid
    columns join it), and a band between the lowest and highest percentile columns
    when there are any (``bands=False`` leaves them out). Writes ``png_path`` (.png,
    .svg, .pdf or .jpg); an existing one is replaced only with ``force``.
    """
    check_plot_target(png_path, force=force)
    plt = _pyplot()

    header, rows = _read(csv_path)
    try:
        first_result = header.index(RESULT_COLUMNS[0])
    except ValueError:
        raise ModelError(f"{csv_path} is not a sweep CSV (no {RESULT_COLUMNS[0]} column)") from None
    params = header[1:first_result]
    pcols = sorted((c for c in header if c.startswith("p") and _is_number(c[1:])), key=lambda c: float(c[1:]))
    for name in (x, series):
        if name is not None and name not in params:
            raise ModelError(f"{csv_path}: {name} is not a grid column ({', '.join(params) or 'none'})")
    if not params:
        raise ModelError(f"{csv_path} has no grid column to plot against")
    x = x or params[0]
    others = [p for p in params if p != x] if series is None else [series]
    rows = [r for r in rows if not r.get("error")]
    if not rows:
        raise ModelError(f"{csv_path} has no solved point to plot")
    numbers = [RESULT_COLUMNS[0], *(pcols if bands else ())]
    bad = next(((r, c) for r in rows for c in numbers if not _is_number(r.get(c))), None)
    if bad is not None:
        raise ModelError(f"{csv_path}: point {bad[0].get('point', '?')}: {bad[1]} {bad[0].get(bad[1])!r} "
                         "is not a number")
    numeric_x = all(_is_number(r[x]) for r in rows)
    groups: dict[tuple, list] = {}
    for r in rows:
        groups.setdefault(tuple(r[p] for p in others), []).append(r)
    if len(groups) > MAX_LINES:
        raise ModelError(f"{csv_path}: {len(groups):,} lines to draw (one per value of {', '.join(others)}), "
                         f"more than {MAX_LINES} fit in one plot")

    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=120)
    for key, members in sorted(groups.items(), key=lambda kv: tuple(_sort_key(v) for v in kv[0])):
        members.sort(key=lambda r: _sort_key(r[x]))
        xs = [float(r[x]) if numeric_x else r[x] for r in members]
        label = (key[0] if len(others) == 1 else ", ".join(f"{p}={v}" for p, v in zip(others, key))) or "mean"
        line, = ax.plot(xs, [float(r["mean_execution_time"]) for r in members], marker="o", ms=3.5,
                        label=label)
        if bands and pcols:
            lo, hi = pcols[0], pcols[-1]
            if lo != hi:
                ax.fill_between(xs, [float(r[lo]) for r in members], [float(r[hi]) for r in members],
                                color=line.get_color(), alpha=0.18, linewidth=0)
            else:
                ax.plot(xs, [float(r[lo]) for r in members], ls="--", color=line.get_color(), lw=1)
    ax.set_xlabel(x)
    ax.set_ylabel("execution time (s)")
    title = "mean execution time"
    if bands and pcols:
        title += (f" (solid) with P{pcols[0][1:]}-P{pcols[-1][1:]} band" if len(pcols) > 1 else
                  f" (solid) and P{pcols[0][1:]} (dashed)")
    ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    if len(groups) <= LEGEND:
        ax.legend(fontsize=8, title=", ".join(others) if others else None, title_fontsize=8)
    fig.tight_layout()
    return save_figure(fig, png_path, force=force)


def check_plot_target(path, *, force: bool = False) -> str:
    """Refuse, before any work, a plot file whose extension is not a format, or that exists (without ``force``);
    return the format."""
    from spn.io.output import check_target

    fmt = os.path.splitext(str(path))[1].lstrip(".").lower()
    if fmt not in PLOT_FORMATS:
        raise ModelError(f"{path}: the plot format is chosen by the extension: "
                         + ", ".join(f".{f}" for f in PLOT_FORMATS))
    check_target(path, force=force, what="plot")
    return fmt


def save_figure(fig, path, *, force: bool = False) -> str:
    """Write ``fig`` to ``path`` (format by extension) by the rule of :mod:`spn.io.output`, and close it."""
    from spn.io.output import discard, publish, temporary_beside

    fmt = os.path.splitext(str(path))[1].lstrip(".").lower()
    partial = temporary_beside(path)
    try:
        fig.savefig(partial, format="jpeg" if fmt == "jpg" else fmt, metadata=_METADATA.get(fmt))
    except BaseException:
        discard(partial)
        raise
    finally:
        _pyplot().close(fig)
    publish(partial, path, force=force)
    return str(path)


#: no creation date in a file, so that the same plot gives the same bytes
_METADATA = {"svg": {"Date": None}, "pdf": {"CreationDate": None}, "png": {}, "jpg": {}}


def figure_svg(fig, name: str) -> str:
    """``fig`` as an ``<svg>`` element to put inside a page (text as text, no external font), closed after.

    ``name`` salts the ids of its clip paths, so that several figures of one page never share one.
    """
    import io

    plt = _pyplot()
    buffer = io.StringIO()
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": name}):
        fig.savefig(buffer, format="svg", metadata={"Date": None})
    plt.close(fig)
    text = buffer.getvalue()
    return text[text.index("<svg"):]


def curves_figure(curves, *, xlabel: str, ylabel: str = "execution time (s)", title: str = "",
                  bound: float | None = None, bound_label: str = "target", logx: bool = False):
    """A figure of ``curves`` against one axis: each a mapping with ``label``, ``x``, ``y`` and optionally
    ``low``/``high`` (drawn as a band) and ``style`` (``line``, the default; ``dashed``; ``points``, for
    measured values). ``bound``: a horizontal line (a target).

    >>> fig = curves_figure([{"label": "mean", "x": [1, 2], "y": [4.0, 2.0], "low": [3.5, 1.5], "high": [5.0, 2.5]},
    ...                      {"label": "measured", "x": [1], "y": [4.2], "style": "points"}], xlabel="executors")
    >>> figure_svg(fig, "doctest").startswith("<svg")
    True
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7.5, 4.4), dpi=100)
    for curve in curves:
        style = curve.get("style", "line")
        xs, ys = list(curve["x"]), list(curve["y"])
        if style == "points":
            ax.plot(xs, ys, ls="none", marker="D", ms=6, mfc="none", mew=1.6, color=curve.get("color", "black"),
                    label=curve["label"], zorder=5)
            continue
        line, = ax.plot(xs, ys, marker="o", ms=3.5, lw=1.8 if style == "line" else 1.2,
                        ls="-" if style == "line" else "--", label=curve["label"], color=curve.get("color"))
        if curve.get("low") is not None and curve.get("high") is not None:
            ax.fill_between(xs, curve["low"], curve["high"], color=line.get_color(), alpha=0.18, linewidth=0,
                            label=curve.get("band_label"))
    if bound is not None:
        ax.axhline(bound, color="crimson", lw=1, ls=":", label=bound_label)
    if logx:
        ax.set_xscale("log", base=2)
        ticks = sorted({x for c in curves for x in c["x"]})
        ax.set_xticks(ticks)
        ax.set_xticklabels([f"{t:g}" for t in ticks])
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.set_ylim(bottom=0)
    if title:
        ax.set_title(title, fontsize=10)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def timeline_figure(timeline: dict):
    """A run over time: its stages as bars (one row per stage attempt) above the executors alive, the
    executors running a task and the tasks running (``timeline`` as :func:`spn.report.runs.timeline` gives it)."""
    plt = _pyplot()
    stages = timeline["stages"]
    rows = max(len(stages), 1)
    fig, (top, bottom) = plt.subplots(2, 1, sharex=True, dpi=100, figsize=(7.5, 2.2 + min(rows, 40) * 0.12 + 2.2),
                                      gridspec_kw={"height_ratios": [max(min(rows, 40) * 0.12, 1.0), 2.2]})
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for k, stage in enumerate(stages):
        top.barh(k, stage["end_s"] - stage["start_s"], left=stage["start_s"], height=0.7,
                 color="lightgray" if stage["failed"] else colors[(stage["job"] or 0) % len(colors)])
    top.set_yticks(range(len(stages)) if len(stages) <= 24 else [])
    top.set_yticklabels([f"stage {s['stage']}" + (f".{s['attempt']}" if s["attempt"] else "") for s in stages]
                        if len(stages) <= 24 else [], fontsize=7)
    top.invert_yaxis()
    top.set_title("stages (colour: job; grey: failed attempt)", fontsize=9)
    width = timeline["slice_s"]
    edges = [k * width for k in range(len(timeline["executors_alive"]) + 1)]
    bottom.stairs(timeline["executors_alive"], edges, color="black", lw=1.2, label="executors held")
    bottom.stairs(timeline["executors_busy"], edges, fill=True, color=colors[0], alpha=0.45,
                  label="executors running a task")
    bottom.stairs(timeline["tasks_running"], edges, color=colors[1], lw=1, label="tasks running")
    bottom.set_xlabel("seconds since the application started")
    bottom.set_ylabel("mean per slice")
    bottom.set_ylim(bottom=0)
    bottom.set_xlim(0, timeline["span_s"])
    bottom.grid(True, alpha=0.3)
    bottom.legend(fontsize=8, loc="upper right")
    fig.tight_layout()
    return fig


def _pyplot():
    try:
        import matplotlib
    except ImportError:
        raise SpnError("plotting needs matplotlib (pip install matplotlib)") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    return plt


def _read(csv_path) -> tuple[list[str], list[dict]]:
    """Header and the rows of a sweep CSV, each with only the columns a plot uses."""
    header, records = csv_records(csv_path)
    header = header or []
    if RESULT_COLUMNS[0] not in header:
        return header, []
    first_result = header.index(RESULT_COLUMNS[0])
    keep = [k for k, c in enumerate(header)
            if k < first_result or c in (RESULT_COLUMNS[0], "error") or (c.startswith("p") and _is_number(c[1:]))]
    return header, [{header[k]: fields[k] for k in keep if k < len(fields)} for _, fields in records]


def _is_number(text) -> bool:
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True


def _sort_key(value):
    return (0, float(value), "") if _is_number(value) else (1, 0.0, str(value))


# --------------------------------------------------------------------------- --plot of the commands
def plot_predictions(rows, measured, path, *, force: bool = False) -> str:
    """``spn predict --plot``: the predicted mean against the varied value, its prediction interval as a band,
    and the ``measured`` ``(value, seconds)`` of the logs."""
    key = rows[0].key
    band = all(row.prediction is not None for row in rows)
    curves = [{"label": "predicted mean", "x": [r.value for r in rows], "y": [r.mean_s for r in rows],
               "low": [r.prediction.low for r in rows] if band else None,
               "high": [r.prediction.high for r in rows] if band else None,
               "band_label": f"{100 * rows[0].prediction.level:g} % run interval" if band else None}]
    if measured:
        curves.append({"label": "measured runs", "x": [x for x, _ in measured], "y": [y for _, y in measured],
                       "style": "points"})
    return save_figure(curves_figure(curves, xlabel=key, title="predicted execution time of one run"), path,
                       force=force)


def plot_plan(result, path, *, force: bool = False) -> str:
    """``spn plan --plot``: every solved value's metrics (an estimated one with its interval as a band), the
    targets' bounds, and the answer."""
    metrics = list(dict.fromkeys(["mean", *(t.metric for t in result.targets)]))
    xs = [p.value for p in result.points]
    curves = []
    for metric in metrics:
        ranged = any(f"{metric}_ci_low" in p.metrics for p in result.points)
        curves.append({"label": metric, "x": xs, "y": [p.metrics[metric] for p in result.points],
                       "style": "line" if metric == "mean" else "dashed",
                       "low": [p.metrics.get(f"{metric}_ci_low", p.metrics[metric]) for p in result.points]
                       if ranged else None,
                       "high": [p.metrics.get(f"{metric}_ci_high", p.metrics[metric]) for p in result.points]
                       if ranged else None, "band_label": "method's interval" if ranged else None})
    answer = result.point(result.answer) if result.answer is not None else None
    first = result.targets[0]
    if answer is not None:
        curves.append({"label": f"answer: {result.answer}", "x": [answer.value], "y": [answer.metrics[first.metric]],
                       "style": "points", "color": "crimson"})
    return save_figure(curves_figure(curves, xlabel=result.path, bound=first.bound, bound_label=str(first),
                                     title="plan: every value solved"), path, force=force)


def plot_baseline(report, path, *, force: bool = False) -> str:
    """``spn baseline --plot``: each method's prediction against the cores (or the input size, when the cores
    are one), and the reference runs measured at that input size."""
    targets = list(report.targets)
    by_cores = len({t.input_bytes for t in targets}) == 1 or len({t.cores for t in targets}) > 1
    x_of = (lambda t: t.cores) if by_cores else (lambda t: t.input_bytes / 1e9)
    methods = list(dict.fromkeys(m for t in targets for m in report.predictions.get(t, {})))
    curves = []
    for size in sorted({t.input_bytes for t in targets}) if by_cores else [None]:
        chosen = sorted((t for t in targets if size is None or t.input_bytes == size), key=x_of)
        suffix = f" ({size / 1e9:.3g} GB)" if by_cores and len({t.input_bytes for t in targets}) > 1 else ""
        for method in methods:
            points = [(x_of(t), report.predictions[t][method].seconds) for t in chosen
                      if method in report.predictions.get(t, {}) and report.predictions[t][method].seconds is not None]
            if points:
                curves.append({"label": method + suffix, "x": [x for x, _ in points], "y": [y for _, y in points],
                               "style": "line" if method.startswith("SAN") else "dashed"})
    sizes = {t.input_bytes for t in targets}
    runs = [r for r in report.references if not by_cores or r.input_bytes in sizes]
    if runs:
        curves.append({"label": "measured runs", "x": [r.cores if by_cores else r.input_bytes / 1e9 for r in runs],
                       "y": [r.seconds for r in runs], "style": "points"})
    return save_figure(curves_figure(curves, xlabel="cores" if by_cores else "input (GB)",
                                     title="baselines: predicted execution time"), path, force=force)


def plot_backtest(result, path, *, force: bool = False) -> str:
    """``spn backtest --plot``: each pilot's predictions against the target's executors, their prediction
    intervals as a band, and every measured run."""
    def executors(label: str) -> float:
        return float(label.split(" x ")[0])

    curves = []
    for pilot in dict.fromkeys(row.pilot for row in result.rows):
        seen = {}
        for row in result.rows:
            if row.pilot == pilot:
                seen.setdefault(row.target, row)
        rows = sorted(seen.values(), key=lambda r: executors(r.target))
        band = all(r.interval is not None for r in rows)
        curves.append({"label": f"from {pilot}", "x": [executors(r.target) for r in rows],
                       "y": [r.predicted for r in rows], "low": [r.interval[0] for r in rows] if band else None,
                       "high": [r.interval[1] for r in rows] if band else None,
                       "band_label": f"{100 * result.level:g} % prediction interval" if band else None})
    measured = {(row.log, row.target): row.measured for row in result.rows}
    curves.append({"label": "measured runs", "x": [executors(t) for _, t in measured], "y": list(measured.values()),
                   "style": "points"})
    return save_figure(curves_figure(curves, xlabel="executors (target)", title="backtest: predicted and measured"),
                       path, force=force)
