"""A driver phase (``kind: driver``) holds no container: a delay of its job, an infinite server per job.

The driver runs in its own JVM, not in an executor, so the time ``spn fit`` finds between a job's
stages must neither wait for a container nor hold one. Specifications:

- closed forms: one job of a driver phase (exponential, mean d = 1 s) then one task (exponential,
  1 s) on one container, two users thinking Z = 2 s. Under ``fifo`` (and ``fair``) the cluster is a
  product-form network: think (infinite server), driver (infinite server), one container (FCFS), so
  π(n_think, n_driver, n_container) ∝ Z^a/a! · d^b/b! · 1^c over a + b + c = 2: weights 2, 2, 2, 1/2,
  1, 1 (G = 17/2); the container is busy with probability 8/17 = X, and R = N/X − Z = 9/4. Under
  ``gate`` the second job waits at the gate while the first is in its driver phase; the six-state
  chain (both thinking; D; S; D+Q; S+D; S+W) gives X = 4/9 and R = 5/2. A driver phase that held
  the container would make the job hold it for Erlang(2, 2 s): X = 9/22, R = 26/9, under every policy;
- with one user, a driver phase of three tasks runs them at once: R = H_3 · d + 1 = 17/6 s (held on
  the one container they would run one by one: 4 s); the exact chain, job-alone and the simulators agree;
- the exact chain, the compiled and the Python cluster simulators and the net simulator agree with
  several users;
- a driver phase takes no throughput from the other users' tasks: in a product-form case the
  cluster serves the tasks exactly as if each user thought d seconds longer;
- the description: ``kind`` is read, checked (no priority, not every phase) and set by ``--set``.
"""

import itertools

import numpy as np
import pytest

from spn.analysis.alone import job_alone
from spn.analysis.choice import choose_method, state_space_lower_bound
from spn.analysis.decomposition import decompose
from spn.analysis.solve import solve_description
from spn.description import load_description, parse_description
from spn.exceptions import ModelError
from spn.models.dag import build
from spn.models.jobs import build_jobs
from spn.simulation import cluster_compiled
from spn.simulation.runner import simulate_description

pytestmark = pytest.mark.compiled      # run last: the kernels compiled beside the first tests are ready


@pytest.fixture(scope="module")
def compiled():
    """The compiled cluster kernel, loaded (or compiled) once; skipped where Numba cannot compile it."""
    try:
        cluster_compiled.warm()
    except Exception as error:  # noqa: BLE001 (whatever stops Numba: nothing to test here)
        pytest.skip(f"the cluster kernel does not compile: {error}")


def model(*, users, think_time=2.0, containers=1, driver=(1, 1.0), kind="driver", policy="fifo", tasks=1):
    """A job of a driver phase (``driver`` = (tasks, mean)) then one phase of ``tasks`` tasks of 1 s."""
    phases = [{"name": "task", "tasks": tasks, "task_time": 1.0}]
    if driver:
        phases.insert(0, {"name": "driver", "tasks": driver[0], "task_time": driver[1], "kind": kind})
    return parse_description({"name": "driver-then-task", "workload": {"users": users, "think_time": think_time},
                              "cluster": {"containers": containers}, "scheduler": {"policy": policy},
                              "phases": phases})


def exact(desc):
    return solve_description(desc).measures


# --------------------------------------------------------------------------- closed forms
@pytest.mark.parametrize("policy, expected", [("fifo", 9 / 4), ("fair", 9 / 4), ("gate", 5 / 2)])
def test_two_users_one_container_match_the_hand_derived_chain(policy, expected):
    measures = exact(model(users=2, policy=policy))
    assert measures.mean_execution_time == pytest.approx(expected, rel=1e-9)
    # the container is busy only while a task runs: U = X · 1 s
    assert measures.utilization == pytest.approx(measures.throughput, rel=1e-9)


@pytest.mark.parametrize("policy", ["fifo", "fair", "gate"])
def test_a_phase_that_held_the_container_would_be_slower(policy):
    assert exact(model(users=2, policy=policy, kind="container")).mean_execution_time == pytest.approx(26 / 9)


def test_one_user_runs_a_driver_phases_tasks_at_once_in_every_method(compiled):
    desc = model(users=1, driver=(3, 1.0))
    assert exact(desc).mean_execution_time == pytest.approx(17 / 6, rel=1e-9)
    assert exact(model(users=1, driver=(3, 1.0), kind="container")).mean_execution_time == pytest.approx(4.0)
    alone = job_alone(desc)
    assert alone.low <= 17 / 6 <= alone.high and alone.mean == pytest.approx(17 / 6, rel=1e-5)
    for engine in ("net", "cluster", "compiled"):
        report = simulate_description(model(users=1, driver=(3, 1.0), policy="gate"), engine=engine, seed=7,
                                      replications=20, rel_precision=None)
        interval = report.mean_execution_time
        assert interval.ci_low <= 17 / 6 <= interval.ci_high, engine


# --------------------------------------------------------------------------- several users
def several_users(policy):
    """Three users, two containers: a driver phase of 2 tasks (shape 2), then 3 tasks, then 1."""
    return parse_description({
        "name": "cross-check", "workload": {"users": 3, "think_time": 2.0}, "cluster": {"containers": 2},
        "scheduler": {"policy": policy},
        "phases": [{"name": "driver-job0", "tasks": 2, "task_time": 0.8, "shape": 2, "kind": "driver"},
                   {"name": "scan", "tasks": 3, "task_time": 1.0, "shape": 2},
                   {"name": "driver-end", "tasks": 1, "task_time": 0.5, "kind": "driver"},
                   {"name": "write", "tasks": 1, "task_time": 0.7}]})


@pytest.mark.parametrize("policy, engines", [("fifo", ("cluster", "compiled")), ("fair", ("cluster", "compiled")),
                                             ("gate", ("net", "cluster", "compiled"))])
def test_the_exact_chain_and_the_simulators_agree_with_several_users(policy, engines, compiled):
    desc = several_users(policy)
    value = exact(desc)
    for engine in engines:
        # under gate the net pools a phase's finished tasks across jobs: the job-level engines pool them too
        pooled = {"pool_finished_tasks": True} if policy == "gate" and engine != "net" else {}
        report = simulate_description(desc, engine=engine, seed=11, replications=30, rel_precision=None, **pooled)
        for name in ("mean_execution_time", "throughput", "utilization"):
            estimate = getattr(report, name)
            assert estimate.ci_low <= getattr(value, name) <= estimate.ci_high, (engine, name)


def test_the_decomposition_counts_only_container_seconds():
    # fair with one exponential task per job is product form: the flow-equivalent server is exact
    desc = model(users=3, containers=2, driver=(1, 1.5), policy="fair")
    found, value = decompose(desc), exact(desc)
    assert found.mean == pytest.approx(value.mean_execution_time, rel=1e-9)
    assert found.utilization == pytest.approx(value.utilization, rel=1e-9)


# --------------------------------------------------------------------------- other users' tasks
@pytest.mark.parametrize("policy", ["fifo", "fair"])
def test_a_driver_phase_takes_no_throughput_from_other_users_tasks(policy):
    # product form (think and driver are infinite servers, one exponential task on 2 FCFS containers):
    # a driver phase of mean d is, for the containers, d more seconds of thinking
    with_driver = exact(model(users=3, containers=2, driver=(1, 1.5), policy=policy))
    longer_think = exact(model(users=3, think_time=3.5, containers=2, driver=None, policy=policy))
    assert with_driver.throughput == pytest.approx(longer_think.throughput, rel=1e-9)
    assert with_driver.mean_execution_time == pytest.approx(longer_think.mean_execution_time + 1.5, rel=1e-9)
    held = exact(model(users=3, containers=2, driver=(1, 1.5), policy=policy, kind="container"))
    assert held.throughput < 0.95 * with_driver.throughput


def test_in_the_net_a_driver_phase_neither_takes_nor_returns_a_container():
    desc = several_users("fifo")
    for app in (build(desc), build_jobs(desc)):
        net = app.net
        touching = {a.name for a in net.activities if "PC" in a.inputs or "PC" in a.outputs}
        driver = {a.name for a in net.activities if "driver-" in a.name}
        assert driver and not touching & driver
        assert not [p.name for p in net.places if "driver-" in p.name and p.name.endswith((".PW", ".PC"))]


def test_every_users_job_in_a_source_driver_phase_bounds_the_chain():
    # a spark-shell fit: one driver task of shape 1,000 before the stages; under fifo each of N users' jobs can
    # be in it at once, in any of its 1,000 stages: 1,000^N states at least, so 3 users are not explored
    def shell(users, tasks=1, shape=1000):
        return parse_description({
            "name": "shell", "workload": {"users": users, "think_time": 5.0}, "cluster": {"containers": 5},
            "phases": [{"name": "driver-job0", "tasks": tasks, "task_time": 0.2, "shape": shape, "kind": "driver"},
                       {"name": "stage-0", "tasks": 10, "task_time": 0.7}]})
    assert [state_space_lower_bound(shell(n)) for n in (1, 2, 3)] == pytest.approx([1e3, 1e6, 1e9])
    assert choose_method(shell(3)) is not None
    small = shell(2, tasks=2, shape=2)     # 2 tasks in 2 stages: 3 compositions per job, 9 for two
    assert 9 <= state_space_lower_bound(small) <= solve_description(small).tangible_states


def small_descriptions_with_driver_phases():
    """Random small DAGs, some of whose phases (never all) are driver phases, 1-2 users, every policy."""
    rng = np.random.default_rng(28)
    for k in range(18):
        n = int(rng.integers(2, 4))
        drivers = set(rng.choice(n, size=int(rng.integers(1, n)), replace=False).tolist())
        phases = [{"name": f"p{i}", "tasks": int(rng.integers(1, 4)), "task_time": 1.0,
                   "shape": int(rng.integers(1, 4))} | ({"kind": "driver"} if i in drivers else {}) for i in range(n)]
        pairs = [(i, j) for i, j in itertools.combinations(range(n), 2) if rng.random() < 0.4]
        pairs += [(i, n - 1) for i in range(n - 1) if all(a != i for a, _ in pairs)]   # one sink: connected
        yield parse_description({"name": f"d{k}", "workload": {"users": int(rng.integers(1, 3)), "think_time": 3.0},
                                 "cluster": {"containers": int(rng.integers(1, 4))}, "phases": phases,
                                 "edges": [[f"p{i}", f"p{j}"] for i, j in pairs],
                                 "scheduler": {"policy": ("fifo", "fair", "gate")[k % 3]}})


@pytest.mark.parametrize("desc", list(small_descriptions_with_driver_phases()), ids=lambda d: d.name)
def test_the_lower_bound_never_exceeds_the_chain_with_driver_phases(desc):
    assert state_space_lower_bound(desc) <= solve_description(desc).tangible_states


# --------------------------------------------------------------------------- the description
def test_kind_is_read_checked_and_set():
    assert [p.kind for p in several_users("fifo").phases] == ["driver", "container", "driver", "container"]
    assert load_description("models/mapreduce.yaml", ["phases.map.kind=driver"]).phases[0].kind == "driver"
    with pytest.raises(ModelError, match=r"phases\[0\] \(d\)\.priority: a driver phase takes no container"):
        parse_description({"name": "x", "workload": {"users": 1, "think_time": 1.0}, "cluster": {"containers": 1},
                           "phases": [{"name": "d", "tasks": 1, "task_time": 1.0, "kind": "driver", "priority": 1},
                                      {"name": "t", "tasks": 1, "task_time": 1.0}]})
    with pytest.raises(ModelError, match="every phase is a driver phase"):
        load_description("models/mapreduce.yaml", ["phases.map.kind=driver", "phases.reduce.kind=driver"])
    with pytest.raises(ModelError, match="expected one of: container, driver"):
        load_description("models/mapreduce.yaml", ["phases.map.kind=executor"])


def test_driver_phases_do_not_share_containers_in_the_job_alone_method():
    # two sibling driver phases of 3 exponential tasks on 2 containers run all 6 at once: the longest of
    # six, H_6 = 49/20 s, then the last task's 1 s
    desc = parse_description({
        "name": "x", "workload": {"users": 1, "think_time": 1.0}, "cluster": {"containers": 2},
        "phases": [{"name": "a", "tasks": 3, "task_time": 1.0, "kind": "driver"},
                   {"name": "b", "tasks": 3, "task_time": 1.0, "kind": "driver"},
                   {"name": "t", "tasks": 1, "task_time": 1.0}],
        "edges": [["a", "t"], ["b", "t"]]})
    assert exact(desc).mean_execution_time == pytest.approx(49 / 20 + 1, rel=1e-9)
    alone = job_alone(desc)
    assert alone.low <= 49 / 20 + 1 <= alone.high and alone.mean == pytest.approx(49 / 20 + 1, rel=1e-4)
