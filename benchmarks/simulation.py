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
"""

from __future__ import annotations

import argparse
import heapq
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from spn.description import load_description, parse_description  # noqa: E402
from spn.models.dag import build  # noqa: E402
from spn.models.mapreduce import mapreduce_net  # noqa: E402
from spn.simulation import (ClusterSimulator, NetSimulator, distributions_from_description,  # noqa: E402
                            simulate_description)
from spn.simulation.distributions import stream  # noqa: E402


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
    return parse_description({"name": name, "workload": {"users": users, "think_time": 10.0},
                              "cluster": {"containers": containers}, "phases": phases})


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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter runs")
    args = parser.parse_args(argv)
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
