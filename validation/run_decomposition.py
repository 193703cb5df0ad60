"""The decomposition method (spn.analysis.decomposition) against long simulations, on a grid it was not tuned on.

The grid is drawn from a fixed seed (GRID_SEED) before any error is looked at, and kept: users 1-100,
containers 4-500, tasks per phase 1-2,000, Erlang shapes 1-10, mean task times 0.5-60 s, DAG shapes
(one phase, MapReduce, a join of two scans, a fan-out to two branches joined again), fifo and fair, and
a target utilisation from 10 % to past saturation that sets the think time
(Z = N / (u · C / W) − R₁, at least 1 % of R₁; W a job's container-seconds, R₁ its time alone
measured by a short simulation). Then the models fitted from the lundstrom logs (TPC-DS Q26 and Q52 at
3 executors, ``spn fit`` into a temporary directory: the logs are read in place, never copied) under
both policies, with 5 and 20 users and a think time of 1x and 10x the query's time alone.

For each point: the decomposition (``decompose(desc, seed=0)``: wall and CPU seconds) and a reference
from the compiled cluster simulator to a 95 % interval of relative half-width REFERENCE_PRECISION
(bounded by REFERENCE_SECONDS). The error is (decomposition − reference) / reference; "covered"
says whether the reference lies within the decomposition's stated interval widened by the reference's
own half-width. It writes docs/decomposition.md (never edit it by hand):

    python validation/run_decomposition.py              # 40 grid points + 12 fitted models: ~25 min
                                                        # (mostly the references, up to 40 s each)
    python validation/run_decomposition.py --quick      # 8 grid points, no fitted models: ~2 min
    python validation/run_decomposition.py --reuse-references   # the references of the last run, if
                                                        # the same description (REFERENCES): ~1 min

At every fifo point it also compares the percentiles (PERCENTILES) with a simulation that keeps every job's
time (PERCENTILE_REFERENCES, reused alike): ~10 min more when they are simulated.

Seconds are wall time on a shared machine (indicative only); the errors do not depend on the load.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
os.environ["SPN_CACHE_DIR"] = "off"     # each decomposition simulates its X(k), as its seconds say
OUT = ROOT / "docs" / "decomposition.md"
DATA = ROOT.parent / "shared" / "data" / "lundstrom"
GRID_SEED = 20261127
GRID_POINTS, QUICK_POINTS = 40, 8
REFERENCE_PRECISION, REFERENCE_SECONDS = 0.003, 40.0
#: every reference simulated, by the description it simulated (they do not depend on the decomposition)
REFERENCES = ROOT / "validation" / "decomposition-references.json"
#: the percentiles compared under fifo (the decomposition gives no law under fair), their references (each
#: job's time kept; at most PERCENTILE_SECONDS each) stored as the means' are
PERCENTILES = (50.0, 90.0, 95.0)
PERCENTILE_REFERENCES = ROOT / "validation" / "decomposition-percentile-references.json"
PERCENTILE_SECONDS = 20.0
SHAPES = ("one phase", "mapreduce", "join", "fan-out")


def log_uniform_int(rng, low, high) -> int:
    return int(round(math.exp(rng.uniform(math.log(low), math.log(high)))))


def draw_grid(points: int, seed: int = GRID_SEED) -> list[dict]:
    """The grid: every parameter drawn from ``seed`` (GRID_SEED), nothing chosen by hand."""
    rng = np.random.default_rng(seed)
    grid = []
    for i in range(points):
        shape = SHAPES[rng.integers(len(SHAPES))]
        names = {"one phase": ["a"], "mapreduce": ["map", "reduce"], "join": ["left", "right", "join"],
                 "fan-out": ["scan", "b1", "b2", "out"]}[shape]
        edges = {"one phase": [], "mapreduce": [["map", "reduce"]], "join": [["left", "join"], ["right", "join"]],
                 "fan-out": [["scan", "b1"], ["scan", "b2"], ["b1", "out"], ["b2", "out"]]}[shape]
        phases = [{"name": n, "tasks": log_uniform_int(rng, 1, 2000), "task_time": float(np.round(
                   math.exp(rng.uniform(math.log(0.5), math.log(60))), 2)), "shape": int(rng.integers(1, 11))}
                  for n in names]
        grid.append({"name": f"g{i:02d}", "shape": shape, "users": log_uniform_int(rng, 1, 100),
                     "containers": log_uniform_int(rng, 4, 500), "policy": ["fifo", "fair"][rng.integers(2)],
                     "utilisation": float(rng.uniform(0.1, 1.2)), "phases": phases, "edges": edges})
    return grid


def description(point: dict, think_time: float):
    from spn.description import parse_description

    return parse_description({"name": point["name"], "workload": {"users": point["users"], "think_time": think_time},
                              "cluster": {"containers": point["containers"]},
                              "scheduler": {"policy": point["policy"]}, "phases": point["phases"],
                              "edges": point["edges"]})


def time_alone(desc) -> float:
    from spn.simulation.cluster_compiled import CompiledClusterSimulator

    one = dataclasses.replace(desc, workload=dataclasses.replace(desc.workload, users=1, think_time=0.0))
    rep = CompiledClusterSimulator(one).run(np.random.default_rng(1), warmup=0, length=20)
    return rep.response_sum / rep.completions


def think_time_for(point: dict) -> float:
    desc = description(point, 1.0)
    work = sum(p["tasks"] * p["task_time"] for p in point["phases"])
    alone = time_alone(desc)
    z = point["users"] * work / (point["utilisation"] * point["containers"]) - alone
    return float(np.round(max(z, 0.01 * alone), 3))


def cached(desc, cache: dict | None, simulate) -> dict:
    """``simulate()``'s answer for ``desc``: from ``cache`` when it holds this very description (its repr,
    but for the file it came from), else simulated (and stored in ``cache``)."""
    key = repr(dataclasses.replace(desc, source=""))
    if cache is not None and key in cache:
        return cache[key]
    out = simulate()
    if cache is not None:
        cache[key] = out
    return out


def reference(desc, cache: dict | None) -> dict:
    """The simulated R (its half-width, the utilisation, seconds, replications) of ``desc`` (:func:`cached`)."""
    from spn.simulation.runner import simulate_description

    def simulate():
        started = time.perf_counter()
        sim = simulate_description(desc, engine="compiled", seed=20261127, replications=20, confidence=0.95,
                                   rel_precision=REFERENCE_PRECISION, max_replications=100_000,
                                   max_seconds=REFERENCE_SECONDS)
        r = sim.mean_execution_time
        return {"ref": r.value, "ref_half": (r.ci_high - r.ci_low) / 2, "U": sim.utilization.value,
                "sim_s": time.perf_counter() - started, "sim_replications": sim.replications}
    return cached(desc, cache, simulate)


def evaluate_point(desc, cache: dict | None = None) -> dict:
    from spn.analysis.decomposition import decompose

    wall, cpu = time.perf_counter(), time.process_time()
    d = decompose(desc, seed=0)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    ref = reference(desc, cache)
    r, half = ref["ref"], ref["ref_half"]
    return {"R": d.mean, "low": d.low, "high": d.high, "bd": d.birth_death_mean, "two": d.oldest_two_mean,
            "stages": d.fair_stages if d.policy == "fair" else d.stages, "ks": [x.k for x in d.curve],
            "sources": sorted({x.source for x in d.curve}),
            "ref": r, "ref_half": half, "U": ref["U"], "error": d.mean / r - 1,
            "stated": d.error_bound, "covered": d.low - half <= r <= d.high + half,
            "wall_s": wall, "cpu_s": cpu, "sim_s": ref["sim_s"], "sim_replications": ref["sim_replications"]}


def percentile_reference(desc, cache: dict | None) -> dict:
    """The simulated percentiles (and their half-widths) of ``desc``, as :func:`reference` does the mean."""
    from spn.simulation.runner import simulate_description

    def simulate():
        started = time.perf_counter()
        sim = simulate_description(desc, engine="compiled", seed=20261128, replications=20, confidence=0.95,
                                   rel_precision=REFERENCE_PRECISION, max_replications=100_000,
                                   max_seconds=PERCENTILE_SECONDS, job_times=True)
        table = sim.percentiles(PERCENTILES)
        return {"ref": {f"{q:g}": e.value for q, e in table.items()},
                "ref_half": {f"{q:g}": (e.ci_high - e.ci_low) / 2 for q, e in table.items()},
                "sim_s": time.perf_counter() - started, "jobs": int(len(sim.job_times))}
    return cached(desc, cache, simulate)


def evaluate_percentiles(desc, cache: dict | None = None) -> dict:
    """The decomposition's percentiles of ``desc`` (fifo) against the simulated ones: error, stated, covered;
    and the decomposition itself (``"decomposition"``, for the tuning of its shares)."""
    from spn.analysis.decomposition import decompose

    wall = time.perf_counter()
    d = decompose(desc, seed=0, distribution=True)
    table = d.percentiles(PERCENTILES)
    wall = time.perf_counter() - wall
    ref = percentile_reference(desc, cache)
    out = {"wall_s": wall, "sim_s": ref["sim_s"], "states": d.passages[0].n_states, "steps": d.passages[0].niter,
           "decomposition": d}
    for q, (t, low, high) in table.items():
        r, half = ref["ref"][f"{q:g}"], ref["ref_half"][f"{q:g}"]
        out[q] = {"value": t, "ref": r, "ref_half": half, "error": t / r - 1,
                  "stated": max(t - low, high - t) / t, "covered": low - half <= r <= high + half}
    return out


def percentile_row(name, desc, result) -> str:
    cells = []
    for q in PERCENTILES:
        e = result[q]
        cells.append(f"{e['ref']:.5g} ± {100 * e['ref_half'] / e['ref']:.1f} % | {e['value']:.5g} | "
                     f"{100 * e['error']:+.2f} | ±{100 * e['stated']:.1f}{'' if e['covered'] else ' NO'}")
    return (f"| {name} | {desc.workload.users} | {desc.cluster.containers} | " + " | ".join(cells)
            + f" | {result['states']:,} / {result['steps']:,} | {result['wall_s']:.2f} | {result['sim_s']:.1f} |")


def percentile_summary(results) -> list[str]:
    lines = []
    for q in PERCENTILES:
        errors = np.array([abs(r[q]["error"]) for r in results])
        covered = sum(r[q]["covered"] for r in results)
        lines.append(f"- p{q:g}: mean |error| {100 * errors.mean():.2f} %, max {100 * errors.max():.2f} %, "
                     f"{100 * np.mean(errors <= 0.05):.0f} % of points within 5 %; the stated interval (widened by "
                     f"the reference's half-width) holds the reference at {covered} of {len(results)}; median stated "
                     f"half-width {100 * np.median([r[q]['stated'] for r in results]):.1f} %")
    lines.append(f"- seconds per answer with the percentiles: median {np.median([r['wall_s'] for r in results]):.2f} s "
                 f"wall, max {max(r['wall_s'] for r in results):.2f} s")
    return lines


PERCENTILE_HEADER = (
    "| case | N | C | " + " | ".join(f"p{q:g} simulation (s) | p{q:g} decomposition (s) | error % | stated %"
                                     for q in PERCENTILES)
    + " | passage states / steps | seconds | simulation s |\n|" + "---|" * (6 + 4 * len(PERCENTILES)))


def fitted_models(workdir: Path) -> list[tuple[str, object]]:
    """Q26 and Q52 fitted from their 3-executor logs by ``spn fit`` (into ``workdir``), then the workloads."""
    from spn.description import load_description

    out = []
    for query in ("q26", "q52"):
        logs = sorted(DATA.glob(f"{query}_e3_*.json.gz"))
        if not logs:
            continue
        model = workdir / f"{query}.yaml"
        subprocess.run([sys.executable, "-m", "spn.cli", "fit", *map(str, logs), "-o", str(model)], check=True,
                       capture_output=True)
        base = load_description(model, ["workload.think_time=1"])
        alone = time_alone(base)
        for policy in ("fifo", "fair"):
            for users in (5, 20):
                for factor in (1, 10):
                    if users == 20 and factor == 1:
                        continue        # deep in saturation: the 5-user row already shows it
                    desc = load_description(model, [f"scheduler.policy={policy}", f"workload.users={users}",
                                                     f"workload.think_time={factor * alone:.3f}"])
                    out.append((f"{query} N={users} Z={factor}xR1 {policy}", desc))
    return out


def row(name, desc, shape, result) -> str:
    phases = desc.phases
    tasks = "/".join(str(p.tasks) for p in phases)
    shapes = "/".join(str(p.shape) for p in phases)
    return (f"| {name} | {shape} | {desc.scheduler.policy} | {desc.workload.users} | {desc.cluster.containers} | "
            f"{tasks} | {shapes} | {desc.workload.think_time:.4g} | {100 * result['U']:.0f} | "
            f"{result['ref']:.5g} ± {100 * result['ref_half'] / result['ref']:.2f} % | {result['R']:.5g} | "
            f"{100 * result['error']:+.2f} | ±{100 * result['stated']:.2f} | {'yes' if result['covered'] else 'NO'} | "
            f"{result['stages']} | {','.join(map(str, result['ks']))} | {result['wall_s']:.2f} / {result['cpu_s']:.2f} | "
            f"{result['sim_s']:.1f} |")


def summary(results) -> list[str]:
    errors = np.array([abs(r["error"]) for r in results])
    covered = sum(r["covered"] for r in results)
    return [f"- points: {len(results)}; mean |error| {100 * errors.mean():.2f} %, max |error| "
            f"{100 * errors.max():.2f} %, {100 * np.mean(errors <= 0.02):.0f} % of points within 2 %, "
            f"{100 * np.mean(errors <= 0.05):.0f} % within 5 %",
            f"- the stated interval (widened by the reference's half-width) holds the reference at {covered} of "
            f"{len(results)} points; median stated half-width {100 * np.median([r['stated'] for r in results]):.2f} %",
            f"- seconds per answer: decomposition median {np.median([r['wall_s'] for r in results]):.2f} s wall "
            f"({np.median([r['cpu_s'] for r in results]):.2f} s CPU), max {max(r['wall_s'] for r in results):.2f} s "
            f"wall; reference simulation (to ±{100 * REFERENCE_PRECISION:g} %) median "
            f"{np.median([r['sim_s'] for r in results]):.1f} s, max {max(r['sim_s'] for r in results):.1f} s"]


HEADER = ("| case | DAG | policy | N | C | tasks | shapes | Z (s) | U % | simulation R (s) | decomposition R (s) "
          "| error % | stated | covered | r | k measured | seconds (wall / CPU) | simulation s |\n"
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="8 grid points and no fitted models")
    parser.add_argument("--reuse-references", action="store_true",
                        help=f"take the references from {REFERENCES.name} where it has the same description")
    args = parser.parse_args(argv)
    cache = json.loads(REFERENCES.read_text()) if args.reuse_references and REFERENCES.exists() else {}
    percentile_cache = (json.loads(PERCENTILE_REFERENCES.read_text())
                        if args.reuse_references and PERCENTILE_REFERENCES.exists() else {})
    subprocess.run([sys.executable, "-m", "spn.kernels"], check=True, capture_output=True)
    from spn.analysis.decomposition import decompose

    grid = draw_grid(QUICK_POINTS if args.quick else GRID_POINTS)
    decompose(description(grid[0] | {"users": 2}, 1.0))        # load the kernels before timing
    load = os.getloadavg()[0]
    grid_rows, grid_results, percentile_rows, percentile_results = [], [], [], []

    def percentiles_of(name, desc):
        if desc.scheduler.policy == "fifo":
            percentile_results.append(evaluate_percentiles(desc, percentile_cache))
            percentile_rows.append(percentile_row(name, desc, percentile_results[-1]))
            print(percentile_rows[-1], flush=True)

    for point in grid:
        desc = description(point, think_time_for(point))
        result = evaluate_point(desc, cache)
        grid_results.append(result)
        grid_rows.append(row(point["name"], desc, point["shape"], result))
        print(grid_rows[-1], flush=True)
        percentiles_of(point["name"], desc)
    fitted_rows, fitted_results = [], []
    if not args.quick and DATA.is_dir():
        with tempfile.TemporaryDirectory() as tmp:
            for name, desc in fitted_models(Path(tmp)):
                result = evaluate_point(desc, cache)
                fitted_results.append(result)
                fitted_rows.append(row(name, desc, f"fitted ({len(desc.phases)} stages)", result))
                print(fitted_rows[-1], flush=True)
                percentiles_of(name, desc)
    everything = grid_results + fitted_results
    text = [
        "# The decomposition against simulation",
        "",
        "Generated by `python validation/run_decomposition.py"
        + (" --quick" if args.quick else "") + (" --reuse-references" if args.reuse_references else "")
        + f"` on {datetime.date.today()} (never edit by hand"
        + (f"; the references reused from `{REFERENCES.relative_to(ROOT)}` where the description is the same, "
           "their seconds those of the run that simulated them" if args.reuse_references else "") + "); "
        f"load average {load:.1f} on {os.cpu_count()} cores at the start: seconds are indicative only, the "
        "errors do not depend on the load. The method is described in docs/design.md §5.8.",
        "",
        f"The grid was drawn from seed {GRID_SEED} before any error was looked at, and kept "
        "(`draw_grid`); the think time is set from a target utilisation drawn in [10 %, 120 %] "
        "(column U is what the simulation measured). The reference is the compiled cluster simulator to a "
        f"95 % interval of ±{100 * REFERENCE_PRECISION:g} % (at most {REFERENCE_SECONDS:g} s; the column "
        "shows what it reached). The error is (decomposition − simulation) / simulation; *stated* is the "
        "half-width the method reports (X(k)'s intervals propagated plus its model error: a share of the gap "
        "between the birth-death and fifo chains, chosen on another grid, docs/decomposition-tuning.md); "
        "*covered* whether the simulation's R is within it (widened by the simulation's half-width); "
        "*r* the Erlang stages of a job's progress in the policy's chain (fifo: the oldest job's; fair: those "
        "the chain was solved with, its R then extrapolated to the stages of a job's work); *k measured* where "
        "X(k) was measured (exact or simulated).",
        "",
        "## Summary",
        "",
        "All points:",
        "",
        *summary(everything),
        "",
        "The random grid:",
        "",
        *summary(grid_results),
    ]
    if fitted_results:
        text += ["", "The fitted lundstrom models:", "", *summary(fitted_results)]
    text += ["", "## The random grid", "", HEADER, *grid_rows]
    if fitted_rows:
        text += ["", "## Models fitted from the lundstrom logs (Q26, Q52 at 3 executors)", "", HEADER, *fitted_rows]
    if percentile_results:
        text += [
            "", "## Percentiles under fifo", "",
            "The decomposition's execution-time law under fifo (a tagged job's passage time, progressing at what "
            "it adds to X(k), its percentiles moved by its own law alone, docs/design.md §5.8 item 4) at every "
            "fifo point above (under fair it gives none), "
            "against the compiled simulator with every job's time kept, run to the mean's ±"
            f"{100 * REFERENCE_PRECISION:g} % or {PERCENTILE_SECONDS:g} s (the percentile's own 95 % half-width "
            f"shown; references in `{PERCENTILE_REFERENCES.relative_to(ROOT)}`). *stated* is the half-width the "
            "method reports for that percentile (the X(k)'s intervals propagated, plus a share, "
            "PERCENTILE_ERROR_SHARE, of the gap between its percentile and processor sharing's and the gap "
            "between a job alone's Erlang law in the chain and its own), NO where it misses the reference (widened by the reference's half-width); "
            "*passage states / steps* the passage chain's size and its uniformisation steps; *seconds* "
            "the whole answer with its percentiles.",
            "", *percentile_summary(percentile_results), "", PERCENTILE_HEADER, *percentile_rows]
    OUT.write_text("\n".join(text) + "\n")
    REFERENCES.write_text(json.dumps(cache, indent=0) + "\n")
    if percentile_results:
        PERCENTILE_REFERENCES.write_text(json.dumps(percentile_cache, indent=0) + "\n")
        print("\n".join(percentile_summary(percentile_results)))
    print("\n".join(summary(everything)))
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
