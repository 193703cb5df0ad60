"""Write the example reports of docs/: `spn report` on the lundstrom logs of TPC-DS Q26 (all four executor
counts) and on an Apache Spark test fixture.

    python validation/make_reports.py            # from the repository's root, in its virtual environment

The logs stay in ../shared/data (they are not the project's to copy): the pages hold summary numbers and
plots only. Each page is written by the command printed before it, so it can be made again by hand.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from spn.cli import main

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"

REPORTS = {
    # the four executor counts, two runs each; priced as m5.xlarge instances (4 vCPUs: two 2-core executors)
    "report-q26.html": [*sorted(str(p) for p in (DATA / "lundstrom").glob("q26_*.json.gz")),
                        "--target", "p95<=1200", "--price", "m5.xlarge=0.192", "--executors-per-instance", "2",
                        "--max-seconds", "1200"],
    # a Spark SQL join in spark-shell on YARN (Apache Spark's test fixture)
    "report-apache.html": [str(DATA / "spark-events" / "application_1506645932520_24630151.json"),
                           "--target", "mean<=20", "--price", "0.05", "--max-seconds", "300"],
}


def make(name: str, args: list[str]) -> int:
    out = ROOT / "docs" / name
    command = ["report", *args, "-o", str(out), "--force"]
    shown = " ".join(shlex.quote(a.replace(str(DATA), "../shared/data").replace(str(ROOT) + "/", ""))
                     for a in command)
    print(f"spn {shown}", flush=True)
    return main(command)


if __name__ == "__main__":
    chosen = sys.argv[1:] or list(REPORTS)
    sys.exit(max(make(name, REPORTS[name]) for name in chosen))
