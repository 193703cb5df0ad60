"""Test-wide settings.

Under CI (environment variable CI set) hypothesis runs a fixed, derandomised set of examples,
so that a submission is judged on the same cases every time; locally it explores new random
examples on every run (and keeps failures in .hypothesis/).
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

# real Spark (pyspark, Java 17): event logs in every codec, written once per session (tests/spark_logs.py)
from spark_logs import spark_logs  # noqa: E402,F401

# the replications that measured X(k) are kept in the user's cache (spn.analysis.replication_store): tests
# simulate afresh and write nothing there; the store's own tests point it at a temporary folder
os.environ["SPN_CACHE_DIR"] = "off"
