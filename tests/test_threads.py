"""spn.threads: pieces of one answer side by side, their results in order, and a failure or
Ctrl-C in one stops the rest."""

import threading
import time

import pytest

import spn.threads as threads
from spn.threads import side_by_side


@pytest.fixture
def two_cores(monkeypatch):
    monkeypatch.setattr(threads, "available_cores", lambda: 2)


def test_results_come_in_the_order_of_the_calls_whichever_thread_ran_them(two_cores):
    calls = [lambda i=i: (time.sleep(0.01 * (i % 3)), i, threading.get_ident())[1:] for i in range(12)]
    results = side_by_side(calls)
    assert [i for i, _ in results] == list(range(12))
    assert len({ident for _, ident in results}) == 2         # the calling thread and one more


def test_on_one_core_everything_runs_on_the_calling_thread(monkeypatch):
    monkeypatch.setattr(threads, "available_cores", lambda: 1)
    assert set(side_by_side([threading.get_ident] * 5)) == {threading.get_ident()}


def test_a_failure_stops_the_calls_not_started_and_tells_the_running_ones(two_cores):
    started, stop = [], threading.Event()

    def fails():
        started.append("fails")
        raise ValueError("broken")

    def waits():
        started.append("waits")
        assert stop.wait(10), "never told to stop"

    later = [lambda: started.append("later")] * 5
    with pytest.raises(ValueError, match="broken"):
        side_by_side([waits, fails, *later], stop=stop)
    assert sorted(started) == ["fails", "waits"]


def test_ctrl_c_on_the_calling_thread_is_raised_at_once_and_stops_the_others(two_cores):
    stop = threading.Event()

    def interrupted():
        time.sleep(0.05)
        raise KeyboardInterrupt

    def long():
        stop.wait(10)

    started = time.perf_counter()
    with pytest.raises(KeyboardInterrupt):
        side_by_side([interrupted, long], stop=stop)
    assert stop.is_set() and time.perf_counter() - started < 5
