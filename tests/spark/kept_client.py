"""One dbt-like process on a kept driver JVM (test_kept_jvm.py), printing what it saw.

    python -m tests.spark.kept_client METADATA DATA_PATH KEEP_ALIVE_S MODE NAME...

MODE write: create the tables NAME... and count them. hold: print `attached`, then run
an endless job until killed. read: wait to see another process's job, print `seen`,
wait until the kept JVM runs no job (the killed holder's was stopped), then count the
tables NAME... and run a Python UDF. The last line is JSON.
"""

from __future__ import annotations

import json
import sys
import time

from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.session import get_session, label_jobs, stop_session
from dbt.adapters.ducklake.spark.session_config import SessionConfig
from dbt.adapters.ducklake.spark.sql import LakeSQL

# `spark.ui.enabled` false: the status tracker still answers
CONF = {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"}


def main(metadata: str, data_path: str, keep_alive_s: str, mode: str, names: list[str]) -> None:
    spark = get_session(SessionConfig(master="local[2]", conf=CONF, keep_alive_s=int(keep_alive_s)))
    if mode == "hold":  # one task: the other core stays free for the writers
        label_jobs(spark, "model.hold", "endless")
        print("attached", flush=True)
        spark.range(0, 10**15, numPartitions=1).selectExpr("max(id)").collect()  # for days
    seen = mode != "read" or _wait_for_jobs(spark, present=True) > 0
    if mode == "read":
        print("seen", flush=True)
    active = 0 if mode != "read" else _wait_for_jobs(spark, present=False)
    sql = LakeSQL(spark, Lake.open(metadata, data_path=data_path))
    counts = {}
    for name in names:
        if mode == "write":
            select = f"SELECT id, concat('{name}-', id) AS s FROM range(50)"
            sql.execute(f"CREATE TABLE {name} AS {select}")
        counts[name] = sql.execute(f"SELECT count(*) AS n FROM {name}").first()[0]
    doubled = F.udf(lambda v: v * 2, LongType())  # a Python worker of the kept JVM
    udf_sum = spark.range(4).select(F.sum(doubled("id"))).first()[0]
    # a SparkSession per process: this setting must not reach the other processes
    spark.conf.set("spark.sql.shuffle.partitions", "7")
    jvm = spark.sparkContext._jvm
    pid = jvm.ProcessHandle.current().pid()
    saw = {"jvm": pid, "counts": counts, "udf": udf_sum, "seen": seen, "active": active}
    print(json.dumps(saw))
    stop_session()  # leaves the kept JVM running for the next process


def _wait_for_jobs(spark: SparkSession, present: bool, timeout_s: float = 60) -> int:
    """Poll the kept JVM's running jobs until there are some (`present`) or none; how
    many there are when it stops waiting."""
    tracker, deadline = spark.sparkContext.statusTracker(), time.monotonic() + timeout_s
    while bool(tracker.getActiveJobsIds()) != present and time.monotonic() < deadline:
        time.sleep(0.1)
    return len(tracker.getActiveJobsIds())


if __name__ == "__main__":
    main(*sys.argv[1:5], sys.argv[5:])
