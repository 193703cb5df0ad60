"""Writing a report: the page and its JSON, never over a file the user had.

The rule of :mod:`spn.io.output` (an existing file is replaced only with ``--force``, and only by a
complete one), with one more: even ``--force`` replaces only a report that ``spn report`` wrote (the
page's generator mark, the JSON's ``spn_report`` key, in the file's first bytes), never another
file, a log read, or the page by its own JSON. All of it is checked before any work starts.

>>> import tempfile, pathlib
>>> folder = pathlib.Path(tempfile.mkdtemp())
>>> (folder / "notes.html").write_text("<p>mine</p>")
11
>>> check_outputs(folder / "notes.html", None, force=True, inputs=[])   # doctest: +ELLIPSIS
Traceback (most recent call last):
...
spn.exceptions.ModelError: ...notes.html: is not a report spn wrote: spn report replaces its own reports only...
>>> import shutil; shutil.rmtree(folder)
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from spn.exceptions import ModelError
from spn.report.html import GENERATOR

__all__ = ["check_outputs", "write_outputs", "is_report"]

#: bytes read from an existing file to tell whether spn report wrote it
_HEAD = 4096


def is_report(path) -> bool:
    """Whether the file at ``path`` is a page or a JSON that ``spn report`` wrote."""
    try:
        with open(path, "rb") as file:
            head = file.read(_HEAD)
    except OSError:
        return False
    return f'<meta name="generator" content="{GENERATOR}">'.encode() in head or head.lstrip().startswith(
        b'{\n  "spn_report":')


def check_outputs(page, data_file, *, force: bool, inputs) -> None:
    """Refuse, before any work, outputs that would replace a file the user had (see the module doc)."""
    from spn.io.output import check_target

    outputs = [p for p in (page, data_file) if p is not None]
    if page is not None and data_file is not None and os.path.abspath(page) == os.path.abspath(data_file):
        raise ModelError(f"{page}: the page and its JSON (--json) must be two files", option="json")
    for path in outputs:
        for log in inputs:
            if os.path.exists(path) and os.path.exists(log) and os.path.samefile(path, log):
                raise ModelError(f"{path}: is one of the logs read; the report goes to another file")
        check_target(path, force=force, what="report")
        if os.path.exists(path) and not is_report(path):
            raise ModelError(f"{path}: is not a report spn wrote: spn report replaces its own reports only, even "
                             "with --force")


def write_outputs(data: dict, page, data_file, *, force: bool) -> None:
    """The page (rendered from ``data``) to ``page`` and ``data`` as JSON to ``data_file`` (either may be None)."""
    from spn.io.output import atomic_output
    from spn.report.html import render_html

    if data_file is not None:
        with atomic_output(Path(data_file), force=force) as file:
            json.dump(data, file, indent=2, allow_nan=False)
            file.write("\n")
    if page is not None:
        text = render_html(data)
        with atomic_output(Path(page), force=force) as file:
            file.write(text)
