"""spn.analysis.throughput: X(k), the cluster's throughput with k jobs always present.

Exact from small chains or in closed form where it can be; simulated with intervals that cover the exact
values; never past the containers' bound; each X(k) run as far as R needs it, the same on one core or several.
"""

from dataclasses import replace

import numpy as np
import pytest

import spn.analysis.throughput as throughput
import spn.threads as threads
from spn.analysis.throughput import _pchip, alone_in_series, throughput_curve
from spn.description import parse_description
from spn.pipeline import Question, evaluate_description


def _desc(users, think, containers, phases, edges=(), policy="fifo"):
    return parse_description({"name": "d", "workload": {"users": users, "think_time": think},
                              "cluster": {"containers": containers}, "scheduler": {"policy": policy},
                              "phases": phases, "edges": [list(e) for e in edges]})


@pytest.mark.parametrize("containers", [1, 3, 8])
def test_a_job_alone_in_series_with_exponential_tasks_is_a_closed_form(containers):
    # a phase of n tasks on c containers: n − c ends at rate c μ, then c, c − 1, ..., 1 times μ; the
    # exact chain's tagged job has the same mean and spread, and X(1) needs no chain
    desc = parse_description({"name": "x", "workload": {"users": 1, "think_time": 2.0},
                              "cluster": {"containers": containers}, "scheduler": {"policy": "fifo"},
                              "phases": [{"name": "a", "tasks": 5, "task_time": 1.0},
                                         {"name": "d", "tasks": 2, "task_time": 0.5, "kind": "driver"},
                                         {"name": "b", "tasks": 2, "task_time": 2.0, "distribution": "exponential"}],
                              "edges": [["a", "d"], ["d", "b"]]})
    exact = evaluate_description(desc, method="exact", question=Question(percentiles=(50,)))
    law = exact.details["execution_time_distribution"]
    mean, variance = alone_in_series(desc)
    assert mean == pytest.approx(law["mean"], rel=1e-9) and variance ** 0.5 == pytest.approx(law["std"], rel=1e-6)
    several = replace(desc, workload=replace(desc.workload, users=3))
    assert throughput_curve(several)[0].value == pytest.approx(1 / mean, rel=1e-12)


def test_a_job_not_in_series_or_not_exponential_has_no_closed_form():
    one = {"name": "a", "tasks": 3, "task_time": 1.0}
    assert alone_in_series(_desc(1, 1.0, 2, [one, dict(one, name="b"), dict(one, name="c")],
                                  [("a", "c"), ("b", "c")])) is None
    assert alone_in_series(_desc(1, 1.0, 2, [dict(one, shape=2)])) is None
    assert alone_in_series(_desc(1, 1.0, 2, [dict(one, distribution="deterministic")])) is None


def test_simulated_throughputs_carry_intervals_that_cover_the_exact_ones():
    desc = _desc(3, 2.0, 2, [{"name": "p", "tasks": 4, "task_time": 1.0, "shape": 2}])
    exact = throughput_curve(desc)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(throughput, "EXACT_STATES", 0)        # every X(k) simulated
        simulated = throughput_curve(desc, seed=3)
    assert [x.source for x in simulated] == ["simulation"] * len(simulated)
    for e, s in zip(exact, simulated):
        assert s.low * (1 - 1e-9) <= e.value <= s.high * (1 + 1e-9) and (s.high - s.low) / s.value < 0.02


def test_the_containers_bound_is_never_passed_and_the_curve_stops_there():
    desc = _desc(40, 1.0, 4, [{"name": "p", "tasks": 20, "task_time": 1.0, "shape": 3}])
    curve = throughput_curve(desc, seed=1)
    bound = 4 / 20.0
    assert curve[-1].k < 40 and curve[-1].low >= 0.99 * bound
    assert all(x.value <= bound * 1.002 for x in curve)


def test_the_answer_is_the_same_on_one_core_or_several(monkeypatch):
    """The simulated X(k) run on threads, each k on its own random stream: the order they finish in
    does not matter."""
    desc = _desc(30, 20.0, 20, [{"name": "p", "tasks": 200, "task_time": 1.0, "shape": 4}])
    several = throughput_curve(desc, seed=3)
    assert sum(x.source == "simulation" for x in several) >= 2     # else there is nothing to run side by side
    monkeypatch.setattr(threads, "available_cores", lambda: 1)
    assert throughput_curve(desc, seed=3) == several


def test_the_simulators_first_compilation_is_awaited_once_before_the_pilots_run_side_by_side(monkeypatch):
    # awaited on each thread, the second found the first's marker still empty and gave up at once
    import spn.simulation.cluster_compiled as cluster_compiled

    calls, awaited = [], cluster_compiled.await_compiled_cluster
    monkeypatch.setattr(cluster_compiled, "await_compiled_cluster",
                        lambda until=None: calls.append(until) or awaited(until))
    desc = _desc(30, 20.0, 20, [{"name": "p", "tasks": 200, "task_time": 1.0, "shape": 4}])
    assert sum(x.source == "simulation" for x in throughput_curve(desc, seed=3)) >= 2 and calls == [None]


def test_the_monotone_cubic_is_scipys_pchip():
    from scipy.interpolate import PchipInterpolator

    rng = np.random.default_rng(0)
    for trial in range(300):
        n = int(rng.integers(2, 12))
        x = np.sort(rng.choice(np.arange(1, 600), n, replace=False)).astype(float)
        y = np.sort(rng.uniform(0, 1, n)) if trial % 2 else rng.uniform(0, 1, n)   # monotone, and not
        if trial % 5 == 0:
            y[rng.integers(n)] = y[0]                                             # flat pieces
        at = np.linspace(x[0], x[-1], 97)
        assert np.allclose(_pchip(x, y, at), PchipInterpolator(x, y)(at), rtol=0, atol=1e-12)


def test_an_x_k_the_users_seldom_reach_keeps_its_pilot(monkeypatch):
    # 30 users who hardly think on 4 containers: R hangs on the saturated X(3) alone, and X(1), X(2)
    # keep their pilots (3 short replications of 334 jobs: 2,000 task ends); thinking long, the users
    # seldom have 3 jobs in: X(1) and X(2) make R and are run further
    monkeypatch.setattr(throughput, "EXACT_STATES", 0)       # every X(k) simulated
    phases = [{"name": "p", "tasks": 6, "task_time": 1.0, "shape": 2}]
    busy = throughput_curve(_desc(30, 0.1, 4, phases), seed=2)
    assert [x.k for x in busy] == [1, 2, 3] and [x.jobs for x in busy[:2]] == [3 * 334] * 2
    idle = throughput_curve(_desc(30, 200.0, 4, phases), seed=2)
    assert all(x.jobs > 3 * 334 for x in idle[:2])


def test_when_one_x_k_fails_or_ctrl_c_comes_the_others_stop_at_once(monkeypatch):
    import threading
    import time

    from spn.exceptions import SpnError

    class Run:
        def __init__(self, fails):
            self.fails, self.stopped = fails, threading.Event()
            self.events_per_long = 0.0 if fails else 1.0        # the long one starts first

        def next_long(self, precision):
            return range(1, 2)

        def long_replication(self, i, stop):
            if self.fails:
                time.sleep(0.05)
                raise SpnError("simulating X(1) took longer than the time given")
            assert stop.wait(30), "never told to stop"
            self.stopped.set()
            raise SpnError("stopped")

    monkeypatch.setattr(threads, "available_cores", lambda: 2)
    runs = {1: Run(fails=True), 2: Run(fails=False)}
    started = time.perf_counter()
    with pytest.raises(SpnError, match="X\\(1\\)"):
        throughput._extend_all(runs, {1: 0.01, 2: 0.01})
    assert runs[2].stopped.wait(5) and time.perf_counter() - started < 10


def test_a_pilot_past_the_saturated_k_is_stopped_at_once_and_dropped(monkeypatch):
    import threading
    import time

    from spn.exceptions import SpnError

    started_k, stopped = [], threading.Event()

    class Pilot:
        """X(1) is quick and below the bound; X(2) saturates after a while; X(3) runs until told to stop."""

        def __init__(self, desc, k, entropy, deadline, stop=None, kept_only=False):
            if kept_only:
                raise LookupError("nothing kept")
            started_k.append(k)
            self.k = k
            if k == 2:
                time.sleep(0.3)
            if k >= 3:
                while not stop.is_set():
                    time.sleep(0.01)
                stopped.set()
                raise SpnError(f"simulating X({k}) took longer than the time given")

        def throughput(self):
            low = 1.0 if self.k == 2 else 0.5
            return throughput.Throughput(self.k, low, low, low, "simulation")

    monkeypatch.setattr(throughput, "_Replications", Pilot)
    monkeypatch.setattr(threads, "available_cores", lambda: 2)
    began = time.perf_counter()
    runs = throughput._pilots(None, [1, 2, 3, 4, 6], 0, None, saturated=0.9)
    assert sorted(runs) == [1, 2] and stopped.is_set() and time.perf_counter() - began < 5
    assert 4 not in started_k and 6 not in started_k           # none larger starts once X(2) is saturated
