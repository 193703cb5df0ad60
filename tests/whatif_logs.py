"""Small synthetic Spark 2.x event logs with known task parts, for the what-if and ``spn predict`` tests.

The pilot: 2 executors ("1" on host-a, "2" on host-b), 2 cores each (4 task
slots), ``spark.sql.shuffle.partitions=4``; one job of two stages:

- stage 0 reads the input: ``input_tasks`` tasks of 250 MB each, every one
  100 ms deserialize + 1900 ms run (1800 ms compute + 100 ms shuffle write),
  wall 2000 ms, in waves of 4;
- stage 1 (``shuffle_compute_ms`` given) is the shuffle stage: one task per
  entry, all launched together at 3000 ms (after 4 input tasks), each 100 ms
  deserialize + run (500 ms fetch wait + 200 ms shuffle write + its compute),
  reading 100 MB remote and 100 MB local shuffle bytes.

Every task's wall time is deserialize + run exactly (no scheduler delay,
nothing else), so the parts are the numbers written here.
"""

from __future__ import annotations

import json
from pathlib import Path

MB = 1_000_000
#: stage 1's default task computes: three short tasks and a straggler (ms)
SHUFFLE_COMPUTE_MS = (300, 300, 300, 2700)
INPUT_PER_TASK = 250 * MB
REMOTE, LOCAL = 100 * MB, 100 * MB
FETCH_WAIT_MS, SHUFFLE_WRITE_MS, DESERIALIZE_MS = 500, 200, 100
INPUT_COMPUTE_MS, INPUT_WRITE_MS = 1800, 100
EXECUTORS = {"1": "host-a", "2": "host-b"}


def _task(stage, index, task_id, launch, *, executor, run_ms, fetch_wait_ms=0, write_ms=0, input_bytes=0,
          remote=0, local=0):
    host = EXECUTORS[executor]
    return {
        "Event": "SparkListenerTaskEnd", "Stage ID": stage, "Stage Attempt ID": 0, "Task Type": "ResultTask",
        "Task End Reason": {"Reason": "Success"},
        "Task Info": {"Task ID": task_id, "Index": index, "Attempt": 0, "Launch Time": launch,
                      "Executor ID": executor, "Host": host, "Locality": "PROCESS_LOCAL", "Speculative": False,
                      "Getting Result Time": 0, "Finish Time": launch + DESERIALIZE_MS + run_ms, "Failed": False,
                      "Killed": False},
        "Task Metrics": {
            "Executor Deserialize Time": DESERIALIZE_MS, "Executor Deserialize CPU Time": 1_000_000,
            "Executor Run Time": run_ms, "Executor CPU Time": run_ms * 900_000, "Result Size": 2000,
            "JVM GC Time": 10, "Result Serialization Time": 0, "Memory Bytes Spilled": 0, "Disk Bytes Spilled": 0,
            "Shuffle Read Metrics": {"Remote Blocks Fetched": 2 if remote else 0,
                                     "Local Blocks Fetched": 2 if local else 0, "Fetch Wait Time": fetch_wait_ms,
                                     "Remote Bytes Read": remote, "Local Bytes Read": local,
                                     "Total Records Read": 1000 if remote + local else 0},
            "Shuffle Write Metrics": {"Shuffle Bytes Written": 50 * MB if write_ms else 0,
                                      "Shuffle Write Time": write_ms * 1_000_000,
                                      "Shuffle Records Written": 500 if write_ms else 0},
            "Input Metrics": {"Bytes Read": input_bytes, "Records Read": 1000 if input_bytes else 0},
            "Output Metrics": {"Bytes Written": 0, "Records Written": 0}},
    }


def log_start(app_name, app_id, partitions, stage_infos) -> list:
    """The events before the first stage: the application on the pilot's 2 executors, one job of ``stage_infos``."""
    return [
        {"Event": "SparkListenerLogStart", "Spark Version": "2.4.0"},
        {"Event": "SparkListenerApplicationStart", "App Name": app_name, "App ID": app_id,
         "Timestamp": 0, "User": "test"},
        {"Event": "SparkListenerEnvironmentUpdate",
         "Spark Properties": {"spark.master": "yarn", "spark.executor.instances": "2", "spark.executor.cores": "2",
                              "spark.sql.shuffle.partitions": str(partitions)}},
        *({"Event": "SparkListenerExecutorAdded", "Timestamp": 100, "Executor ID": e,
           "Executor Info": {"Host": h, "Total Cores": 2}} for e, h in EXECUTORS.items()),
        {"Event": "SparkListenerJobStart", "Job ID": 0, "Submission Time": 500,
         "Stage Infos": stage_infos, "Stage IDs": [i["Stage ID"] for i in stage_infos], "Properties": {}},
    ]


def pilot_log(path, *, input_tasks: int = 4, shuffle_compute_ms=SHUFFLE_COMPUTE_MS, partitions: int = 4) -> Path:
    """Write the pilot's log to ``path`` (see the module doc) and return it."""
    waves = -(-input_tasks // 4)
    input_end = 1000 + 2000 * waves
    shuffle_start = input_end
    shuffle_end = shuffle_start + max((DESERIALIZE_MS + FETCH_WAIT_MS + SHUFFLE_WRITE_MS + c
                                       for c in shuffle_compute_ms), default=0)

    def info(stage, tasks, parents, **extra):
        return {"Stage ID": stage, "Stage Attempt ID": 0, "Stage Name": f"stage {stage}", "Number of Tasks": tasks,
                "Parent IDs": parents, "RDD Info": [], "Details": "", "Accumulables": [], **extra}

    stages = [(0, input_tasks, [])] + ([(1, len(shuffle_compute_ms), [0])] if shuffle_compute_ms else [])
    events = [*log_start("whatif-pilot", "application_1_0001", partitions, [info(*s) for s in stages]),
              {"Event": "SparkListenerStageSubmitted",
               "Stage Info": info(0, input_tasks, [], **{"Submission Time": 1000})}]
    task_id = 0
    for i in range(input_tasks):
        events.append(_task(0, i, task_id, 1000 + 2000 * (i // 4), executor="1" if i % 4 < 2 else "2",
                            run_ms=INPUT_COMPUTE_MS + INPUT_WRITE_MS, write_ms=INPUT_WRITE_MS,
                            input_bytes=INPUT_PER_TASK))
        task_id += 1
    events.append({"Event": "SparkListenerStageCompleted",
                   "Stage Info": info(0, input_tasks, [], **{"Submission Time": 1000, "Completion Time": input_end})})
    if shuffle_compute_ms:
        n = len(shuffle_compute_ms)
        events.append({"Event": "SparkListenerStageSubmitted",
                       "Stage Info": info(1, n, [0], **{"Submission Time": shuffle_start})})
        for i, compute in enumerate(shuffle_compute_ms):
            events.append(_task(1, i, task_id, shuffle_start, executor="1" if i % 4 < 2 else "2",
                                run_ms=FETCH_WAIT_MS + SHUFFLE_WRITE_MS + compute, fetch_wait_ms=FETCH_WAIT_MS,
                                write_ms=SHUFFLE_WRITE_MS, remote=REMOTE, local=LOCAL))
            task_id += 1
        events.append({"Event": "SparkListenerStageCompleted",
                       "Stage Info": info(1, n, [0], **{"Submission Time": shuffle_start,
                                                         "Completion Time": shuffle_end})})
    end = max(input_end, shuffle_end)
    events += [{"Event": "SparkListenerJobEnd", "Job ID": 0, "Completion Time": end + 100,
                "Job Result": {"Result": "JobSucceeded"}},
               {"Event": "SparkListenerApplicationEnd", "Timestamp": end + 500}]
    path = Path(path)
    path.write_text("".join(json.dumps(e) + "\n" for e in events))
    return path
