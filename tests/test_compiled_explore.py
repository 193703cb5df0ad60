"""The compiled exploration engine builds the same chain as the NumPy engine.

Both engines are run on the same nets and their chains compared entry by entry,
up to the numbering of states: random nets with priorities, weights, inhibitor
arcs and servers; the DAG models; the job-identity nets of every scheduling policy
(slot shifts, allocation by slot, choice gates, queues); and the cases the compiled
engine must hand back to the NumPy engine (vanishing loops, traps, gates). What the
kernel reads to go faster (which activities a change concerns, the sentinel test it
looks at first) changes nothing in the chain.
"""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import assume, given, settings

from spn import kernels, statespace
from spn.statespace import compiled
from spn.statespace import SMALL
from spn.exceptions import StateSpaceLimitError, TimelessTrapError
from spn.net.erlang import expand_erlang
from spn.description import load_description
from spn.models.dag import build
from spn.models.jobs import build_classes, build_jobs
from spn.statespace import kernel_arrays
from spn.net import InputGate, InstantActivity, Net, Place, TimedActivity
from spn.statespace import explore
from test_activity_table import mapreduce_dag, same_chain
from test_properties import conservative_nets

pytestmark = pytest.mark.compiled      # run last: the kernels compiled beside the first tests are ready

def both(net, **kw):
    return explore(net, engine="compiled", **kw), explore(net, engine="numpy", **kw)


@settings(max_examples=200, deadline=None)
@given(conservative_nets())
def test_same_chain_as_the_numpy_engine_on_random_nets(net):
    try:
        numpy_chain = explore(net, engine="numpy", max_states=500)
    except (TimelessTrapError, StateSpaceLimitError) as error:
        with pytest.raises(type(error)):          # auto hands the net over and gets the same error
            explore(net, max_states=500)
        return
    parts = compiled.explore_plain(expand_erlang(net), max_states=500)
    assume(parts is not None)                     # vanishing loops: the NumPy engine's job
    same_chain(explore(net, engine="compiled", max_states=500), numpy_chain)


@pytest.mark.parametrize("users, containers, maps, reduces", [(1, 8, 12, 5), (3, 6, 6, 4), (2, 10, 3, 9), (6, 5, 5, 4)])
def test_same_chain_on_mapreduce_dags(users, containers, maps, reduces):
    same_chain(*both(mapreduce_dag(users, containers, maps, reduces)))


@pytest.mark.parametrize("model", ["tez-tq3", "tez-tq1", "mapreduce"])
def test_same_chain_on_shipped_models(model):
    net = build(load_description(Path(__file__).resolve().parents[1] / "models" / f"{model}.yaml")).net
    same_chain(*both(net))


MODELS = Path(__file__).resolve().parents[1] / "models"
JOIN = Path(__file__).resolve().parents[1] / "benchmarks" / "models" / "join.yaml"


@pytest.mark.parametrize("policy", ["fifo", "fair", "gate"])
@pytest.mark.parametrize("users, containers", [(3, 3), (4, 2)])
def test_same_chain_on_job_identity_nets(policy, users, containers):
    # slots shift up when a job ends, containers go by slot (fifo) or by choice gates (fair)
    desc = load_description(MODELS / "mapreduce.yaml", [f"scheduler.policy={policy}", f"workload.users={users}",
                                                        f"cluster.containers={containers}"])
    same_chain(*both(build_jobs(desc).net))


def test_same_chain_on_a_job_identity_join():
    # two scans of one job share a priority: each free container is a choice between them; Erlang 2-4 stages
    desc = load_description(JOIN, ["workload.users=2", "cluster.containers=4", "phases.scan-a.tasks=3",
                                   "phases.scan-b.tasks=3", "phases.join.tasks=2", "phases.final.tasks=2"])
    fifo = build_jobs(desc, policy="fifo").net
    compiled_chain, numpy_chain = both(fifo)
    assert compiled_chain.n_states > 5_000
    same_chain(compiled_chain, numpy_chain)


def test_same_chain_on_queues():
    desc = load_description(MODELS / "two-queues.yaml", [
        "cluster.containers=4", "classes.etl.users=1", "classes.dashboard.users=2", "classes.etl.phases.map.tasks=3",
        "classes.etl.phases.reduce.tasks=2", "classes.dashboard.phases.scan.tasks=2"])
    same_chain(*both(build_classes(desc).net))


def test_the_sentinel_tests_change_only_the_speed(monkeypatch):
    # sentinels picked from the markings seen, often, and at random: the same chain
    net = build_jobs(load_description(MODELS / "mapreduce.yaml", ["scheduler.policy=fifo", "workload.users=4"])).net
    rng = np.random.default_rng(3)
    picks = []
    monkeypatch.setattr(compiled, "SAMPLE", 16)
    monkeypatch.setattr(compiled, "failing_tests", lambda instant, rows: picks.append(1) or rng.random(len(instant[1])))
    same_chain(explore(net, engine="compiled"), explore(net, engine="numpy"))
    assert len(picks) >= 2                       # picked again while exploring


def test_a_timed_firing_wakes_only_the_activities_its_changes_can_enable():
    net = build_jobs(load_description(MODELS / "mapreduce.yaml", ["scheduler.policy=fifo"])).net
    from spn.statespace.activity_table import ActivityTable
    timed = kernel_arrays.group_arrays(ActivityTable(net, net.timed))
    order, instant, _, (_, wakes), _ = kernel_arrays.instant_arrays(net, timed)
    names = [net.instant[i].name for i in order]
    t = [a.name for a in net.timed].index("job2/map.TAR")
    bits = wakes[len(order) + t].view(np.uint64)
    woken = {names[a] for a in range(len(order)) if bits[a // 64] >> np.uint64(a % 64) & np.uint64(1)}
    # a task of job 2 ends: its container may go to a waiting task, its phase may end, its finished task may
    # move up; its running tasks only fall (moving them up, shift1.map.PR, needs one more, not one less)
    assert {"job1/map.IAGR", "job2/reduce.IAGR", "job2/map.IAF", "shift1.map.PF"} <= woken
    assert "shift1.map.PR" not in woken and not any(name.startswith(("shift2.", "slot")) for name in woken)
    assert bin(int(wakes[-1].view(np.uint64)[0])).count("1") == min(len(order), 64)     # the last row: every one
    # a container handed out wakes no other allocation: it lowers the pool they all wait for
    a = names.index("job1/map.IAGR")
    bits = wakes[a].view(np.uint64)
    woken = {names[b] for b in range(len(order)) if bits[b // 64] >> np.uint64(b % 64) & np.uint64(1)}
    assert not any(name.endswith(".IAGR") for name in woken)


def test_counts_past_a_byte_widen_the_stored_markings():
    # the initial marking fits a byte; the place fills up to 300 tokens
    net = Net([Place("x"), Place("y", 1)], [
        TimedActivity("make", inputs={"y": 1}, outputs={"x": 1, "y": 1}, inhibitors={"x": 300}, rate=1.0),
        TimedActivity("use", inputs={"x": 1}, outputs={}, rate=0.5, servers="infinite")])
    compiled, numpy_chain = both(net)
    assert compiled.n_states == 301 and compiled.markings.max() == 300
    same_chain(compiled, numpy_chain)


def test_arrays_grow_past_their_first_size():
    # tens of thousands of states and transitions: every array grows several times from 4,096 entries
    from spn.description import parse_description
    net = build(parse_description({
        "name": "big", "workload": {"users": 6, "think_time": 10.0}, "cluster": {"containers": 300},
        "phases": [{"name": "map", "tasks": 12, "task_time": 2.0, "shape": 2},
                   {"name": "reduce", "tasks": 10, "task_time": 3.0}],
        "edges": [["map", "reduce"]]})).net
    compiled, numpy_chain = both(net, max_states=100_000)
    assert compiled.n_states > 3 * 4096 and len(compiled.src) > 8 * 4096
    same_chain(compiled, numpy_chain)


def test_a_marking_past_max_states_is_an_error():
    with pytest.raises(StateSpaceLimitError, match="more than 100 tangible markings"):
        explore(mapreduce_dag(3, 6, 6, 4), engine="compiled", max_states=100)


def test_max_seconds_is_looked_at_between_chunks_of_markings(monkeypatch):
    net = mapreduce_dag(3, 6, 6, 4)
    monkeypatch.setattr(compiled, "CHUNK", 16)      # several kernel calls, so the clock is read
    with pytest.raises(StateSpaceLimitError, match=r"after 0 s \(max_seconds\)") as stopped:
        explore(net, engine="compiled", max_seconds=0.0)
    assert stopped.value.option == "max_seconds"
    same_chain(explore(net, engine="compiled", max_seconds=60.0), explore(net, engine="numpy"))


def vanishing_loop():
    """Two instantaneous activities pass a token back and forth; a third lets it out."""
    return Net([Place("idle", 1), Place("a"), Place("b"), Place("busy")], [
        TimedActivity("arrive", inputs={"idle": 1}, outputs={"a": 1}, rate=1.0),
        InstantActivity("ab", inputs={"a": 1}, outputs={"b": 1}, weight=3.0),
        InstantActivity("ba", inputs={"b": 1}, outputs={"a": 1}, weight=1.0),
        InstantActivity("out", inputs={"b": 1}, outputs={"busy": 1}, weight=1.0),
        TimedActivity("serve", inputs={"busy": 1}, outputs={"idle": 1}, rate=2.0)])


def test_until_the_kernels_are_compiled_auto_takes_the_numpy_engine_and_compiles_them_aside(monkeypatch):
    started = []
    monkeypatch.setattr(kernels, "ready", lambda: False)
    monkeypatch.setattr(kernels, "warm_in_background", lambda: started.append(1))
    monkeypatch.setattr(compiled, "explore_plain", lambda *a, **kw: pytest.fail("compiled while cold"))
    monkeypatch.setattr(statespace, "SMALL", 100)
    net = mapreduce_dag(3, 6, 6, 4)
    same_chain(explore(net), explore(net, engine="numpy"))
    assert started


def test_vanishing_loops_are_handed_to_the_numpy_engine(monkeypatch):
    net = vanishing_loop()
    assert compiled.explore_plain(net) is None
    with pytest.raises(ValueError, match="gave up"):
        explore(net, engine="compiled")
    monkeypatch.setattr(statespace, "SMALL", 1)        # past the small-chain shortcut of auto
    same_chain(explore(net), explore(net, engine="numpy"))


def test_auto_explores_small_chains_without_the_compiled_engine_and_large_ones_with_it(monkeypatch):
    net = mapreduce_dag(3, 6, 6, 4)
    explore(net, engine="compiled")                   # compiled in this installation: auto may use it
    calls = []
    original = compiled.explore_plain
    monkeypatch.setattr(compiled, "explore_plain", lambda *a, **kw: calls.append(1) or original(*a, **kw))
    small = explore(net)
    assert small.n_states < SMALL and not calls
    monkeypatch.setattr(statespace, "SMALL", 100)
    large = explore(net)
    assert calls and large.n_states > 100
    same_chain(large, small)


def test_a_small_chain_the_numpy_engine_is_slow_on_goes_to_the_compiled_engine(monkeypatch):
    # job-identity nets: the NumPy engine explores a few thousand states a second, so waiting for it to
    # reach SMALL states could take far longer than loading the compiled engine
    net = mapreduce_dag(3, 6, 6, 4)
    explore(net, engine="compiled")
    calls = []
    original = compiled.explore_plain
    monkeypatch.setattr(compiled, "explore_plain", lambda *a, **kw: calls.append(1) or original(*a, **kw))
    monkeypatch.setattr(statespace, "SMALL_SECONDS", 0.0)
    fast = explore(net)
    assert calls and fast.n_states < SMALL
    same_chain(fast, explore(net, engine="numpy"))
    with pytest.raises(StateSpaceLimitError, match="max_seconds"):     # the caller's own limit still holds
        explore(net, max_seconds=0.0)


def test_a_timeless_trap_is_reported_with_its_marking():
    net = Net([Place("idle", 1), Place("a"), Place("b")], [
        TimedActivity("arrive", inputs={"idle": 1}, outputs={"a": 1}, rate=1.0),
        InstantActivity("ab", inputs={"a": 1}, outputs={"b": 1}),
        InstantActivity("ba", inputs={"b": 1}, outputs={"a": 1})])
    with pytest.raises(TimelessTrapError, match="timeless trap"):
        explore(net, engine="numpy")
    assert compiled.explore_plain(net) is None      # auto would hand it over


def test_gated_nets_are_not_plain_and_go_to_the_numpy_engine():
    net = Net([Place("idle", 2), Place("busy")], [
        TimedActivity("start", inputs={"idle": 1}, outputs={"busy": 1}, rate=1.0,
                      input_gates=[InputGate(lambda m: m["busy"] < 1)]),
        TimedActivity("stop", inputs={"busy": 1}, outputs={"idle": 1}, rate=2.0)])
    assert not compiled.is_plain(net)
    with pytest.raises(ValueError, match="plain net"):
        explore(net, engine="compiled")
    assert explore(net).n_states == 2


def test_an_unknown_engine_is_an_error():
    with pytest.raises(ValueError, match="unknown exploration engine 'fast'"):
        explore(vanishing_loop(), engine="fast")


def test_instantaneous_interleavings_are_summed_like_the_numpy_engine_merges_them():
    # four independent instantaneous activities enabled together: 4! orders, one landing
    places = [Place("go", 1)] + [Place(f"q{i}") for i in range(4)] + [Place(f"d{i}") for i in range(4)]
    acts = [TimedActivity("fork", inputs={"go": 1}, outputs={f"q{i}": 1 for i in range(4)}, rate=1.0)]
    acts += [InstantActivity(f"take{i}", inputs={f"q{i}": 1}, outputs={f"d{i}": 1}, weight=i + 1.0) for i in range(4)]
    acts += [TimedActivity("join", inputs={f"d{i}": 1 for i in range(4)}, outputs={"go": 1}, rate=2.0)]
    compiled, numpy_chain = both(Net(places, acts))
    assert compiled.n_states == 2
    same_chain(compiled, numpy_chain)
    # every take_i fires once per fork, whatever the order
    assert np.allclose(compiled.impulses.toarray().sum(axis=0), [1.0] * 4)


def test_a_stale_stamp_clears_numbas_cache_of_every_file_of_the_kernel(tmp_path, monkeypatch):
    # Numba checks only a function's own file: the kernel would keep the old code of a helper file
    sources = [tmp_path / "compiled.py", tmp_path / "compiled_gates.py"]
    cache = tmp_path / "__pycache__"
    cache.mkdir()
    names = ["compiled._expand-517.py311.nbi", "compiled._expand-517.py311.1.nbc", "compiled_gates.gates_hold-70.py311.nbi",
             "frontier.cpython-311.pyc", "other._f-3.py311.nbi"]
    for path in sources + [cache / name for name in names]:
        path.write_text("")
    monkeypatch.setitem(kernels.GROUPS, "explore", (tuple(sources), "spn-kernels"))
    monkeypatch.delenv("NUMBA_CACHE_DIR", raising=False)
    kernels._clear_cache("explore")
    assert sorted(p.name for p in cache.iterdir()) == ["frontier.cpython-311.pyc", "other._f-3.py311.nbi"]
