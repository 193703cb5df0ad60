"""Reference nets with answers known independently of spn, crossed with every solver.

Each case states the tangible state count first, then the exact steady-state
distribution over named markings, solved with sympy (rational arithmetic) from a
generator written out by hand from the net's meaning, not from spn's output.
"""

import pytest
import sympy as sy

from spn.measures import expected_tokens, throughput
from spn.net import Erlang, InstantActivity, Net, Place, TimedActivity
from spn.solvers import steady_state
from spn.statespace import explore

METHODS = ["direct", "gmres", "bicgstab", "power", "sor"]


def exact_stationary(Q):
    """Solve pi Q = 0, sum(pi) = 1 exactly for a sympy Matrix of Rationals."""
    n = Q.shape[0]
    A = Q.T.copy()
    A[n - 1, :] = sy.ones(1, n)          # replace one balance equation by sum(pi) = 1
    b = sy.zeros(n, 1)
    b[n - 1] = 1
    return list(A.LUsolve(b))


def solve(ss, method):
    result = steady_state(ss.generator(), method=method, rtol=1e-14)
    assert result.converged, result
    return result.x


def probabilities_by_marking(ss, pi, places):
    """{tuple of tokens in ``places``: probability}."""
    cols = [ss.tokens(p) for p in places]
    out = {}
    for i in range(ss.n_states):
        key = tuple(int(c[i]) for c in cols)
        out[key] = out.get(key, 0.0) + pi[i]
    return out


# --------------------------------------------------------------------------- M/M/1/K
def mm1k_net(lam, mu, K):
    return Net([Place("queue", 0), Place("space", K)], [
        TimedActivity("arrive", inputs={"space": 1}, outputs={"queue": 1}, rate=lam),
        TimedActivity("serve", inputs={"queue": 1}, outputs={"space": 1}, rate=mu),
    ])


def mm1k_inhibitor_net(lam, mu, K):
    """The same queue, bounded by an inhibitor arc instead of a complementary place."""
    return Net([Place("queue", 0)], [
        TimedActivity("arrive", outputs={"queue": 1}, inhibitors={"queue": K}, rate=lam),
        TimedActivity("serve", inputs={"queue": 1}, rate=mu),
    ])


@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("build", [mm1k_net, mm1k_inhibitor_net])
def test_mm1k_queue_has_geometric_distribution(build, method):
    lam, mu, K = sy.Rational(2), sy.Rational(3), 5
    ss = explore(build(float(lam), float(mu), K))
    assert ss.n_states == K + 1
    assert ss.n_transitions == 2 * K
    pi = solve(ss, method)
    rho = lam / mu
    norm = sum(rho**i for i in range(K + 1))
    probs = probabilities_by_marking(ss, pi, ["queue"])
    for i in range(K + 1):
        assert probs[(i,)] == pytest.approx(float(rho**i / norm), abs=1e-10)
    # throughput of departures = mu * P(queue > 0) = lam * P(queue < K)
    x = float(mu * (1 - 1 / norm))
    assert throughput(ss, pi, "serve") == pytest.approx(x, rel=1e-10)
    assert throughput(ss, pi, "arrive") == pytest.approx(x, rel=1e-10)


# --------------------------------------------------------------------------- weighted choice
def choice_net():
    """A job arrives (rate 1) and is routed instantly: weight 1 to a fast server
    (rate 4), weight 3 to a slow one (rate 1). One job at a time."""
    return Net([Place("idle", 1), Place("routing"), Place("fast"), Place("slow")], [
        TimedActivity("arrive", inputs={"idle": 1}, outputs={"routing": 1}, rate=1.0),
        InstantActivity("to_fast", inputs={"routing": 1}, outputs={"fast": 1}, weight=1.0),
        InstantActivity("to_slow", inputs={"routing": 1}, outputs={"slow": 1}, weight=3.0),
        TimedActivity("serve_fast", inputs={"fast": 1}, outputs={"idle": 1}, rate=4.0),
        TimedActivity("serve_slow", inputs={"slow": 1}, outputs={"idle": 1}, rate=1.0),
    ])


@pytest.mark.parametrize("method", METHODS)
def test_weighted_choice_between_instantaneous_activities(method):
    ss = explore(choice_net())
    assert ss.n_states == 3                       # idle, fast, slow; routing is vanishing
    assert ss.n_transitions == 4
    pi = solve(ss, method)
    R = sy.Rational
    # states: idle, fast, slow — written by hand
    Q = sy.Matrix([[-1, R(1, 4), R(3, 4)],
                   [4, -4, 0],
                   [1, 0, -1]])
    exact = exact_stationary(Q)
    probs = probabilities_by_marking(ss, pi, ["idle", "fast", "slow"])
    assert probs[(1, 0, 0)] == pytest.approx(float(exact[0]), abs=1e-10)
    assert probs[(0, 1, 0)] == pytest.approx(float(exact[1]), abs=1e-10)
    assert probs[(0, 0, 1)] == pytest.approx(float(exact[2]), abs=1e-10)
    # the instantaneous activities fire at the arrival rate, split 1:3
    arrivals = float(exact[0])
    assert throughput(ss, pi, "to_fast") == pytest.approx(arrivals / 4, rel=1e-10)
    assert throughput(ss, pi, "to_slow") == pytest.approx(3 * arrivals / 4, rel=1e-10)


def test_priority_beats_weight():
    net = Net([Place("idle", 1), Place("routing"), Place("a"), Place("b")], [
        TimedActivity("arrive", inputs={"idle": 1}, outputs={"routing": 1}, rate=1.0),
        InstantActivity("low", inputs={"routing": 1}, outputs={"a": 1}, weight=100.0, priority=0),
        InstantActivity("high", inputs={"routing": 1}, outputs={"b": 1}, weight=1.0, priority=1),
        TimedActivity("done_a", inputs={"a": 1}, outputs={"idle": 1}, rate=1.0),
        TimedActivity("done_b", inputs={"b": 1}, outputs={"idle": 1}, rate=1.0),
    ])
    ss = explore(net)
    assert ss.n_states == 2
    assert ss.tokens("a").max() == 0


# --------------------------------------------------------------------------- vanishing loops
def loop_net(exit_y=2.0):
    """From X: go to Y (weight 1) or land in A (weight 1); from Y: back to X
    (weight 1) or land in B (weight exit_y). Landing in A from X has probability
    x = 1/2 y + 1/2 with y = x/(1 + exit_y): 3/5 for exit_y = 2."""
    return Net([Place("home", 1), Place("X"), Place("Y"), Place("A"), Place("B")], [
        TimedActivity("go", inputs={"home": 1}, outputs={"X": 1}, rate=1.0),
        InstantActivity("x_to_y", inputs={"X": 1}, outputs={"Y": 1}),
        InstantActivity("x_to_a", inputs={"X": 1}, outputs={"A": 1}),
        InstantActivity("y_to_x", inputs={"Y": 1}, outputs={"X": 1}),
        InstantActivity("y_to_b", inputs={"Y": 1}, outputs={"B": 1}, weight=exit_y),
        TimedActivity("back_a", inputs={"A": 1}, outputs={"home": 1}, rate=1.0),
        TimedActivity("back_b", inputs={"B": 1}, outputs={"home": 1}, rate=1.0),
    ])


@pytest.mark.parametrize("method", METHODS)
def test_cycle_of_vanishing_markings_is_solved_exactly(method):
    ss = explore(loop_net())
    assert ss.n_states == 3
    pi = solve(ss, method)
    R = sy.Rational
    # home -> A with 3/5, home -> B with 2/5; A, B return at rate 1
    exact = exact_stationary(sy.Matrix([[-1, R(3, 5), R(2, 5)], [1, -1, 0], [1, 0, -1]]))
    probs = probabilities_by_marking(ss, pi, ["home", "A", "B"])
    assert probs[(0, 1, 0)] == pytest.approx(float(exact[1]), abs=1e-10)
    assert probs[(0, 0, 1)] == pytest.approx(float(exact[2]), abs=1e-10)
    # expected visits to Y per departure: P(reach Y) sum over loops = (1/2)/(1 - 1/6) = 3/5
    go = float(exact[0])
    assert throughput(ss, pi, "x_to_y") == pytest.approx(go * 3 / 5, rel=1e-10)
    assert throughput(ss, pi, "y_to_x") == pytest.approx(go * 3 / 5 * 1 / 3, rel=1e-10)
    assert throughput(ss, pi, "x_to_a") == pytest.approx(go * 3 / 5, rel=1e-10)


def test_timeless_trap_names_the_activities():
    from spn.exceptions import TimelessTrapError
    net = Net([Place("home", 1), Place("X"), Place("Y")], [
        TimedActivity("go", inputs={"home": 1}, outputs={"X": 1}, rate=1.0),
        InstantActivity("ping", inputs={"X": 1}, outputs={"Y": 1}),
        InstantActivity("pong", inputs={"Y": 1}, outputs={"X": 1}),
    ])
    with pytest.raises(TimelessTrapError, match=r"ping.*pong"):
        explore(net)


def test_vanishing_initial_marking_is_resolved():
    net = Net([Place("routing", 1), Place("fast"), Place("slow"), Place("idle")], [
        InstantActivity("to_fast", inputs={"routing": 1}, outputs={"fast": 1}),
        InstantActivity("to_slow", inputs={"routing": 1}, outputs={"slow": 1}, weight=3.0),
        TimedActivity("serve_fast", inputs={"fast": 1}, outputs={"idle": 1}, rate=4.0),
        TimedActivity("serve_slow", inputs={"slow": 1}, outputs={"idle": 1}, rate=1.0),
        TimedActivity("arrive", inputs={"idle": 1}, outputs={"routing": 1}, rate=1.0),
    ])
    ss = explore(net)
    assert ss.n_states == 3
    init = probabilities_by_marking(ss, ss.initial, ["fast", "slow"])
    assert init[(1, 0)] == pytest.approx(0.25) and init[(0, 1)] == pytest.approx(0.75)


# --------------------------------------------------------------------------- servers and Erlang
@pytest.mark.parametrize("method", METHODS)
def test_machine_repairman_with_infinite_servers(method):
    """N machines fail independently (rate lam each: infinite servers), one repairman (mu):
    pi(k broken) proportional to N!/(N-k)! (lam/mu)^k."""
    N, lam, mu = 4, sy.Rational(1, 2), sy.Rational(3)
    net = Net([Place("up", N), Place("broken")], [
        TimedActivity("fail", inputs={"up": 1}, outputs={"broken": 1}, rate=float(lam), servers="infinite"),
        TimedActivity("repair", inputs={"broken": 1}, outputs={"up": 1}, rate=float(mu)),
    ])
    ss = explore(net)
    assert ss.n_states == N + 1
    pi = solve(ss, method)
    weights = [sy.factorial(N) / sy.factorial(N - k) * (lam / mu) ** k for k in range(N + 1)]
    total = sum(weights)
    probs = probabilities_by_marking(ss, pi, ["broken"])
    for k in range(N + 1):
        assert probs[(k,)] == pytest.approx(float(weights[k] / total), abs=1e-10)


def test_k_servers_cap_the_rate():
    net = Net([Place("q", 3)], [
        TimedActivity("serve", inputs={"q": 1}, rate=1.0, servers=2),
        TimedActivity("arrive", outputs={"q": 1}, inhibitors={"q": 3}, rate=1.0),
    ])
    ss = explore(net)
    Q = ss.generator()
    q = ss.tokens("q")
    out_rate = {int(q[i]): -Q[i, i] for i in range(ss.n_states)}
    assert out_rate == {0: 1.0, 1: 2.0, 2: 3.0, 3: 2.0}


@pytest.mark.parametrize("shape", [1, 2, 5])
def test_erlang_expansion_keeps_the_mean(shape):
    """One token alternates: Erlang(k, mean 2) busy, exponential rate 1 idle.
    P(busy) = 2 / (2 + 1) whatever k (renewal-reward)."""
    net = Net([Place("busy", 1), Place("idle")], [
        TimedActivity("work", inputs={"busy": 1}, outputs={"idle": 1},
                      erlang=Erlang(shape, 2.0), servers="infinite"),
        TimedActivity("rest", inputs={"idle": 1}, outputs={"busy": 1}, rate=1.0),
    ])
    ss = explore(net)
    assert ss.n_states == shape + 1
    pi = solve(ss, "direct")
    assert expected_tokens(ss, pi, "busy") == pytest.approx(2 / 3, abs=1e-12)
    assert throughput(ss, pi, "work") == pytest.approx(1 / 3, rel=1e-12)
