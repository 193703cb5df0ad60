"""How does the mean execution time of the MapReduce example change with the number of
containers? Build → explore → solve → measure, once per configuration.

Run: python examples/mapreduce_sweep.py
"""

import spn

print(f"{'containers':>10} {'states':>7} {'R (s)':>9} {'X (jobs/s)':>11} {'util':>6}")
for containers in (1, 2, 4, 8):
    net = spn.mapreduce_net(users=3, think_time=10.0, containers=containers,
                            map_tasks=4, map_time=2.0, reduce_tasks=4, reduce_time=3.0)
    ss = spn.explore(net)
    result = spn.steady_state(ss.generator(), method="direct")
    m = spn.job_measures(ss, result.x, users=3, think_time=10.0, end_activity="IAFR",
                         think_place="PJ", container_place="PC", containers=containers)
    print(f"{containers:>10} {ss.n_states:>7} {m.mean_execution_time:>9.3f} "
          f"{m.throughput:>11.5f} {m.utilization:>6.1%}")
