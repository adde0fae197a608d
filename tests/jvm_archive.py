"""Writes a class-data-sharing (AppCDS) archive of the classes a Spark JVM of this venv
loads for the engine's usual work, so every JVM the tests start maps them instead of
loading and verifying them again.

    python -m tests.jvm_archive ARCHIVE    # ./dev test calls it when ARCHIVE is missing

Measured on the 2-core machine (a session start and one small job): 7.0 -> 3.9 CPU-s
and 6.0 -> 3.0 s with the test lanes' short-lived-JVM options, 11.9 -> 7.3 CPU-s with
the JVM's defaults. A JVM whose class path differs from this one's (extra class path
entries) ignores the archive and runs as without it.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time


def _workload(root: str) -> None:
    """What most tests do once: CTAS, INSERT, UPDATE, DELETE, MERGE, reads, a view,
    through the engine (Spark's Parquet reader and writer, Python tasks, joins)."""
    from dbt.adapters.ducklake.lake import Lake
    from dbt.adapters.ducklake.spark.session import SessionConfig, get_session, stop_session
    from dbt.adapters.ducklake.spark.sql import LakeSQL

    conf = {
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.ui.enabled": "false",
    }
    spark = get_session(SessionConfig(master="local[2]", conf=conf))
    lake = Lake.open(f"sqlite:///{root}/meta.sqlite", data_path=f"{root}/data/")
    sql = LakeSQL(spark, lake)
    sql.execute(
        "CREATE TABLE main.t AS SELECT id, CAST(id AS STRING) AS v, id * 1.5 AS d, "
        "current_date() AS day FROM range(0, 2000)"
    )
    sql.execute("INSERT INTO main.t SELECT id + 5000, 'n', 0.5, current_date() FROM range(3)")
    sql.execute("UPDATE main.t SET v = concat(v, '!') WHERE id BETWEEN 10 AND 29")
    sql.execute("DELETE FROM main.t WHERE id % 4 = 0")
    spark.sql("SELECT id, 'm' AS v FROM range(35, 45)").createOrReplaceTempView("src")
    sql.execute(
        "MERGE INTO main.t AS t USING src AS s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT (id, v, d, day) VALUES (s.id, s.v, 0, current_date())"
    )
    sql.execute(
        "CREATE TABLE main.agg AS SELECT v, count(*) AS n, max(d) AS d, "
        "row_number() OVER (ORDER BY v) AS r FROM main.t GROUP BY v"
    )
    sql.execute("CREATE VIEW main.w AS SELECT a.v, b.n FROM main.t a JOIN main.agg b ON a.v = b.v")
    sql.execute("SELECT count(*) FROM main.w").collect()
    stop_session()
    # the archive is written when the JVM exits: wait for it (its stdin closing ends it)
    gateway = getattr(spark.sparkContext, "_gateway", None)
    process = getattr(gateway, "proc", None)
    if process is not None:
        process.stdin.close()
        process.wait(timeout=120)


def main() -> None:
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m tests.jvm_archive ARCHIVE")
    archive = os.path.abspath(sys.argv[1])
    partial = archive + ".partial"
    options = os.environ.get("SPARK_SUBMIT_OPTS", "")
    os.environ["SPARK_SUBMIT_OPTS"] = f"{options} -XX:ArchiveClassesAtExit={partial}"
    os.environ["TZ"] = "UTC"
    time.tzset()
    began = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="ducklake-jvm-archive-") as root:
        _workload(root)
    if not os.path.exists(partial):
        raise SystemExit(f"the JVM wrote no archive at {partial}")
    os.replace(partial, archive)
    took = time.perf_counter() - began
    print(f"jvm archive: {archive} ({os.path.getsize(archive) >> 20} MiB, {took:.0f} s)")


if __name__ == "__main__":
    main()
