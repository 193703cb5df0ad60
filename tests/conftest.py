"""Test-wide settings.

Under CI (environment variable CI set) hypothesis runs a fixed, derandomised set of examples,
so that a submission is judged on the same cases every time; locally it explores new random
examples on every run (and keeps failures in .hypothesis/).
"""

import os
import time

from hypothesis import settings

settings.register_profile("ci", derandomize=True, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")

# real Spark (pyspark, Java 17): event logs in every codec, written once per session (tests/spark_logs.py)
from spark_logs import spark_logs  # noqa: E402,F401

# the replications that measured X(k) are kept in the user's cache (spn.analysis.replication_store): tests
# simulate afresh and write nothing there; the store's own tests point it at a temporary folder
os.environ["SPN_CACHE_DIR"] = "off"


def pytest_sessionstart(session):
    """The compiled kernels, compiled once in two processes beside the tests (about 100 s of CPU on an empty
    cache) rather than by each test worker that needs them: those wait for them (spn.kernels.await_other)."""
    if hasattr(session.config, "workerinput"):      # a pytest-xdist worker: the controller started them
        return
    from spn import kernels

    for group in kernels.GROUPS:
        if not kernels.ready(group):
            kernels.warm_in_background(group)


def pytest_collection_modifyitems(config, items):
    """Tests that call the compiled kernels run last (in their order): by then the kernels are compiled."""
    items.sort(key=lambda item: item.get_closest_marker("compiled") is not None)


def pytest_runtest_setup(item):
    """A test marked ``compiled`` starts once no other process is still compiling the kernels, so that the
    wait is not counted in its time (run last, it seldom waits; on a slow machine it can)."""
    if item.get_closest_marker("compiled"):
        from spn import kernels

        for group in kernels.GROUPS:
            kernels.await_other(group, until=time.perf_counter() + 600)
