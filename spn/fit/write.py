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

__all__ = ["FittedModel", "write_model"]


@dataclass(frozen=True)
class FittedModel:
    """A fitted description (``description``, a plain mapping) with its provenance comments.

    ``header`` are comment lines for the top of the file; ``phase_notes``
    maps a phase name to the comment lines printed above it; ``warnings``
    are what the fit wants the user to know.
    """

    description: dict
    header: tuple[str, ...]
    phase_notes: dict = field(default_factory=dict)
    warnings: tuple[str, ...] = ()

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
