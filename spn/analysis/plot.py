"""Plot a sweep's CSV: the mean execution time (and percentiles) against one parameter.

One line per combination of the other parameters; a numeric x axis is sorted by value.
Needs matplotlib (drawn off screen, with the Agg backend).

>>> _sort_key("10") < _sort_key("9.5x")
True
"""

from __future__ import annotations

import os

from spn.analysis.sweep import RESULT_COLUMNS, read_rows
from spn.exceptions import ModelError, SpnError


def plot_sweep(csv_path, png_path, *, x: str | None = None, series: str | None = None,
               bands: bool = True) -> str:
    """Plot a sweep CSV: mean execution time against ``x`` (default: the first grid column),
    one line per value of ``series`` (default: the second grid column; further grid
    columns join it), and a band between the lowest and highest percentile columns
    when there are any (``bands=False`` leaves them out). Writes ``png_path``.
    """
    try:
        import matplotlib
    except ImportError:
        raise SpnError("plotting a sweep needs matplotlib (pip install matplotlib)") from None
    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    header, rows = read_rows(csv_path)
    try:
        first_result = header.index(RESULT_COLUMNS[0])
    except ValueError:
        raise ModelError(f"{csv_path} is not a sweep CSV (no {RESULT_COLUMNS[0]} column)") from None
    params = header[1:first_result]
    pcols = sorted((c for c in header if c.startswith("p") and _is_number(c[1:])), key=lambda c: float(c[1:]))
    x = x or params[0]
    others = [p for p in params if p != x] if series is None else [series]
    rows = [r for r in rows if not r.get("error")]
    if not rows:
        raise ModelError(f"{csv_path} has no solved point to plot")
    numeric_x = all(_is_number(r[x]) for r in rows)
    groups: dict[tuple, list] = {}
    for r in rows:
        groups.setdefault(tuple(r[p] for p in others), []).append(r)

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
    ax.legend(fontsize=8, title=", ".join(others) if others else None, title_fontsize=8)
    fig.tight_layout()
    tmp = f"{png_path}.tmp.png"
    fig.savefig(tmp)
    plt.close(fig)
    os.replace(tmp, png_path)
    return str(png_path)


def _is_number(text) -> bool:
    try:
        float(text)
    except (TypeError, ValueError):
        return False
    return True


def _sort_key(value):
    return (0, float(value), "") if _is_number(value) else (1, 0.0, str(value))
