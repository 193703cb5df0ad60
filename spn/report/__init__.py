"""``spn report``: the logs of a Spark application as one self-contained page, and the same content as JSON.

- :mod:`spn.report.runs`: what each run was, read from its log (hours held and idle, critical path,
  ideal time, timeline, stages);
- :mod:`spn.report.data`: :func:`build_report`, the report as a plain dict: the runs, and the questions
  asked of the commands' functions (``spn predict``'s what-if curve, the pipeline's multi-user curve,
  the cost of each configuration), within one time budget;
- :mod:`spn.report.html`: :func:`render_html`, the page of that dict (its numbers marked with their place
  in it); :mod:`spn.report.output`: both written, never over a file that is not a report.

>>> from spn.report import build_report, render_html   # doctest: +SKIP
>>> page = render_html(build_report(["q26_e3.json.gz"]))  # doctest: +SKIP
"""

from spn.report.data import build_report
from spn.report.html import render_html
from spn.report.output import write_outputs

__all__ = ["build_report", "render_html", "write_outputs"]
