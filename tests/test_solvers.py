"""Specification of the steady-state solvers (``spn.solvers``).

Reference chains with known answers (exact rational solutions from sympy,
closed forms) are crossed with every method; hypothesis checks the invariants
on random irreducible generators.
"""

import doctest
from fractions import Fraction

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import spn.solvers
import spn.solvers.steady as steady_mod
from spn.ctmc import check_generator
from spn.exceptions import NotErgodicError
from spn.solvers import METHODS, SolverResult, closed_classes, steady_state
from spn.solvers.steady import common, direct, krylov, stationary
from spn.solvers.steady.stationary import residual_norm, sor_sweep

ALL_METHODS = METHODS + ("auto",)
ITERATIVE = ("gmres", "bicgstab", "power", "sor")


# --------------------------------------------------------------------------- #
# reference chains
# --------------------------------------------------------------------------- #


def generator(rates, n):
    """CSR generator from {(i, j): rate} (off-diagonal), diagonal = -row sum."""
    rows = [i for i, _ in rates]
    cols = [j for _, j in rates]
    vals = [float(r) for r in rates.values()]
    Q = sp.csr_array((vals, (rows, cols)), shape=(n, n))
    return (Q - sp.diags_array(Q.sum(axis=1))).tocsr()


def birth_death(up, down):
    """Birth-death generator on 0..K (K = len(up)): i -> i+1 at up[i], i+1 -> i at down[i]."""
    up, down = np.asarray(up, float), np.asarray(down, float)
    Q = sp.diags_array([down, up], offsets=[-1, 1]).tocsr()
    return (Q - sp.diags_array(Q.sum(axis=1))).tocsr()


def mm1k(lam, mu, K):
    return birth_death(np.full(K, lam), np.full(K, mu))


def grid_2d(k1, k2, rates1=(1.0, 1.5), rates2=(0.7, 1.2)):
    """Two independent M/M/1/K queues: (k1+1)(k2+1) states, built with kron."""
    Q1, Q2 = mm1k(*rates1, k1), mm1k(*rates2, k2)
    return (sp.kron(Q1, sp.eye_array(k2 + 1)) + sp.kron(sp.eye_array(k1 + 1), Q2)).tocsr()


def truncated_geometric(rho, K):
    p = rho ** np.arange(K + 1)
    return p / p.sum()


def random_rational_rates(rng, n):
    """Irreducible chain: a ring plus random extra edges, rational rates p/q."""
    rates = {}
    for i in range(n):
        rates[(i, (i + 1) % n)] = Fraction(int(rng.integers(1, 10)), int(rng.integers(1, 5)))
    for _ in range(2 * n):
        i, j = (int(v) for v in rng.integers(0, n, size=2))
        if i != j:
            rates[(i, j)] = Fraction(int(rng.integers(1, 10)), int(rng.integers(1, 5)))
    return rates


def exact_pi(rates, n):
    """Exact stationary distribution (sympy rationals -> float)."""
    Q = sympy.zeros(n, n)
    for (i, j), r in rates.items():
        Q[i, j] = sympy.Rational(r.numerator, r.denominator)
    for i in range(n):
        Q[i, i] = -sum(Q[i, j] for j in range(n) if j != i)
    (v,) = Q.T.nullspace()
    v = v / sum(v)
    return np.array([float(t) for t in v])


def residual(Q, x):
    return float(np.abs(Q.T @ x).sum())


def check_distribution(res, Q, rtol):
    """The invariants every returned result satisfies."""
    lam = float(np.max(np.abs(Q.diagonal())))
    assert isinstance(res, SolverResult)
    assert res.x.dtype == np.float64 and res.x.shape == (Q.shape[0],)
    assert np.all(res.x >= 0)
    assert res.x.sum() == pytest.approx(1.0, abs=1e-12)
    # the same sum in another order: each entry of xQ cancels terms up to lam in size, so the two agree to
    # the rounding of those terms, not to a fixed 1e-15 (a near-exact solution's residual is that rounding)
    rounding = 16 * Q.shape[0] * np.finfo(float).eps * lam
    assert res.residual == pytest.approx(residual(Q, res.x), rel=1e-6, abs=rounding)
    assert res.converged == (res.residual <= rtol * lam)


def tight(method):
    """Options asking each method for ~machine-precision answers."""
    return {"rtol": 1e-14 if method in ("direct", "auto") else 1e-13}


# --------------------------------------------------------------------------- #
# closed forms and exact oracles, crossed with every method
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("method", ALL_METHODS)
@pytest.mark.parametrize("a, b", [(2.0, 3.0), (1e-3, 1.0), (50.0, 0.5)])
def test_two_state_chain_is_b_over_a_plus_b(method, a, b):
    Q = sp.csr_array([[-a, a], [b, -b]])
    res = steady_state(Q, method=method, **tight(method))
    assert res.converged and res.status == 0
    np.testing.assert_allclose(res.x, [b / (a + b), a / (a + b)], rtol=1e-10)
    check_distribution(res, Q, **tight(method))


@pytest.mark.parametrize("method", ALL_METHODS)
@pytest.mark.parametrize("lam, mu, K", [(1.0, 1.5, 20), (2.0, 1.0, 15), (1.0, 1.0, 10)])
def test_mm1k_queue_is_truncated_geometric(method, lam, mu, K):
    Q = mm1k(lam, mu, K)
    res = steady_state(Q, method=method, **tight(method))
    assert res.converged
    np.testing.assert_allclose(res.x, truncated_geometric(lam / mu, K), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("method", ALL_METHODS)
def test_birth_death_with_state_dependent_rates(method):
    # M/M/3/12: pi_i proportional to prod_{j<i} up_j / down_j
    K, lam, mu, c = 12, 2.5, 1.0, 3
    up = np.full(K, lam)
    down = mu * np.minimum(np.arange(1, K + 1), c)
    expected = np.concatenate([[1.0], np.cumprod(up / down)])
    expected /= expected.sum()
    res = steady_state(birth_death(up, down), method=method, **tight(method))
    assert res.converged
    np.testing.assert_allclose(res.x, expected, rtol=1e-9, atol=1e-13)


@pytest.mark.parametrize("method", ALL_METHODS)
@pytest.mark.parametrize("seed", range(8))
def test_random_rational_chain_matches_exact_sympy_solution(method, seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 9))
    rates = random_rational_rates(rng, n)
    Q = generator(rates, n)
    res = steady_state(Q, method=method, **tight(method))
    assert res.converged, res.message
    np.testing.assert_allclose(res.x, exact_pi(rates, n), rtol=0, atol=1e-10)
    check_distribution(res, Q, **tight(method))


def test_single_state_chain_is_certain():
    for method in ALL_METHODS:
        res = steady_state(sp.csr_array([[0.0]]), method=method)
        assert res.x.tolist() == [1.0] and res.converged and res.residual == 0.0


@pytest.mark.parametrize(
    "convert", [np.array, sp.csr_matrix, sp.coo_array, sp.csc_matrix, sp.lil_array]
)
def test_any_matrix_container_is_accepted(convert):
    Q = convert(np.array([[-1.0, 1.0], [3.0, -3.0]]))
    res = steady_state(Q)
    np.testing.assert_allclose(res.x, [0.75, 0.25])
    assert isinstance(res.x, np.ndarray)


# --------------------------------------------------------------------------- #
# properties on random irreducible generators
# --------------------------------------------------------------------------- #


@st.composite
def irreducible_generators(draw):
    n = draw(st.integers(2, 30))
    rate = st.floats(0.1, 10.0, allow_nan=False)
    rates = {(i, (i + 1) % n): draw(rate) for i in range(n)}  # ring: irreducible
    extra = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1), rate), max_size=3 * n))
    for i, j, r in extra:
        if i != j:
            rates[(i, j)] = r
    perm = draw(st.permutations(range(n)))  # the ring need not follow the numbering
    return generator({(perm[i], perm[j]): r for (i, j), r in rates.items()}, n)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(Q=irreducible_generators())
def test_every_method_returns_the_same_valid_distribution(Q):
    rtol = 1e-12
    reference = steady_state(Q, method="direct", rtol=rtol)
    for method in ALL_METHODS:
        if method == "sor":
            # Gauss-Seidel can crawl on some cyclic chains: it must then say so, never
            # return a wrong number as converged
            res = steady_state(Q, method=method, rtol=rtol, maxiter=2000)
            if not res.converged:
                assert res.status != 0 and res.residual > rtol * abs(Q.diagonal()).max()
                continue
        else:
            res = steady_state(Q, method=method, rtol=rtol)
        check_distribution(res, Q, rtol)
        assert res.converged and res.status == 0, (method, res.message)
        np.testing.assert_allclose(res.x, reference.x, rtol=0, atol=1e-8)


@settings(max_examples=25, deadline=None)
@given(Q=irreducible_generators(), scale=st.sampled_from([1e-6, 1.0, 1e6]))
def test_rescaling_time_leaves_pi_unchanged(Q, scale):
    # pi of c*Q equals pi of Q; the stopping rule scales with Lambda
    a = steady_state(Q, method="direct")
    b = steady_state(Q * scale, method="gmres")
    assert b.converged
    np.testing.assert_allclose(a.x, b.x, atol=1e-8)


# --------------------------------------------------------------------------- #
# reducible chains
# --------------------------------------------------------------------------- #


def test_two_closed_classes_raise_not_ergodic_with_sizes():
    # 0 -> {1, 2} (closed pair) and 0 -> 3 -> 4 -> 5 -> 3 (closed triple)
    Q = generator({(0, 1): 1, (0, 3): 1, (1, 2): 1, (2, 1): 2, (3, 4): 1, (4, 5): 1, (5, 3): 1}, 6)
    classes = closed_classes(Q)
    assert [c.tolist() for c in classes] == [[1, 2], [3, 4, 5]]
    for method in ALL_METHODS:
        with pytest.raises(NotErgodicError, match=r"2 closed classes.*sizes \[2, 3\]"):
            steady_state(Q, method=method)


def test_absorbing_states_are_closed_classes():
    Q = sp.csr_array((4, 4))  # no transitions at all: 4 absorbing states
    assert len(closed_classes(Q)) == 4
    with pytest.raises(NotErgodicError, match="4 closed classes"):
        steady_state(Q)


@pytest.mark.parametrize("method", ALL_METHODS)
def test_transient_states_get_zero_and_closed_class_is_solved_alone(method):
    # states 0, 1, 5 transient (they lead into {2, 3, 4} and never come back)
    rates = {(0, 1): 1, (1, 0): 2, (1, 2): 1, (5, 0): 3, (5, 4): 1,
             (2, 3): 1, (3, 4): 2, (4, 2): 3, (3, 2): 1}
    Q = generator(rates, 6)
    closed = {(2, 3): 1, (3, 4): 2, (4, 2): 3, (3, 2): 1}
    expected_closed = exact_pi({(i - 2, j - 2): Fraction(r) for (i, j), r in closed.items()}, 3)
    res = steady_state(Q, method=method, **tight(method))
    assert res.converged
    assert res.x[[0, 1, 5]].tolist() == [0.0, 0.0, 0.0]
    np.testing.assert_allclose(res.x[2:5], expected_closed, atol=1e-10)
    assert "3 transient states" in res.message
    check_distribution(res, Q, **tight(method))


def test_chain_absorbed_in_one_state_puts_all_mass_there():
    Q = generator({(0, 1): 1.0, (1, 2): 1.0, (1, 0): 1.0}, 3)
    res = steady_state(Q)
    assert res.x.tolist() == [0.0, 0.0, 1.0] and res.converged


# --------------------------------------------------------------------------- #
# stopping rule, iteration counts, non-convergence, fallbacks
# --------------------------------------------------------------------------- #


def test_power_with_two_iterations_reports_non_convergence_without_raising():
    Q = mm1k(1.0, 1.1, 60)  # slow mixing
    res = steady_state(Q, method="power", maxiter=2)
    assert not res.converged and res.status == 1 and res.niter == 2
    assert "maxiter" in res.message
    check_distribution(res, Q, 1e-10)


@pytest.mark.parametrize("method", ITERATIVE)
def test_every_iterative_method_reports_maxiter(method):
    Q = grid_2d(30, 30)
    res = steady_state(Q, method=method, maxiter=1, rtol=0.0)  # tolerance 0: unreachable
    assert not res.converged and res.status == 1 and res.niter <= 1
    check_distribution(res, Q, 0.0)


def test_converged_follows_the_documented_rule():
    Q = mm1k(1.0, 1.5, 30)
    lam = 2.5
    for rtol, atol in [(1e-4, 0.0), (0.0, 1e-6), (1e-6, 1e-6)]:
        res = steady_state(Q, method="power", rtol=rtol, atol=atol)
        assert res.converged and res.residual <= atol + rtol * lam
        # one iteration earlier the rule did not hold yet
        prev = steady_state(Q, method="power", rtol=rtol, atol=atol, maxiter=res.niter - 1)
        assert prev.residual > atol + rtol * lam


def test_callback_sees_every_iteration_with_its_residual():
    Q = mm1k(1.0, 1.5, 20)
    seen = []
    res = steady_state(Q, method="power", callback=lambda k, x, r: seen.append((k, x, r)))
    assert [k for k, _, _ in seen] == list(range(1, res.niter + 1))
    k, x, r = seen[-1]
    np.testing.assert_array_equal(x, res.x)
    assert r == res.residual == pytest.approx(residual(Q, x))


@pytest.mark.parametrize("method", ITERATIVE)
def test_callback_receives_normalised_full_length_iterates(method):
    # transient state 0: the callback still sees length-n vectors with x[0] = 0
    Q = generator({(0, 1): 1.0, (1, 2): 1.0, (2, 3): 2.0, (3, 1): 1.5, (2, 1): 0.5}, 4)
    seen = []
    steady_state(Q, method=method, callback=lambda k, x, r: seen.append((k, x, r)))
    assert seen
    for k, x, r in seen:
        assert x.shape == (4,) and x[0] == 0.0 and x.sum() == pytest.approx(1.0)
        assert r == pytest.approx(residual(Q, x), rel=1e-9, abs=1e-15)
    assert [k for k, _, _ in seen] == sorted(k for k, _, _ in seen)


def test_starting_at_the_answer_takes_no_iterations():
    Q = mm1k(1.0, 1.5, 20)
    exact = truncated_geometric(1 / 1.5, 20)
    for method in ("power", "sor", "gmres", "bicgstab"):
        res = steady_state(Q, method=method, x0=exact, rtol=1e-10)
        assert res.converged and res.niter == 0


def test_direct_reports_one_solve():
    res = steady_state(mm1k(1.0, 1.5, 20), method="direct")
    assert res.method == "direct" and res.niter == 1 and res.converged


@pytest.mark.parametrize("omega", [0.8, 1.0, 1.3])
def test_sor_relaxation_converges(omega):
    Q = mm1k(1.0, 1.5, 40)
    res = steady_state(Q, method="sor", omega=omega)
    assert res.converged
    np.testing.assert_allclose(res.x, truncated_geometric(1 / 1.5, 40), atol=1e-9)


def test_auto_uses_direct_for_small_chains_and_gauss_seidel_for_large(monkeypatch):
    Q = mm1k(1.0, 1.5, 20)
    res = steady_state(Q)
    assert res.method == "direct" and res.fallback_from == ()
    monkeypatch.setattr(steady_mod, "AUTO_DIRECT_MAX_STATES", 10)
    res = steady_state(Q)
    assert res.method == "sor" and res.converged


def failing_method(status, niter=None):
    """A method for ``SOLVERS`` that returns the uniform distribution, unconverged."""
    def failing(QT, *, maxiter, **options):
        x = np.full(QT.shape[0], 1.0 / QT.shape[0])
        return SolverResult(x=x, converged=False, status=status, message="forced failure",
                            niter=maxiter if niter is None else niter, residual=residual(QT.T, x),
                            seconds=0.0, method="forced")
    return failing


def test_auto_falls_back_from_gauss_seidel_to_krylov(monkeypatch):
    failing = failing_method(1)

    monkeypatch.setattr(steady_mod, "AUTO_DIRECT_MAX_STATES", 10)
    monkeypatch.setitem(steady_mod.SOLVERS, "sor", failing)
    res = steady_state(mm1k(1.0, 1.5, 20))
    assert res.converged and res.method == "gmres" and res.fallback_from == ("sor",)


def test_auto_falls_back_and_records_it(monkeypatch):
    failing = failing_method(2, niter=5)

    monkeypatch.setitem(steady_mod.SOLVERS, "direct", failing)
    monkeypatch.setitem(steady_mod.SOLVERS, "gmres", failing)
    Q = mm1k(1.0, 1.5, 20)
    res = steady_state(Q)
    assert res.converged and res.method == "bicgstab"
    assert res.fallback_from == ("direct", "gmres")
    assert "forced" not in res.message and "direct: breakdown" in res.message
    # an explicit method never falls back
    res = steady_state(Q, method="gmres")
    assert not res.converged and res.method == "gmres" and res.fallback_from == ()


def test_badly_scaled_chain_falls_back_inside_direct_and_krylov():
    # mass piles up at the far end: pi_0 / pi_K = 5**-500 underflows, so the
    # system pinned at state 0 is singular in floating point
    K = 500
    Q = mm1k(5.0, 1.0, K)
    expected = truncated_geometric(0.2, K)[::-1]
    for method in ("direct", "gmres", "bicgstab"):
        res = steady_state(Q, method=method)
        assert res.converged, (method, res.message)
        np.testing.assert_allclose(res.x, expected, atol=1e-10)
    assert "normalisation row" in steady_state(Q, method="direct").message
    assert "Jacobi" in steady_state(Q, method="gmres").message


# --------------------------------------------------------------------------- #
# bad input
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    "Q, match",
    [
        (sp.csr_array(np.zeros((2, 3))), "square"),
        (sp.csr_array([[1.0, -1.0], [1.0, -1.0]]), "negative off-diagonal"),
        (sp.csr_array([[-1.0, 1.0], [1.0, -2.0]]), "sum to 0"),
        (sp.csr_array([[-1.0, 1.0], [1.0, -1.0 + 1e-6]]), "sum to 0"),
        (sp.csr_array([[-np.nan, np.nan], [1.0, -1.0]]), "NaN"),
        (sp.csr_array((0, 0)), "empty"),
    ],
)
def test_bad_generators_raise_value_error(Q, match):
    with pytest.raises(ValueError, match=match):
        steady_state(Q)
    with pytest.raises(ValueError, match=match):
        closed_classes(Q)


def test_bad_options_raise_value_error():
    Q = mm1k(1.0, 2.0, 3)
    for kwargs in [{"method": "lu"}, {"rtol": -1.0}, {"omega": 2.0}, {"x0": [1.0, 0.0]}, {"maxiter": -1}]:
        with pytest.raises(ValueError):
            steady_state(Q, **kwargs)


def test_rounding_in_row_sums_is_tolerated():
    Q = sp.csr_array([[-1.0, 1.0], [1.0, -1.0 - 1e-13]])
    assert steady_state(Q).converged


# --------------------------------------------------------------------------- #
# scale: a ~40,000-state chain
# --------------------------------------------------------------------------- #


@pytest.mark.slow   # a 40,000-state chain solved twice (minutes); the methods agree on small chains above
def test_40k_state_grid_gmres_and_direct_agree_with_product_form():
    Q = grid_2d(199, 199)
    assert Q.shape == (40_000, 40_000) and Q.nnz == 40_000 + 4 * 199 * 200
    exact = np.kron(truncated_geometric(1 / 1.5, 199), truncated_geometric(0.7 / 1.2, 199))
    direct = steady_state(Q, method="direct")
    gmres = steady_state(Q, method="gmres", rtol=1e-12)
    assert direct.converged and gmres.converged
    np.testing.assert_allclose(direct.x, exact, atol=1e-12)
    np.testing.assert_allclose(gmres.x, direct.x, atol=1e-9)


def test_docstring_examples_run():
    for module in (spn.solvers, steady_mod, common, direct, krylov, stationary):
        failures, _ = doctest.testmod(module)
        assert failures == 0


@st.composite
def any_generators(draw):
    """Generators with absorbing states, explicit zeros and missing diagonal entries."""
    n = draw(st.integers(1, 12))
    entries = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1),
                                      st.sampled_from([0.0, 0.5, 1.0, 3.0])), max_size=4 * n))
    rates = {}
    for i, j, r in entries:
        if i != j:
            rates[(i, j)] = r
    Q = generator(rates, n) if rates else sp.csr_array((n, n))
    if draw(st.booleans()):
        Q = (Q + sp.csr_array(([0.0] * n, (range(n), range(n))), shape=(n, n))).tocsr()
    Q.sum_duplicates()
    return Q


@settings(max_examples=150, deadline=None)
@given(Q=any_generators())
def test_canonical_csr_fast_path_reads_the_same_chain_as_the_general_path(Q):
    """explore() hands over canonical CSR generators, read without copying: same G, same classes."""
    assert Q.has_canonical_format
    G_fast, _, lam_fast = check_generator(Q)
    G_slow, _, lam_slow = check_generator(Q.toarray())
    np.testing.assert_array_equal(G_fast.toarray(), G_slow.toarray())
    assert lam_fast == lam_slow
    # closed classes = attracting components of the transition graph (networkx as the reference)
    dense = Q.toarray()
    graph = nx.DiGraph()
    graph.add_nodes_from(range(Q.shape[0]))
    graph.add_edges_from((i, j) for i, j in zip(*np.nonzero(dense)) if i != j and dense[i, j] > 0)
    expected = sorted(sorted(c) for c in nx.attracting_components(graph))
    for found in (closed_classes(Q), closed_classes(Q.toarray())):
        assert sorted(c.tolist() for c in found) == expected


@settings(max_examples=100, deadline=None)
@given(Q=any_generators(), omega=st.sampled_from([0.7, 1.0, 1.4]))
def test_one_compiled_sor_sweep_is_the_textbook_matrix_sweep(Q, omega):
    """(D + omega L) x_new = -(omega U + (omega - 1) D) x_old, solved densely (on Q^T, its
    diagonal moved away from 0 so that absorbing states do not divide by 0)."""
    A = sp.csr_array(Q.T - 2.0 * sp.eye_array(Q.shape[0]))
    d = A.diagonal()
    x = np.random.default_rng(len(d)).random(len(d))
    dense = A.toarray()
    D, L, U = np.diag(d), np.tril(dense, -1), np.triu(dense, 1)
    expected = np.linalg.solve(D + omega * L, -(omega * U + (omega - 1.0) * D) @ x)
    sor_sweep(A, x, omega)
    np.testing.assert_allclose(x, expected, rtol=1e-9, atol=1e-12)
    assert residual_norm(A, x) == pytest.approx(
        np.abs(dense @ x).sum(), rel=1e-12, abs=1e-15)
