"""The Spark application that validation/run_spark.py runs (one process = one application = one event log).

Modes:

- ``batch``: the application of the data-size / core-count validation: two queries over one CSV
  input (a group-by aggregation over all rows, and a filtered aggregation by bucket), each an action
  (one Spark job each).
- ``join``: an application with parallel stages (validation/run_baselines.py): two CSV inputs
  (``--data`` and ``--data2``) are scanned independently, by two stages that run side by side, then
  joined on their word column (a sort-merge join: broadcast joins are off) and aggregated by key.
- ``users``: a closed multi-user experiment inside one application: after one warm-up query (job
  group ``warmup``), N threads (users), each with its own job group (``spark.jobGroup.id =
  user-<i>``), each run the same query Q times and sleep an exponential think time between queries.

Only the standard library and pyspark; run as ``python validation/spark_app.py --help``.
"""

import argparse
import random
import threading
import time


def session(cores: int, event_dir: str, name: str, partition_bytes: int):
    from pyspark.sql import SparkSession

    return (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(name)
        .config("spark.eventLog.enabled", "true")
        .config("spark.eventLog.dir", "file://" + event_dir)
        .config("spark.eventLog.compress", "false")          # plain JSON lines, readable without zstd
        .config("spark.eventLog.rolling.enabled", "false")   # one file per application
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.adaptive.enabled", "false")       # no run-time re-planning: a stable stage DAG
        .config("spark.sql.shuffle.partitions", "4")         # the post-shuffle stages: fixed task count
        .config("spark.sql.files.maxPartitionBytes", str(partition_bytes))  # scan tasks ~ input size
        .config("spark.sql.files.openCostInBytes", str(partition_bytes))
        .config("spark.sql.autoBroadcastJoinThreshold", "-1")  # joins shuffle both sides: parallel scans
        .config("spark.driver.memory", "2g")
        .getOrCreate()
    )


SCHEMA = "k INT, v DOUBLE, s STRING"


def read(spark, path):
    return spark.read.csv(path, schema=SCHEMA, header=False)


def query_totals(spark, path):
    from pyspark.sql import functions as F

    return read(spark, path).groupBy("k").agg(F.sum("v"), F.count("*"), F.max(F.length("s"))).collect()


def query_buckets(spark, path):
    from pyspark.sql import functions as F

    df = read(spark, path).where(F.col("v") > 0.25)
    return df.groupBy((F.col("k") % 10).alias("b")).agg(F.avg("v"), F.countDistinct("s")).collect()


def batch(args):
    spark = session(args.cores, args.event_dir, args.name, args.partition_bytes)
    spark.sparkContext.setLogLevel("ERROR")
    query_totals(spark, args.data)
    query_buckets(spark, args.data)
    print(spark.sparkContext.applicationId)
    spark.stop()


def join(args):
    from pyspark.sql import functions as F

    spark = session(args.cores, args.event_dir, args.name, args.partition_bytes)
    spark.sparkContext.setLogLevel("ERROR")
    left, right = read(spark, args.data), read(spark, args.data2).select(F.col("s"), F.col("v").alias("v2"))
    left.join(right, "s").groupBy("k").agg(F.sum(F.col("v") * F.col("v2")), F.count("*")).collect()
    print(spark.sparkContext.applicationId)
    spark.stop()


def users(args):
    spark = session(args.cores, args.event_dir, args.name, args.partition_bytes)
    sc = spark.sparkContext
    sc.setLogLevel("ERROR")
    errors = []
    sc.setJobGroup("warmup", "one query before the users start: JIT-compiles the query's code paths")
    query_totals(spark, args.data)

    def user(i):
        rng = random.Random(args.seed * 1000 + i)
        try:
            sc.setJobGroup(f"user-{i}", f"closed-loop user {i}")
            time.sleep(rng.expovariate(1.0 / args.think))  # users do not all start at once
            for _ in range(args.queries):
                query_totals(spark, args.data)
                time.sleep(rng.expovariate(1.0 / args.think))
        except Exception as error:  # surfaced below: the run must not pass silently
            errors.append(error)

    threads = [threading.Thread(target=user, args=(i,)) for i in range(args.users)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(sc.applicationId)
    spark.stop()
    if errors:
        raise errors[0]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("mode", choices=("batch", "join", "users"))
    parser.add_argument("--data", required=True, help="CSV input (file or folder)")
    parser.add_argument("--data2", help="the second CSV input (join mode)")
    parser.add_argument("--event-dir", required=True, help="folder for the event log (absolute)")
    parser.add_argument("--cores", type=int, default=2, help="K of local[K]")
    parser.add_argument("--name", default="spn-validation")
    parser.add_argument("--partition-bytes", type=int, default=4 * 2**20)
    parser.add_argument("--users", type=int, default=1)
    parser.add_argument("--queries", type=int, default=8, help="queries per user (users mode)")
    parser.add_argument("--think", type=float, default=2.0, help="mean think time, s (users mode)")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    {"batch": batch, "join": join, "users": users}[args.mode](args)


if __name__ == "__main__":
    main()
