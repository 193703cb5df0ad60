"""Scheduling policies (``scheduler.policy``), checked against exact small cases.

The cluster simulator (``engine="cluster"``) implements each policy on its own:

- ``gate``: a job starts only when the previous job's last phase holds containers for all
  its tasks (the paper's model);
- ``fifo``: a job starts at once; every free container goes to the *oldest* job with a
  waiting task, no preemption (YARN FIFO ordering, Spark FIFO);
- ``fair``: a free container goes to the job with the *fewest running tasks*, ties to the
  oldest, no preemption (Spark FAIR with one job per pool, YARN fair ordering).

Every case here has two users, exponential think times (rate λ = 1/Z per thinking user)
and exponential task times (rate μ = 1/mean per running task), so each policy is a small
CTMC. A state lists the jobs in the system, oldest first. The chains of the first cases
are written out by hand; :func:`generated_chain` writes the chain of any chain-shaped
job from the same rules, is checked against the hand-written chains, and gives the
larger cases. Each chain is solved exactly with sympy (rational arithmetic):
π Q = 0, Σ π = 1, X = Σ π(s) · (rate of job ends in s), and R = N/X − Z (Little's law
on the closed population). The simulator's 95 % interval (300 replications of 200 jobs,
fixed seeds) must cover R, and where two policies differ their intervals must not overlap.

Exact values found (two users):

| case | gate | fifo | fair |
|---|---|---|---|
| one phase of 2 tasks, C = 2, Z = 1, mean 1 | 23/13 | 23/13 | 23/13 |
| map 1 task (mean 1), reduce 1 task (mean 2), C = 2, Z = 1 | 13/4 | 3 | 3 |
| one phase of 3 tasks, C = 2, Z = 1, mean 1 | 204/79 | 204/79 | 13/5 |
| one phase of 6 tasks, C = 2, Z = 4, mean 1 | 10956327/2503321 ≈ 4.3767 | same | 53869535/11871163 ≈ 4.5378 |
| map 2 tasks (mean 1), reduce 2 tasks (mean 2), C = 2, Z = 2 | 647/113 ≈ 5.7257 | 503/92 ≈ 5.4674 | 3173/581 ≈ 5.4613 |
"""

from pathlib import Path

import pytest

sp = pytest.importorskip("sympy")

from spn.analysis.solve import solve_description  # noqa: E402
from spn.description import load_description, parse_description  # noqa: E402
from spn.exceptions import ModelError  # noqa: E402
from spn.simulation import ClusterSimulator, simulate_description  # noqa: E402

lam, mu = sp.symbols("lambda mu", positive=True)
mu_m, mu_r = sp.symbols("mu_m mu_r", positive=True)


# --------------------------------------------------------------------------
# Helpers: descriptions, exact solution of a chain, simulation
# --------------------------------------------------------------------------


def description(policy, *, users=2, think_time, containers, tasks, means, edges=None):
    """A chain of exponential phases p0 -> p1 -> ... under ``policy``."""
    phases = [{"name": f"p{i}", "tasks": t, "task_time": m, "distribution": "exponential"}
              for i, (t, m) in enumerate(zip(tasks, means))]
    data = {"name": f"{policy}-case", "workload": {"users": users, "think_time": think_time},
            "cluster": {"containers": containers}, "phases": phases, "scheduler": {"policy": policy}}
    if edges is not None:
        data["edges"] = edges
    return parse_description(data)


def exact_R(transitions, users, think_time):
    """R = N/X − Z of a chain given as ``[(from, to, rate, a job ends), ...]``, exactly."""
    states = list(dict.fromkeys([a for a, *_ in transitions] + [b for _, b, *_ in transitions]))
    index = {s: i for i, s in enumerate(states)}
    n = len(states)
    Q = sp.zeros(n, n)
    for a, b, rate, _ in transitions:
        Q[index[a], index[b]] += rate
        Q[index[a], index[a]] -= rate
    A = Q.T.copy()
    A[n - 1, :] = sp.ones(1, n)                 # replace one balance equation by Σ π = 1
    rhs = sp.zeros(n, 1)
    rhs[n - 1] = 1
    pi = A.LUsolve(rhs)
    X = sum(pi[index[a]] * rate for a, _, rate, ends in transitions if ends)
    return sp.factor(sp.simplify(sp.nsimplify(users) / X - sp.nsimplify(think_time))), dict(zip(states, pi))


def simulated(desc, seed=1, replications=300):
    """The cluster simulator's 95 % interval of R: a fixed number of replications (no stopping
    rule), so that the interval depends on the simulator and the seed only."""
    return simulate_description(desc, engine="cluster", seed=seed, confidence=0.95, replications=replications,
                                rel_precision=None).mean_execution_time


def as_rates(transitions):
    """``{(from, to): (total rate, a job ends)}``: a chain as a comparable value."""
    rates = {}
    for a, b, rate, ends in transitions:
        total, _ = rates.get((a, b), (0, ends))
        rates[a, b] = (sp.simplify(total + rate), ends)
    return rates


# --------------------------------------------------------------------------
# The rules, as a chain generator (checked against the hand-written chains below)
# --------------------------------------------------------------------------


def _settle(jobs, policy, tasks, containers):
    """Control first, then one container at a time, as the policy says.

    A job is ``(phase, waiting, running)``; ``phase = -1`` is a job queued at the gate.
    """
    jobs = [list(job) for job in jobs]
    last = len(tasks) - 1
    while True:
        if policy == "gate":                    # the gate is free when no started job has its
            while True:                         # last phase still short of containers
                queued = [job for job in jobs if job[0] == -1]
                if not queued or not all(job[0] == last and job[1] == 0 for job in jobs if job[0] >= 0):
                    break
                queued[0][:] = [0, tasks[0], 0]
        free = containers - sum(job[2] for job in jobs)
        waiting = [i for i, job in enumerate(jobs) if job[0] >= 0 and job[1] > 0]
        if not free or not waiting:
            return tuple(map(tuple, jobs))
        if policy == "gate":
            assert len(waiting) == 1            # in a chain, only the job holding the gate waits
            i = waiting[0]
        elif policy == "fifo":
            i = waiting[0]                      # the oldest job with a waiting task
        else:
            i = min(waiting, key=lambda i: (jobs[i][2], i))   # fewest running tasks, then oldest
        jobs[i][1] -= 1
        jobs[i][2] += 1


def generated_chain(policy, *, users=2, think_time, containers, tasks, means):
    """Every transition ``(from, to, rate, a job ends)`` reachable from "every user thinking"."""
    rate_think = 1 / sp.nsimplify(think_time)
    rate_task = [1 / sp.nsimplify(m) for m in means]
    start = ()
    seen, todo, transitions = {start}, [start], []
    while todo:
        state = todo.pop()
        moves = []
        thinking = users - len(state)
        if thinking:                            # a user submits a job
            new = (-1, 0, 0) if policy == "gate" else (0, tasks[0], 0)
            moves.append((thinking * rate_think, state + (new,), False))
        for i, (phase, waiting, running) in enumerate(state):
            if running:                         # one of the job's running tasks ends
                jobs = [list(job) for job in state]
                jobs[i][2] -= 1
                ends = False
                if jobs[i][1] == jobs[i][2] == 0:           # its phase ends
                    if phase == len(tasks) - 1:
                        del jobs[i]
                        ends = True
                    else:
                        jobs[i][:] = [phase + 1, tasks[phase + 1], 0]
                moves.append((running * rate_task[phase], tuple(map(tuple, jobs)), ends))
        for rate, target, ends in moves:
            target = _settle(target, policy, tasks, containers)
            transitions.append((state, target, rate, ends))
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return transitions


def one_phase(text):
    """``"1,2|3,0"`` -> the generator's state: jobs (waiting, running) in phase 0, oldest first;
    ``"q"`` is a job held at the gate."""
    if not text:
        return ()
    return tuple((-1, 0, 0) if job == "q" else (0, int(job[0]), int(job[-1])) for job in text.split("|"))


def with_states(transitions, name):
    return [(name(a), name(b), rate, ends) for a, b, rate, ends in transitions]


# --------------------------------------------------------------------------
# Case 1: one phase of two tasks, C = 2 — every policy is the same chain
# --------------------------------------------------------------------------

# A job is "w,r" (waiting, running tasks). With two tasks and two containers an older
# job never waits while a younger one runs, so FIFO, fair and gate all take these steps:
ONE_PHASE_TWO_TASKS = [
    ("", "0,2", 2 * lam, False),           # a user submits; both tasks get containers
    ("0,2", "0,1", 2 * mu, False),
    ("0,2", "0,2|2,0", lam, False),        # the second job's tasks wait (no container free)
    ("0,1", "", mu, True),
    ("0,1", "0,1|1,1", lam, False),        # the one free container goes to the new job
    ("0,2|2,0", "0,1|1,1", 2 * mu, False),  # the old job has nothing waiting: the young one gets it
    ("0,1|1,1", "0,2", mu, True),           # the old job ends; the young one takes the container
    ("0,1|1,1", "0,1|0,1", mu, False),
    ("0,1|0,1", "0,1", 2 * mu, True),
]


def test_one_phase_of_two_tasks_on_two_containers_is_one_chain_for_every_policy():
    R, _ = exact_R(ONE_PHASE_TWO_TASKS, 2, 1 / lam)
    # by hand (sympy's algebra): R = (4λ² + 13λμ + 6μ²) / (μ (2λ² + 7λμ + 4μ²));
    # with λ → 0 it is the mean of the larger of two Exp(μ), 1.5/μ.
    assert sp.simplify(R - (4 * lam**2 + 13 * lam * mu + 6 * mu**2) / (mu * (2 * lam**2 + 7 * lam * mu + 4 * mu**2))) == 0
    assert sp.limit(R, lam, 0) == sp.Rational(3, 2) / mu
    assert R.subs({lam: 1, mu: 1}) == sp.Rational(23, 13)
    for policy in ("gate", "fifo", "fair"):
        chain = generated_chain(policy, think_time=1, containers=2, tasks=[2], means=[1])
        assert as_rates(chain) == as_rates(with_states(
            [(a, b, r.subs({lam: 1, mu: 1}), e) for a, b, r, e in ONE_PHASE_TWO_TASKS], one_phase)), policy
        estimate = simulated(description(policy, think_time=1, containers=2, tasks=[2], means=[1]))
        assert estimate.contains(23 / 13), (policy, estimate)


# --------------------------------------------------------------------------
# Case 2: map (1 task) then reduce (1 task), C = 2 — FIFO and gate differ
# --------------------------------------------------------------------------

# Gate: "M"/"R" is a job in its map/reduce task (holding a container: C = 2 and a job holds
# one at a time), "q" a job waiting at the gate, which opens when the older job's reduce
# task holds a container.
MAP_REDUCE_GATE = [
    ("", "M", 2 * lam, False),
    ("M", "R", mu_m, False),
    ("M", "M|q", lam, False),               # held at the gate although a container is free
    ("R", "", mu_r, True),
    ("R", "R|M", lam, False),
    ("M|q", "R|M", mu_m, False),            # the reduce task takes a container: the gate opens
    ("R|M", "M", mu_r, True),
    ("R|M", "R|R", mu_m, False),
    ("R|R", "R", 2 * mu_r, True),
]
GATE_NAMES = {"M": (0, 0, 1), "R": (1, 0, 1), "q": (-1, 0, 0)}


def test_map_then_reduce_of_one_task_each_fifo_never_waits_and_the_gate_does():
    # FIFO (and fair): each job holds at most one container and there are two, so no task
    # ever waits: R = 1/μm + 1/μr exactly, whatever λ. The gate holds a job back while the
    # older one is in its map phase, so by hand:
    #   R_gate = 1/μm + 1/μr + λ μr / (μm (λ μm + λ μr + μm μr))
    R_gate, _ = exact_R(MAP_REDUCE_GATE, 2, 1 / lam)
    extra = lam * mu_r / (mu_m * (lam * mu_m + lam * mu_r + mu_m * mu_r))
    assert sp.simplify(R_gate - (1 / mu_m + 1 / mu_r + extra)) == 0
    values = {lam: 1, mu_m: 1, mu_r: sp.Rational(1, 2)}          # Z = 1, map mean 1, reduce mean 2
    assert R_gate.subs(values) == sp.Rational(13, 4)

    case = dict(think_time=1, containers=2, tasks=[1, 1], means=[1, 2])
    hand = [(tuple(GATE_NAMES[j] for j in a.split("|")) if a else (),
             tuple(GATE_NAMES[j] for j in b.split("|")) if b else (), r.subs(values), e)
            for a, b, r, e in MAP_REDUCE_GATE]
    assert as_rates(generated_chain("gate", **case)) == as_rates(hand)
    for policy in ("fifo", "fair"):
        R, _ = exact_R(generated_chain(policy, **case), 2, 1)
        assert R == 3

    gate = simulated(description("gate", **case))
    fifo = simulated(description("fifo", **case))
    assert gate.contains(13 / 4) and fifo.contains(3.0), (gate, fifo)
    assert fifo.ci_high < gate.ci_low                  # the difference (8 %) is measured


# --------------------------------------------------------------------------
# Case 3: one phase of three (then six) tasks, C = 2 — FIFO and fair differ
# --------------------------------------------------------------------------

# On a single phase FIFO is the gate: the gate opens exactly when the older job has no
# task waiting, which is when FIFO starts serving the younger one. A job is "w,r"; the
# gate's chain names one state differently: "1,2|q" (the young job held at the gate)
# for FIFO's "1,2|3,0" (admitted, its three tasks waiting behind the old job's).
ONE_PHASE_THREE_TASKS_FIFO = [
    ("", "1,2", 2 * lam, False),
    ("1,2", "0,2", 2 * mu, False),
    ("1,2", "1,2|3,0", lam, False),
    ("0,2", "0,1", 2 * mu, False),
    ("0,2", "0,2|3,0", lam, False),
    ("0,1", "", mu, True),
    ("0,1", "0,1|2,1", lam, False),
    ("1,2|3,0", "0,2|3,0", 2 * mu, False),   # FIFO: the freed container goes to the OLD job
    ("0,2|3,0", "0,1|2,1", 2 * mu, False),
    ("0,1|2,1", "1,2", mu, True),
    ("0,1|2,1", "0,1|1,1", mu, False),
    ("0,1|1,1", "0,2", mu, True),
    ("0,1|1,1", "0,1|0,1", mu, False),
    ("0,1|0,1", "0,1", 2 * mu, True),
]
# Fair differs in one step: in "1,2|3,0" a freed container goes to the job with fewer
# running tasks, the young one, and three states follow that FIFO never reaches.
ONE_PHASE_THREE_TASKS_FAIR = [t for t in ONE_PHASE_THREE_TASKS_FIFO if t[0] != "1,2|3,0"] + [
    ("1,2|3,0", "1,1|2,1", 2 * mu, False),   # fair: the old job runs 1 task, the young one 0
    ("1,1|2,1", "0,1|2,1", mu, False),       # old task ends: old runs 0 < 1, old gets it
    ("1,1|2,1", "1,1|1,1", mu, False),       # young task ends: young runs 0 < 1, young gets it
    ("1,1|1,1", "0,1|1,1", mu, False),
    ("1,1|1,1", "1,1|0,1", mu, False),
    ("1,1|0,1", "0,1|0,1", mu, False),
    ("1,1|0,1", "0,2", mu, True),            # the young job ends first
]


def test_one_phase_of_three_tasks_fifo_is_the_gate_and_fair_is_another_chain():
    case = dict(think_time=1, containers=2, tasks=[3], means=[1])
    numbers = {lam: 1, mu: 1}
    held_at_gate = [tuple("1,2|q" if state == "1,2|3,0" else state for state in t[:2]) + t[2:]
                    for t in ONE_PHASE_THREE_TASKS_FIFO]
    for policy, hand in (("gate", held_at_gate), ("fifo", ONE_PHASE_THREE_TASKS_FIFO),
                         ("fair", ONE_PHASE_THREE_TASKS_FAIR)):
        hand = with_states([(a, b, r.subs(numbers), e) for a, b, r, e in hand], one_phase)
        assert as_rates(generated_chain(policy, **case)) == as_rates(hand), policy
    R_fifo, _ = exact_R([(a, b, r.subs(numbers), e) for a, b, r, e in ONE_PHASE_THREE_TASKS_FIFO], 2, 1)
    R_fair, _ = exact_R([(a, b, r.subs(numbers), e) for a, b, r, e in ONE_PHASE_THREE_TASKS_FAIR], 2, 1)
    assert R_fifo == sp.Rational(204, 79)
    assert R_fair == sp.Rational(13, 5)                 # 0.7 % more: fair splits the containers
    for policy, R in (("fifo", 204 / 79), ("fair", 13 / 5)):
        estimate = simulated(description(policy, **case))
        assert estimate.contains(R), (policy, estimate)


def test_one_phase_of_six_tasks_fair_is_measurably_slower_than_fifo():
    case = dict(think_time=4, containers=2, tasks=[6], means=[1])
    exact = {policy: exact_R(generated_chain(policy, **case), 2, 4)[0] for policy in ("gate", "fifo", "fair")}
    assert exact["gate"] == exact["fifo"] == sp.Rational(10956327, 2503321)     # ≈ 4.3767
    assert exact["fair"] == sp.Rational(53869535, 11871163)                     # ≈ 4.5378, +3.7 %
    estimates = {policy: simulated(description(policy, **case)) for policy in ("fifo", "fair")}
    for policy, estimate in estimates.items():
        assert estimate.contains(float(exact[policy])), (policy, estimate)
    assert estimates["fifo"].ci_high < estimates["fair"].ci_low


# --------------------------------------------------------------------------
# Case 4: map (2 tasks) then reduce (2 tasks), C = 2 — the younger map overlaps the older reduce
# --------------------------------------------------------------------------

MAP2_REDUCE2 = dict(think_time=2, containers=2, tasks=[2, 2], means=[1, 2])
MAP2_REDUCE2_R = {"gate": sp.Rational(647, 113), "fifo": sp.Rational(503, 92), "fair": sp.Rational(3173, 581)}


def test_fifo_lets_the_younger_jobs_map_overlap_the_older_jobs_reduce():
    chains = {policy: generated_chain(policy, **MAP2_REDUCE2) for policy in ("gate", "fifo", "fair")}
    solved = {policy: exact_R(chain, 2, 2) for policy, chain in chains.items()}
    assert {policy: R for policy, (R, _) in solved.items()} == MAP2_REDUCE2_R

    def overlap(state):
        """The older job's reduce has a task waiting while the younger job's map holds a container:
        a map task that took a free container while the older job was finishing its map (FIFO), and
        now keeps it (no preemption)."""
        return len(state) == 2 and state[0][0] == 1 and state[0][1] > 0 and state[1][0] == 0 and state[1][2] > 0

    def map_tail_shared(state):
        """Both jobs in their map phase, the younger one running a task (the gate forbids it)."""
        return len(state) == 2 and state[0][0] == 0 and state[1][0] == 0 and state[1][2] > 0

    for policy in ("fifo", "fair"):
        _, pi = solved[policy]
        assert sum(p for s, p in pi.items() if overlap(s)) > sp.Rational(1, 100), policy
        assert sum(p for s, p in pi.items() if map_tail_shared(s)) > 0, policy
    _, pi_gate = solved["gate"]
    assert not any(overlap(s) or map_tail_shared(s) for s in pi_gate)
    assert len(pi_gate) == 12 and len(solved["fifo"][1]) == 22 and len(solved["fair"][1]) == 19

    estimates = {policy: simulated(description(policy, **MAP2_REDUCE2)) for policy in MAP2_REDUCE2_R}
    for policy, estimate in estimates.items():
        assert estimate.contains(float(MAP2_REDUCE2_R[policy])), (policy, estimate)
    assert estimates["fifo"].ci_high < estimates["gate"].ci_low        # FIFO 4.5 % faster than the gate


# --------------------------------------------------------------------------
# The simulator's policies beyond the exact cases
# --------------------------------------------------------------------------


def _replication(desc, policy, seed):
    rep = ClusterSimulator(desc, policy=policy).run(seed, warmup=5, length=300)
    return rep.response_sum, rep.busy_area, rep.events, rep.duration


def test_on_one_phase_fifo_takes_exactly_the_gates_decisions():
    desc = description("gate", users=4, think_time=3, containers=3, tasks=[5], means=[1])
    for seed in range(3):
        assert _replication(desc, "fifo", seed) == _replication(desc, "gate", seed)


def test_one_user_every_policy_is_the_net_on_a_fork_join_with_priorities():
    # One job at a time: no policy has a choice between jobs, and the net has no tokens to mix,
    # so each policy's interval covers the analytic value (the within-job rule: highest
    # priority first, then each waiting phase equally likely, as in the net).
    data = {"name": "fj", "workload": {"users": 1, "think_time": 4.0}, "cluster": {"containers": 2},
            "phases": [{"name": "A", "tasks": 2, "task_time": 1.0}, {"name": "B", "tasks": 3, "task_time": 1.0},
                       {"name": "C", "tasks": 2, "task_time": 2.0, "priority": 1},
                       {"name": "D", "tasks": 1, "task_time": 1.0}],
            "edges": [["A", "B"], ["A", "C"], ["B", "D"], ["C", "D"]]}
    exact = solve_description(parse_description({**data, "scheduler": {"policy": "gate"}})).measures.mean_execution_time
    for policy in ("fifo", "fair"):
        desc = parse_description({**data, "scheduler": {"policy": policy}})
        estimate = simulated(desc, replications=100)
        assert estimate.contains(exact), (policy, estimate, exact)


def test_fair_with_many_users_ends_every_job_and_keeps_the_containers_busy():
    desc = description("fair", users=60, think_time=1, containers=5, tasks=[4, 3], means=[1, 1])
    rep = ClusterSimulator(desc).run(seed=2, warmup=100, length=3000)
    assert rep.completions == 3000 and rep.busy_area / (5 * rep.duration) > 0.99


# --------------------------------------------------------------------------
# The description field and where it is refused
# --------------------------------------------------------------------------


def test_the_policy_is_read_from_the_description_or_an_override():
    assert load_description("models/mapreduce.yaml").scheduler.policy == "gate"    # the paper's case study
    assert load_description("models/mapreduce.yaml", ["scheduler.policy=fifo"]).scheduler.policy == "fifo"
    assert description("fair", think_time=1, containers=1, tasks=[1], means=[1]).scheduler.policy == "fair"
    assert ClusterSimulator(load_description("models/mapreduce.yaml"), policy="fifo").policy == "fifo"


def test_a_description_that_names_no_policy_is_solved_as_fifo(tmp_path, capsys):
    """The default is fifo (YARN/Spark FIFO ordering, measured in docs/scheduling-spark.md), not the
    paper's gate: models/mapreduce.yaml without its scheduler line is the fifo model, 12.1733 s
    from 1,050 states, where the gate gives 13.3362 s from 49."""
    import json

    import yaml

    from spn.cli import main

    data = yaml.safe_load(Path("models/mapreduce.yaml").read_text())
    assert data.pop("scheduler") == {"policy": "gate"}
    bare = parse_description(data)
    assert bare.scheduler.policy == "fifo"
    default = solve_description(bare)
    named = {policy: solve_description(parse_description({**data, "scheduler": {"policy": policy}}))
             for policy in ("fifo", "gate")}
    assert (default.policy, default.tangible_states) == ("fifo", named["fifo"].tangible_states) == ("fifo", 1050)
    assert default.measures.mean_execution_time == pytest.approx(named["fifo"].measures.mean_execution_time,
                                                                 rel=1e-12)
    assert default.measures.mean_execution_time == pytest.approx(12.1733, abs=5e-5)
    assert (named["gate"].tangible_states, named["gate"].measures.mean_execution_time) == \
        (49, pytest.approx(13.3362, abs=5e-5))
    # the command line says so, and simulates it with the engine that models fifo
    path = tmp_path / "bare.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["solve", str(path), "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["policy"], result["tangible_states"]) == ("fifo", 1050)
    assert result["mean_execution_time"] == pytest.approx(12.1733, abs=5e-5)
    assert main(["solve", str(path)]) == 0
    assert "scheduling policy    fifo" in capsys.readouterr().out
    assert main(["simulate", str(path), "--replications", "2", "--rel-precision", "0", "--jobs", "20",
                 "--seed", "1", "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["engine"], result["policy"]) == ("cluster", "fifo")


@pytest.mark.parametrize("value, message", [
    ({"policy": "fcfs"}, 'scheduler.policy: expected one of: fifo, fair, gate, got "fcfs"'),
    ({"weights": {"etl": 2}}, "scheduler.weights: unknown key (known keys: policy)"),
    ("fifo", 'scheduler: expected a mapping, got "fifo"'),
])
def test_a_bad_scheduler_is_one_line_naming_the_field(value, message):
    data = {"name": "x", "workload": {"users": 1, "think_time": 1}, "cluster": {"containers": 1},
            "phases": [{"name": "p", "tasks": 1, "task_time": 1}], "scheduler": value}
    with pytest.raises(ModelError) as error:
        parse_description(data)
    assert str(error.value) == message


@pytest.mark.parametrize("policy", ["fifo", "fair"])
def test_the_net_simulator_refuses_fifo_and_fair_which_the_ctmc_solves(policy):
    desc = load_description("models/mapreduce.yaml", [f"scheduler.policy={policy}"])
    assert solve_description(desc).measures.mean_execution_time > 0      # the job-identity net
    with pytest.raises(ModelError, match=f"the net simulator models policy gate, not {policy}"):
        simulate_description(desc, engine="net", seed=1, replications=2, rel_precision=None, jobs=10)
    with pytest.raises(ModelError, match="pool_finished_tasks reproduces the net, which models policy gate"):
        ClusterSimulator(desc, pool_finished_tasks=True)
    with pytest.raises(ModelError, match="policy must be one of fifo, fair, gate"):
        ClusterSimulator(desc, policy="lifo")


def test_spn_simulate_picks_the_cluster_engine_for_a_policy_only_it_models(capsys):
    import json

    from spn.cli import main

    args = ["simulate", "models/mapreduce.yaml", "--set", "scheduler.policy=fifo", "--replications", "2",
            "--rel-precision", "0", "--jobs", "20", "--seed", "1", "--json"]
    assert main(args) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["engine"], result["policy"]) == ("cluster", "fifo")
    assert main(args[:-1]) == 0
    assert "scheduling policy    fifo" in capsys.readouterr().out
    # the paper's gate (models/mapreduce.yaml names it) keeps the net engine
    assert main(["simulate", "models/mapreduce.yaml", "--replications", "2", "--rel-precision", "0", "--jobs", "20",
                 "--json"]) == 0
    result = json.loads(capsys.readouterr().out)
    assert (result["engine"], result["policy"]) == ("net", "gate")


def test_export_writes_the_job_identity_net_of_a_fair_model(capsys):
    from spn.cli import main

    model = str(Path(__file__).resolve().parent.parent / "models" / "mapreduce.yaml")
    assert main(["export", model, "--set", "scheduler.policy=fair"]) == 0
    assert "job3/reduce.PR" in capsys.readouterr().out
