"""A net of your own: a finite-source queue (machine-repairman model) built from places,
timed activities, an instantaneous choice and an inhibitor arc, then solved and measured.

N machines fail independently (infinite servers: each working machine fails at rate lam);
a broken machine is sent to the fast repairman with weight 2 or the slow one with weight 1
(instantaneous choice); the slow one takes no new work while it holds 2 machines (inhibitor).

Run: python examples/custom_net.py
"""

import spn

N = 5
net = spn.Net(
    places=[spn.Place("working", N), spn.Place("broken"), spn.Place("fast"), spn.Place("slow")],
    activities=[
        spn.TimedActivity("fail", inputs={"working": 1}, outputs={"broken": 1},
                          rate=0.2, servers="infinite"),
        spn.InstantActivity("to_fast", inputs={"broken": 1}, outputs={"fast": 1}, weight=2.0),
        spn.InstantActivity("to_slow", inputs={"broken": 1}, outputs={"slow": 1}, weight=1.0,
                            inhibitors={"slow": 2}),
        spn.TimedActivity("repair_fast", inputs={"fast": 1}, outputs={"working": 1}, rate=1.0),
        spn.TimedActivity("repair_slow", inputs={"slow": 1}, outputs={"working": 1},
                          erlang=spn.Erlang(shape=3, mean=2.0), servers="infinite"),
    ],
    name="repairmen",
)
ss = spn.explore(net)
result = spn.steady_state(ss.generator(), method="gmres", rtol=1e-12)
print(f"{ss.n_states} tangible markings; solver {result.method}: {result.niter} iterations, "
      f"residual {result.residual:.1e}, converged {result.converged}")
pi = result.x
print(f"mean working machines   {spn.expected_tokens(ss, pi, 'working'):.4f}")
print(f"P(all machines broken)  {spn.probability(ss, pi, lambda m: m['working'] == 0):.3e}")
print(f"failures per unit time  {spn.throughput(ss, pi, 'fail'):.4f}")
print(f"sent to the slow one    {spn.throughput(ss, pi, 'to_slow'):.4f}")
