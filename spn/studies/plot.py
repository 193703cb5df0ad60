"""Plot a sweep's CSV: the mean execution time (and percentiles) against one parameter.

One line per combination of the other parameters; a numeric x axis is sorted by value.
Needs matplotlib (drawn off screen, with the Agg backend). The CSV is read row by
row, keeping only the columns drawn; the image is written by the rule of
:mod:`spn.io.output` (an existing file only with ``force``, and only once complete).

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
    from spn.io.output import check_target, discard, publish, temporary_beside

    fmt = os.path.splitext(str(png_path))[1].lstrip(".").lower()
    if fmt not in PLOT_FORMATS:
        raise ModelError(f"{png_path}: the plot format is chosen by the extension: "
                         + ", ".join(f".{f}" for f in PLOT_FORMATS))
    check_target(png_path, force=force, what="plot")
    try:
        import matplotlib
    except ImportError:
        raise SpnError("plotting a sweep needs matplotlib (pip install matplotlib)") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

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
    partial = temporary_beside(png_path)
    try:
        fig.savefig(partial, format="jpeg" if fmt == "jpg" else fmt)
    except BaseException:
        discard(partial)
        raise
    finally:
        plt.close(fig)
    publish(partial, png_path, force=force)
    return str(png_path)


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
