"""Simulation speed: events per second of the net and cluster simulators (run by hand).

    python benchmarks/simulation.py            # the table
    python benchmarks/simulation.py --quick    # shorter runs

Speeds are reported as events/s and as ratios against a reference run in the
same process (docs/design.md §7): a minimal pure-Python event loop (one heap push/pop,
one random number and one list update per event), so the ratios say how close
each simulator gets to the cost of the bare event loop on this machine.
"Events" are timed events (the simulated clock moves: think ends, task ends);
the net simulator also fires instantaneous activities in between, counted apart.
The last lines report the wall time to reach 1 % relative precision (95 % CI) on
models/mapreduce.yaml.

    python benchmarks/simulation.py --compiled           # the compiled cluster engine against the others

``--compiled`` compares the three engines that answer ``spn solve`` by simulation: the net
simulator, the Python cluster simulator and the compiled one
(:class:`~spn.simulation.cluster_compiled.CompiledClusterSimulator`), in one process, on
models/mapreduce.yaml (3 users) and on TPC-DS Q52 fitted by ``spn fit`` from a 3-executor
Spark log of the shared Lundstrom data (skipped when the data is absent; never copied into
the repository): events/s and their ratios, each measured ``--repeat`` times (ranges
reported, with the load average: the machine is shared), and the wall time to 0.5 %
relative precision with N = 1 and 3 users at 6 and 48 containers.
"""

from __future__ import annotations

import argparse
import heapq
import os
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
# benchmarks/coverage.py is named like the package "coverage", which Numba imports when it is
# installed: keep this folder off the path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from spn.description import load_description, parse_description  # noqa: E402
from spn.models.dag import build  # noqa: E402
from spn.models.mapreduce import mapreduce_net  # noqa: E402
from spn.simulation import (ClusterSimulator, NetSimulator, distributions_from_description,  # noqa: E402
                            simulate_description)
from spn.simulation.cluster_compiled import CompiledClusterSimulator  # noqa: E402
from spn.simulation.distributions import stream  # noqa: E402

#: the Spark logs of TPC-DS Q52 at 3 executors (6 cores), outside the repository
LUNDSTROM = Path(os.environ.get("SPN_LUNDSTROM", ROOT.parent / "shared" / "data" / "lundstrom"))
Q52_LOG = "q52_e3_application_1481182872654_0046.json.gz"


def reference_loop(events: int) -> float:
    """Events/s of a bare event loop: pop a clock, update a list, push a new clock."""
    rng = np.random.default_rng(0)
    expo = stream(rng.standard_exponential)
    heap = [(next(expo), k, k % 8) for k in range(8)]
    heapq.heapify(heap)
    counts = [0] * 8
    seq = 8
    started = time.perf_counter()
    for _ in range(events):
        t, _, k = heapq.heappop(heap)
        counts[k] += 1
        heapq.heappush(heap, (t + next(expo), seq, k))
        seq += 1
    return events / (time.perf_counter() - started)


def description(users, containers, map_tasks, reduce_tasks, law=None, name="bench"):
    phases = [{"name": "map", "tasks": map_tasks, "task_time": 2.0},
              {"name": "reduce", "tasks": reduce_tasks, "task_time": 3.0}]
    for p in phases:
        p.update(law or {})
    # the gate: the net simulator's model, so that every engine is timed on the same model
    return parse_description({"name": name, "workload": {"users": users, "think_time": 10.0},
                              "cluster": {"containers": containers}, "scheduler": {"policy": "gate"},
                              "phases": phases})


def time_net(desc, jobs, compiled=True):
    app = build(desc)
    sim = NetSimulator(app.net, distributions_from_description(desc), compiled=compiled)
    rep = sim.run(1, warmup=0, length=jobs, count=app.end_activity, observe=("PJ", "PC"))
    return rep.timed_events / rep.seconds, rep.events / rep.seconds, rep.timed_events


def time_gated(jobs):
    net = mapreduce_net(users=3, think_time=10.0, containers=4, map_tasks=4, map_time=2.0,
                        reduce_tasks=4, reduce_time=3.0)
    rep = NetSimulator(net).run(1, warmup=0, length=jobs, count="IAFR", observe=("PJ", "PC"))
    return rep.timed_events / rep.seconds, rep.events / rep.seconds, rep.timed_events


def time_cluster(desc, jobs):
    rep = ClusterSimulator(desc).run(1, warmup=0, length=jobs)
    return rep.events / rep.seconds, None, rep.events


def time_compiled(desc, jobs):
    sim = CompiledClusterSimulator(desc)
    sim.run(0, warmup=0, length=1)              # loads the kernel from Numba's cache (or compiles it)
    rep = sim.run(1, warmup=0, length=jobs)
    return rep.events / rep.seconds, None, rep.events


@contextmanager
def compiled_engine():
    """``simulate_description(engine="cluster")`` runs the compiled simulator inside the block.

    The runner does not choose the compiled engine yet: this swaps the class its cluster
    engine builds, so that the replications, seeds and stopping rule are exactly the runner's.
    """
    from spn.simulation import runner

    saved = runner.ClusterSimulator
    runner.ClusterSimulator = CompiledClusterSimulator
    try:
        yield
    finally:
        runner.ClusterSimulator = saved


def fitted_q52(directory):
    """TPC-DS Q52 as ``spn fit`` fits it from one 3-executor log, or None without the data."""
    from spn.fit import fit_logs, write_model

    log = LUNDSTROM / Q52_LOG
    if not log.exists():
        return None
    path = Path(directory) / "q52.yaml"
    write_model(fit_logs([log]), path, force=True)
    return path


def load():
    return "load average {:.2f} {:.2f} {:.2f}".format(*os.getloadavg())


def span(values, unit=""):
    values = sorted(values)
    return f"{values[0]:,.0f}-{values[-1]:,.0f}{unit}" if len(values) > 1 else f"{values[0]:,.0f}{unit}"


def wall_to_precision(desc, engine, seed, precision=0.005, max_seconds=300.0):
    """Seconds ``simulate_description`` takes to the relative precision (``compiled``: the cluster
    engine, compiled), and its report."""
    started = time.perf_counter()
    if engine == "compiled":
        with compiled_engine():
            report = simulate_description(desc, engine="cluster", seed=seed, rel_precision=precision,
                                          max_seconds=max_seconds)
    else:
        report = simulate_description(desc, engine=engine, seed=seed, rel_precision=precision,
                                      max_seconds=max_seconds)
    return time.perf_counter() - started, report


def compare_compiled(repeat, quick):
    """The ``--compiled`` report: events/s and ratios, then wall times to 0.5 %."""
    example = load_description(ROOT / "models" / "mapreduce.yaml")
    jobs = 2000 if quick else 10_000
    with tempfile.TemporaryDirectory() as tmp:
        q52 = fitted_q52(tmp)
        models = [("mapreduce.yaml, N=3 C=4", example, jobs)]
        if q52 is None:
            print(f"(no {LUNDSTROM / Q52_LOG}: the Q52 rows are skipped)")
        else:
            for users, containers in ((1, 6), (3, 6), (1, 48), (3, 48)):
                desc = load_description(q52, [f"workload.users={users}", f"cluster.containers={containers}"])
                models.append((f"Q52 fitted, N={users} C={containers}", desc, max(20, jobs // 100)))
        print(f"events/s, {repeat} measurements each ({load()} at the start)")
        print(f"{'model':28s} {'net':>17s} {'cluster (Python)':>19s} {'compiled':>23s} {'x net':>11s} {'x Python':>11s}")
        for label, desc, n in models[:3]:
            rows = [(time_net(desc, max(4, n // 5))[0], time_cluster(desc, n)[0], time_compiled(desc, 10 * n)[0])
                    for _ in range(repeat)]
            net, python, compiled = zip(*rows)
            print(f"{label:28s} {span(net):>17s} {span(python):>19s} {span(compiled):>23s} "
                  f"{span([c / x for c, x in zip(compiled, net)], 'x'):>11s} "
                  f"{span([c / x for c, x in zip(compiled, python)], 'x'):>11s}", flush=True)
        print(f"({load()} at the end)")
        if q52 is None:
            return
        print(f"\nwall time to 0.5 % relative precision (95 % CI, Stein's rule), seeds 0..{repeat - 1}, "
              f"range over seeds; max 300 s")
        print(f"{'model':28s} {'engine':9s} {'wall (s)':>14s} {'replications':>13s} {'R (s)':>10s}")
        for label, desc, _ in models[1:]:
            for engine in ("compiled", "cluster", "net"):
                if engine == "net" and quick:
                    continue
                walls, reps, values = [], [], []
                for seed in range(1 if engine == "net" else repeat):     # the net: minutes, one seed
                    wall, report = wall_to_precision(desc, engine, seed)
                    walls.append(wall)
                    reps.append(report.replications)
                    values.append(report.mean_execution_time.value)
                met = "" if report.precision_met else "  (precision not met)"
                print(f"{label:28s} {engine:9s} {min(walls):6.2f}-{max(walls):6.2f} {span(reps):>13s} "
                      f"{np.median(values):10.2f}{met}", flush=True)
        print(f"({load()} at the end)")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs")
    parser.add_argument("--compiled", action="store_true",
                        help="compare the compiled cluster engine with the net and Python cluster engines")
    parser.add_argument("--repeat", type=int, default=3, help="measurements per row with --compiled")
    args = parser.parse_args(argv)
    if args.compiled:
        compare_compiled(args.repeat, args.quick)
        return
    scale = 0.2 if args.quick else 1.0
    jobs = int(20_000 * scale)

    example = load_description(ROOT / "models" / "mapreduce.yaml")
    erlang = load_description(ROOT / "models" / "mapreduce.yaml", ["phases.map.shape=4", "phases.reduce.shape=4"])
    large = description(20, 40, 100, 40, {"distribution": "lognormal", "cv": 0.5}, name="large-lognormal")

    reference = max(reference_loop(int(300_000 * scale)) for _ in range(3))
    cases = [
        ("net, mapreduce.yaml (exponential)", lambda: time_net(example, jobs)),
        ("net, mapreduce.yaml, Erlang k=4 (clocks)", lambda: time_net(erlang, jobs)),
        ("net, N=20 C=40 100+40 tasks, lognormal", lambda: time_net(large, max(200, jobs // 20))),
        ("net, Fig. 3 net with gates (traced gates)", lambda: time_gated(jobs // 4)),
        ("net, mapreduce.yaml, reference path", lambda: time_net(example, max(100, jobs // 50), compiled=False)),
        ("cluster, mapreduce.yaml (exponential)", lambda: time_cluster(example, jobs)),
        ("cluster, N=20 C=40 100+40 tasks, lognormal", lambda: time_cluster(large, max(200, jobs // 20))),
        ("compiled cluster, mapreduce.yaml", lambda: time_compiled(example, 10 * jobs)),
        ("compiled cluster, N=20 C=40 100+40 tasks, logn.", lambda: time_compiled(large, jobs)),
    ]
    print(f"reference event loop: {reference:,.0f} events/s\n")
    print(f"{'case':46s} {'timed events/s':>15s} {'ratio':>7s} {'all firings/s':>14s} {'events':>10s}")
    for label, case in cases:
        timed, firings, events = case()
        fired = f"{firings:14,.0f}" if firings is not None else f"{'-':>14s}"
        print(f"{label:46s} {timed:15,.0f} {timed / reference:7.3f} {fired} {events:10,d}")

    print("\ntime to 1 % relative precision (95 % CI) on models/mapreduce.yaml:")
    for engine in ("net", "cluster"):
        walls = []
        for seed in range(3 if args.quick else 5):
            started = time.perf_counter()
            report = simulate_description(example, engine=engine, seed=seed, rel_precision=0.01)
            walls.append(time.perf_counter() - started)
        print(f"  {engine:8s} median {np.median(walls):.2f} s over {len(walls)} seeds "
              f"(last: {report.replications} replications, R = {report.mean_execution_time.value:.4f} "
              f"[{report.mean_execution_time.ci_low:.4f}, {report.mean_execution_time.ci_high:.4f}])")


if __name__ == "__main__":
    main()
