"""Do Spark's FIFO and FAIR schedulers behave as spn's ``fifo`` and ``fair`` policies predict?

Needs pyspark (``pip install -e ".[validation]"``) and Java 17. Runs closed multi-user workloads in
Spark local mode whose tasks only *sleep* for durations drawn from known laws, so that the K task
slots behave like containers on this 2-CPU machine and what is measured is Spark's own scheduling:

- one SparkContext per scheduler mode, ``local[8]``, ``spark.scheduler.mode`` FIFO then FAIR (FAIR:
  one pool per user thread, weight 1, minShare 0, from a fairscheduler.xml in the work directory);
- two job shapes (validation/scheduling_spark_lib.py ``SHAPES``): a map-reduce (12 map tasks ->
  shuffle -> 4 reduce tasks) and a join (two parallel stages of 8 and 6 tasks -> a co-partitioned
  join stage of 8 tasks); each task sleeps a duration drawn in the driver, seeded per (shape, user,
  job), so FIFO and FAIR see the same draws;
- N user threads, each thinking Exp(Z) then running its job (one action) and waiting for it;
  users join one at a time, N = 1..6; after each join a warm-up, then a measurement window (jobs
  ending in it); measured: mean response time (driver: action call to return) with a control
  variate (the job's time alone, from its own draws) and a 95 % batch-means CI;
- calibration from each context's N = 1 window only (task overhead per stage, slot gap, driver time;
  from the event log, read with ``spn.logs``); predictions for every N with
  ``simulate_description(desc, engine="cluster", rel_precision=0.005)``, policy ``fifo`` (vs Spark
  FIFO), ``fair`` (vs Spark FAIR) and ``gate`` (the paper's model) for comparison.

The report (all of it generated) goes to docs/scheduling-spark.md, a summary to
validation/scheduling-spark-results.json (full run only); event logs and every job's record go to
``--workdir`` (default: a new temporary directory, never the repository).

    python validation/run_scheduling_spark.py            # full run: about 51 minutes on a quiet 2-CPU machine
    python validation/run_scheduling_spark.py --quick    # smoke run, N = 1 and 6, 10-s windows: ~2.5 minutes
    python validation/run_scheduling_spark.py --report-from validation/scheduling-spark-results.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import run_spark as rs  # validation/run_spark.py: log, BackgroundLoad
import scheduling_spark_lib as lib

OUT = ROOT / "docs" / "scheduling-spark.md"
RESULTS = HERE / "scheduling-spark-results.json"
MODES = {"FIFO": "fifo", "FAIR": "fair"}  # Spark mode -> the spn policy that should match it
log = rs.log


# --------------------------------------------------------------------------
# Spark: the jobs
# --------------------------------------------------------------------------


def sleeper(durations):
    """The task function of one stage: task ``index`` sleeps ``durations[index]`` (pickled by value,
    this module being ``__main__``) and emits nothing."""
    durations = tuple(float(d) for d in durations)

    def task(index, rows):
        for _ in rows:
            pass
        time.sleep(durations[index])
        return iter(())
    return task


def run_job(sc, shape: lib.Shape, draws: dict) -> int:
    """One job of ``shape``: a source stage is ``parallelize(n, n)``; a stage after others reads them
    through ``partitionBy(its task count)`` (two parents: their co-partitioned union); every stage
    sleeps its draws; ``count()`` on the last one is the action."""
    rdds = {}
    for p in shape.phases:
        preds = shape.preds(p.name)
        if not preds:
            base = sc.parallelize(range(p.tasks), p.tasks)
        else:
            parts = [rdds[q].partitionBy(p.tasks) for q in preds]
            base = parts[0]
            for other in parts[1:]:
                base = base.union(other)
        rdds[p.name] = base.mapPartitionsWithIndex(sleeper(draws[p.name]))
    return rdds[shape.phases[-1].name].count()


def spark_context(mode: str, workdir: Path, max_users: int):
    from pyspark import SparkConf, SparkContext

    events = workdir / f"events-{mode}"
    events.mkdir(parents=True, exist_ok=True)
    conf = (SparkConf().setMaster(f"local[{lib.K_SLOTS}]").setAppName(f"spn-scheduling-{mode}")
            .set("spark.scheduler.mode", mode)
            .set("spark.eventLog.enabled", "true").set("spark.eventLog.dir", "file://" + str(events))
            .set("spark.eventLog.compress", "false").set("spark.eventLog.rolling.enabled", "false")
            .set("spark.ui.enabled", "false").set("spark.ui.showConsoleProgress", "false")
            .set("spark.python.worker.reuse", "true").set("spark.speculation", "false"))
    if mode == "FAIR":
        pools = "".join(f'  <pool name="user{i}"><schedulingMode>FIFO</schedulingMode><weight>1</weight>'
                        f"<minShare>0</minShare></pool>\n" for i in range(max_users))
        xml = workdir / "fairscheduler.xml"
        xml.write_text(f'<?xml version="1.0"?>\n<allocations>\n{pools}</allocations>\n')
        conf.set("spark.scheduler.allocation.file", str(xml))
    sc = SparkContext(conf=conf)
    sc.setLogLevel("ERROR")
    return sc, events


def warm_up(sc, seed: int, seconds: float) -> None:
    """JIT, py4j and the Python workers of all K slots: 4 threads run jobs back to back (sleeps x 0.3)."""
    until = time.perf_counter() + seconds

    def loop(i):
        rng = np.random.default_rng([seed, 99, i])
        sc.setJobDescription("warmup")
        while time.perf_counter() < until:
            for shape in lib.SHAPES.values():
                run_job(sc, shape, {p.name: lib.draw(rng, p) * 0.3 for p in shape.phases})

    threads = [threading.Thread(target=loop, args=(i,), daemon=True) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def run_series(sc, mode: str, shape: lib.Shape, index: int, users, windows, warmup: float, seed: int) -> dict:
    """Users join one at a time up to max(users); point j: the window after ``users[j]`` users joined."""
    stop = threading.Event()
    records, errors = [], []

    def user(i):
        try:
            cycle(i)
        except Exception as exc:  # noqa: BLE001  (a failed job ends the series; reported after the join)
            errors.append(f"user {i}: {exc!r}")
            stop.set()

    def cycle(i):
        if mode == "FAIR":
            sc.setLocalProperty("spark.scheduler.pool", f"user{i}")
        think = np.random.default_rng([seed, index, i, 0])
        k = 0
        while not stop.wait(think.exponential(shape.think)):
            k += 1
            draws = {p.name: lib.draw(np.random.default_rng([seed, index, i, k]), p) for p in shape.phases}
            desc = f"{shape.name}/u{i}/j{k}"
            submitted = time.time()
            sc.setJobDescription(desc)
            run_job(sc, shape, draws)
            end = time.time()
            records.append({"desc": desc, "user": i, "submit": submitted, "end": end, "R": end - submitted,
                            "C": float(lib.standalone(shape, draws)[0]),
                            "draws": {n: [round(float(x), 6) for x in d] for n, d in draws.items()}})

    threads, points = [], []
    for n, window in zip(users, windows):
        while len(threads) < n:
            threads.append(threading.Thread(target=user, args=(len(threads),), daemon=True))
            threads[-1].start()
        joined, clock = time.time(), time.perf_counter()
        log(f"  {mode} {shape.name}: N = {n}, warm-up {warmup:g} s, window {window:g} s")
        time.sleep(warmup + window)
        points.append({"N": n, "joined": joined, "start": joined + warmup, "end": joined + warmup + window,
                       "clock": (clock + warmup, clock + warmup + window)})
    stop.set()
    for t in threads:
        t.join()
    if errors:
        raise SystemExit(f"{mode} {shape.name}: " + "; ".join(errors))
    return {"points": points, "records": records}


# --------------------------------------------------------------------------
# The event log: tasks per job and phase
# --------------------------------------------------------------------------


def executor_end(tasks) -> np.ndarray:
    """When each task of ``tasks`` (a :class:`~spn.logs.task_table.TaskTable`) left its slot (ms): launch +
    deserialize + run + result serialisation on the executor.

    The event log's Finish Time comes later (the driver's result handling, ~10-30 ms, more under
    CPU load), when the local backend has already offered the slot again: with it, more than K
    tasks would seem to run at once."""
    run = tasks.metric("run_s")
    deserialize = np.nan_to_num(tasks.metric("deserialize_s"))
    on_executor = (deserialize + run) + np.nan_to_num(tasks.metric("result_serialize_s"))
    left = np.minimum(tasks.finish_ms, tasks.launch_ms + np.round(1000 * np.nan_to_num(on_executor)).astype(np.int64))
    return np.where(np.isnan(run), tasks.finish_ms, left)


def job_tasks(app, shape: lib.Shape, record: dict, spark_job) -> dict:
    """{phase: [(launch_ms, executor end_ms, sleep_s), ...]} of one job, its stages told apart by
    (has no parent, task count)."""
    by_key = {shape.key(p.name): p.name for p in shape.phases}
    out = {}
    for sid in spark_job.stage_ids:
        stage = app.stage_by_id.get(sid)
        if stage is None:
            continue
        name = by_key[(not stage.parent_ids, stage.num_tasks)]
        tasks = app.tasks_by_stage[sid]
        out[name] = [(launch, end, record["draws"][name][index]) for launch, end, index in
                     zip(tasks.launch_ms.tolist(), executor_end(tasks).tolist(), tasks.index.tolist())]
    missing = {p.name for p in shape.phases} - set(out)
    if missing:
        raise SystemExit(f"job {record['desc']}: no stages for {sorted(missing)} in the event log")
    return out


def read_events(events: Path) -> SimpleNamespace:
    """The event log of one SparkContext, indexed: stages by id, successful tasks by stage, jobs by description."""
    from spn.logs.spark import read_spark_log

    logs = [p for p in events.iterdir() if not p.name.startswith(".")]
    if len(logs) != 1:
        raise SystemExit(f"expected one event log in {events}, found {logs}")
    app = read_spark_log(logs[0])
    done = app.tasks.take(app.tasks.successful)
    tasks_by_stage = {sid: done.take(done.stage_id == sid) for sid in np.unique(done.stage_id).tolist()}
    return SimpleNamespace(stage_by_id={s.stage_id: s for s in app.stages}, tasks_by_stage=tasks_by_stage,
                           jobs={j.properties.get("spark.job.description"): j for j in app.jobs})


def window_stats(tasks: list[tuple], start: float, end: float) -> tuple[float, int]:
    """Busy-slot fraction and most tasks running at once in [start, end] (seconds since the epoch)."""
    busy, events = 0.0, []
    for launch, left in tasks:
        a, b = max(launch / 1000.0, start), min(left / 1000.0, end)
        if b > a:
            busy += b - a
            events += [(a, 1), (b, -1)]
    running = peak = 0
    for _, step in sorted(events, key=lambda e: (e[0], e[1])):
        running += step
        peak = max(peak, running)
    return busy / (lib.K_SLOTS * (end - start)), peak


def analyse(mode: str, series: dict, events: Path, monitor, ec: dict) -> dict:
    """Per shape: each point's measurement and diagnostics, and the calibration from the N = 1 point."""
    app = read_events(events)
    result = {"points": {}, "calibration": {}, "overlap": {}, "jobs": {}}
    for name, run in series.items():
        shape = lib.SHAPES[name]
        for rec in run["records"]:
            if rec["desc"] not in app.jobs:
                raise SystemExit(f"{mode}: job {rec['desc']} is not in the event log")
            pool = app.jobs[rec["desc"]].properties.get("spark.scheduler.pool")
            if mode == "FAIR" and pool != f"user{rec['user']}":
                raise SystemExit(f"FAIR: job {rec['desc']} ran in pool {pool!r}, not user{rec['user']}")
            rec["tasks"] = job_tasks(app, shape, rec, app.jobs[rec["desc"]])
        all_tasks = [(la, f) for rec in run["records"] for ts in rec["tasks"].values() for la, f, _ in ts]
        points = []
        for pt in run["points"]:
            jobs = sorted((r for r in run["records"] if pt["start"] <= r["end"] < pt["end"]), key=lambda r: r["end"])
            over = [(f - la) / 1000.0 - s for r in jobs for ts in r["tasks"].values() for la, f, s in ts]
            u, peak = window_stats(all_tasks, pt["start"], pt["end"])
            points.append({"N": pt["N"], "window": pt["end"] - pt["start"],
                           "measured": lib.control_variate([r["R"] for r in jobs], [r["C"] for r in jobs], ec[name]),
                           "overhead": float(np.mean(over)) if over else float("nan"), "U": u, "max_running": peak,
                           "others": monitor.mean_between(*pt["clock"]),
                           "by_user": {str(i): round(float(np.mean([r["R"] for r in jobs if r["user"] == i])), 3)
                                       for i in sorted({r["user"] for r in jobs})},
                           "jobs": [[round(r["R"], 3), round(r["C"], 3)] for r in jobs]})
        # the calibration: every job that ran while there was one user (the N = 1 warm-up included)
        alone = [r for r in run["records"] if r["end"] < run["points"][0]["end"]]
        if not alone:
            raise SystemExit(f"{mode} {name}: no job ended while there was one user, nothing to calibrate from")
        result["calibration"][name] = lib.calibrate(alone, shape)
        if len(shape.levels()[0]) == 2:
            result["overlap"][name] = overlap_text(app, shape, alone)
        result["points"][name] = points
        result["jobs"][name] = [{k: v for k, v in r.items() if k != "tasks"} for r in run["records"]]
    return result


def overlap_text(app, shape: lib.Shape, jobs: list[dict]) -> str:
    """How many one-user join jobs had tasks of both parent stages running at once; mean submission offset."""
    a, b = shape.levels()[0]
    together, offsets = 0, []
    for r in jobs:
        ta, tb = r["tasks"][a], r["tasks"][b]
        if max(min(x[0] for x in ta), min(x[0] for x in tb)) < min(max(x[1] for x in ta), max(x[1] for x in tb)):
            together += 1
        submitted = [app.stage_by_id[sid].submission_ms for sid in app.jobs[r["desc"]].stage_ids
                     if sid in app.stage_by_id and not app.stage_by_id[sid].parent_ids]
        if len(submitted) == 2 and None not in submitted:
            offsets.append(abs(submitted[0] - submitted[1]))
    return f"{together} of {len(jobs)}" + (f"; {np.mean(offsets):.0f} ms" if offsets else "")


# --------------------------------------------------------------------------
# Predictions
# --------------------------------------------------------------------------


def predict(shape: lib.Shape, users: int, policy: str, cal: dict, precision: float, seed: int) -> dict:
    from spn.description import parse_description
    from spn.simulation.runner import simulate_description

    desc = parse_description(lib.description(shape, users, policy, cal))
    rep = simulate_description(desc, engine="cluster", rel_precision=precision, seed=seed, max_seconds=120)
    r = rep.mean_execution_time
    driver = max(cal["driver"], 0.0)
    return {"R": r.value + driver, "ci": [r.ci_low + driver, r.ci_high + driver], "U": rep.utilization.value,
            "replications": rep.replications, "precision_met": rep.precision_met}


# --------------------------------------------------------------------------


def java_version() -> str:
    try:
        out = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=30, check=False).stderr
        return out.splitlines()[0].split('"')[1]
    except (OSError, IndexError, subprocess.SubprocessError):
        return "?"


def machine() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smoke run: N = 1 and 6, 10-second windows (~2.5 minutes)")
    parser.add_argument("--users", default=None, help="user counts, increasing, starting at 1 (default 1,2,3,4,5,6)")
    parser.add_argument("--window", type=float, default=None,
                        help="measurement window (s) at the largest N; at N it is window x (N + 2) / (max N + 2), "
                             "at least window / 2 (default 160: 80, 80, 100, 120, 140, 160 s, as in docs/; 80 halves "
                             "the run and widens the intervals by 1.4; with --quick 10 at every N)")
    parser.add_argument("--warmup", type=float, default=None, help="seconds after users join (default 6; 2 quick)")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--workdir", type=Path, default=None, help="event logs, records (default: a new temp dir)")
    parser.add_argument("--report-from", type=Path, default=None, metavar="RESULTS_JSON",
                        help="write the report from an earlier run's results (no Spark)")
    args = parser.parse_args(argv)
    if args.report_from:
        args.out.write_text(lib.report(json.loads(args.report_from.read_text())))
        log(f"wrote {args.out}")
        return 0
    try:
        import pyspark
    except ImportError:
        print("pyspark is not installed: pip install -e '.[validation]' (and Java 17)", file=sys.stderr)
        return 2
    users = [int(x) for x in (args.users or ("1,6" if args.quick else "1,2,3,4,5,6")).split(",")]
    if users[0] != 1 or users != sorted(set(users)):
        raise SystemExit("--users: increasing counts starting at 1 (the calibration point)")
    base = args.window or (10.0 if args.quick else 160.0)
    windows = [base if args.quick else round(max(base * (n + 2) / (users[-1] + 2), base / 2), 1) for n in users]
    warmup = args.warmup if args.warmup is not None else (2.0 if args.quick else 6.0)
    precision = 0.02 if args.quick else 0.005
    workdir = (args.workdir or Path(tempfile.mkdtemp(prefix="spn-scheduling-"))).resolve()
    if workdir == ROOT or ROOT in workdir.parents:
        raise SystemExit(f"--workdir {workdir} is inside the repository: give one outside it")
    workdir.mkdir(parents=True, exist_ok=True)
    setup_warmup = 6.0 if args.quick else 25.0  # seconds of back-to-back jobs in each new SparkContext
    series_s = sum(windows) + warmup * len(users) + 6  # + the last jobs' drain
    estimate = 2 * (len(lib.SHAPES) * series_s + setup_warmup + 20) + 4 * len(users) * len(lib.SHAPES)
    log(f"K = {lib.K_SLOTS}, users {users}, windows {windows} s, warm-up {warmup:g} s: about "
        f"{estimate / 60:.0f} minutes; work directory {workdir}")
    started = time.perf_counter()
    ec = {}
    for name, shape in lib.SHAPES.items():
        ec[name], ec[name + "_se"] = lib.expected_standalone(shape)
    monitor = rs.BackgroundLoad().__enter__()
    modes = {}
    try:
        for mode in MODES:
            log(f"SparkContext local[{lib.K_SLOTS}], spark.scheduler.mode={mode}")
            sc, events = spark_context(mode, workdir, users[-1])
            try:
                warm_up(sc, args.seed, setup_warmup)
                series = {name: run_series(sc, mode, shape, i, users, windows, warmup, args.seed)
                          for i, (name, shape) in enumerate(lib.SHAPES.items())}
            finally:
                sc.stop()
            (workdir / f"series-{mode}.json").write_text(json.dumps(series))
            modes[mode] = analyse(mode, series, events, monitor, ec)
            modes[mode]["policy"] = MODES[mode]
    finally:
        monitor.__exit__(None, None, None)
    log("predictions (spn cluster simulator)")
    better = total = 0
    for mode, m in modes.items():
        for name, points in m["points"].items():
            cal = m["calibration"][name]
            for k, pt in enumerate(points):
                seed = 1000 * args.seed + 10 * k
                pt["pred"] = predict(lib.SHAPES[name], pt["N"], m["policy"], cal, precision, seed)
                pt["gate"] = predict(lib.SHAPES[name], pt["N"], "gate", cal, precision, seed + 1)
                meas = pt["measured"]["mean"]
                if pt["N"] > 1:
                    better += abs(pt["pred"]["R"] - meas) < abs(pt["gate"]["R"] - meas)
                    total += 1
                log(f"  {mode} {name} N={pt['N']}: measured {meas:.3f} ± {pt['measured']['hw']:.3f} s, "
                    f"{m['policy']} {pt['pred']['R']:.3f} s, gate {pt['gate']['R']:.3f} s")
    minutes = (time.perf_counter() - started) / 60
    command = "python validation/run_scheduling_spark.py" + (" --quick" if args.quick else "") + "".join(
        f" --{k} {v}" for k, v in (("users", args.users), ("window", args.window), ("warmup", args.warmup))
        if v is not None)
    setup = {"quick": args.quick, "generated": time.strftime("%Y-%m-%d %H:%M"), "command": command,
             "minutes": minutes, "cpus": os.cpu_count(), "machine": machine(), "spark_version": pyspark.__version__,
             "java": java_version(), "K": lib.K_SLOTS, "users": users, "windows": windows, "warmup": warmup,
             "setup_warmup": setup_warmup,
             "precision": precision, "seed": args.seed}
    shapes = {name: {"phases": [{"name": p.name, "tasks": p.tasks, "law": lib.law_text(p)} for p in s.phases],
                     "edges": [list(e) for e in s.edges], "think": s.think, "EC": ec[name], "EC_se": ec[name + "_se"]}
              for name, s in lib.SHAPES.items()}
    results = {"setup": setup, "shapes": shapes, "better": better, "points": total,
               "orders": lib.first_level_orders(lib.SHAPES["join"]),
               "modes": {mode: {k: v for k, v in m.items() if k != "jobs"} for mode, m in modes.items()}}
    (workdir / "records.json").write_text(json.dumps({mode: m["jobs"] for mode, m in modes.items()}))
    (workdir / "results.json").write_text(json.dumps(results, indent=1))
    if not args.quick:
        text = json.dumps(results, indent=1)
        if len(text) > 50_000:  # keep the repository's copy small: drop the per-job (R, C) pairs
            for m in results["modes"].values():
                for points in m["points"].values():
                    for pt in points:
                        pt.pop("jobs", None)
            text = json.dumps(results, indent=1)
        RESULTS.write_text(text + "\n")
    args.out.write_text(lib.report(results))
    log(f"done in {minutes:.1f} min: {args.out}; event logs and records in {workdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
