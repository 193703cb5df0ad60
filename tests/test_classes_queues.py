"""Query classes and capacity-scheduler queues: the description, the simulator, the command.

A description may have several ``classes`` (each with its own users, think time, job and
queue) sharing the C containers through ``queues`` (docs/design.md §4.6). The cluster
simulator for them (:class:`spn.simulation.queues.QueueSimulator`) follows YARN's
CapacityScheduler without preemption: a free container goes, among the queues with a
waiting task that hold fewer than floor(max_capacity · C) containers, to the queue with
the smallest used / (capacity · C), ties to the queue listed first; inside the queue by
its policy; inside the job by phase priority.

The exact cases give each class one user and a job of one exponential phase, so each is
a small CTMC: a state lists, per class, ``None`` (its user thinks) or (waiting, running)
tasks of its job. :func:`generated_chain` writes the chain from the rules above (and is
checked against a chain written by hand); sympy solves it in rationals, and
R_c = N_c / X_c − Z_c per class (Little's law on class c's closed population). The
simulator's 95 % interval (300 replications of 200 jobs, fixed seeds) must cover R_c.

| case | R_a | R_b |
|---|---|---|
| (a) C = 1; a: Z 1, mean 1; b: Z 2, mean 1/2; queues 0.5/0.5, max 1 | 47/42 ≈ 1.1190 | 29/30 ≈ 0.9667 |
| (b) C = 2; 2 tasks of mean 1, Z = 1; queue a max 0.5 (one container), b max 1 | 19/9 ≈ 2.1111 | 53/31 ≈ 1.7097 |
| (b) without the ceiling (both max 1) | 23/13 ≈ 1.7692 | 23/13 |
| (c) C = 3; jobs of 4 tasks of mean 1, Z = 1; capacities 1/3 (a) and 2/3 (b) | ≈ 2.5782 | ≈ 2.5205 |
| (c) with capacities 1/2 and 1/2 (ties: a first) | ≈ 2.5205 | ≈ 2.5782 |

"""

import json
from fractions import Fraction

import pytest

sp = pytest.importorskip("sympy")

from spn.cli import main  # noqa: E402
from spn.description import load_description, parse_description  # noqa: E402
from spn.description.model import job_classes, queues_of, require_single_class  # noqa: E402
from spn.exceptions import ModelError  # noqa: E402
from spn.models.dag import build  # noqa: E402
from spn.simulation import ClusterSimulator, QueueSimulator, simulate_description  # noqa: E402

EXAMPLE = "models/two-queues.yaml"


# --------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------


def two_classes(*, containers, a, b, queues=None, policy=None):
    """A description of classes ``a`` and ``b``, each ``dict(users, think_time, tasks, mean)``, one
    exponential phase each, in queues ``qa`` and ``qb`` (``queues``: their extra keys)."""
    queues = queues or ({"capacity": 0.5}, {"capacity": 0.5})
    data = {"name": "two", "cluster": {"containers": containers},
            "classes": [{"name": name, "users": c.get("users", 1), "think_time": c["think_time"], "queue": f"q{name}",
                         "phases": [{"name": "p", "tasks": c["tasks"], "task_time": c["mean"],
                                     "distribution": "exponential"}]}
                        for name, c in (("a", a), ("b", b))],
            "queues": [{"name": "qa", **queues[0]}, {"name": "qb", **queues[1]}]}
    if policy:
        data["scheduler"] = {"policy": policy}
    return parse_description(data)


def exact_R(transitions, users, think_times):
    """R_c = N_c / X_c − Z_c per class of a chain ``[(from, to, rate, class whose job ends or None)]``."""
    states = list(dict.fromkeys([a for a, *_ in transitions] + [b for _, b, *_ in transitions]))
    index = {s: i for i, s in enumerate(states)}
    n = len(states)
    Q = sp.zeros(n, n)
    for a, b, rate, _ in transitions:
        Q[index[a], index[b]] += rate
        Q[index[a], index[a]] -= rate
    A = Q.T.copy()
    A[n - 1, :] = sp.ones(1, n)                 # one balance equation replaced by Σ π = 1
    rhs = sp.zeros(n, 1)
    rhs[n - 1] = 1
    pi = A.LUsolve(rhs)
    R = {}
    for c, (N, Z) in enumerate(zip(users, think_times)):
        X = sum(pi[index[a]] * rate for a, _, rate, ends in transitions if ends == c)
        R[c] = sp.nsimplify(sp.simplify(sp.nsimplify(N) / X - sp.nsimplify(Z)))
    return R


def generated_chain(*, containers, think_times, tasks, means, capacities, max_capacities):
    """Every transition from "both users thinking", class c in queue c, one user per class.

    The rules, written apart from the simulator: after each event, while a container is free,
    it goes to the class (queue) with a waiting task and fewer than floor(max · C) containers
    whose used / (capacity · C) is smallest, the first listed on a tie.
    """
    C = containers
    limit = [int(Fraction(m).limit_denominator(1000) * C) for m in max_capacities]
    share = [Fraction(c).limit_denominator(1000) * C for c in capacities]

    def settle(state):
        state = [list(job) if job else None for job in state]
        while C - sum(job[1] for job in state if job):
            waiting = [c for c, job in enumerate(state) if job and job[0] and job[1] < limit[c]]
            if not waiting:
                break
            c = min(waiting, key=lambda c: (Fraction(state[c][1]) / share[c], c))
            state[c][0] -= 1
            state[c][1] += 1
        return tuple(tuple(job) if job else None for job in state)

    start = (None, None)
    seen, todo, transitions = {start}, [start], []
    while todo:
        state = todo.pop()
        for c, job in enumerate(state):
            moves = []
            if job is None:                     # class c's user submits a job
                moves.append((1 / sp.nsimplify(think_times[c]), (tasks[c], 0), None))
            elif job[1]:                        # one of its running tasks ends
                waiting, running = job[0], job[1] - 1
                ends = waiting == running == 0
                moves.append((job[1] / sp.nsimplify(means[c]), None if ends else (waiting, running),
                              c if ends else None))
            for rate, new, ends in moves:
                target = settle(tuple(new if k == c else other for k, other in enumerate(state)))
                transitions.append((state, target, rate, ends))
                if target not in seen:
                    seen.add(target)
                    todo.append(target)
    return transitions


def simulated(desc, seed=1, replications=300):
    """The cluster simulator's per-class 95 % intervals of R_c (a fixed number of replications)."""
    report = simulate_description(desc, engine="cluster", seed=seed, replications=replications, rel_precision=None)
    return {name: c["mean_execution_time"] for name, c in report.classes.items()}


def as_rates(transitions):
    rates = {}
    for a, b, rate, ends in transitions:
        total, _ = rates.get((a, b), (0, ends))
        rates[a, b] = (sp.nsimplify(total + rate), ends)
    return rates


# --------------------------------------------------------------------------
# Exact cases
# --------------------------------------------------------------------------

# (a) One container, a job of one task per class: whoever submits while the other runs waits.
# States: T (thinking), W (waiting), R (running), per class.
CASE_A = dict(containers=1, think_times=[1, 2], tasks=[1, 1], means=[1, sp.Rational(1, 2)],
              capacities=[0.5, 0.5], max_capacities=[1, 1])
T, W, R = None, (1, 0), (0, 1)
HAND_A = [
    ((T, T), (R, T), 1, None), ((T, T), (T, R), sp.Rational(1, 2), None),
    ((R, T), (T, T), 1, 0), ((R, T), (R, W), sp.Rational(1, 2), None),
    ((T, R), (T, T), 2, 1), ((T, R), (W, R), 1, None),
    ((R, W), (T, R), 1, 0),                      # a's task ends: b's waiting task takes the container
    ((W, R), (R, T), 2, 1),
]


def test_two_classes_on_one_container_each_class_gets_its_own_mean():
    assert as_rates(generated_chain(**CASE_A)) == as_rates(HAND_A)
    exact = exact_R(HAND_A, users=[1, 1], think_times=[1, 2])
    assert exact == {0: sp.Rational(47, 42), 1: sp.Rational(29, 30)}
    desc = two_classes(containers=1, a=dict(think_time=1, tasks=1, mean=1.0), b=dict(think_time=2, tasks=1, mean=0.5))
    estimates = simulated(desc)
    assert estimates["a"].contains(47 / 42) and estimates["b"].contains(29 / 30), estimates


# (b) Two containers, jobs of two tasks. Queue qa may hold floor(0.5 · 2) = 1 container, so class a's
# tasks run one after the other even on an idle cluster; qb may borrow both.
CASE_B = dict(containers=2, think_times=[1, 1], tasks=[2, 2], means=[1, 1], capacities=[0.5, 0.5])


def test_max_capacity_binds_class_a_never_holds_two_containers():
    capped_chain = generated_chain(**CASE_B, max_capacities=[0.5, 1])
    capped = exact_R(capped_chain, users=[1, 1], think_times=[1, 1])
    free = exact_R(generated_chain(**CASE_B, max_capacities=[1, 1]), users=[1, 1], think_times=[1, 1])
    assert capped == {0: sp.Rational(19, 9), 1: sp.Rational(53, 31)}
    assert free == {0: sp.Rational(23, 13), 1: sp.Rational(23, 13)}      # symmetric without the ceiling
    assert max(state[0][1] for state, *_ in capped_chain if state[0]) == 1

    case = dict(a=dict(think_time=1, tasks=2, mean=1.0), b=dict(think_time=1, tasks=2, mean=1.0))
    desc = two_classes(containers=2, queues=({"capacity": 0.5, "max_capacity": 0.5}, {"capacity": 0.5}), **case)
    estimates = simulated(desc)
    assert estimates["a"].contains(19 / 9) and estimates["b"].contains(53 / 31), estimates
    assert estimates["a"].ci_low > 23 / 13                 # the ceiling is measured, not only computed
    rep = QueueSimulator(desc).run(seed=3, warmup=10, length=2000)
    assert rep.queue_peaks == (1, 2)                       # qa never held 2 containers; qb borrowed qa's share


# (c) Jobs of 4 tasks on 3 containers, so both classes wait at once. In state a (1 waiting,
# 2 running), b (3 waiting, 1 running), a task of a ends: qa holds 1 of its guaranteed 1,
# qb 1 of its guaranteed 2, so qb is further below its share and b gets the container. With
# equal guarantees the ratios tie and qa, listed first, gets it: the classes swap their means.
CASE_C = dict(containers=3, think_times=[1, 1], tasks=[4, 4], means=[1, 1], max_capacities=[1, 1])
R_SMALL_SHARE = sp.Rational(82730346631, 32088098202)      # ≈ 2.5782
R_LARGE_SHARE = sp.Rational(82204529596, 32613915237)      # ≈ 2.5205


def test_the_queue_furthest_below_its_guarantee_gets_the_container():
    unequal = generated_chain(**CASE_C, capacities=[1 / 3, 2 / 3])
    equal = generated_chain(**CASE_C, capacities=[0.5, 0.5])
    state = ((1, 2), (3, 1))
    assert (state, ((1, 1), (2, 2)), 2, None) in unequal      # to b: 1/1 > 1/2
    assert (state, ((0, 2), (3, 1)), 2, None) in equal        # a tie: to a, listed first
    assert exact_R(unequal, users=[1, 1], think_times=[1, 1]) == {0: R_SMALL_SHARE, 1: R_LARGE_SHARE}
    assert exact_R(equal, users=[1, 1], think_times=[1, 1]) == {0: R_LARGE_SHARE, 1: R_SMALL_SHARE}

    case = dict(a=dict(think_time=1, tasks=4, mean=1.0), b=dict(think_time=1, tasks=4, mean=1.0))
    estimates = simulated(two_classes(containers=3, queues=({"capacity": 1 / 3}, {"capacity": 2 / 3}), **case))
    assert estimates["a"].contains(float(R_SMALL_SHARE)) and estimates["b"].contains(float(R_LARGE_SHARE)), estimates
    assert estimates["b"].ci_high < estimates["a"].ci_low   # the 2.3 % the larger guarantee gains is measured


# --------------------------------------------------------------------------
# One class in one queue is the one-class simulator, number for number
# --------------------------------------------------------------------------


def recorded_case(policy):
    """The fork-join of tests/test_scheduling_policies.py with a lognormal phase and priorities."""
    return {"name": "rec", "workload": {"users": 3, "think_time": 2.0}, "cluster": {"containers": 3},
            "phases": [{"name": "a", "tasks": 3, "task_time": 1.0},
                       {"name": "b", "tasks": 2, "task_time": 0.5, "distribution": "lognormal", "cv": 0.5},
                       {"name": "c", "tasks": 2, "task_time": 1.5, "priority": 1},
                       {"name": "d", "tasks": 1, "task_time": 0.3}],
            "edges": [["a", "b"], ["a", "c"], ["b", "d"], ["c", "d"]], "scheduler": {"policy": policy}}


# (completions, response sum, busy area, events) of ClusterSimulator(...).run(seed, warmup=5, length=200),
# recorded with the code before query classes existed: the one-class loops must not change a number
RECORDED = {
    ("gate", 0): (200, 2107.3275199319437, 1466.9603100801737, 1847),
    ("gate", 1): (200, 2126.7085586359417, 1459.4246861420909, 1847),
    ("fifo", 0): (200, 1208.8022055475062, 1470.0471483995702, 1853),
    ("fifo", 1): (200, 1212.9944342119743, 1459.9044210395202, 1849),
    ("fair", 0): (200, 1212.48146775334, 1467.3503322757078, 1853),
    ("fair", 1): (200, 1210.1366417970307, 1460.5582178436514, 1849),
}


@pytest.mark.parametrize("policy, seed", sorted(RECORDED))
def test_one_class_descriptions_give_the_numbers_they_gave_before(policy, seed):
    rep = ClusterSimulator(parse_description(recorded_case(policy))).run(seed, warmup=5, length=200)
    completions, response_sum, busy_area, events = RECORDED[policy, seed]
    assert (rep.completions, rep.events) == (completions, events)
    assert rep.response_sum == pytest.approx(response_sum, rel=1e-12)
    assert rep.busy_area == pytest.approx(busy_area, rel=1e-12)


def as_one_class(data):
    """The same job written as one class in one queue holding every container."""
    return {"name": data["name"], "cluster": data["cluster"], "scheduler": data["scheduler"],
            "classes": [{"name": "only", "users": data["workload"]["users"],
                         "think_time": data["workload"]["think_time"],
                         "queue": "all", "phases": data["phases"], "edges": data["edges"]}],
            "queues": [{"name": "all", "capacity": 1}]}


@pytest.mark.parametrize("policy", ["fifo", "fair"])
def test_one_class_in_one_queue_takes_the_one_class_simulators_decisions(policy):
    data = recorded_case(policy)
    for seed in (0, 1):
        expected = ClusterSimulator(parse_description(data)).run(seed, warmup=5, length=200)
        for desc in (parse_description(data), parse_description(as_one_class(data))):
            rep = QueueSimulator(desc).run(seed, warmup=5, length=200)
            assert (rep.completions, rep.response_sum, rep.busy_area, rep.events, rep.duration) == (
                expected.completions, expected.response_sum, expected.busy_area, expected.events, expected.duration)
            assert rep.class_completions == (rep.completions,) and rep.queue_busy_areas == (rep.busy_area,)


# --------------------------------------------------------------------------
# The simulator's observables
# --------------------------------------------------------------------------


def test_queue_utilisations_sum_to_the_clusters_and_no_queue_passes_its_maximum():
    desc = load_description(EXAMPLE, ["queues.etl.max_capacity=0.75"])
    limits = {"etl": 12, "bi": 16}                          # floor(0.75 · 16), floor(1 · 16)
    for seed in range(3):
        rep = QueueSimulator(desc).run(seed, warmup=20, length=400)
        assert sum(rep.queue_busy_areas) == pytest.approx(rep.busy_area, rel=1e-12)
        assert sum(rep.class_completions) == rep.completions
        assert sum(rep.class_response_sums) == pytest.approx(rep.response_sum, rel=1e-12)
        assert all(peak <= limits[name] for peak, name in zip(rep.queue_peaks, ("etl", "bi"))), rep.queue_peaks
    assert rep.queue_peaks[0] == 12                         # and the ETL maps do reach it
    report = simulate_description(desc, engine="cluster", seed=1, replications=4, rel_precision=None)
    total = sum(q["utilization"].value for q in report.queues.values())
    assert total == pytest.approx(report.utilization.value, rel=1e-9)


def test_the_stopping_rule_asks_its_precision_of_the_worst_class():
    report = simulate_description(load_description(EXAMPLE), engine="cluster", seed=2, rel_precision=0.03)
    widths = {name: c["mean_execution_time"].rel_half_width for name, c in report.classes.items()}
    assert report.precision_met and max(widths.values()) <= 0.03 and report.replications > 10
    # the mean over all jobs is not what the rule controls: the mix of classes varies between replications
    assert report.mean_execution_time.rel_half_width > 0.03


# --------------------------------------------------------------------------
# The description
# --------------------------------------------------------------------------


def test_the_example_reads_as_classes_and_queues():
    desc = load_description(EXAMPLE)
    assert (desc.workload, desc.phases, desc.edges) == (None, (), ())
    assert [(c.name, c.queue, c.workload.users) for c in job_classes(desc)] == [
        ("etl", "etl", 2), ("dashboard", "bi", 6)]
    assert [(q.name, q.capacity, q.max_capacity, q.policy) for q in queues_of(desc)] == [
        ("etl", 0.6, 0.9, "fifo"), ("bi", 0.4, 1.0, "fair")]
    assert desc.classes[0].edges == (("map", "reduce"),)      # a chain in list order without edges
    assert desc.scheduler.policy == "fifo"                     # classes without a policy: fifo, never the gate


def test_a_one_class_description_is_one_class_in_the_default_queue():
    desc = load_description("models/mapreduce.yaml")
    (only,) = job_classes(desc)
    assert (only.name, only.queue, only.workload, only.phases, only.edges) == (
        "mapreduce", "default", desc.workload, desc.phases, desc.edges)
    # the default queue orders jobs by scheduler.policy (whatever a description without one defaults to)
    assert [(q.name, q.capacity, q.max_capacity, q.policy) for q in queues_of(desc)] == [
        ("default", 1.0, 1.0, desc.scheduler.policy)]
    assert only.weight == 1.0
    assert desc.classes == () and desc.queues == ()


def test_queue_policies_default_to_the_schedulers_and_classes_share_one_queue_without_a_list():
    data = {"name": "x", "cluster": {"containers": 2}, "scheduler": {"policy": "fair"},
            "classes": [{"name": n, "users": 1, "think_time": 1, "phases": [{"name": "p", "tasks": 1, "task_time": 1}]}
                        for n in ("a", "b")]}
    desc = parse_description(data)
    assert [c.queue for c in desc.classes] == ["default", "default"]
    assert queues_of(desc)[0].policy == "fair"
    both = parse_description({**data, "classes": [{**c, "queue": "q"} for c in data["classes"]],
                              "queues": [{"name": "q", "capacity": 1}]})
    assert both.queues[0].policy == "fair"


@pytest.mark.parametrize("sets, check", [
    (["queues.etl.capacity=0.3", "queues.bi.capacity=0.7"], lambda d: [q.capacity for q in d.queues] == [0.3, 0.7]),
    (["classes.dashboard.users=4"], lambda d: d.classes[1].workload.users == 4),
    (["classes.etl.phases.map.tasks=12"], lambda d: d.classes[0].phases[0].tasks == 12),
    (["queues.1.policy=fifo", "classes.0.think_time=60"],
     lambda d: d.queues[1].policy == "fifo" and d.classes[0].workload.think_time == 60),
    (["classes.dashboard.weight=2"], lambda d: [c.weight for c in d.classes] == [1.0, 2.0]),
])
def test_overrides_address_classes_and_queues_by_name_or_index(sets, check):
    assert check(load_description(EXAMPLE, sets))


BAD = [
    (["queues.etl.capacity=0.3"],
     "queues: capacities sum to 0.7 (etl 0.3 + bi 0.4), not 1 as YARN requires of sibling queues: "
     "set them together, e.g. --set queues.bi.capacity=0.7"),
    (["classes.dashbord.users=4"],
     "--set classes.dashbord.users=4: unknown class 'dashbord' (classes: etl, dashboard; did you mean 'dashboard'?)"),
    (["queues.etl.max_capacity=0.5"], "queues[0] (etl).max_capacity: expected a number >= the queue's capacity 0.6, "
                                      "got 0.5"),
    (["queues.bi.capacity=0"], "queues[1] (bi).capacity: expected a number in (0, 1], got 0"),
    (["classes.dashboard.queue=adhoc"], "classes[1] (dashboard).queue: unknown queue 'adhoc' (queues: etl, bi)"),
    (["scheduler.policy=gate"], "scheduler.policy: gate is the paper's one-class model"),
    (["workload={users: 2, think_time: 1}"], "workload: not used with classes (each class has its own users, "
                                             "think_time, phases and edges)"),
    (["classes.etl.edges=[[map, mapp]]"], "classes[0] (etl).edges[0]: unknown phase 'mapp' (phases: map, reduce)"),
    (["classes.etl.phases.reduce.name=map"], "classes[0] (etl).phases[1]: duplicate phase name 'map' (also phases[0])"),
    (["classes.dashboard.name=etl"], "classes[1]: duplicate class name 'etl' (also classes[0])"),
    # the net's places are <queue>/job<k>/<class>/...: queues q and q/job1 would share places
    (["queues.bi.name=etl/job1", "classes.dashboard.queue=etl/job1"],
     "queues[1].name: 'etl/job1': a queue name cannot hold '/'"),
    (["classes.dashboard.name=' dash'"], "classes[1].name: ' dash': a class name must be printable, with no blank"),
    (["classes.etl.users=0"], "classes[0] (etl).users: expected an integer >= 1, got 0"),
    (["classes.etl.think_time=1e12"], "classes[0] (etl).think_time: expected a number of seconds in [1e-06, 1e+09]"),
    (["queues.etl.policy=gate"], 'queues[0] (etl).policy: expected one of: fifo, fair, got "gate"'),
    (["classes.etl.weight=0"], "classes[0] (etl).weight: expected a number > 0, got 0"),
    (["classes.etl.wieght=2"], "--set classes.etl.wieght=2: unknown key 'wieght' in classes.etl (known keys: name, "
                               "users, think_time, queue, weight, phases, edges; did you mean 'weight'?)"),
]


@pytest.mark.parametrize("sets, message", BAD, ids=[s[0] for s, _ in BAD])
def test_a_bad_class_or_queue_is_one_line_naming_it(sets, message):
    with pytest.raises(ModelError) as error:
        load_description(EXAMPLE, sets)
    assert message in str(error.value) and "\n" not in str(error.value)


def test_queues_need_classes_and_a_class_needs_a_queue_from_the_list():
    one = {"name": "x", "workload": {"users": 1, "think_time": 1}, "cluster": {"containers": 1},
           "phases": [{"name": "p", "tasks": 1, "task_time": 1}], "queues": [{"name": "q", "capacity": 1}]}
    with pytest.raises(ModelError, match=r"^queues: only used with classes"):
        parse_description(one)
    with pytest.raises(ModelError) as error:
        load_description(EXAMPLE, ["classes.etl.queue=~"])
    assert "classes[0] (etl).queue: expected a non-empty string, got null" in str(error.value)
    no_queue = {"name": "x", "cluster": {"containers": 1},
                "classes": [{"name": "a", "users": 1, "think_time": 1,
                             "phases": [{"name": "p", "tasks": 1, "task_time": 1}]}],
                "queues": [{"name": "q", "capacity": 1}]}
    with pytest.raises(ModelError, match=r"classes\[0\] \(a\)\.queue: required when the description has queues"):
        parse_description(no_queue)
    with pytest.raises(ModelError, match="phases: required"):
        parse_description({"name": "x", "workload": {"users": 1, "think_time": 1}, "cluster": {"containers": 1}})


# --------------------------------------------------------------------------
# Where one class is assumed, several are refused in one line
# --------------------------------------------------------------------------


def test_every_one_class_path_refuses_classes_in_one_line():
    desc = load_description(EXAMPLE)
    expected = "model two-queues has 2 query classes; {} models one class: use {}"
    for call, what, instead in [
        (lambda: build(desc), "the application net", "spn simulate"),
        (lambda: simulate_description(desc, engine="net"), "the net engine", "spn simulate --engine cluster"),
        (lambda: ClusterSimulator(desc), "ClusterSimulator", "spn.simulation.queues.QueueSimulator"),
    ]:
        with pytest.raises(ModelError) as error:
            call()
        assert str(error.value) == expected.format(what, instead)
    require_single_class(load_description("models/mapreduce.yaml"), "anything")      # one class: nothing to say


@pytest.mark.parametrize("command", [["simulate", "--engine", "net"]])
def test_the_commands_that_model_one_class_exit_2_with_one_line(command, capsys, tmp_path, monkeypatch):
    from pathlib import Path

    model = str(Path(__file__).resolve().parent.parent / EXAMPLE)
    monkeypatch.chdir(tmp_path)
    assert main([command[0], model, *command[1:]]) == 2
    err = capsys.readouterr().err
    assert err.startswith("spn: error:") and err.count("\n") == 1 and "2 query classes" in err, err


# --------------------------------------------------------------------------
# spn simulate
# --------------------------------------------------------------------------


def test_spn_simulate_reports_every_class_and_queue(capsys):
    args = ["simulate", EXAMPLE, "--seed", "1", "--replications", "4", "--rel-precision", "0", "--jobs", "100"]
    assert main([*args, "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["engine"], result["users"], result["think_time"]) == ("cluster", 8, None)
    assert list(result["classes"]) == ["etl", "dashboard"] and list(result["queues"]) == ["etl", "bi"]
    etl = result["classes"]["etl"]
    assert etl["ci_low"] < etl["mean_execution_time"] < etl["ci_high"] and etl["throughput"] > 0
    assert result["queues"]["bi"]["policy"] == "fair" and 0 < result["queues"]["bi"]["utilization"] < 1
    assert main(args) == 0
    text = capsys.readouterr().out
    assert "dashboard  bi" in text and "utilisation (%)" in text and "mean execution time (s)" in text
    # one class: the report keeps its keys and has no classes
    assert main(["simulate", "models/mapreduce.yaml", "--engine", "cluster", "--replications", "2",
                 "--rel-precision", "0", "--jobs", "20", "--json"]) == 0
    assert "classes" not in json.loads(capsys.readouterr().out)


def test_a_queue_without_classes_lends_its_share_and_the_net_solves_as_without_it():
    from spn.analysis.solve import solve_description

    def desc(queues):
        classes = [{"name": name, "users": 1, "think_time": z, "queue": "qa",
                    "phases": [{"name": "p", "tasks": 4, "task_time": 1.0}]} for name, z in (("a", 2.0), ("b", 1.0))]
        return parse_description({"name": "lend", "cluster": {"containers": 3}, "classes": classes, "queues": queues})

    empty_beside = solve_description(desc([{"name": "qa", "capacity": 0.5, "policy": "fair"},
                                       {"name": "qb", "capacity": 0.5, "policy": "fair"}])).as_dict()
    alone = solve_description(desc([{"name": "qa", "capacity": 1.0, "policy": "fair"}])).as_dict()
    for name in ("a", "b"):
        assert empty_beside["classes"][name]["mean_execution_time"] == pytest.approx(
            alone["classes"][name]["mean_execution_time"], rel=1e-12)
    assert empty_beside["queues"]["qb"]["utilization"] == 0


def test_utilisation_is_a_fraction_even_where_rounding_passes_one():
    # a class that never thinks keeps every container busy: 1 + 2e-16 is rounding, printed as 1
    from spn.analysis.solve import solve_description

    busy = two_classes(containers=1, a={"users": 3, "think_time": 1e-6, "tasks": 1, "mean": 1e6},
                       b={"think_time": 1.0, "tasks": 1, "mean": 1.0})
    report = solve_description(busy).as_dict()
    assert 0.999 < report["utilization"] <= 1.0
    assert all(0.0 <= q["utilization"] <= 1.0 for q in report["queues"].values())


def test_exact_and_simulated_class_reports_name_the_same_facts():
    # a script reading spn solve --json must not break on which method solve happened to pick
    from spn.analysis.solve import solve_description

    small = ["cluster.containers=4", "classes.etl.users=1", "classes.dashboard.users=2",
             "classes.etl.phases.map.tasks=3", "classes.etl.phases.reduce.tasks=1", "classes.dashboard.phases.scan.tasks=2"]
    desc = load_description(EXAMPLE, small)
    exact = solve_description(desc).as_dict()
    simulated = solve_description(desc, method="simulation", max_seconds=5, rel_precision=0.05).as_dict()
    for key in ("model", "method", "mean_execution_time", "throughput", "utilization", "users", "think_time",
                "policy", "containers", "classes", "queues"):
        assert key in exact and key in simulated, key
    assert (exact["policy"], exact["think_time"]) == (simulated["policy"], simulated["think_time"])
