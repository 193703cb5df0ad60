"""The MapReduce model of Fig. 3: closed forms, an independent re-implementation, flow balance."""

import itertools
import math

import numpy as np
import pytest
from scipy import integrate

from spn.measures import expected_tokens, job_measures, throughput
from spn.models.mapreduce import END_ACTIVITY, mapreduce_net
from spn.solvers import steady_state
from spn.statespace import explore


def solve_mr(method="direct", **params):
    params.setdefault("think_time", 10.0)
    net = mapreduce_net(**params)
    ss = explore(net)
    result = steady_state(ss.generator(), method=method, rtol=1e-13)
    assert result.converged, result
    m = job_measures(ss, result.x, users=params["users"], think_time=params["think_time"],
                     end_activity=END_ACTIVITY, think_place="PJ", container_place="PC",
                     containers=params["containers"])
    return ss, result.x, m


def harmonic(n):
    return sum(1.0 / i for i in range(1, n + 1))


# --------------------------------------------------------------------------- closed forms, one user
@pytest.mark.parametrize("M,R", [(1, 1), (3, 2), (4, 4), (6, 1)])
def test_one_user_enough_containers_is_sum_of_expected_maxima(M, R):
    """C >= tasks: every task runs at once, a phase lasts the max of its exponentials: H_T * mean."""
    _, _, m = solve_mr(users=1, containers=max(M, R), map_tasks=M, map_time=2.0,
                       reduce_tasks=R, reduce_time=3.0)
    assert m.mean_execution_time == pytest.approx(2.0 * harmonic(M) + 3.0 * harmonic(R), rel=1e-10)


@pytest.mark.parametrize("map_shape,reduce_shape", [(1, 1), (3, 2), (4, 1)])
def test_one_user_one_container_runs_tasks_one_after_another(map_shape, reduce_shape):
    _, _, m = solve_mr(users=1, containers=1, map_tasks=4, map_time=2.0, map_shape=map_shape,
                       reduce_tasks=3, reduce_time=3.0, reduce_shape=reduce_shape)
    assert m.mean_execution_time == pytest.approx(4 * 2.0 + 3 * 3.0, rel=1e-10)


@pytest.mark.parametrize("shape", [2, 3])
def test_one_user_erlang_tasks_all_parallel_is_expected_max_of_erlangs(shape):
    """E[max of T iid Erlang(k, mean)] = integral of 1 - F(t)^T, computed by quadrature."""
    T, mean = 3, 2.0
    rate = shape / mean

    def cdf(t):
        return 1.0 - math.exp(-rate * t) * sum((rate * t) ** i / math.factorial(i) for i in range(shape))

    emax = integrate.quad(lambda t: 1.0 - cdf(t) ** T, 0, np.inf, epsabs=1e-13)[0]
    _, _, m = solve_mr(users=1, containers=T, map_tasks=T, map_time=mean, map_shape=shape,
                       reduce_tasks=1, reduce_time=1.0)
    assert m.mean_execution_time == pytest.approx(emax + 1.0, rel=1e-9)


# --------------------------------------------------------------------------- the README example
def test_example_state_count_and_solver_agreement():
    ss, pi, m = solve_mr(users=3, think_time=10.0, containers=4, map_tasks=4, map_time=2.0,
                         reduce_tasks=4, reduce_time=3.0)
    assert ss.n_states == 49
    assert ss.n_transitions == 101
    for method in ["gmres", "bicgstab", "power", "sor"]:
        _, pi2, m2 = solve_mr(method, users=3, think_time=10.0, containers=4, map_tasks=4,
                              map_time=2.0, reduce_tasks=4, reduce_time=3.0)
        assert np.abs(pi2 - pi).max() < 1e-9
        assert m2.mean_execution_time == pytest.approx(m.mean_execution_time, rel=1e-9)


# --------------------------------------------------------------------------- invariants
@pytest.mark.parametrize("params", [
    dict(users=3, containers=4, map_tasks=4, map_time=2.0, reduce_tasks=4, reduce_time=3.0),
    dict(users=2, containers=3, map_tasks=5, map_time=1.0, reduce_tasks=2, reduce_time=4.0,
         map_shape=2, reduce_shape=3),
    dict(users=4, containers=2, map_tasks=2, map_time=0.5, reduce_tasks=3, reduce_time=1.5),
])
def test_flow_balance_and_littles_law(params):
    ss, pi, m = solve_mr(**params)
    X = m.throughput
    Z = 10.0
    # every user cycle: think, start, M maps, reduce start, R reduces, finish
    assert throughput(ss, pi, "TAT") == pytest.approx(X, rel=1e-9)
    assert throughput(ss, pi, "IASM") == pytest.approx(X, rel=1e-9)
    assert throughput(ss, pi, "IAEJ") == pytest.approx(X, rel=1e-9)
    assert throughput(ss, pi, "TAM") == pytest.approx(params["map_tasks"] * X, rel=1e-9)
    assert throughput(ss, pi, "IAGRR") == pytest.approx(params["reduce_tasks"] * X, rel=1e-9)
    # Little's law on thinking users: E[PJ] = X Z; and R = (N - E[PJ]) / X
    assert expected_tokens(ss, pi, "PJ") == pytest.approx(X * Z, rel=1e-9)
    assert m.mean_execution_time == pytest.approx((params["users"] - X * Z) / X, rel=1e-9)
    # Little's law on running tasks: busy containers = task throughput x mean task time
    busy = params["containers"] * m.utilization
    expected_busy = X * (params["map_tasks"] * params["map_time"]
                         + params["reduce_tasks"] * params["reduce_time"])
    assert busy == pytest.approx(expected_busy, rel=1e-9)
    # containers are conserved in every marking
    in_use = ss.tokens("PC") + ss.tokens("PRM") + ss.tokens("PRR")
    assert (in_use == params["containers"]).all()


# --------------------------------------------------------------------------- an independent implementation
PLACES = ["PJ", "PWJ", "PEJ", "PWM", "PRM", "PFM", "PWR", "PRR", "PFR", "PC", "PJiR"]


def reference_mapreduce(N, Z, C, M, tm, R, tr):
    """Fig. 3 rewritten from Tables 1-2 as plain Python rules on dict markings: full reachability
    graph with vanishing markings, then Q = Q_TT + Q_TV (I - P_VV)^-1 P_VT, dense solve."""

    def instant(m):
        out = []
        if m["PWJ"] >= 1 and m["PEJ"] >= 1:                       # IASM + OGSM
            out.append({**m, "PWJ": m["PWJ"] - 1, "PEJ": m["PEJ"] - 1, "PWM": m["PWM"] + M})
        if m["PC"] >= 1 and m["PWM"] >= 1:                        # IAGRM
            out.append({**m, "PC": m["PC"] - 1, "PWM": m["PWM"] - 1, "PRM": m["PRM"] + 1})
        if m["PFM"] >= M:                                         # IASR: IGFM, OGSR
            out.append({**m, "PFM": m["PFM"] - M, "PWR": m["PWR"] + R, "PJiR": m["PJiR"] + 1})
        if m["PC"] >= 1 and m["PWR"] >= 1:                        # IAGRR
            out.append({**m, "PC": m["PC"] - 1, "PWR": m["PWR"] - 1, "PRR": m["PRR"] + 1})
        if m["PFR"] >= R:                                         # IAFR: IGFR
            out.append({**m, "PFR": m["PFR"] - R, "PJ": m["PJ"] + 1})
        if m["PJiR"] > 0 and m["PWR"] == 0:                       # IAEJ: IGEJ
            out.append({**m, "PJiR": m["PJiR"] - 1, "PEJ": m["PEJ"] + 1})
        return out

    def timed(m):
        out = []
        if m["PJ"]:
            out.append(({**m, "PJ": m["PJ"] - 1, "PWJ": m["PWJ"] + 1}, m["PJ"] / Z))
        if m["PRM"]:
            out.append(({**m, "PRM": m["PRM"] - 1, "PFM": m["PFM"] + 1, "PC": m["PC"] + 1}, m["PRM"] / tm))
        if m["PRR"]:
            out.append(({**m, "PRR": m["PRR"] - 1, "PFR": m["PFR"] + 1, "PC": m["PC"] + 1}, m["PRR"] / tr))
        return out

    key = lambda m: tuple(m[p] for p in PLACES)  # noqa: E731
    start = dict(zip(PLACES, [N, 0, 1, 0, 0, 0, 0, 0, 0, C, 0]))
    seen, order, edges = {key(start): start}, [key(start)], {}
    todo = [start]
    while todo:
        m = todo.pop()
        succ = instant(m)
        if succ:
            edges[key(m)] = ("V", [(s, 1.0 / len(succ)) for s in succ])
        else:
            edges[key(m)] = ("T", timed(m))
        for s, _ in edges[key(m)][1]:
            if key(s) not in seen:
                seen[key(s)] = s
                order.append(key(s))
                todo.append(s)
    tangible = [k for k in order if edges[k][0] == "T"]
    vanishing = [k for k in order if edges[k][0] == "V"]
    ti = {k: i for i, k in enumerate(tangible)}
    vi = {k: i for i, k in enumerate(vanishing)}
    nt, nv = len(tangible), len(vanishing)
    Q_tt, Q_tv = np.zeros((nt, nt)), np.zeros((nt, nv))
    P_vv, P_vt = np.zeros((nv, nv)), np.zeros((nv, nt))
    for k, (kind, succ) in edges.items():
        for s, w in succ:
            if kind == "T":
                if key(s) in ti:
                    Q_tt[ti[k], ti[key(s)]] += w
                else:
                    Q_tv[ti[k], vi[key(s)]] += w
            elif key(s) in ti:
                P_vt[vi[k], ti[key(s)]] += w
            else:
                P_vv[vi[k], vi[key(s)]] += w
    Q = Q_tt + Q_tv @ np.linalg.solve(np.eye(nv) - P_vv, P_vt)
    np.fill_diagonal(Q, 0.0)
    np.fill_diagonal(Q, -Q.sum(axis=1))
    A = np.vstack([Q.T, np.ones(nt)])
    b = np.zeros(nt + 1)
    b[-1] = 1.0
    pi = np.linalg.lstsq(A, b, rcond=None)[0]
    thinking = sum(pi[ti[k]] * seen[k]["PJ"] for k in tangible)
    X = thinking / Z
    return nt, N / X - Z


@pytest.mark.parametrize("N,C,M,R", [
    (1, 2, 3, 2), (2, 2, 2, 2), (3, 4, 4, 4), (2, 3, 4, 3), (4, 2, 3, 1), (3, 5, 2, 6),
])
def test_agrees_with_independent_reimplementation(N, C, M, R):
    n_ref, r_ref = reference_mapreduce(N, 10.0, C, M, 2.0, R, 3.0)
    ss, _, m = solve_mr(users=N, think_time=10.0, containers=C, map_tasks=M, map_time=2.0,
                        reduce_tasks=R, reduce_time=3.0)
    assert ss.n_states == n_ref
    assert m.mean_execution_time == pytest.approx(r_ref, rel=1e-9)


def test_more_users_never_run_faster():
    times = [solve_mr(users=n, containers=3, map_tasks=3, map_time=2.0, reduce_tasks=2,
                      reduce_time=3.0)[2].mean_execution_time for n in (1, 2, 3, 4)]
    assert all(a < b for a, b in itertools.pairwise(times))
