"""The simulators, piece by piece: task-time laws, the net engine on reference nets with
known answers, its semantics (races, clocks per token, priorities, weights, gates),
seeds and errors, and the statistics (Student t, ratio estimators, stopping rule).

Simulation is judged by confidence intervals (docs/design.md §7): seeds are fixed only so that
a failure repeats; every numeric check is "the exact value lies in the interval".
"""

import math

import numpy as np
import pytest
from scipy import integrate, stats

from spn.exceptions import ModelError, SpnError, TimelessTrapError
from spn.description import parse_description
from spn.measures import expected_tokens, job_measures
from spn.models.dag import build
from spn.models.mapreduce import mapreduce_net
from spn.net import Erlang, InputGate, InstantActivity, Net, OutputGate, Place, TimedActivity
from spn.simulation import (ClusterSimulator, Distribution, NetSimulator, distributions_from_description,
                            mean_estimate, ratio_estimate, seed_sequence, simulate_description)
from spn.simulation.statistics import t_quantile
from spn.solvers import steady_state
from spn.statespace import explore


def describe(phases, users=1, think_time=5.0, containers=8, edges=None, name="m"):
    """A description under the paper's gate, the policy the net engine models (the default is fifo)."""
    data = {"name": name, "workload": {"users": users, "think_time": think_time},
            "cluster": {"containers": containers}, "scheduler": {"policy": "gate"}, "phases": phases}
    if edges is not None:
        data["edges"] = edges
    return parse_description(data)


def replicate(sim, measure, n=20, **run):
    """Estimate of ``measure(replication)`` over n replications, 99 % interval."""
    return mean_estimate([measure(sim.run(seed=1000 + k, **run)) for k in range(n)], confidence=0.99)


# --------------------------------------------------------------------------- laws
LAWS = [
    Distribution.exponential(2.0),
    Distribution.erlang(3, 2.0),
    Distribution.deterministic(2.0),
    Distribution.uniform(2.0, spread=0.5),
    Distribution.lognormal(2.0, cv=0.7),
    Distribution.empirical([1.0, 2.0, 3.0, 6.0]),
]


@pytest.mark.parametrize("law", LAWS, ids=str)
def test_laws_have_their_mean_and_variance(law):
    x = law.sample(np.random.default_rng(7), 200_000)
    assert (x > 0).all()
    se = math.sqrt(law.variance / len(x))
    assert abs(x.mean() - law.mean) <= 5 * se + 1e-12
    if law.variance:
        assert x.var() == pytest.approx(law.variance, rel=0.05)


def test_law_validation_reports_every_problem():
    with pytest.raises(ModelError) as err:
        Distribution("uniform", -1.0, spread=2.0)
    assert "mean must be" in str(err.value) and "spread must be in (0, 1]" in str(err.value)
    with pytest.raises(ModelError, match="unknown distribution"):
        Distribution("weibull", 1.0)
    with pytest.raises(ModelError, match="non-empty"):
        Distribution.empirical([])
    assert Distribution.erlang(1, 3.0).is_exponential and not Distribution.erlang(2, 3.0).is_exponential


def test_distributions_from_description_maps_every_phase_to_its_law():
    desc = describe([
        {"name": "a", "tasks": 1, "task_time": 2.0, "shape": 3},
        {"name": "b", "tasks": 1, "task_time": 2.0, "distribution": "exponential"},
        {"name": "c", "tasks": 1, "task_time": 2.0, "distribution": "deterministic"},
        {"name": "d", "tasks": 1, "task_time": 2.0, "distribution": "uniform", "spread": 0.25},
        {"name": "e", "tasks": 1, "task_time": 2.0, "distribution": "lognormal", "cv": 1.5},
        {"name": "f", "tasks": 1, "task_time": 2.0, "distribution": "empirical", "samples": [1, 3]},
    ])
    laws = distributions_from_description(desc)
    assert laws == {
        "a.TAR": Distribution.erlang(3, 2.0), "b.TAR": Distribution.exponential(2.0),
        "c.TAR": Distribution.deterministic(2.0), "d.TAR": Distribution.uniform(2.0, 0.25),
        "e.TAR": Distribution.lognormal(2.0, 1.5), "f.TAR": Distribution.empirical([1.0, 3.0]),
    }
    assert set(laws) <= {a.name for a in build(desc).net.timed}


# --------------------------------------------------------------------------- reference nets
def test_mm1k_queue_length_matches_the_closed_form():
    lam, mu, K = 1.0, 1.5, 4
    net = Net([Place("queue")], [
        TimedActivity("arrive", outputs={"queue": 1}, inhibitors={"queue": K}, rate=lam),
        TimedActivity("serve", inputs={"queue": 1}, rate=mu)])
    rho = lam / mu
    p = np.array([rho ** k for k in range(K + 1)])
    p /= p.sum()
    exact = float(np.arange(K + 1) @ p)
    est = replicate(NetSimulator(net), lambda r: r.mean_tokens("queue"), warmup=50.0, length=2000.0)
    assert est.contains(exact), (est, exact)
    thr = replicate(NetSimulator(net), lambda r: r.throughput("serve"), warmup=50.0, length=2000.0)
    assert thr.contains(lam * (1 - p[-1])), thr


def test_marking_dependent_rates_match_the_ctmc():
    net = Net([Place("up", 3), Place("down")], [
        TimedActivity("fail", inputs={"up": 1}, outputs={"down": 1}, rate=lambda m: 0.2 * m["up"] + 0.1),
        TimedActivity("repair", inputs={"down": 1}, outputs={"up": 1}, rate=1.0, servers=2)])
    ss = explore(net)
    pi = steady_state(ss.generator()).x
    est = replicate(NetSimulator(net), lambda r: r.mean_tokens("down"), warmup=20.0, length=1000.0)
    assert est.contains(expected_tokens(ss, pi, "down")), est


def test_erlang_activity_keeps_its_law_per_token_and_matches_the_expanded_ctmc():
    net = Net([Place("idle", 3), Place("busy")], [
        TimedActivity("start", inputs={"idle": 1}, outputs={"busy": 1}, rate=0.5),
        TimedActivity("work", inputs={"busy": 1}, outputs={"idle": 1}, erlang=Erlang(4, 2.0),
                      servers="infinite")])
    ss = explore(net)
    pi = steady_state(ss.generator()).x
    est = replicate(NetSimulator(net), lambda r: r.mean_tokens("busy"), warmup=20.0, length=1000.0)
    assert est.contains(expected_tokens(ss, pi, "busy")), est


def test_a_deterministic_cycle_has_the_obvious_utilisation():
    net = Net([Place("idle", 1), Place("busy")], [
        TimedActivity("start", inputs={"idle": 1}, outputs={"busy": 1}, rate=1.0),
        TimedActivity("stop", inputs={"busy": 1}, outputs={"idle": 1}, erlang=Erlang(1, 1.0),
                      servers="infinite")])
    sim = NetSimulator(net, {"stop": Distribution.deterministic(3.0)})
    est = replicate(sim, lambda r: r.mean_tokens("busy"), warmup=10.0, length=2000.0)
    assert est.contains(3.0 / 4.0), est         # mean cycle: Exp(1) idle + 3 s busy


def test_priorities_and_weights_of_instantaneous_activities():
    net = Net([Place("src", 1), Place("mid"), Place("a"), Place("b"), Place("never")], [
        TimedActivity("make", inputs={"src": 1}, outputs={"mid": 1}, rate=1.0),
        InstantActivity("to_a", inputs={"mid": 1}, outputs={"a": 1}, weight=1.0),
        InstantActivity("to_b", inputs={"mid": 1}, outputs={"b": 1}, weight=3.0),
        InstantActivity("low", inputs={"mid": 1}, outputs={"never": 1}, priority=-1, weight=100.0),
        InstantActivity("back_a", inputs={"a": 1}, outputs={"src": 1}, priority=5),
        InstantActivity("back_b", inputs={"b": 1}, outputs={"src": 1}, priority=5)])
    rep = NetSimulator(net).run(seed=3, length=20_000, count="make")
    n_a, n_b = rep.count("to_a"), rep.count("to_b")
    # the run stops at the 20000th 'make', before the instantaneous activities that follow it
    assert rep.count("low") == 0 and n_a + n_b == 19_999
    # binomial(20000, 1/4): 5 standard deviations
    assert abs(n_a - 5000) < 5 * math.sqrt(20_000 * 0.25 * 0.75)
    assert rep.mean_tokens("mid") == 0.0       # vanishing markings take no time


def test_clocks_are_per_token_for_non_exponential_tasks():
    """One user, C >= tasks: the job takes the maximum of independent task times."""
    n, mean, spread = 3, 2.0, 0.5
    desc = describe([{"name": "p", "tasks": n, "task_time": mean, "distribution": "uniform",
                      "spread": spread}], containers=n)
    lo, hi = mean * (1 - spread), mean * (1 + spread)
    exact = lo + (hi - lo) * n / (n + 1)       # E[max of n uniforms]
    report = simulate_description(desc, seed=4, confidence=0.99, rel_precision=0.005)
    assert report.mean_execution_time.contains(exact), report.mean_execution_time
    cluster = simulate_description(desc, engine="cluster", seed=4, confidence=0.99, rel_precision=0.005)
    assert cluster.mean_execution_time.contains(exact), cluster.mean_execution_time


def test_lognormal_and_empirical_laws_give_the_expected_maximum():
    m, cv, n = 2.0, 0.8, 2
    s2 = math.log1p(cv ** 2)
    law = stats.lognorm(s=math.sqrt(s2), scale=math.exp(math.log(m) - s2 / 2))
    exact = integrate.quad(lambda x: 1 - law.cdf(x) ** n, 0, math.inf)[0]
    desc = describe([{"name": "p", "tasks": n, "task_time": m, "distribution": "lognormal", "cv": cv}])
    est = simulate_description(desc, seed=5, confidence=0.99, rel_precision=0.01).mean_execution_time
    assert est.contains(exact), (est, exact)
    samples = [1.0, 2.0, 4.0]                  # E[max of 2 draws] = (1 + 3*2 + 5*4) / 9
    desc = describe([{"name": "p", "tasks": 2, "distribution": "empirical", "samples": samples}])
    est = simulate_description(desc, seed=5, confidence=0.99, rel_precision=0.01).mean_execution_time
    assert est.contains(27 / 9), est


# --------------------------------------------------------------------------- paths and gates
def _same(r1, r2):
    assert r1.duration == r2.duration and r1.events == r2.events
    np.testing.assert_array_equal(r1.integrals, r2.integrals)
    np.testing.assert_array_equal(r1.firings, r2.firings)


def test_compiled_and_reference_paths_follow_the_same_trajectory():
    desc = describe([{"name": "map", "tasks": 3, "task_time": 1.0, "shape": 2},
                     {"name": "red", "tasks": 2, "task_time": 2.0, "distribution": "uniform", "spread": 0.5}],
                    users=3, containers=2)
    app = build(desc)
    laws = distributions_from_description(desc)
    runs = [NetSimulator(app.net, laws, compiled=c).run(seed=11, warmup=3, length=60, count=app.end_activity)
            for c in (True, False)]
    _same(*runs)


def test_gated_net_traced_gates_follow_the_reference_path_and_match_the_ctmc():
    net = mapreduce_net(users=2, think_time=5.0, containers=3, map_tasks=3, map_time=1.0,
                        reduce_tasks=2, reduce_time=2.0, map_shape=2)
    _same(NetSimulator(net).run(seed=2, warmup=3, length=80, count="IAFR"),
          NetSimulator(net, compiled=False).run(seed=2, warmup=3, length=80, count="IAFR"))
    ss = explore(net)
    exact = job_measures(ss, steady_state(ss.generator()).x, users=2, think_time=5.0, end_activity="IAFR",
                         think_place="PJ", container_place="PC", containers=3).mean_execution_time
    sim = NetSimulator(net)
    reps = [sim.run(seed=k, warmup=10, length=300, count="IAFR", observe=["PJ"]) for k in range(30)]
    est = ratio_estimate([2 * r.duration - r.integral("PJ") for r in reps], [r.count("IAFR") for r in reps],
                         confidence=0.99)
    assert est.contains(exact), (est, exact)


def test_output_gates_feeding_a_private_place_start_clocks():
    def add_two(m):
        m["busy"] = m["busy"] + 2
    net = Net([Place("go", 1), Place("busy"), Place("done")], [
        InstantActivity("split", inputs={"go": 1}, output_gates=[OutputGate(add_two)]),
        TimedActivity("work", inputs={"busy": 1}, outputs={"done": 1}, erlang=Erlang(3, 1.0),
                      servers="infinite"),
        InstantActivity("join", inputs={"done": 2}, outputs={"go": 1})])
    rep = NetSimulator(net).run(seed=1, length=500, count="join")
    assert rep.count("work") == 1000
    assert rep.mean_tokens("busy") + rep.mean_tokens("done") == pytest.approx(2.0)


def test_input_gates_that_read_other_places_are_re_evaluated_when_those_change():
    # 'flush' reads 'level' only through its gate: it must fire as soon as level reaches 3
    net = Net([Place("level"), Place("flushed")], [
        TimedActivity("fill", outputs={"level": 1}, inhibitors={"level": 5}, rate=1.0),
        InstantActivity("flush", input_gates=[InputGate(lambda m: m["level"] >= 3,
                                                       lambda m: m.__setitem__("level", m["level"] - 3))],
                        outputs={"flushed": 1})])
    rep = NetSimulator(net).run(seed=0, length=3001, count="fill")
    assert rep.count("flush") == 1000
    assert rep.mean_tokens("level") == pytest.approx(1.0, abs=0.1)   # 0, 1, 2 equally long


# --------------------------------------------------------------------------- errors
def test_bad_laws_and_nets_are_model_errors():
    net = Net([Place("a", 1), Place("b")], [
        TimedActivity("single", inputs={"a": 1}, outputs={"b": 1}, rate=1.0),
        TimedActivity("inf", inputs={"b": 1}, outputs={"a": 1}, rate=1.0, servers="infinite"),
        InstantActivity("steal", inputs={"b": 2}, outputs={"a": 2})])
    with pytest.raises(ModelError, match="needs servers='infinite'"):
        NetSimulator(net, {"single": Distribution.deterministic(1.0)})
    with pytest.raises(ModelError, match="consumes from 'b'"):
        NetSimulator(net, {"inf": Distribution.deterministic(1.0)})
    with pytest.raises(ModelError) as err:
        NetSimulator(net, {"steal": Distribution.deterministic(1.0), "nope": Distribution.exponential(1),
                           "inf": 3.0})
    text = str(err.value)
    assert "instantaneous" in text and "unknown activity 'nope'" in text and "not a Distribution" in text
    with pytest.raises(ModelError, match="unknown activity"):
        NetSimulator(net).run(length=3, count="zzz")
    with pytest.raises(ModelError, match="positive time"):
        NetSimulator(net).run(length=0.0)
    with pytest.raises(ModelError, match="unknown places"):
        NetSimulator(net).run(length=1.0, observe=["zzz"])


def test_a_dead_net_and_a_timeless_trap_are_reported():
    dead = Net([Place("a", 1), Place("b")], [TimedActivity("t", inputs={"a": 1}, outputs={"b": 1}, rate=1.0)])
    with pytest.raises(SpnError, match="dead"):
        NetSimulator(dead).run(seed=1, length=10.0)
    trap = Net([Place("a", 1), Place("b")], [
        InstantActivity("ab", inputs={"a": 1}, outputs={"b": 1}),
        InstantActivity("ba", inputs={"b": 1}, outputs={"a": 1})])
    with pytest.raises(TimelessTrapError, match="timeless trap"):
        NetSimulator(trap).run(seed=1, length=1.0)


def test_simulate_description_checks_its_arguments():
    desc = describe([{"name": "p", "tasks": 1, "task_time": 1.0}])
    with pytest.raises(ModelError) as err:
        simulate_description(desc, replications=1, confidence=1.5, jobs=0)
    assert all(word in str(err.value) for word in ("replications", "confidence", "jobs"))
    with pytest.raises(ModelError, match="engine"):
        simulate_description(desc, engine="petri")
    with pytest.raises(ModelError, match="seed"):
        simulate_description(desc, seed=-3)
    with pytest.raises(ModelError, match="job-level engines"):
        simulate_description(desc, engine="net", pool_finished_tasks=True)


# --------------------------------------------------------------------------- seeds
EXAMPLE = describe([{"name": "map", "tasks": 4, "task_time": 2.0}, {"name": "reduce", "tasks": 4, "task_time": 3.0}],
                   users=3, think_time=10.0, containers=4)


def _numbers(report):
    d = report.as_dict()
    return {k: v for k, v in d.items() if k not in ("seconds", "events_per_second")}


@pytest.mark.parametrize("engine", ["net", "cluster"])
def test_the_same_seed_repeats_a_simulation_exactly(engine):
    runs = [simulate_description(EXAMPLE, engine=engine, seed=42, rel_precision=0, replications=4, jobs=50)
            for _ in range(2)]
    assert _numbers(runs[0]) == _numbers(runs[1])
    other = simulate_description(EXAMPLE, engine=engine, seed=43, rel_precision=0, replications=4, jobs=50)
    assert other.mean_execution_time.value != runs[0].mean_execution_time.value
    gen = [simulate_description(EXAMPLE, engine=engine, seed=np.random.default_rng(9), rel_precision=0,
                                replications=3, jobs=30) for _ in range(2)]
    assert _numbers(gen[0]) == _numbers(gen[1])


def test_replications_do_not_depend_on_how_they_are_batched():
    # replication i always uses the i-th child seed: 6 at once == the first 6 of a longer run
    six = simulate_description(EXAMPLE, seed=8, rel_precision=0, replications=6, jobs=40)
    app = build(EXAMPLE)
    sim = NetSimulator(app.net, distributions_from_description(EXAMPLE))
    children = seed_sequence(8).spawn(6)
    K = [sim.run(np.random.default_rng(c), warmup=16, length=40, count=app.end_activity).duration
         for c in children]
    assert six.throughput.value == pytest.approx(6 * 40 / sum(K), rel=1e-12)


def test_cluster_simulator_runs_alone_and_counts_its_jobs():
    rep = ClusterSimulator(EXAMPLE).run(seed=1, warmup=5, length=100)
    assert rep.completions == 100 and rep.duration > 0 and 0 < rep.busy_area < 4 * rep.duration
    # Little's law inside one run: time-average jobs in system = throughput x mean response time,
    # up to the jobs that straddle the window's edges
    assert rep.jobs_in_system_area / rep.duration == pytest.approx(
        rep.completions / rep.duration * rep.response_sum / rep.completions, rel=0.1)


# --------------------------------------------------------------------------- statistics
@pytest.mark.parametrize("df", [*range(1, 40), 99, 100, 999, 1000, 1001, 4321, 10**6])
def test_the_student_t_quantile_is_scipys_without_importing_scipy_special(df):
    for confidence in (0.01, 0.5, 0.9, 0.95, 0.99, 0.9999):
        assert t_quantile(confidence, df) == pytest.approx(stats.t.ppf(0.5 + confidence / 2, df), rel=2e-12)


def test_student_t_intervals_and_ratio_estimators():
    assert t_quantile(0.95, 2) == pytest.approx(4.302652729911275)
    assert t_quantile(0.99, 10) == pytest.approx(stats.t.ppf(0.995, 10))
    e = mean_estimate([1.0, 2.0, 3.0, 4.0], confidence=0.9)
    assert e.value == 2.5 and e.half_width == pytest.approx(stats.t.ppf(0.95, 3) * np.std([1, 2, 3, 4], ddof=1) / 2)
    assert e.contains(2.5) and not e.contains(10)
    assert math.isinf(mean_estimate([1.0]).half_width)
    r = ratio_estimate([2.0, 4.0, 6.5], [1.0, 2.0, 3.0])
    assert r.value == pytest.approx(12.5 / 6.0) and r.n == 3
    assert ratio_estimate([2.0, 4.0], [1.0, 2.0]).half_width == 0.0


def test_the_stopping_rule_reaches_the_requested_precision_or_says_it_did_not():
    done = simulate_description(EXAMPLE, seed=1, rel_precision=0.03, jobs=100)
    assert done.precision_met and done.mean_execution_time.rel_half_width <= 0.03
    capped = simulate_description(EXAMPLE, seed=1, rel_precision=0.0001, jobs=50, replications=2,
                                  max_replications=5)
    assert not capped.precision_met and capped.replications == 5
