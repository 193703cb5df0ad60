"""A fitted model and how it is written: YAML with its provenance as comments, or JSON.

>>> model = FittedModel({"name": "demo", "framework": "spark", "workload": {"users": 1, "think_time": 1.0},
...                      "cluster": {"containers": 2}, "phases": [{"name": "stage-0", "tasks": 4,
...                      "task_time": 2.5, "shape": 3}], "reference": {"logs": ["app.json"]}},
...                     header=("Fitted from app.json",), phase_notes={"stage-0": ["4 task samples"]})
>>> print(model.to_yaml(), end="")
# Fitted from app.json
name: demo
framework: spark
workload: {users: 1, think_time: 1.0}
cluster: {containers: 2}
phases:
  # 4 task samples
  - {name: stage-0, tasks: 4, task_time: 2.5, shape: 3}
reference:
  logs: [app.json]
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from spn.exceptions import ModelError

__all__ = ["FittedModel", "write_model", "fit_report"]


@dataclass(frozen=True)
class FittedModel:
    """A fitted description (``description``, a plain mapping) with its provenance comments.

    ``header`` are comment lines for the top of the file; ``phase_notes``
    maps a phase name to the comment lines printed above it; ``warnings``
    are what the fit wants the user to know; ``law_warnings`` name the
    phases whose fitted law the data reject (one line each).
    """

    description: dict
    header: tuple[str, ...]
    phase_notes: dict = field(default_factory=dict)
    warnings: tuple[str, ...] = ()
    law_warnings: tuple[str, ...] = ()

    def to_yaml(self) -> str:
        """The description as YAML, with the provenance as comments; one line per phase and edge."""
        d = self.description
        out = []
        for line in self.header:
            out += _comment(line)
        out.append(f"name: {_flow(d['name'])}")
        out.append(f"framework: {d['framework']}")
        out.append(f"workload: {_flow(d['workload'])}")
        out.append(f"cluster: {_flow(d['cluster'])}")
        if "scheduler" in d:
            out += _comment("a free container goes to the oldest job (Spark FIFO, YARN FIFO ordering); "
                            "docs/scheduling-spark.md measures it")
            out.append(f"scheduler: {_flow(d['scheduler'])}")
        out.append("phases:")
        for phase in d["phases"]:
            for note in self.phase_notes.get(phase["name"], ()):
                out += _comment(note, "  ")
            out.append(f"  - {_flow(phase)}")
        if "edges" in d:
            out.append("edges:")
            out += [f"  - {_flow(edge)}" for edge in d["edges"]]
        out.append("reference:")
        body = yaml.safe_dump(d["reference"], default_flow_style=None, sort_keys=False, width=100)
        out += ["  " + line for line in body.splitlines()]
        return "\n".join(out) + "\n"


def _flow(value) -> str:
    text = yaml.safe_dump(value, default_flow_style=True, sort_keys=False, width=float("inf")).strip()
    return text.removesuffix("...").strip()  # a lone scalar gets YAML's end-of-document marker


#: what YAML does not allow anywhere in a file, comments included (control characters, lone surrogates)
_NOT_YAML = re.compile("[^\x09\x0A\x0D\x20-\x7E\x85\xA0-\uD7FF\uE000-\uFFFD\U00010000-\U0010FFFF]")


def _comment(text: str, indent: str = "") -> list[str]:
    r"""``text`` as comment lines; what YAML cannot hold (a stage name from a log may have it) shows as U+FFFD.

    >>> _comment('stage a' + chr(1) + 'b' + chr(10) + 'phases: []') == ['# stage a\ufffdb', '# phases: []']
    True
    """
    return [f"{indent}# {_NOT_YAML.sub(chr(0xFFFD), line)}".rstrip() for line in text.splitlines() or [""]]


def write_model(model: FittedModel, out, *, force: bool = False) -> Path:
    """Write ``model`` to ``out`` (``.yaml``/``.yml`` with comments, or ``.json``), atomically.

    Raises :class:`~spn.exceptions.ModelError` when ``out`` exists (unless
    ``force``), is a directory, has another suffix, or its folder is missing.
    """
    out = Path(out)
    if out.exists() and not force:
        raise ModelError(f"{out}: already exists; it is replaced only when forced", option="force")
    if out.is_dir():
        raise ModelError(f"{out}: is a directory")
    suffix = out.suffix.lower()
    if suffix in (".yaml", ".yml"):
        text = model.to_yaml()
    elif suffix == ".json":
        text = json.dumps(model.description, indent=2) + "\n"
    else:
        raise ModelError(f"{out}: unknown file type {suffix or '(none)'!r}, expected .yaml, .yml or .json")
    directory = out.parent if str(out.parent) else Path(".")
    if not directory.is_dir():
        raise ModelError(f"{out}: folder {directory} does not exist")
    handle, temporary = tempfile.mkstemp(dir=directory, prefix=f".{out.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as file:
            file.write(text)
        umask = os.umask(0)        # mkstemp makes the file private; give it the usual mode
        os.umask(umask)
        os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, out)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return out


#: what the report's last column and its p-values mean, printed under the table
_REPORT_NOTES = (
    "p: Kolmogorov-Smirnov p-value corrected for fitting the law to the same samples (parametric bootstrap); "
    "verdict at the 1 % level; fewer than 5 samples get none.",
    "cap: where --max-shape bound the shape, the shape the data asked for and how much the cap moves the "
    "phase's 95th-percentile task time. An Erlang's mean is the sample mean whatever its shape, so the cap "
    "changes the spread, not the phase mean: the tail shows it. Its effect on the job's time would take a "
    "solve per phase, too costly for a report.",
)


def fit_report(description: dict) -> str:
    """A fitted model's goodness of fit, one row per phase (``spn fit --report``), from its ``reference.phases``.

    >>> from spn.fit.erlang import erlang_samples, fit_phase, phase_description
    >>> pf = fit_phase(erlang_samples(3, 2.0, 300, seed=4), max_shape=2)
    >>> ref = {"kind": "stage", "mean_s": pf.fit.mean, "shape": 2, "shape_uncapped": pf.uncapped_shape,
    ...        **pf.quality.as_dict()}
    >>> d = {"phases": [phase_description("stage-0", 300, pf)], "reference": {"phases": {"stage-0": ref}}}
    >>> print(fit_report(d).splitlines()[2])
    stage-0    300      300   2.015  Erlang(2)  0.091  <=0.001  rejected  data ask 3: p95 +13.0 %
    """
    provenance = description.get("reference", {}).get("phases", {})
    header = ("phase", "tasks", "samples", "mean s", "law", "KS D", "p", "verdict", "cap")
    rows = []
    for phase in description["phases"]:
        ref = provenance.get(phase["name"], {})
        law = phase.get("distribution", "erlang")
        law = f"Erlang({phase['shape']})" if law == "erlang" and "shape" in phase else law
        if ref.get("kind") == "delay":
            rows.append((phase["name"], phase["tasks"], ref.get("samples", "-"), f"{phase['task_time']:.4g}", law,
                         "-", "-", "delay", ""))
            continue
        distance, p_value = ref.get("ks_distance"), ref.get("ks_p_value")
        verdict = ref.get("verdict", "-")
        if verdict == "rejected" and not ref.get("law_rejected", True):
            verdict = "rejected (Erlang; not written)"
        rows.append((phase["name"], phase["tasks"], ref.get("samples", "-"), f"{phase['task_time']:.4g}", law,
                     "-" if distance is None else f"{distance:.3f}", _p_text(p_value, ref), verdict,
                     _cap_text(ref)))
    widths = [max(len(str(row[i])) for row in [header] + rows) for i in range(len(header))]
    right = {1, 2, 3, 5, 6}   # numbers line up on the right

    def line(row):
        cells = [str(v).rjust(w) if i in right else str(v).ljust(w) for i, (v, w) in enumerate(zip(row, widths))]
        return "  ".join(cells).rstrip()

    tested = [r for r in rows if r[7] not in ("delay", "-", "too few samples")]
    rejected = sum(r[7].startswith("rejected") for r in tested)
    out = [line(header), line(["-" * w for w in widths])] + [line(r) for r in rows]
    out.append(f"{len(rows)} phases: {len(tested)} tested, {rejected} rejected at 1 %")
    out += [f"  {note}" for note in _REPORT_NOTES]
    return "\n".join(out)


def _p_text(p_value, ref: dict) -> str:
    """A p-value for the table; the bootstrap's smallest, 1/(replicates + 1), is an upper bound."""
    if p_value is None:
        return "-"
    replicates = ref.get("bootstrap_replicates") or 0
    if replicates and p_value <= 1.0 / (replicates + 1) + 1e-12:
        return f"<={p_value:.2g}"
    return f"{p_value:.2g}"


def _cap_text(ref: dict) -> str:
    """``data ask 3: p95 +6.4 %`` when the cap bound the shape, else empty."""
    shape, wanted, mean = ref.get("shape"), ref.get("shape_uncapped"), ref.get("mean_s")
    if not (shape and wanted and mean) or wanted <= shape:
        return ""
    import scipy.stats   # here: writing a model does not need scipy

    def p95(k):
        return float(scipy.stats.gamma.ppf(0.95, k, scale=mean / k))

    asked = f"{wanted}+" if wanted >= 1000 else str(wanted)   # the search for the uncapped shape stops at 1000
    return f"data ask {asked}: p95 {100.0 * (p95(shape) / p95(wanted) - 1.0):+.1f} %"
