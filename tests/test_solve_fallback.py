"""``spn solve`` picks its method: the exact CTMC where the chain fits, else simulation (docs/design.md §5.6)."""

import itertools
import json

import numpy as np
import pytest

import spn.analysis.solve as solve_module
from spn.analysis.solve import choose_method, solve_application, solve_description, state_space_lower_bound
from spn.cli import main
from spn.description import load_description, parse_description
from spn.pipeline import Budget, evaluate_description

MAPREDUCE = "models/mapreduce.yaml"
#: one user, one phase: 49 states by the bound alone (3·C(5,2) + C(5,2) + C(4,2) + C(3,2))
ALONE = {"name": "alone", "workload": {"users": 1, "think_time": 4.0}, "cluster": {"containers": 3},
         "phases": [{"name": "p", "tasks": 6, "task_time": 1.0, "shape": 3}]}


def run(capsys, *args):
    code = main([str(a) for a in args])
    out, err = capsys.readouterr()
    return code, out, err


def chosen(desc, **budget):
    """What ``spn solve`` answers: the pipeline's choice of method."""
    return evaluate_description(desc, budget=Budget(**budget))


def no_exploration(monkeypatch):
    def explore(*args, **kwargs):
        raise AssertionError("explored a chain the lower bound already puts past max_states")
    monkeypatch.setattr(solve_module, "explore", explore)


def small_descriptions():
    """Small models of every shape the bound reasons about: chains, forks, priorities, users."""
    rng = np.random.default_rng(14)
    for k in range(24):
        n = int(rng.integers(1, 4))
        phases = [{"name": f"p{i}", "tasks": int(rng.integers(1, 6)), "task_time": 1.0,
                   "shape": int(rng.integers(1, 4)), "priority": float(rng.integers(0, 2))} for i in range(n)]
        pairs = [(i, j) for i, j in itertools.combinations(range(n), 2) if rng.random() < 0.4]
        pairs += [(i, n - 1) for i in range(n - 1) if all(a != i for a, _ in pairs)]   # one sink: connected
        edges = [[f"p{i}", f"p{j}"] for i, j in pairs]
        yield parse_description({"name": f"m{k}", "workload": {"users": int(rng.integers(1, 3)), "think_time": 3.0},
                                 "cluster": {"containers": int(rng.integers(1, 5))}, "phases": phases,
                                 "edges": edges, "scheduler": {"policy": ("fifo", "fair", "gate")[k % 3]}})


@pytest.mark.parametrize("desc", list(small_descriptions()), ids=lambda d: d.name)
def test_the_lower_bound_never_exceeds_the_chain(desc):
    states = solve_application(desc).state_space.n_states
    assert state_space_lower_bound(desc) <= states


def chains_of_several_users():
    """Chains of 1-3 phases under fifo and fair, 2-3 users: where two jobs meet, the bound counts them."""
    rng = np.random.default_rng(5)
    for k in range(16):
        n = int(rng.integers(1, 4))
        phases = [{"name": f"p{i}", "tasks": int(rng.integers(1, 6)), "task_time": 1.0,
                   "shape": int(rng.integers(1, 3))} for i in range(n)]
        yield parse_description({"name": f"c{k}", "workload": {"users": int(rng.integers(2, 4)), "think_time": 3.0},
                                 "cluster": {"containers": int(rng.integers(2, 6))}, "phases": phases,
                                 "edges": [[f"p{i}", f"p{i + 1}"] for i in range(n - 1)],
                                 "scheduler": {"policy": ("fifo", "fair")[k % 2]}})


@pytest.mark.parametrize("desc", list(chains_of_several_users()), ids=lambda d: d.name)
def test_the_two_job_bound_never_exceeds_the_chain(desc):
    assert state_space_lower_bound(desc) <= solve_application(desc).state_space.n_states


def test_the_two_job_count_in_closed_form_is_the_count_of_its_states():
    # the states _two_jobs describes, counted one by one: u of the older job's tasks running, f of the
    # younger's finished, r = min(C − u, T − f) of its tasks running, N − 1 markings of the jobs queued
    # behind it while it has a waiting task
    from math import comb

    from spn.analysis.choice import _two_jobs

    rng = np.random.default_rng(11)
    for _ in range(200):
        last, k_last, first, k_first = (int(v) for v in rng.integers(1, 9, 4))
        C, users = int(rng.integers(2, 12)), int(rng.integers(2, 6))
        count = sum(comb(u + k_last - 1, k_last - 1) * comb(r + k_first - 1, k_first - 1)
                    * (users - 1 if first - f > r else 1)
                    for u in range(1, min(C - 1, last) + 1) for f in range(first)
                    for r in [min(C - u, first - f)])
        assert _two_jobs(last, k_last, first, k_first, C, users) == count


@pytest.mark.parametrize("maps, reduces", [(500, 500), (1_000, 4)])
def test_the_papers_scale_under_fifo_is_past_max_states_by_the_bound_alone(monkeypatch, maps, reduces):
    # 1,000 maps and 4 reduces: the older job finishing its maps while the younger starts its own
    desc = load_description(MAPREDUCE, ["workload.users=50", "cluster.containers=300", f"phases.map.tasks={maps}",
                                        f"phases.reduce.tasks={reduces}", "scheduler.policy=fifo"])
    no_exploration(monkeypatch)
    assert state_space_lower_bound(desc) > 5e6 and "past max_states" in choose_method(desc)


def test_the_bound_is_exact_for_a_phase_alone():
    desc = parse_description(ALONE)
    assert state_space_lower_bound(desc) == 49
    assert solve_application(desc).state_space.n_states == 49 + 1    # and the user thinking


def test_sources_running_side_by_side_count_every_stage_composition(monkeypatch):
    # a fitted Spark application starts with one-task driver phases side by side; at Erlang shape
    # 1,000 three of them alone make 10^9 states, so spn solve must not explore (it did: 17 GB)
    def spark_like(shape, containers=6):
        phases = [{"name": f"driver-job{i}", "tasks": 1, "task_time": 1.0, "shape": shape} for i in range(3)]
        phases.append({"name": "driver-end", "tasks": 1, "task_time": 1.0})
        return parse_description({"name": "drivers", "workload": {"users": 1, "think_time": 5.0},
                                  "cluster": {"containers": containers}, "phases": phases,
                                  "edges": [[f"driver-job{i}", "driver-end"] for i in range(3)]})
    assert state_space_lower_bound(spark_like(1000)) == 1000 ** 3
    small = spark_like(3)
    assert state_space_lower_bound(small) == 27 <= solve_application(small).state_space.n_states
    assert state_space_lower_bound(spark_like(3, containers=2)) < 27     # they cannot all run at once
    no_exploration(monkeypatch)
    assert choose_method(spark_like(1000)) is not None


def test_a_phase_beside_another_counts_the_stage_compositions_of_its_running_tasks(monkeypatch):
    # a real log's fit (predict's higher shape cap): 4 tasks of shape 161 run beside another stage;
    # the chain passed 2,000,000 states after minutes and 5.8 GB, as no other family saw it
    def beside(shape, containers=7):
        return parse_description({
            "name": "beside", "workload": {"users": 1, "think_time": 1.0}, "cluster": {"containers": containers},
            "phases": [{"name": "driver", "tasks": 1, "task_time": 1.0}, {"name": "a", "tasks": 4, "task_time": 1.0,
                       "shape": shape}, {"name": "b", "tasks": 4, "task_time": 1.0, "shape": 2},
                       {"name": "last", "tasks": 1, "task_time": 1.0}],
            "edges": [["driver", "a"], ["driver", "b"], ["a", "last"], ["b", "last"]]})
    assert state_space_lower_bound(beside(161)) == pytest.approx(164 * 163 * 162 * 161 / 24)
    small = beside(3, containers=3)     # a can hold all 3 containers: C(3 + 2, 2) = 10 compositions
    assert state_space_lower_bound(small) == 10 <= solve_application(small).state_space.n_states
    no_exploration(monkeypatch)
    assert choose_method(beside(161)) is not None


def test_where_the_chain_fits_the_answer_is_the_exact_one():
    desc = load_description(MAPREDUCE)
    answer = chosen(desc)
    exact = solve_description(desc)
    assert choose_method(desc) is None
    assert answer.method == "exact" and answer.details["tangible_states"] == exact.tangible_states
    assert answer.mean_execution_time == pytest.approx(exact.measures.mean_execution_time, rel=1e-9)


def test_past_the_bound_it_simulates_without_exploring(monkeypatch):
    desc = parse_description(ALONE)
    exact = solve_description(desc).measures.mean_execution_time
    # one user whose job-alone bounds are wider than 1 %: the decomposition, exact for one user (its chain
    # of one job is explored: the exact method's is not)
    answer = chosen(desc, max_states=40, seed=3, rel_precision=0.01)
    assert answer.method == "decomposition" and "at least 49 tangible states" in answer.reason
    assert answer.mean_execution_time == pytest.approx(exact, rel=1e-6)
    no_exploration(monkeypatch)
    answer = evaluate_description(desc, budget=Budget(max_states=40, seed=3, rel_precision=0.01),
                                  method="simulation")
    # the job-level model, compiled once this installation has compiled it (in the background)
    assert answer.details["engine"] in ("cluster", "compiled") and answer.details["warmup_jobs"] == 0
    assert answer.interval[0] <= exact <= answer.interval[1] and answer.details["rel_half_width"] <= 0.01


def test_past_max_states_it_simulates_the_nets_model():
    desc = load_description(MAPREDUCE)           # 3 users under gate: jobs pool finished tasks, as the net does
    exact = solve_description(desc).measures.mean_execution_time
    answer = chosen(desc, max_states=20, seed=2, rel_precision=0.02)
    assert answer.method == "simulation" and answer.details["engine"] in ("cluster", "compiled")
    # the chain of 2 users already passes 20 states: the estimate says so before exploring 3
    assert answer.details["pool_finished_tasks"] and "more than 20 at 2" in answer.details["reason"]
    assert answer.interval[0] <= exact <= answer.interval[1]


def test_without_fallback_the_library_stays_exact():
    from spn.exceptions import StateSpaceLimitError

    with pytest.raises(StateSpaceLimitError):
        solve_description(load_description(MAPREDUCE), max_states=20)


def test_solve_json_says_simulation_with_its_interval(capsys, monkeypatch):
    no_exploration(monkeypatch)
    code, out, err = run(capsys, "solve", "models/spark-sq1.yaml", "--json", "--seed", "1",
                         "--rel-precision", "0.02")
    assert code == 0, err
    result = json.loads(out)
    assert result["method"] == "simulation" and result["engine"] in ("cluster", "compiled")
    assert result["ci_low"] < result["mean_execution_time"] < result["ci_high"]
    assert result["replications"] >= 20 and result["precision_met"]
    assert result["rel_half_width"] <= 0.02


def test_solve_table_says_which_method(capsys):
    code, out, err = run(capsys, "solve", MAPREDUCE)
    assert code == 0 and "exact (CTMC)" in out
    code, out, err = run(capsys, "solve", MAPREDUCE, "--max-states", "20", "--seed", "1", "--rel-precision", "0.05")
    assert code == 0, err
    assert "simulation (c" in out and "engine)" in out and "95 % interval" in out


def test_exact_json_is_todays_with_the_method(capsys):
    code, out, err = run(capsys, "solve", MAPREDUCE, "--json")
    result = json.loads(out)
    assert result["method"] == "exact"
    assert result["mean_execution_time"] == solve_description(load_description(MAPREDUCE)).measures.mean_execution_time


@pytest.mark.parametrize("method", ["exact", "gmres", "direct"])
def test_an_explicit_exact_method_stays_strict(capsys, method):
    code, out, err = run(capsys, "solve", MAPREDUCE, "--max-states", "20", "--method", method)
    assert code == 2 and out == ""
    assert "more than 20 tangible markings" in err and "(--max-states)" in err


def test_method_simulation_is_asked_for(capsys):
    code, out, err = run(capsys, "solve", MAPREDUCE, "--method", "simulation", "--seed", "3",
                         "--rel-precision", "0.05", "--json")
    assert code == 0, err
    assert json.loads(out)["reason"] == "asked for (method simulation)"


def test_simulation_gives_percentiles_with_their_own_intervals(capsys):
    code, out, err = run(capsys, "solve", MAPREDUCE, "--method", "simulation", "--percentiles", "50,95",
                         "--deadline", "20", "--seed", "2", "--rel-precision", "0.02", "--json")
    assert code == 0, err
    result = json.loads(out)
    for key in ("50", "95"):
        around = result["percentile_intervals"][key]
        assert around["low"] <= result["percentiles"][key] <= around["high"]
    assert result["deadline_probability_interval"]["low"] <= result["deadline_probability"] <= 1
    assert result["interval_kind"].startswith("numerical")


def test_method_exact_with_percentiles_is_the_exact_distribution(capsys):
    code, out, err = run(capsys, "solve", MAPREDUCE, "--method", "exact", "--percentiles", "50", "--json")
    assert code == 0, err
    assert "50" in json.loads(out)["percentiles"]


def test_thousands_of_users_are_simulated_without_building_their_job_identity_net(monkeypatch):
    # a slot of places per job in the system: 300 users took a minute to build a net past any budget
    from spn.analysis.solve import JOB_NET_MAX_PLACES, job_net_too_large
    from spn.models import jobs

    def crowd(users, policy="fifo"):
        return load_description(MAPREDUCE, [f"workload.users={users}", f"scheduler.policy={policy}"])
    assert job_net_too_large(crowd(3)) is None
    assert job_net_too_large(crowd(10_000, policy="gate")) is None      # the paper's net has no slots
    assert str(JOB_NET_MAX_PLACES) in job_net_too_large(crowd(300)).replace(",", "")
    build = jobs.build_jobs

    def small_only(desc, **options):      # the decomposition's chains of a few jobs are small
        if desc.workload.users > 10:
            pytest.fail(f"built a job-identity net of {desc.workload.users} slots")
        return build(desc, **options)
    monkeypatch.setattr(jobs, "build_jobs", small_only)
    answer = chosen(crowd(300), max_seconds=5, rel_precision=0.05)
    assert answer.method in ("decomposition", "simulation") and "job-identity net" in answer.reason
