"""spn.analysis.replication_store: X(k) asked again is read back, bit for bit what the simulation gives,
never another model's, and a store that cannot be read or written never stops an answer."""

import json

import pytest

from spn.analysis.throughput import throughput_curve
from spn.description import parse_description
from spn.simulation.cluster_compiled import CompiledClusterSimulator

pytestmark = pytest.mark.compiled      # run last: the kernels compiled beside the first tests are ready


def _desc(users=30, think=20.0, task_time=1.0):
    return parse_description({"name": "d", "workload": {"users": users, "think_time": think},
                              "cluster": {"containers": 20}, "scheduler": {"policy": "fifo"},
                              "phases": [{"name": "p", "tasks": 200, "task_time": task_time, "shape": 4}]})


@pytest.fixture
def store(tmp_path, monkeypatch):
    monkeypatch.setenv("SPN_CACHE_DIR", str(tmp_path))
    return tmp_path


def no_simulation(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("simulated although kept")
    monkeypatch.setattr(CompiledClusterSimulator, "run", refuse)


def test_asked_again_x_k_is_read_back_as_simulated(store, monkeypatch):
    first = throughput_curve(_desc(), seed=3)
    assert sum(x.source == "simulation" for x in first) >= 2 and list(store.glob("*.json"))
    no_simulation(monkeypatch)
    assert throughput_curve(_desc(), seed=3) == first


def test_the_same_as_without_a_store(store, monkeypatch):
    kept = throughput_curve(_desc(), seed=3)
    monkeypatch.setenv("SPN_CACHE_DIR", "off")
    assert throughput_curve(_desc(), seed=3) == kept


def test_other_users_and_think_times_share_the_cluster_s_x_k(store, monkeypatch):
    throughput_curve(_desc(users=30, think=20.0), seed=3)
    before = {path: path.read_text() for path in store.glob("*.json")}
    throughput_curve(_desc(users=24, think=5.0), seed=3)        # more long replications, maybe; no new k
    assert set(store.glob("*.json")) == set(before)


def test_another_job_or_seed_is_simulated_afresh(store, monkeypatch):
    kept = throughput_curve(_desc(), seed=3)
    calls = []
    run = CompiledClusterSimulator.run
    monkeypatch.setattr(CompiledClusterSimulator, "run", lambda self, *a, **k: calls.append(1) or run(self, *a, **k))
    other = throughput_curve(_desc(task_time=1.5), seed=3)
    assert calls and [x.value for x in other] != [x.value for x in kept]
    calls.clear()
    throughput_curve(_desc(), seed=4)
    assert calls


def test_a_damaged_store_is_as_if_empty(store):
    kept = throughput_curve(_desc(), seed=3)
    for i, path in enumerate(store.glob("*.json")):
        path.write_text(["{not json", json.dumps([1, 2]), json.dumps({"pilot:6:10": [["a", 1, 2]]})][i % 3])
    assert throughput_curve(_desc(), seed=3) == kept


def test_a_store_that_cannot_be_written_never_stops_an_answer(tmp_path, monkeypatch):
    blocked = tmp_path / "file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("SPN_CACHE_DIR", str(blocked / "below"))
    assert throughput_curve(_desc(), seed=3)[0].source == "simulation"
    assert not list(tmp_path.rglob("*.tmp"))


def test_off_keeps_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv("SPN_CACHE_DIR", "off")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    throughput_curve(_desc(), seed=3)
    assert not list(tmp_path.rglob("*"))
