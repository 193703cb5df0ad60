"""What-if: the pilot run's task times carried to another configuration.

``spn fit LOG --what-if spark.executor.instances=12`` fits the model of the
configuration the pilot did *not* run. Each successful task of the pilot is
split into its parts (:func:`~spn.logs.task_profile.task_parts`: overheads,
compute, shuffle fetch wait, shuffle write) and every part is carried to the
target by a rule; the rewritten task times are then fitted as usual. Rules
(docs/design.md §8.4 gives the evidence):

- **task counts**: a stage that reads input keeps its split size, so its task
  count follows the input size (``n' = round(n D'/D)``); a shuffle stage
  whose task count is the pilot's ``spark.sql.shuffle.partitions`` (or
  ``spark.default.parallelism``) gets the new setting;
- **data per task** of a shuffle stage: ``g = (D'/D)(n/n')`` (it changes with
  ``input-size`` and the partitions settings, not with executors or cores);
  shuffle write scales with it (a per-byte cost, as in the "Spark Performance
  Models" paper), and so does compute unless the stage's tasks, differing in
  size, support a fixed + per-byte line ``a + b x`` (:mod:`spn.fit.costs`:
  Theil-Sen, accepted when >= 10 tasks, size CV >= 0.2, Kendall p < 0.05,
  ``a, b >= 0``): then a task's compute ``c`` of size ``x`` becomes
  ``c (a + b g x) / (a + b x)``, and the rule says which, and why not; an
  input stage's tasks keep their bytes;
- **processor sharing**: when an executor's busy slots outnumber its CPUs
  (``executor-cpus``), compute stretches by ``max(1, min(cores, n/E)/cpus)``
  (a stage of few tasks fills only some slots; a last partial wave of a big
  stage is predicted slightly slow); where the log has the tasks' CPU time
  and the pilot's slots filled its CPUs, by the CPU share measured instead
  (the rest of the JVM keeps the CPU time it took);
- **shuffle fetch**: Spark (before 3.0) fetches every block of another
  executor as *remote*, so the remote fraction is ``1 - 1/E``. The bytes ``X``
  a task moves across hosts share each host's bandwidth ``d`` with the other
  tasks of its wave (``k = n / ceil(n/slots)`` per wave on ``H`` hosts), so a
  bandwidth-bound run takes ``F = X k / (H d)``. A task of the target takes
  ``overheads + write' + max(compute' + latency', run x F'/F)``, where
  ``run`` is the pilot task's compute and fetch wait, ``F'/F = (X'/X)(k'/k)(H/H')``
  with ``X`` the stage's mean per task (hosts serve all its tasks; ``d`` cancels) and the latency part of the fetch wait grows with the remote
  blocks (``W (r'/r) g``). A pilot stage that was not network-bound gives
  only an upper bound on its bandwidth-bound time: the rule says so.
- **cold start**: a stage whose task count changes keeps its first wave's
  times (fresh executors), and its other tasks follow the pilot's later ones;
  where those still got faster (a JIT at work), tasks past the pilot's count
  follow the later half of them;
- **hosts**: ``H' = ceil(E' / m)`` with ``m`` the most executors the pilot
  had on one host (``hosts=`` overrides).

- **physical ranges**: what a rule derives is checked before it is used: a
  cross-host shuffle bandwidth outside 1 MB/s to 12.5 GB/s per host, a measured
  CPU share above 1.05 or one leaving over half the CPUs to the rest of the
  JVM, a per-byte line that makes a task outlast its stage (:mod:`spn.fit.costs`):
  outside its range a rule does not apply, the stage keeps the pilot's tasks for
  that part, and ``reference.what_if.rules`` says why ("stage 3: shuffle rule not
  applied: derived bandwidth 0.0815 MB/s per host is below 1 MB/s, ...").

Driver time (delays) and the stage DAG stay as they were. A target equal to
the pilot returns the pilot's own task times.

>>> changes = parse_changes(["spark.executor.instances=12", "input-size=2GB"])
>>> changes
{'spark.executor.instances': 12, 'input-size': 2000000000}
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

import numpy as np
import scipy.stats

from spn.exceptions import ModelError
from spn.fit.costs import affine_compute_cost
from spn.limits import MAX_COUNT
from spn.logs.records import Run, StageRecord, duration_floor
from spn.logs.sizes import format_size, parse_size
from spn.logs.spark import SparkApplication
from spn.logs.spark_stages import max_executor_cores, successful_tasks, sum_in_order
from spn.logs.task_profile import TaskParts, task_parts, task_sizes
from spn.logs.task_table import TaskTable

__all__ = ["KEYS", "Setting", "WhatIf", "parse_changes", "pilot_setting", "target_setting", "what_if_run",
           "with_what_if"]

#: the keys ``--what-if`` takes: Spark's own names, plus ``input-size``, ``hosts`` and ``executor-cpus``
KEYS = {
    "spark.executor.instances": "executors",
    "spark.executor.cores": "task slots per executor",
    "spark.sql.shuffle.partitions": "tasks of a SQL shuffle stage",
    "spark.default.parallelism": "tasks of an RDD shuffle stage",
    "input-size": "bytes the application reads, as its log counts them (the most one stage read)",
    "hosts": "machines the executors run on",
    "executor-cpus": "CPUs an executor's task slots share",
}

#: settings of the cost models in the literature that an event log holds too little to carry over
UNSUPPORTED = {
    "spark.io.compression.codec": "the log has no time spent compressing or decompressing",
    "spark.shuffle.compress": "the log has no time spent compressing or decompressing",
    "spark.serializer": "the log has no serialisation time inside the run time (only the result's)",
    "spark.executor.memory": "the log has the bytes spilled but not the time spent spilling",
    "spark.memory.fraction": "the log has the bytes spilled but not the time spent spilling",
}

#: the largest input size asked for (an exbibyte), so that sizes and task counts stay 64-bit integers
MAX_INPUT_BYTES = 1 << 60
#: the most task-time samples a rewritten stage keeps (its law, not its task count, is what is fitted)
MAX_SAMPLES = 10_000
#: tasks after the first wave needed to tell that a stage was still warming up, and the significance asked
WARMING_TASKS = 8
WARMING_P = 0.05

#: Physical ranges of what the rules derive (outside them a rule does not apply and the stage keeps the pilot's
#: tasks, saying why). A cross-host shuffle served below MIN_HOST_BANDWIDTH (bytes/s per host, over the stage's
#: span) loaded no cluster network (1 Gbit/s Ethernet moves 125 MB/s): the stage was not network-bound, and its
#: fetch wait was latency or the serving executors' work, which the bandwidth rule would scale as if it were not
MIN_HOST_BANDWIDTH = 1e6
#: ... and no host moves more than 12.5 GB/s (100 Gbit/s): above it the bytes did not cross hosts as counted
MAX_HOST_BANDWIDTH = 12.5e9
#: a measured CPU share (CPU time / run time) above this is not one task's share of a CPU (other threads counted)
MAX_CPU_SHARE = 1.05
#: the rest of the JVM (GC, JIT, driver) taking more than this fraction of an executor's CPUs is not CPU
#: contention: the tasks waited for something else (disk, network, locks)
MAX_JVM_CPU_FRACTION = 0.5

#: Spark's defaults when the pilot's log does not set them
_SQL_PARTITIONS_DEFAULT = 200


@dataclass(frozen=True)
class Setting:
    """A configuration, as far as the rules need it.

    ``cpus`` is ``None`` when every task slot has a CPU of its own;
    ``partitions`` maps ``spark.sql.shuffle.partitions`` and
    ``spark.default.parallelism`` to their values (``None``: unknown).
    """

    executors: int
    cores: int
    hosts: int
    executors_per_host: int
    input_bytes: int
    partitions: Mapping[str, int | None]
    cpus: int | None = None

    @property
    def slots(self) -> int:
        return self.executors * self.cores

    def describe(self) -> str:
        text = f"{self.executors} executor(s) x {self.cores} core(s) on {self.hosts} host(s)"
        if self.cpus is not None:
            text += f", {self.cpus} CPU(s) per executor"
        if self.input_bytes:
            text += f", input {format_size(self.input_bytes)}"
        return text


@dataclass(frozen=True)
class WhatIf:
    """The pilot's run rewritten for the target: ``run`` (task counts, task times, containers) and how."""

    run: Run
    pilot: Setting
    target: Setting
    rules: tuple[str, ...]


def parse_changes(items: Iterable[str] | Mapping[str, object]) -> dict[str, int]:
    """``KEY=VALUE`` items (or a mapping) as checked integers by key; a bad one is a one-line :class:`ModelError`."""
    pairs = items.items() if isinstance(items, Mapping) else [_split(item) for item in items]
    changes = {}
    for key, value in pairs:
        if key in UNSUPPORTED:
            raise ModelError(f"what-if {key} cannot be predicted from an event log: {UNSUPPORTED[key]}; run a "
                             "pilot with the setting changed", option="what_if")
        if key not in KEYS:
            raise ModelError(f"what-if key {key!r} is not known; known keys: {', '.join(KEYS)}", option="what_if")
        if key in changes:
            raise ModelError(f"what-if key {key} given twice", option="what_if")
        changes[key] = _value(key, value)
    return changes


def _split(item: str) -> tuple[str, str]:
    key, sep, value = str(item).partition("=")
    if not sep or not key.strip() or not value.strip():
        raise ModelError(f"what-if {item!r} is not KEY=VALUE (e.g. spark.executor.instances=12)", option="what_if")
    return key.strip(), value.strip()


def _value(key: str, value) -> int:
    if key == "input-size":
        try:
            size = parse_size(value)
        except ModelError as error:
            raise ModelError(f"what-if input-size: {error}", option="what_if") from None
        if not 0 < size <= MAX_INPUT_BYTES:
            raise ModelError(f"what-if input-size must be > 0 and at most {format_size(MAX_INPUT_BYTES)}, got "
                             f"{value!r}", option="what_if")
        return int(size)
    try:
        number = int(str(value))
    except ValueError:
        raise ModelError(f"what-if {key}={value!r}: not a whole number", option="what_if") from None
    if not 1 <= number <= MAX_COUNT:
        raise ModelError(f"what-if {key}={value}: must be between 1 and {MAX_COUNT:,}", option="what_if")
    return number


def pilot_setting(app: SparkApplication, run: Run) -> Setting:
    """The pilot's configuration, read from its log (executors alive, their cores and hosts, settings)."""
    executors = [e for e in app.executors if e.executor_id != "driver"]
    if executors:
        cores = max((e.cores or 0) for e in executors) or (app.executor_cores or 1)
        # executors alive at once (dynamic allocation adds and removes them over the run)
        alive_cores = max_executor_cores(app)
        count = max(1, alive_cores // cores) if alive_cores else len(executors)
        per_host = _executors_per_host(app)
        hosts, most = min(len(per_host), count), min(max(per_host.values()), count)
    else:  # local mode: the driver runs the tasks
        cores = run.containers or 1
        count, hosts, most = 1, 1, 1
    properties = app.spark_properties
    partitions = {
        "spark.sql.shuffle.partitions": _as_int(properties.get("spark.sql.shuffle.partitions"))
        or _SQL_PARTITIONS_DEFAULT,
        "spark.default.parallelism": _as_int(properties.get("spark.default.parallelism")),
    }
    return Setting(count, cores, hosts, most, int(run.input_bytes), partitions)


def target_setting(pilot: Setting, changes: Mapping[str, int]) -> Setting:
    """The target configuration: the pilot's with ``changes`` applied (hosts follow the executors)."""
    executors = changes.get("spark.executor.instances", pilot.executors)
    hosts = changes.get("hosts") or (pilot.hosts if executors == pilot.executors
                                     else math.ceil(executors / pilot.executors_per_host))
    if hosts > executors:
        raise ModelError(f"what-if hosts={hosts} is more than the {executors} executor(s)", option="what_if")
    partitions = dict(pilot.partitions)
    for key in partitions:
        if key in changes:
            partitions[key] = changes[key]
    input_bytes = changes.get("input-size", pilot.input_bytes)
    if input_bytes != pilot.input_bytes and pilot.input_bytes <= 0:
        raise ModelError("what-if input-size: the pilot's log reports no input bytes read, so a new input size "
                         "cannot be scaled from it", option="what_if")
    cores = changes.get("spark.executor.cores", pilot.cores)
    if executors * cores > MAX_COUNT:
        raise ModelError(f"what-if: {executors:,} executor(s) x {cores:,} core(s) = {executors * cores:,} task "
                         f"slots, more than {MAX_COUNT:,}", option="what_if")
    return Setting(executors, cores, hosts, max(1, math.ceil(executors / hosts)), input_bytes, partitions,
                   changes.get("executor-cpus", pilot.cpus))


def what_if_run(app: SparkApplication, run: Run, changes: Mapping[str, int]) -> WhatIf:
    """The pilot ``run`` (read from ``app``) rewritten for the configuration ``changes`` describe.

    ``executor-cpus`` describes the machines, so it holds for the pilot too.
    """
    pilot = replace(pilot_setting(app, run), cpus=changes.get("executor-cpus"))
    if changes.get("input-size", pilot.input_bytes) != pilot.input_bytes:
        _require_input_measured(app)
    target = target_setting(pilot, changes)
    if target == pilot:
        return WhatIf(run, pilot, target, ("the target is the pilot's own configuration: task times as measured",))
    tasks_of = successful_tasks(app)
    rules: list[str] = []
    jobs = []
    for job in run.jobs:
        stages = []
        for stage in job.stages:
            own = [tasks_of[s] for s in stage.stage_ids if s in tasks_of]
            stages.append(_stage(stage, TaskTable.join(own), app, pilot, target, rules) if own else stage)
        jobs.append(replace(job, stages=tuple(stages)))
    scale = target.input_bytes / pilot.input_bytes if pilot.input_bytes else 1.0
    new_run = replace(run, jobs=tuple(jobs), containers=target.slots,
                      containers_how=f"what-if: {target.describe()}",
                      input_bytes=round(run.input_bytes * scale))
    return WhatIf(new_run, pilot, target, tuple(dict.fromkeys(rules)))


def with_what_if(model, what_ifs: list[WhatIf], changes: Mapping[str, int]):
    """``model`` (a :class:`~spn.fit.write.FittedModel`) with the what-if's provenance in its header and reference."""
    description = dict(model.description)
    reference = dict(description.get("reference", {}))
    reference["what_if"] = {
        "changes": {key: int(value) for key, value in changes.items()},
        "pilots": [w.pilot.describe() for w in what_ifs],
        "target": what_ifs[0].target.describe(),
        "rules": list(dict.fromkeys(rule for w in what_ifs for rule in w.rules)),
    }
    description["reference"] = reference
    header = list(model.header)
    header.insert(2, f"What-if: {', '.join(f'{k}={v}' for k, v in changes.items())}: "
                     f"{what_ifs[0].target.describe()} (pilot: {what_ifs[0].pilot.describe()}); task times "
                     "carried over by the rules under reference.what_if (spn.fit.whatif)")
    fallbacks = [rule for rule in reference["what_if"]["rules"] if "fixed-time fallback" in rule]
    return replace(model, description=description, header=tuple(header), warnings=model.warnings + tuple(fallbacks))


def _executors_per_host(app: SparkApplication) -> Counter:
    """How many executors (the driver aside) each host had."""
    return Counter(e.host for e in app.executors if e.executor_id != "driver")


def _stage(stage: StageRecord, tasks: TaskTable, app: SparkApplication, pilot: Setting, target: Setting,
           rules: list[str]) -> StageRecord:
    """One stage carried to the target: its task count and its tasks' times."""
    parts = task_parts(tasks)
    label = f"stage {','.join(map(str, stage.stage_ids))}"
    unmeasured = int((~parts.measured).sum())
    if unmeasured:
        rules.append(f"{label}: {unmeasured} of {len(parts)} tasks have no Task Metrics (or no Executor Run "
                     "Time): their whole time is kept as compute (fixed-time fallback)")
    shuffle = np.nan_to_num(parts.remote_bytes) + np.nan_to_num(parts.local_bytes)
    reads_input = np.nansum(parts.input_bytes) > 0
    data = target.input_bytes / pilot.input_bytes if pilot.input_bytes else 1.0
    n = stage.tasks
    n_new, g = n, 1.0
    if shuffle.sum() > 0:
        key = _partition_key(n, pilot)
        if key and target.partitions[key] != pilot.partitions[key]:
            n_new = target.partitions[key]
            rules.append(f"{label}: {n} -> {n_new} tasks ({key})")
        g = data * n / n_new
    elif reads_input and data != 1.0:
        n_new = max(1, round(n * data))
        if n_new > MAX_COUNT:
            raise ModelError(f"what-if input-size: {label} would have {n_new:,} tasks, more than {MAX_COUNT:,}",
                             option="what_if")
        rules.append(f"{label}: reads input: split size kept, {n} -> {n_new} tasks")
    share, measured = _cpu_share(parts, pilot, target, n, n_new)
    if measured.startswith(_NOT_APPLIED):
        rules.append(f"{label}: {measured}")
        measured = ""
    compute = parts.compute
    if g != 1.0:
        compute = _data_per_task(parts, compute, g, label, rules, _span(tasks))
    compute = compute * share
    write = parts.shuffle_write * g
    wait = parts.fetch_wait
    other = parts.wall - (parts.compute + parts.shuffle_write + parts.fetch_wait)
    if share != 1.0:
        rules.append(f"{label}: compute x {share:.3g}: up to {target.cores} busy slot(s) share "
                     f"{target.cpus or target.cores} CPU(s) per executor (pilot: {pilot.cores} on "
                     f"{pilot.cpus or pilot.cores}){measured}")
    if shuffle.sum() > 0 and (target.executors, target.hosts, target.slots) != (pilot.executors, pilot.hosts,
                                                                                 pilot.slots):
        fetch = _fetch_times(stage, tasks, parts, shuffle, wait, app, pilot, target, g, n_new, label, rules)
        times = other + write + np.maximum(compute + fetch[0], fetch[1])
    else:
        times = other + write + compute + wait * g
    times = np.maximum(times, 0.0)
    if n_new != n:
        times, warming = _resample(times, min(n_new, max(MAX_SAMPLES, len(times))), first_wave=min(pilot.slots, n))
        if warming:
            rules.append(f"{label}: tasks got faster as the pilot's stage went on ({warming}): the first "
                         f"{min(n, n_new)} task(s) keep the pilot's times in launch order, the others follow the "
                         "later half of its tasks after the first wave (the warmest measured)")
        else:
            rules.append(f"{label}: the first wave's {min(pilot.slots, n, n_new)} task(s) keep their (cold JVM) "
                         "times, the other tasks follow the pilot's later, warm ones")
    return replace(stage, tasks=n_new, durations=tuple(float(d) for d in duration_floor(times)),
                   input_bytes=round(stage.input_bytes * (data if reads_input else 1.0)))


def _span(tasks: TaskTable) -> float:
    """Seconds from the first launch of ``tasks`` to their last finish."""
    return (int(tasks.finish_ms.max()) - int(tasks.launch_ms.min())) / 1000.0


def _data_per_task(parts: TaskParts, compute: np.ndarray, g: float, label: str, rules: list[str],
                   span: float | None = None) -> np.ndarray:
    """The pilot tasks' ``compute`` when each reads ``g`` times as much: along the stage's fixed + per-byte line
    when its tasks' sizes support one (:func:`~spn.fit.costs.affine_compute_cost`; ``span``: the stage's
    seconds, which no task's line may exceed), else in proportion."""
    cost = affine_compute_cost(parts, stage_span=span)
    if not cost.accepted:
        rules.append(f"{label}: data per task x {g:.4g}: compute and shuffle write per byte (proportional: no "
                     f"fixed + per-byte cost: {cost.reason})")
        return compute * g
    sizes, _ = task_sizes(parts)
    carried = compute * cost.factors(sizes, g)
    whole = compute.sum()
    rules.append(f"{label}: data per task x {g:.4g}: {cost.describe()}: compute x "
                 f"{carried.sum() / whole if whole > 0 else g:.3g}; shuffle write per byte")
    return carried


def _partition_key(tasks: int, pilot: Setting) -> str | None:
    """The setting that fixed a shuffle stage's task count, when its count is that setting's value."""
    for key, value in pilot.partitions.items():
        if value is not None and value == tasks:
            return key
    return None


def _cpu_share(parts: TaskParts, pilot: Setting, target: Setting, n: int, n_new: int) -> tuple[float, str]:
    """The factor on a task's compute when its executor's busy slots share the CPUs differently, and how it was
    found ("" for :func:`_sharing`'s ratio of slots to CPUs).

    Where the log has the tasks' CPU time and the pilot's busy slots ``b`` filled its ``P`` CPUs, the share of a
    CPU its tasks got is measured: ``s = CPU time / (compute + shuffle write)``. What the tasks did not get went
    to the rest of the JVM (driver, JIT compiler, garbage collector), ``B = P - b s`` CPUs, which the target's
    ``b'`` slots leave to it on its ``P'`` CPUs: ``s' = min(1, (P' - B) / b')``, and compute scales by ``s / s'``.
    (A task that waited for a disk or the network rather than a CPU is read as waiting for a CPU: such a stage
    is predicted too fast on fewer busy slots.)
    """
    busy, busy_new = min(pilot.cores, n / pilot.executors), min(target.cores, n_new / target.executors)
    running = sum_in_order(parts.compute + parts.shuffle_write)
    if not (pilot.cpus and target.cpus and busy >= pilot.cpus and running > 0 and not np.isnan(parts.cpu).any()):
        return _sharing(target, n_new) / _sharing(pilot, n), ""
    measured = sum_in_order(parts.cpu) / running
    fallback = _sharing(target, n_new) / _sharing(pilot, n)
    if measured > MAX_CPU_SHARE:
        return fallback, (f"{_NOT_APPLIED}: the tasks' CPU time is {measured:.2f} times their run time, above "
                          f"{MAX_CPU_SHARE:g}: not one task's share of a CPU (other threads counted); compute "
                          "follows busy slots over CPUs")
    got = min(1.0, measured)
    rest = max(0.0, pilot.cpus - busy * got)
    if rest > MAX_JVM_CPU_FRACTION * pilot.cpus:
        return fallback, (f"{_NOT_APPLIED}: the tasks ran on {got:.2f} of a CPU, which would leave {rest:.2f} of "
                          f"the executor's {pilot.cpus} CPU(s) to the rest of the JVM, more than "
                          f"{MAX_JVM_CPU_FRACTION:.0%}: they waited for something other than a CPU (disk, network); "
                          "compute follows busy slots over CPUs")
    got_new = min(1.0, max(target.cpus - rest, 1e-3) / busy_new)
    return got / got_new, (f"; measured: the pilot's tasks ran on {got:.2f} of a CPU (CPU time over run time), "
                           f"the rest of the JVM took {rest:.2f} CPU(s), the target's tasks get {got_new:.2f}")


#: how a rule that does not apply starts its line in ``reference.what_if.rules``
_NOT_APPLIED = "measured CPU share rule not applied"


def _sharing(setting: Setting, tasks: int) -> float:
    """How much slower compute runs when an executor's busy slots share its CPUs: a stage of few tasks fills
    only some of the slots (``tasks / executors`` of them on each executor)."""
    if not setting.cpus:
        return 1.0
    return max(1.0, min(setting.cores, tasks / setting.executors) / setting.cpus)


def _fetch_times(stage, tasks, parts, shuffle, wait, app, pilot: Setting, target: Setting, g: float, n_new: int,
                 label: str, rules: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Per task of the target: the latency part of the fetch wait, and the bandwidth-bound time of its run."""
    executors_on = _executors_per_host(app)
    total = max(pilot.executors, 1)
    # the share of a task's shuffle bytes that crossed hosts, by its host's code (+ 1: no host comes first)
    elsewhere = np.array([1.0 - executors_on.get(host, 1) / total for host in (None, *tasks.hosts)])
    cross = shuffle * elsewhere[tasks.host.astype(np.int64) + 1] if pilot.executors > 1 else np.zeros(len(tasks))
    span = _span(tasks)
    remote = 1.0 - 1.0 / pilot.executors
    remote_new = 1.0 - 1.0 / target.executors
    if remote == 0:
        # one executor fetched everything locally: nothing says what remote fetches would cost
        if remote_new > 0:
            rules.append(f"{label}: the pilot (one executor) fetched nothing remotely: its fetch wait is kept, "
                         "scaled with the data; remote fetches of the target are not predicted")
        return wait * g, np.zeros(len(parts))
    latency = wait * g * remote_new / remote
    if cross.sum() <= 0 or span <= 0:
        rules.append(f"{label}: no bytes crossed hosts in the pilot: fetch wait scaled with the remote blocks only")
        return latency, np.zeros(len(parts))
    # a task bound by its hosts' bandwidth takes time in proportion to the bytes it moves across hosts and
    # to the tasks sharing each host (k per wave over H hosts): F = X k / (H d); d cancels in F'/F
    at_once = stage.tasks / math.ceil(stage.tasks / pilot.slots)
    at_once_new = n_new / math.ceil(n_new / target.slots)
    cross_new = shuffle * g * (1.0 - target.executors_per_host / target.executors)
    # hosts serve every task's fetches, so the stage's mean bytes across hosts is what shares them out
    ratio = (cross_new.mean() / cross.mean()) * (at_once_new / at_once) * (pilot.hosts / target.hosts)
    bandwidth = (parts.compute + parts.fetch_wait) * ratio
    per_host = cross.sum() / (pilot.hosts * span)
    if not MIN_HOST_BANDWIDTH <= per_host <= MAX_HOST_BANDWIDTH:
        # outside a network's physical range the stage was not bandwidth-bound as the rule models: keep its tasks
        low = per_host < MIN_HOST_BANDWIDTH
        rules.append(f"{label}: shuffle rule not applied: derived bandwidth {per_host / 1e6:.3g} MB/s per host is "
                     + (f"below {MIN_HOST_BANDWIDTH / 1e6:g} MB/s, so the stage was not network-bound"
                        if low else f"above {MAX_HOST_BANDWIDTH / 1e9:g} GB/s, more than any host's network moves, "
                        "so its bytes did not cross hosts as counted")
                     + f" ({cross.sum() / 1e6:.3g} MB across {pilot.hosts} host(s) in {span:.4g} s); its tasks' "
                     "fetch wait is carried over as measured" + (f", x {g:.4g} with the data per task" if g != 1 else ""))
        return wait * g, np.zeros(len(parts))
    bound_share = wait.sum() / max(sum_in_order(parts.wall), 1e-12)
    how = ("" if bound_share >= 0.2 else
           f" (fetch wait was {100 * bound_share:.0f} % of the pilot's task time: the stage was not network-bound, "
           "so its run is an upper bound on its bandwidth-bound time and the prediction errs slow)")
    rules.append(f"{label}: cross-host shuffle served at {per_host / 1e6:.3g} MB/s per host in the pilot "
                 f"({cross.sum() / 1e9:.3g} GB across {pilot.hosts} host(s) in {span:.4g} s); bandwidth-bound run "
                 f"time x {ratio:.3g} (bytes across hosts x tasks per host); remote "
                 f"fraction {remote:.3g} -> {remote_new:.3g}{how}")
    return latency, bandwidth


def _resample(times: np.ndarray, n: int, *, first_wave: int) -> tuple[np.ndarray, str]:
    """``n`` task times for a stage whose pilot ran ``times`` (in launch order) with ``first_wave`` slots,
    and how the tasks warmed up ("" unless they kept getting faster).

    The first wave ran on fresh executors (class loading, JIT compilation): it is kept as it was, and
    the other tasks follow the law of the pilot's later tasks (their quantiles at evenly spaced levels),
    so that a larger stage does not pay the cold start once per task. Where the tasks after the first
    wave still got faster in launch order (Kendall's tau < 0 at p < :data:`WARMING_P`, over at least
    :data:`WARMING_TASKS` of them: the JIT compiler was still at work), the pilot's tasks are kept in
    launch order and the tasks past them follow the later half of those after the first wave: a
    longer stage runs most of its tasks warmer than the pilot's average.
    """
    cold, warm = times[:first_wave], times[first_wave:]
    if warm.size < 2:
        cold, warm = times[:0], times
    warming = _warming(warm)
    if warming:
        cold, warm = times, warm[warm.size // 2:]
    cold = cold[:n]
    rest = n - cold.size
    levels = (np.arange(rest) + 0.5) / max(rest, 1)
    return np.concatenate([cold, quantiles(warm, levels) if rest else warm[:0]]), warming


def quantiles(values: np.ndarray, levels: np.ndarray) -> np.ndarray:
    """``np.quantile(values, levels)`` (its linear method, Hyndman and Fan's 7th) from one sort.

    NumPy partitions the values once per level, which took 27 s for a stage of 200,000 tasks; this is
    NumPy's arithmetic on the sorted values, so the numbers are the same (a test compares them).

    >>> values, levels = np.array([3.0, 1.0, 2.0, 10.0]), np.array([0.0, 0.3, 0.5, 0.99, 1.0])
    >>> bool(np.array_equal(quantiles(values, levels), np.quantile(values, levels)))
    True
    """
    ordered = np.sort(values)
    virtual = (ordered.size - 1) * np.asarray(levels, dtype=np.float64)
    below = np.floor(virtual)
    gamma = virtual - below
    low = np.minimum(below.astype(np.intp), ordered.size - 1)
    high = np.minimum(low + 1, ordered.size - 1)
    a, b = ordered[low], ordered[high]
    step = b - a
    # NumPy's lerp: from the nearer end, so that gamma = 1 gives b exactly
    return np.where(gamma >= 0.5, b - step * (1 - gamma), a + step * gamma)


def _warming(times: np.ndarray) -> str:
    """"Kendall tau -0.6, p = 0.01 over 10 tasks" when ``times`` (launch order) fall significantly, else ""."""
    if times.size < WARMING_TASKS or np.ptp(times) == 0:
        return ""
    tau, p = scipy.stats.kendalltau(np.arange(times.size), times, alternative="less")
    return f"Kendall tau {tau:.2f}, p = {p:.2g} over {times.size} tasks" if p < WARMING_P else ""


def _as_int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _require_input_measured(app: SparkApplication) -> None:
    """Refuse an input-size what-if when a task of a stage that reads input has no Task Metrics: the
    pilot's input would be counted without its bytes, and every size scaled from too small a base."""
    tasks = app.tasks.take(app.tasks.successful)
    reads = np.unique(tasks.stage_id[tasks.metrics["input_bytes"] > 0])
    unmeasured = np.isin(tasks.stage_id, reads) & ~tasks.has_metrics
    if unmeasured.any():
        stages, counts = np.unique(tasks.stage_id[unmeasured], return_counts=True)
        stage, count = int(stages[0]), int(counts[0])
        raise ModelError(f"what-if input-size: {count} task(s) of stage {stage}, which reads input, have no Task "
                         "Metrics, so the pilot's input size is not known (only a lower bound)")
