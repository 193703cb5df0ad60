"""The compiled kernels are compiled by one process at a time: others wait for it and load its code."""

import os
import subprocess
import sys
import threading
import time

import pytest

from spn import kernels


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache of its own, so that the installation's stamps and markers are left alone."""
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture
def other_process():
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield process
    process.kill()
    process.wait()


def test_a_live_process_named_in_the_marker_is_compiling(cache, other_process):
    kernels._marker("cluster").write_text(str(other_process.pid))
    assert kernels.compiling_elsewhere("cluster")


def test_a_marker_of_this_process_of_a_process_gone_or_too_old_is_not_believed(cache, other_process):
    marker = kernels._marker("cluster")
    marker.write_text(str(os.getpid()))
    assert not kernels.compiling_elsewhere("cluster")
    marker.write_text(str(other_process.pid))
    old = time.time() - kernels.WARMING_PATIENCE - 1
    os.utime(marker, (old, old))
    assert not kernels.compiling_elsewhere("cluster")
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    marker.write_text(str(gone.pid))
    assert not kernels.compiling_elsewhere("cluster")
    marker.write_text("")               # touched by a parent that has not yet started its child
    assert not kernels.compiling_elsewhere("cluster")


def test_a_process_waits_for_the_one_compiling_until_it_is_done(cache, other_process):
    marker = kernels._marker("cluster")
    marker.write_text(str(other_process.pid))
    threading.Timer(0.5, lambda: (kernels.mark_ready("cluster"), marker.unlink())).start()
    started = time.perf_counter()
    kernels.await_other("cluster")
    assert time.perf_counter() - started >= 0.4 and kernels.ready("cluster")


def test_the_wait_ends_at_the_callers_deadline(cache, other_process):
    kernels._marker("cluster").write_text(str(other_process.pid))
    started = time.perf_counter()
    kernels.await_other("cluster", until=started + 0.3)
    assert 0.3 <= time.perf_counter() - started < 2.0
    assert not kernels.ready("cluster")


def test_the_compiled_simulators_first_compilation_is_started_and_awaited(cache, other_process, monkeypatch):
    # an answer that would otherwise simulate a large model in Python waits for it (about 7 s) instead
    from spn.simulation.cluster_compiled import await_compiled_cluster

    started = []

    def warm(group):
        started.append(group)
        kernels._marker(group).write_text(str(other_process.pid))
        threading.Timer(0.5, lambda: (kernels.mark_ready(group), kernels._marker(group).unlink())).start()
    monkeypatch.setattr(kernels, "warm_in_background", warm)
    waited = time.perf_counter()
    assert await_compiled_cluster() and started == ["cluster"] and time.perf_counter() - waited >= 0.4


def test_the_compiled_simulator_is_awaited_until_the_callers_deadline(cache, other_process, monkeypatch):
    from spn.simulation.cluster_compiled import await_compiled_cluster

    monkeypatch.setattr(kernels, "warm_in_background",
                        lambda group: kernels._marker(group).write_text(str(other_process.pid)))
    waited = time.perf_counter()
    assert not await_compiled_cluster(until=waited + 0.3)
    assert 0.3 <= time.perf_counter() - waited < 2.0


def test_a_compilation_that_fails_leaves_no_marker_behind(cache, monkeypatch):
    from spn.simulation import cluster_compiled

    def fail():
        assert kernels._marker("cluster").read_text() == str(os.getpid())     # others wait for this process
        raise RuntimeError("the compiler failed")

    monkeypatch.setattr(cluster_compiled, "warm", fail)
    monkeypatch.setattr(kernels, "_clear_cache", lambda group: None)     # the installation's cache stays
    with pytest.raises(RuntimeError, match="compiler failed"):
        kernels.warm("cluster")
    assert not kernels._marker("cluster").exists() and not kernels.ready("cluster")
