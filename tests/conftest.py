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
