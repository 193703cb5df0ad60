"""No silent wrong numbers: a steady state is right, or it says it did not converge.

Chains whose rates span up to ten orders of magnitude (random birth-death chains, random
chains with a stiff block, MapReduce models with think times of 1e4-1e8 s against tasks of
1e-3-1e-6 s) are solved by every method and compared with exact answers (products of
fractions, or 60-digit arithmetic). Each result is either within 1e-6 of the exact answer
or ``converged`` is False; the stopping rule's balance tests and the perturbation theory
behind them are checked on their own; the measures refuse impossible numbers; ``spn solve``
prints the right R or stops with one line.
"""

import functools
import re
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import scipy.sparse as sp

import spn.solvers.steady as steady_mod
from spn.analysis.solve import solve_application
from spn.cli import main
from spn.description import parse_description
from spn.exceptions import ConvergenceError, SpnError
from spn.measures import (
    ImplausibleResultError, JobMeasures, check_measures, job_measures,
)
from spn.models.dag import build
from spn.solvers import METHODS, SolverResult, steady_state
from spn.solvers.steady import gth as gth_mod
from spn.solvers.steady.rule import Rule
from spn.statespace import explore

ALL_METHODS = METHODS + ("auto",)
TOL = 1e-6


# --------------------------------------------------------------------------- #
# chains and their exact answers
# --------------------------------------------------------------------------- #


def generator(rates, n):
    """CSR generator from {(i, j): rate}, diagonal = -row sum."""
    rows, cols = zip(*rates)
    Q = sp.csr_array((np.array(list(rates.values()), float), (rows, cols)), shape=(n, n))
    return (Q - sp.diags_array(Q.sum(axis=1))).tocsr()


def exact_pi(Q, digits=60):
    """The stationary distribution of Q in ``digits``-digit arithmetic (as floats)."""
    mpmath.mp.dps = digits
    dense = Q.toarray()
    n = dense.shape[0]
    A = mpmath.matrix(n, n)
    for i, j in zip(*np.nonzero(dense)):
        A[j, i] = mpmath.mpf(float(dense[i, j]))        # Q^T, exactly the doubles of Q
    for i in range(n):
        A[i, i] = -sum(A[j, i] for j in range(n) if j != i)
    for j in range(n):
        A[0, j] = 1
    b = mpmath.matrix(n, 1)
    b[0] = 1
    pi = mpmath.lu_solve(A, b)
    return np.array([float(pi[i]) for i in range(n)])


def random_birth_death(seed, span):
    """Birth and death rates drawn log-uniformly over ``span`` decades; pi by products of
    fractions (pi_{i+1} / pi_i = up_i / down_i, exactly)."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 40))
    up = 10.0 ** rng.uniform(-span / 2, span / 2, n - 1)
    down = 10.0 ** rng.uniform(-span / 2, span / 2, n - 1)
    rates = {(i, i + 1): up[i] for i in range(n - 1)} | {(i + 1, i): down[i] for i in range(n - 1)}
    weights = [Fraction(1)]
    for u, d in zip(up, down):
        weights.append(weights[-1] * Fraction(u) / Fraction(d))
    total = sum(weights)
    return generator(rates, n), np.array([float(w / total) for w in weights])


def random_stiff_block(seed, span):
    """A random irreducible chain whose rates inside a third of the states are 10^(span/2)
    times faster, and half of whose transitions into or out of that block are as much slower."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(8, 36))
    rates = {(i, (i + 1) % n): rng.uniform(0.5, 2.0) for i in range(n)}
    for _ in range(2 * n):
        i, j = (int(v) for v in rng.integers(0, n, 2))
        if i != j:
            rates[(i, j)] = rng.uniform(0.1, 10.0)
    block = set(rng.choice(n, n // 3, replace=False).tolist())
    for (i, j) in rates:
        if i in block and j in block:
            rates[(i, j)] *= 10.0 ** (span / 2)
        elif (i in block or j in block) and rng.random() < 0.5:
            rates[(i, j)] *= 10.0 ** (-span / 2)
    Q = generator(rates, n)
    return Q, exact_pi(Q)


def mapreduce(think_time, map_time, reduce_time=3.0, users=3):
    """The MapReduce example under the paper's gate (49 states with 3 users), at other rates."""
    return parse_description({
        "name": "stiff", "framework": "mapreduce",
        "workload": {"users": users, "think_time": think_time}, "cluster": {"containers": 4},
        "scheduler": {"policy": "gate"},
        "phases": [{"name": "map", "tasks": 4, "task_time": map_time, "shape": 1},
                   {"name": "reduce", "tasks": 4, "task_time": reduce_time, "shape": 1}],
        "edges": [["map", "reduce"]]})


#: the stiff MapReduce case (49 states, rates 3e-4 to 4e3), and two stiffer ones
STIFF_MAPREDUCE = {
    "Z=1e4, map 1e-3": {"think_time": 1e4, "map_time": 1e-3},
    "Z=1e6, map 1e-5": {"think_time": 1e6, "map_time": 1e-5},
    "Z=1e8, map 1e-6, 4 users": {"think_time": 1e8, "map_time": 1e-6, "reduce_time": 10.0, "users": 4},
}


@functools.cache
def stiff_mapreduce(case):
    """(app, state space, exact pi, exact R) of a case of STIFF_MAPREDUCE."""
    app = build(mapreduce(**STIFF_MAPREDUCE[case]))
    ss = explore(app.net)
    pi = exact_pi(ss.generator())
    m = job_measures(ss, pi, users=app.users, think_time=app.think_time, end_activity=app.end_activity,
                     think_place=app.think_place, container_place=app.container_place,
                     containers=app.containers)
    return app, ss, pi, m.mean_execution_time


def solve(Q, method):
    # power iteration is capped on the random chains to keep the test quick: on a stiff
    # chain it ends without converging, which is one of the two acceptable outcomes
    return steady_state(Q, method=method, maxiter=20_000 if method == "power" else None)


def assert_right_or_unconverged(res, pi, what):
    """The specification: every probability of at least 1e-9 within 1e-6, or not converged."""
    if not res.converged:
        assert res.status != 0 and res.message
        return
    big = pi >= 1e-9
    err = np.max(np.abs(res.x[big] / pi[big] - 1))
    assert err <= TOL, f"{what}: converged with a relative error {err:.2g} ({res.message})"


# --------------------------------------------------------------------------- #
# every method, on stiff chains: right, or not converged
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("method", ALL_METHODS)
@pytest.mark.parametrize("seed, span", [(s, span) for s in range(6) for span in (4, 7, 10)])
def test_random_birth_death_chain_is_right_or_unconverged(method, seed, span):
    Q, pi = random_birth_death(seed, span)
    assert_right_or_unconverged(solve(Q, method), pi, f"birth-death seed {seed}, span 1e{span}")


@pytest.mark.parametrize("method", ALL_METHODS)
@pytest.mark.parametrize("seed, span", [(s, span) for s in range(4) for span in (4, 7, 10)])
def test_random_chain_with_a_stiff_block_is_right_or_unconverged(method, seed, span):
    Q, pi = random_stiff_block(seed, span)
    assert_right_or_unconverged(solve(Q, method), pi, f"stiff block seed {seed}, span 1e{span}")


@pytest.mark.parametrize("method", ALL_METHODS)
@pytest.mark.parametrize("case", STIFF_MAPREDUCE)
def test_stiff_mapreduce_execution_time_is_right_or_unconverged(method, case):
    app, ss, _, R = stiff_mapreduce(case)
    res = steady_state(ss.generator(), method=method)
    if res.converged:
        m = job_measures(ss, res.x, users=app.users, think_time=app.think_time,
                         end_activity=app.end_activity, think_place=app.think_place,
                         container_place=app.container_place, containers=app.containers)
        assert m.mean_execution_time == pytest.approx(R, rel=TOL), res.message
    else:
        assert res.status != 0


def test_gth_and_auto_solve_every_stiff_chain():
    """GTH is entrywise accurate on any chain: it converges, every probability to nine digits
    down to 1e-250. Auto, which falls back to it, always converges too."""
    chains = [random_birth_death(seed, 10) for seed in range(6)]
    chains += [random_stiff_block(seed, 10) for seed in range(4)]
    chains += [(stiff_mapreduce(case)[1].generator(), stiff_mapreduce(case)[2]) for case in STIFF_MAPREDUCE]
    for Q, pi in chains:
        res = steady_state(Q, method="gth")
        assert res.converged, res.message
        np.testing.assert_allclose(res.x[pi >= 1e-250], pi[pi >= 1e-250], rtol=1e-9)
        res = steady_state(Q)
        assert res.converged, res.message
        assert_right_or_unconverged(res, pi, "auto")


def test_the_stiff_mapreduce_case_of_the_report():
    """R = 6.2505 s: sparse LU and GMRES had it, Gauss-Seidel stopped after 3 sweeps at 4.84 s
    and BiCGSTAB at 6.11 s, both 'converged'. Now every method that converges has it."""
    _, ss, _, R = stiff_mapreduce("Z=1e4, map 1e-3")
    assert ss.n_states == 49 and round(R, 4) == 6.2505
    for method in ("direct", "gth", "gmres", "bicgstab", "sor", "auto"):
        res = steady_state(ss.generator(), method=method)
        assert res.converged, (method, res.message)


# --------------------------------------------------------------------------- #
# the stopping rule
# --------------------------------------------------------------------------- #


def test_component_wise_balance_is_the_documented_formula():
    """imbalance = max_i |(x Q)_i| / ((|x| + nu) |Q|)_i, when no group is worse."""
    rng = np.random.default_rng(1)
    Q, _ = random_stiff_block(3, 4)
    x = rng.random(Q.shape[0])
    x /= x.sum()
    rule = Rule(Q.T.tocsr(), rtol=1e-10)
    bal = rule.check(x, full=True)
    r = Q.T @ x
    expected = np.max(np.abs(r) / (np.abs(Q).T @ (x + 2e-292)))
    assert bal.imbalance >= expected * (1 - 1e-12)
    assert re.search(r"state \d+ does not balance|states beyond", bal.where)
    state = np.argmax(np.abs(r) / (np.abs(Q).T @ x))
    if bal.where.startswith("state"):
        assert bal.where.startswith(f"state {state} ") and bal.imbalance == pytest.approx(expected)


def test_normwise_residual_alone_accepts_a_wrong_stiff_answer_the_balance_rejects():
    # pi = 1/3 each; x puts half the mass on state 0: ||x Q||_1 = 5e-7, far under
    # rtol * Lambda = 1e-4, but state 0's inflow and outflow differ by a factor 2
    Q = sp.csr_array([[-1e-6, 1e-6, 0.0], [1e-6, -1e6 - 1e-6, 1e6], [0.0, 1e6, -1e6]])
    res = steady_state(Q, method="power", x0=[0.5, 0.25, 0.25], maxiter=0)
    assert res.residual <= 1e-10 * 1e6 and not res.converged
    assert "state 0 does not balance: inflow 2.5e-07, outflow 5e-07" in res.message
    assert steady_state(Q).x.tolist() == [1 / 3] * 3


def test_group_balance_catches_a_wrong_share_between_fast_groups():
    """Two fast pairs joined by a slow transition: x puts 60 % on the first pair, pi 50 %.
    Each state balances to 1e-11 of its own (fast) flow; the pair as a whole does not."""
    fast, slow = 1e5, 1e-6
    Q = generator({(0, 1): fast, (1, 0): fast, (2, 3): fast, (3, 2): fast, (1, 2): slow, (2, 1): slow}, 4)
    x = np.array([0.3, 0.3, 0.2, 0.2])
    rule = Rule(Q.T.tocsr(), rtol=1e-10)
    bal = rule.check(x, full=True)
    r = Q.T @ x
    assert np.max(np.abs(r) / (np.abs(Q).T @ x)) < 1e-11        # every state alone: fine
    assert not rule.met(bal) and "states beyond the transition" in bal.where
    assert bal.imbalance == pytest.approx(0.1 * slow / (0.3 * slow + 0.2 * slow), rel=1e-4)


def test_balanced_rates_perturbed_by_eps_move_pi_by_at_most_the_tree_theorem_bound():
    """Why a relative balance bounds the error of pi: pi_i is proportional to a sum over
    spanning trees of products of n - 1 rates (Markov chain tree theorem), so rates changed by
    a factor in [1 - eps, 1 + eps] change every pi_i by a factor in
    [((1 - eps) / (1 + eps))^(n-1), ((1 + eps) / (1 - eps))^(n-1)], however stiff the chain
    (O'Cinneide 1993)."""
    rng = np.random.default_rng(7)
    for seed, eps in [(0, 1e-3), (1, 1e-6), (2, 1e-4)]:
        Q, pi = random_stiff_block(seed, 10)
        Qp = sp.csr_array(Q, copy=True)
        Qp.setdiag(0)
        Qp.eliminate_zeros()
        Qp.data *= 1 + eps * rng.uniform(-1, 1, Qp.nnz)
        Qp = (Qp - sp.diags_array(Qp.sum(axis=1))).tocsr()
        ratio = exact_pi(Qp) / pi
        n = Q.shape[0]
        bound = ((1 + eps) / (1 - eps)) ** (n - 1)
        assert ratio.max() <= bound and ratio.min() >= 1 / bound
        assert np.abs(ratio - 1).max() > 0.1 * eps              # the bound is not empty


def test_error_of_x_is_its_residual_times_mean_first_passage_times():
    """Exactly, (x_j - pi_j) / pi_j = sum_i r_i m_ij for any normalised x, with r = x Q and
    m_ij the mean first-passage time from i to j (m_jj = 0): a residual small relative to each
    state's flow makes every x_j right, times how long the chain takes to reach j."""
    Q, pi = random_stiff_block(5, 4)
    n = Q.shape[0]
    dense = Q.toarray()
    m = np.zeros((n, n))
    for j in range(n):
        others = [i for i in range(n) if i != j]
        m[others, j] = np.linalg.solve(-dense[np.ix_(others, others)], np.ones(n - 1))
    x = pi * (1 + 1e-3 * np.random.default_rng(0).uniform(-1, 1, n))
    x /= x.sum()
    r = Q.T @ x
    np.testing.assert_allclose((x - pi) / pi, r @ m, rtol=1e-6, atol=1e-12)


def test_a_chain_too_stiff_to_verify_is_left_to_gth():
    """Two fast pairs (rates 1e10 and 1e8) joined by rates of 1e-8: the rounding of the
    residuals in the second pair (~1e-8) outweighs 1e-7 of the slow flow into it (~1e-9), so
    no residual computed in double precision can verify the pair's share (sparse LU gets it
    10 % wrong). Only GTH converges, and auto ends there."""
    Q = generator({(0, 1): 1e10, (1, 0): 1e10, (2, 3): 1e8, (3, 2): 1e8, (1, 2): 1e-8, (2, 1): 2e-8}, 4)
    pi = np.array([1 / 3, 1 / 3, 1 / 6, 1 / 6])
    for method in ("direct", "gmres", "bicgstab", "power", "sor"):
        res = steady_state(Q, method=method)
        assert not res.converged and res.status != 0
    gmres = steady_state(Q, method="gmres")
    assert "too stiff a chain to verify by its residual" in gmres.message and "'gth'" in gmres.message
    res = steady_state(Q)
    assert res.converged and res.method == "gth" and res.fallback_from == ("direct", "gmres", "bicgstab")
    assert "after direct:" in res.message
    np.testing.assert_allclose(res.x, pi, rtol=1e-14)


def test_auto_falls_back_and_says_why():
    Q, pi = random_birth_death(5, 10)
    res = steady_state(Q)
    assert res.converged and res.fallback_from and res.method == "gth"
    for failed in res.fallback_from:
        assert f"{failed}: " in res.message
    np.testing.assert_allclose(res.x[pi > 1e-250], pi[pi > 1e-250], rtol=1e-9)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -0.25])
def test_no_method_can_return_nan_inf_or_negative_probabilities_as_converged(monkeypatch, bad):
    def lying(QT, *, maxiter, **options):
        x = np.full(QT.shape[0], 1.0 / QT.shape[0])
        x[0] = bad
        return SolverResult(x=x, converged=True, status=0, message="converged", niter=1,
                            residual=0.0, seconds=0.0, method="direct")

    monkeypatch.setitem(steady_mod.SOLVERS, "direct", lying)
    Q = generator({(0, 1): 1.0, (1, 2): 2.0, (2, 0): 3.0}, 3)
    res = steady_state(Q, method="direct")
    assert not res.converged and res.status == 2 and "not a probability vector" in res.message
    assert np.all(np.isfinite(res.x)) and np.all(res.x >= 0) and res.x.sum() == pytest.approx(1)
    auto = steady_state(Q)
    assert auto.converged and auto.fallback_from == ("direct",)


def test_a_method_that_claims_convergence_is_checked_again(monkeypatch):
    def optimistic(QT, *, maxiter, **options):
        x = np.array([0.5, 0.25, 0.25])
        return SolverResult(x=x, converged=True, status=0, message="converged", niter=1,
                            residual=0.0, seconds=0.0, method="gmres")

    monkeypatch.setitem(steady_mod.SOLVERS, "gmres", optimistic)
    Q = generator({(0, 1): 1.0, (1, 2): 2.0, (2, 0): 3.0}, 3)
    res = steady_state(Q, method="gmres")
    assert not res.converged and "residual" in res.message


# --------------------------------------------------------------------------- #
# GTH
# --------------------------------------------------------------------------- #


def test_gth_is_entrywise_accurate_across_twenty_orders_of_magnitude():
    # M/M/1/40 with rho = 1e-20 ** (1/40) ... down to probabilities of 1e-20 and less
    K = 40
    up = np.full(K, 1e-3)
    down = np.full(K, 1e+3)
    rates = {(i, i + 1): up[i] for i in range(K)} | {(i + 1, i): down[i] for i in range(K)}
    Q = generator(rates, K + 1)
    weights = [Fraction(1)]
    for u, d in zip(up, down):
        weights.append(weights[-1] * Fraction(u) / Fraction(d))
    pi = np.array([float(w / sum(weights)) for w in weights])
    assert pi[-1] < 1e-230
    res = steady_state(Q, method="gth")
    assert res.converged
    np.testing.assert_allclose(res.x, pi, rtol=1e-12)


def test_gth_refuses_chains_beyond_its_size_limit(monkeypatch):
    monkeypatch.setattr(gth_mod, "GTH_MAX_STATES", 5)
    Q = generator({(i, (i + 1) % 8): 1.0 + i for i in range(8)}, 8)
    res = steady_state(Q, method="gth")
    assert not res.converged and res.status == 3 and "GTH_MAX_STATES" in res.message


def test_gth_docstring_examples_run():
    import doctest

    import spn.solvers.steady.rule as rule_mod
    for module in (gth_mod, rule_mod):
        assert doctest.testmod(module).failed == 0


# --------------------------------------------------------------------------- #
# measures
# --------------------------------------------------------------------------- #


def test_execution_time_from_littles_law_on_the_jobs_in_the_system_equals_n_over_x_minus_z():
    solution = solve_application(parse_description({
        "name": "mapreduce", "framework": "mapreduce",
        "workload": {"users": 3, "think_time": 10.0}, "cluster": {"containers": 4},
        "scheduler": {"policy": "gate"},            # the paper's net, whose R is 13.336 s
        "phases": [{"name": "map", "tasks": 4, "task_time": 2.0, "shape": 1},
                   {"name": "reduce", "tasks": 4, "task_time": 3.0, "shape": 1}],
        "edges": [["map", "reduce"]]}))
    m = solution.report.measures
    assert m.mean_execution_time == pytest.approx(3 / m.throughput - 10.0, rel=1e-12)
    assert round(m.mean_execution_time, 3) == 13.336


def test_execution_time_keeps_its_digits_when_think_time_dwarfs_it():
    """N/X - Z subtracts two numbers near Z = 1e6 s to get R = 6.25 s: it keeps only the
    digits X has beyond 1e-5. Little's law on the jobs in the system keeps them all."""
    app, ss, _, R = stiff_mapreduce("Z=1e6, map 1e-5")
    res = steady_state(ss.generator(), method="gth")
    m = job_measures(ss, res.x, users=app.users, think_time=app.think_time,
                     end_activity=app.end_activity, think_place=app.think_place,
                     container_place=app.container_place, containers=app.containers)
    assert m.mean_execution_time == pytest.approx(R, rel=1e-12)
    assert R == pytest.approx(6.25, rel=1e-5)


@pytest.mark.parametrize("measures, message", [
    (JobMeasures(-1.5, 0.3, 0.2, 2.5), "R = -1.5 s < 0"),
    (JobMeasures(2.0, 0.0, 0.2, 2.5), "throughput X = 0"),
    (JobMeasures(2.0, float("nan"), 0.2, 2.5), "throughput X = nan"),
    (JobMeasures(float("inf"), 0.3, 0.2, 2.5), "R = inf s is not finite"),
    (JobMeasures(2.0, 0.3, 1.2, 2.5), "utilisation 1.2 is outside"),
    (JobMeasures(2.0, 0.3, 0.2, 3.5), "3.5 users thinking"),
])
def test_impossible_measures_raise(measures, message):
    with pytest.raises(ImplausibleResultError, match=re.escape(message)):
        check_measures(measures, users=3)


def test_an_impossible_steady_state_raises_a_convergence_error(monkeypatch):
    """ImplausibleResultError is a ConvergenceError: whoever handles solvers that did not
    converge handles it, and the command line prints one line and exits with status 2."""
    import spn.analysis.solve as solve_mod

    def negative(Q, **options):
        n = Q.shape[0]
        x = np.full(n, 2.0 / n)
        x[0] = -1.0
        return SolverResult(x=x, converged=True, status=0, message="converged", niter=1,
                            residual=0.0, seconds=0.0, method="direct", imbalance=0.0)

    monkeypatch.setattr(solve_mod, "steady_state", negative)
    with pytest.raises(ConvergenceError, match=r"^implausible steady state: a probability is -1 "
                                               r"\(from direct: residual 0, imbalance 0\)$"):
        solve_application(mapreduce(10.0, 2.0))
    assert issubclass(ImplausibleResultError, SpnError)


# --------------------------------------------------------------------------- #
# the command line
# --------------------------------------------------------------------------- #

CLI_CASE = ["solve", "models/mapreduce.yaml", "--set", "workload.think_time=10000",
            "--set", "phases.map.task_time=0.001", "--set", "workload.users=3"]


def _cli_methods():
    from spn.cli import _args
    return [m for m in ALL_METHODS if m in _args.METHODS]


@pytest.mark.parametrize("method", _cli_methods())
def test_spn_solve_prints_the_right_execution_time_or_stops_with_one_line(method, capsys):
    status = main(CLI_CASE + ["--method", method])
    out, err = capsys.readouterr()
    if status == 0:
        assert re.search(r"mean execution time\s+6\.2505 s", out), out
    else:
        assert status == 2 and out == ""
        lines = err.strip().splitlines()
        assert len(lines) == 1 and re.match(rf"spn: error: {method} did not converge: ", lines[0])
