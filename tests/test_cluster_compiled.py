"""The compiled cluster simulator is the cluster simulator: same model, statistically same answers.

:class:`CompiledClusterSimulator` runs :class:`ClusterSimulator`'s semantics (docs/design.md
§7.2) in a compiled loop, with other random streams. So it is held to:

- exact answers where there is no randomness (one user, deterministic tasks);
- exact answers of random cases: the sympy values of tests/test_scheduling_policies.py (two
  users, each policy), and E[max of n task times] for one phase of n ≤ C tasks and one user,
  for every task-time law (Erlang up to shape 20 integrated numerically);
- agreement with the Python engine where no exact answer is at hand (models/mapreduce.yaml);
- the run contract of :meth:`ClusterSimulator.run`: ``max_events``, ``deadline``, seeds;
- pooled finished tasks (``gate``): the net's exact value;
- refusals: pooled tasks under another policy, sizes past the memory.

Skipped when Numba cannot compile the kernel. The first run in a fresh installation compiles
it (about 10 s); later ones load it from Numba's cache.
"""

import math
import time

import numpy as np
import pytest
from scipy import integrate, special, stats

from spn import kernels
from spn.description import load_description, parse_description
from spn.exceptions import ModelError, SpnError
from spn.simulation import ClusterSimulator, Distribution, cluster_compiled
from spn.simulation.cluster_compiled import CompiledClusterSimulator, cluster_simulator
from spn.simulation.distributions import SimulationTimeout
from spn.simulation.statistics import ratio_estimate

pytestmark = pytest.mark.compiled      # run last: the kernels compiled beside the first tests are ready

MAPREDUCE = load_description("models/mapreduce.yaml")


@pytest.fixture(scope="module", autouse=True)
def compiled():
    try:
        cluster_compiled.warm()
    except Exception as error:  # noqa: BLE001 (whatever stops Numba: nothing to test here)
        pytest.skip(f"the cluster kernel does not compile: {error}")


def description(*, users=1, think_time=1.0, containers, phases, edges=None, policy="gate"):
    data = {"name": "case", "workload": {"users": users, "think_time": think_time},
            "cluster": {"containers": containers}, "phases": phases, "scheduler": {"policy": policy}}
    if edges is not None:
        data["edges"] = edges
    return parse_description(data)


def interval(sim, replications, jobs=200, seed=1, confidence=0.95):
    """The 95 % interval of R over fixed replications (no stopping rule)."""
    rows = [sim.run(np.random.default_rng([seed, i]), warmup=10, length=jobs) for i in range(replications)]
    return ratio_estimate(np.array([r.response_sum for r in rows]), np.array([r.completions for r in rows]),
                          confidence)


# --------------------------------------------------------------------------- exact answers
@pytest.mark.parametrize("policy", ["gate", "fifo", "fair"])
def test_one_user_with_deterministic_tasks_gets_the_exact_execution_time(policy):
    # a: 5 tasks of 2 s on 2 containers (3 waves, 6 s); then b and c in parallel (c first: priority),
    # 1 + 1 tasks of 1 s and 3 s; then d, 1 task of 0.5 s: R = 6 + 3 + 0.5 = 9.5 s exactly
    desc = description(containers=2, policy=policy, phases=[
        {"name": "a", "tasks": 5, "task_time": 2.0, "distribution": "deterministic"},
        {"name": "b", "tasks": 1, "task_time": 1.0, "distribution": "deterministic"},
        {"name": "c", "tasks": 1, "task_time": 3.0, "distribution": "deterministic", "priority": 1},
        {"name": "d", "tasks": 1, "task_time": 0.5, "distribution": "deterministic"}],
        edges=[["a", "b"], ["a", "c"], ["b", "d"], ["c", "d"]])
    rep = CompiledClusterSimulator(desc).run(seed=3, warmup=5, length=50)
    assert rep.completions == 50
    assert rep.response_sum / rep.completions == pytest.approx(9.5, rel=1e-12)
    assert rep.busy_area == pytest.approx(50 * (5 * 2.0 + 1.0 + 3.0 + 0.5), rel=1e-12)


# (tasks per phase, mean task times, edges, containers, think time) -> exact R per policy, from the
# CTMCs solved with sympy in tests/test_scheduling_policies.py (two users, exponential laws)
EXACT_TWO_USERS = [
    (([2], [1]), 2, 1, {"gate": 23 / 13, "fifo": 23 / 13, "fair": 23 / 13}),
    (([1, 1], [1, 2]), 2, 1, {"gate": 13 / 4, "fifo": 3.0, "fair": 3.0}),
    (([3], [1]), 2, 1, {"gate": 204 / 79, "fifo": 204 / 79, "fair": 13 / 5}),
    (([6], [1]), 2, 4, {"gate": 10956327 / 2503321, "fifo": 10956327 / 2503321, "fair": 53869535 / 11871163}),
    (([2, 2], [1, 2]), 2, 2, {"gate": 647 / 113, "fifo": 503 / 92, "fair": 3173 / 581}),
]


@pytest.mark.parametrize("policy", ["gate", "fifo", "fair"])
def test_the_exact_two_user_values_of_each_policy_are_inside_the_95_percent_interval(policy):
    for (tasks, means), containers, think_time, exact in EXACT_TWO_USERS:
        phases = [{"name": f"p{i}", "tasks": t, "task_time": m, "distribution": "exponential"}
                  for i, (t, m) in enumerate(zip(tasks, means))]
        desc = description(users=2, think_time=think_time, containers=containers, phases=phases, policy=policy)
        estimate = interval(CompiledClusterSimulator(desc), 300)
        assert estimate.contains(exact[policy]), (tasks, means, policy, estimate, exact[policy])


def expected_max(law: Distribution, n: int) -> float:
    """E[max of n independent task times] = ∫ (1 − F(x)^n) dx, by the law's distribution function."""
    m = law.mean
    if law.kind == "empirical":                     # exactly: P(max <= x_(i)) = (i / s)^n over sorted samples
        x = np.sort(law.samples)
        return float(np.sum(x * ((np.arange(1, x.size + 1) / x.size) ** n - (np.arange(x.size) / x.size) ** n)))
    if law.kind == "uniform":
        lo, hi = m * (1 - law.spread), m * (1 + law.spread)
        return lo + (hi - lo) * n / (n + 1)
    if law.kind == "lognormal":
        s2 = math.log1p(law.cv ** 2)
        cdf = stats.lognorm(math.sqrt(s2), scale=math.exp(math.log(m) - s2 / 2)).cdf
    else:                                           # Erlang: the regularised lower incomplete gamma
        k = law.shape
        cdf = lambda x: special.gammainc(k, x * k / m)
    value, error = integrate.quad(lambda x: 1.0 - cdf(x) ** n, 0, np.inf, limit=200)
    assert error < 1e-6                             # far below the interval widths (~1e-2)
    return value


@pytest.mark.parametrize("law, n", [
    (Distribution.exponential(2.0), 4), (Distribution.erlang(5, 2.0), 6), (Distribution.erlang(20, 2.0), 8),
    (Distribution.uniform(2.0, spread=0.8), 5), (Distribution.lognormal(2.0, cv=0.6), 6),
    (Distribution.empirical([0.5, 1.0, 1.5, 4.0]), 3)])
def test_one_user_one_phase_of_n_tasks_on_n_containers_takes_the_mean_of_the_longest_task(law, n):
    desc = description(containers=n, think_time=1.0,
                       phases=[{"name": "p", "tasks": n, "task_time": 1.0, "distribution": "exponential"}])
    estimate = interval(CompiledClusterSimulator(desc, {"p": law}), 100)
    assert estimate.contains(expected_max(law, n)), (str(law), estimate, expected_max(law, n))
    assert estimate.rel_half_width < 0.01


# --------------------------------------------------------------------------- agreement with the Python engine
@pytest.mark.parametrize("policy", ["gate", "fifo", "fair"])
def test_on_mapreduce_yaml_the_compiled_and_python_engines_agree_within_their_intervals(policy):
    # no exact value for three users and unpooled tasks: the difference of the two estimates must lie
    # in the 95 % interval of a difference, ±sqrt(h1² + h2²)
    python = interval(ClusterSimulator(MAPREDUCE, policy=policy), 60, seed=2)
    compiled = interval(CompiledClusterSimulator(MAPREDUCE, policy=policy), 300, seed=3)
    h = math.hypot(python.value - python.ci_low, compiled.value - compiled.ci_low)
    assert abs(python.value - compiled.value) <= h, (policy, python, compiled)


def test_pooling_finished_tasks_the_compiled_engine_is_the_net_whose_chain_gives_the_exact_value():
    from spn.analysis.solve import solve_description

    exact = solve_description(MAPREDUCE).measures.mean_execution_time      # the net: tasks pooled under gate

    def long_runs(sim):       # long replications: the start's transient is a fraction of a per mille
        rows = [sim.run(np.random.default_rng([8, i]), warmup=50, length=1000) for i in range(300)]
        return ratio_estimate(np.array([r.response_sum for r in rows]), np.array([r.completions for r in rows]),
                              0.95)
    pooled = long_runs(CompiledClusterSimulator(MAPREDUCE, pool_finished_tasks=True))
    assert pooled.contains(exact) and pooled.rel_half_width < 0.005, (pooled, exact)
    apart = long_runs(CompiledClusterSimulator(MAPREDUCE))
    assert not apart.contains(exact)          # the cluster's own model is another one (docs/design.md §3.4)


# --------------------------------------------------------------------------- the run contract
def test_a_seed_repeats_a_run_and_a_generator_goes_on_with_its_stream():
    sim = CompiledClusterSimulator(MAPREDUCE, policy="fair")
    first, again = sim.run(5, warmup=3, length=40), sim.run(5, warmup=3, length=40)
    assert (first.response_sum, first.events, first.busy_area) == (again.response_sum, again.events, again.busy_area)
    rng = np.random.default_rng(5)
    assert sim.run(rng, warmup=3, length=40).response_sum != sim.run(rng, warmup=3, length=40).response_sum


@pytest.mark.parametrize("policy", ["gate", "fifo", "fair"])
def test_max_events_stops_a_run_that_needs_more_events_and_only_such_a_run(policy):
    sim = CompiledClusterSimulator(MAPREDUCE, policy=policy)
    needed = sim.run(7, warmup=0, length=300).events
    assert sim.run(7, warmup=0, length=300, max_events=needed).events == needed
    with pytest.raises(SpnError, match="max_events"):
        sim.run(7, warmup=0, length=300, max_events=needed - 1)


def test_a_deadline_stops_a_long_run_within_a_few_milliseconds_of_it():
    desc = description(users=50, containers=40, think_time=1.0, policy="fair", phases=[
        {"name": "a", "tasks": 400, "task_time": 1.0, "shape": 10}, {"name": "b", "tasks": 100, "task_time": 0.5}])
    sim = CompiledClusterSimulator(desc)
    sim.run(0, warmup=0, length=2)
    started = time.perf_counter()
    with pytest.raises(SimulationTimeout):
        sim.run(1, warmup=0, length=10 ** 9, deadline=started + 0.2)
    assert time.perf_counter() - started < 0.5


def test_its_replications_run_side_by_side_and_give_what_one_core_gives(monkeypatch):
    # each replication on its own child of the seed: the cores' order of finishing does not matter
    import spn.threads as threads
    from spn.simulation.runner import simulate_description

    desc = description(users=6, containers=8, think_time=2.0, policy="fifo", phases=[
        {"name": "a", "tasks": 20, "task_time": 1.0, "shape": 2}, {"name": "b", "tasks": 5, "task_time": 0.5}])
    ask = dict(engine="compiled", seed=4, replications=6, rel_precision=0.002, max_replications=150, jobs=60,
               job_times=True)
    several = simulate_description(desc, **ask)
    monkeypatch.setattr(threads, "available_cores", lambda: 1)
    one = simulate_description(desc, **ask)
    assert several.replications == one.replications > 64
    assert (several.mean_execution_time, several.throughput, several.events) == (one.mean_execution_time,
                                                                                 one.throughput, one.events)
    # each replication's job times beside its row, in the children's order
    assert len(several.job_times) == several.replications
    assert all(np.array_equal(a, b) for a, b in zip(several.job_times, one.job_times))
    assert several.percentiles([50, 95]) == one.percentiles([50, 95])


def test_replications_cut_at_the_deadline_leave_those_that_ended():
    from spn.simulation.runner import simulate_description

    desc = description(users=50, containers=40, think_time=1.0, policy="fair", phases=[
        {"name": "a", "tasks": 400, "task_time": 1.0, "shape": 10}, {"name": "b", "tasks": 100, "task_time": 0.5}])
    started = time.perf_counter()
    report = simulate_description(desc, engine="compiled", seed=1, replications=10, rel_precision=1e-6,
                                  max_replications=10 ** 6, jobs=20, warmup_jobs=0, max_seconds=1.0)
    assert time.perf_counter() - started < 2.0
    assert report.time_limited and not report.precision_met and report.replications >= 2


def test_many_users_and_tasks_run_in_memory_sized_by_the_description():
    desc = description(users=20_000, containers=500, think_time=1.0, policy="fair", phases=[
        {"name": "a", "tasks": 5, "task_time": 1.0}, {"name": "b", "tasks": 3, "task_time": 1.0}])
    rep = CompiledClusterSimulator(desc).run(2, warmup=100, length=2000)
    assert rep.completions == 2000 and rep.busy_area / (500 * rep.duration) > 0.99


# --------------------------------------------------------------------------- refusals, and the choice of engine
def test_what_the_compiled_engine_refuses():
    with pytest.raises(ModelError, match="pool_finished_tasks"):
        CompiledClusterSimulator(MAPREDUCE, policy="fifo", pool_finished_tasks=True)
    with pytest.raises(ModelError, match="policy"):
        CompiledClusterSimulator(MAPREDUCE, policy="lottery")
    with pytest.raises(ModelError, match="unknown phases"):
        CompiledClusterSimulator(MAPREDUCE, {"shuffle": Distribution.exponential(1.0)})
    with pytest.raises(ModelError, match="length"):
        CompiledClusterSimulator(MAPREDUCE).run(1, warmup=0, length=0)
    huge = description(users=10_000_000, containers=10_000_000, phases=[
        {"name": f"p{i}", "tasks": 10_000_000, "task_time": 1.0} for i in range(200)])
    with pytest.raises(ModelError, match="memory"):          # 10^7 users x 200 phases: about 32 GB
        CompiledClusterSimulator(huge)


def test_the_tables_use_the_kernels_codes():
    from spn.simulation import cluster_kernel as kernel

    assert cluster_compiled._POLICY == {"gate": kernel.GATE, "fifo": kernel.FIFO, "fair": kernel.FAIR}
    assert cluster_compiled._LAW == {"exponential": kernel.EXPONENTIAL, "erlang": kernel.ERLANG,
                                     "deterministic": kernel.DETERMINISTIC, "uniform": kernel.UNIFORM,
                                     "lognormal": kernel.LOGNORMAL, "empirical": kernel.EMPIRICAL}


def test_until_the_kernel_is_compiled_callers_get_the_python_engine_and_a_background_compilation(monkeypatch):
    started = []
    monkeypatch.setattr(kernels, "ready", lambda group="explore": False)
    monkeypatch.setattr(kernels, "warm_in_background", lambda group="explore": started.append(group))
    assert type(cluster_simulator(MAPREDUCE)) is ClusterSimulator and started == ["cluster"]
    monkeypatch.setattr(kernels, "ready", lambda group="explore": group == "cluster")
    assert type(cluster_simulator(MAPREDUCE, policy="fifo")) is CompiledClusterSimulator
