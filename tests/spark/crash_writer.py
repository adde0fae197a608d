"""A writer process for the crash-safety test: runs numbered lake steps and says on stdout
when each starts and ends, so the test can SIGKILL it inside a chosen kind of step.

    python -m tests.spark.crash_writer METADATA DATA_PATH CONSOLE_LOG [STEP ...]

Without STEPs on the command line the writer starts Spark, says `ready` and then reads
them as one line from stdin: the test starts the next writer while the current one runs,
so a kill does not wait for a JVM to start. An empty line ends it.

A STEP is `<number>:<kind>`, or `<number>:expire:<below>` to expire the snapshots with
ids under `below` (the ones the test has already read). Every other step commits as
`crash step <number> <kind>`, so the test tells from the lake's snapshots which steps
landed and replays exactly those on a plain DuckDB twin (`duck_sql`).
"""

from __future__ import annotations

import re
import sys
import time

BATCH = 40_000  # rows per INSERT: big enough that a kill can land inside the write
DATA_KINDS = ("ctas", "insert", "merge", "delete")
KINDS = (*DATA_KINDS, "compaction", "expire")
_RANGE = re.compile(r"range\((-?\d+, -?\d+)\)")


def spark_sql(number: int, kind: str, expire_below: int = 0) -> list[str]:
    """The lake SQL of one step (Spark dialect)."""
    lo = number * BATCH
    if kind == "setup":
        return ["CREATE TABLE main.t (id BIGINT, v BIGINT)"]
    if kind == "ctas":
        return [
            f"CREATE OR REPLACE TABLE main.c AS SELECT id, id * {number} AS v "
            f"FROM range(0, {5 * BATCH})"
        ]
    if kind == "insert":
        return [f"INSERT INTO main.t SELECT id, id * 3 AS v FROM range({lo}, {lo + BATCH})"]
    if kind == "merge":
        # the lower half updates rows of an earlier batch, the upper half inserts
        return [
            f"MERGE INTO main.t AS t USING (SELECT id, id + {number} AS v FROM "
            f"range({lo - BATCH // 2}, {lo + BATCH // 2})) AS s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET v = s.v "
            "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)"
        ]
    if kind == "delete":  # a few rows of every file the table has
        return [f"DELETE FROM main.t WHERE id % 89 = {number % 89}"]
    if kind == "compaction":
        if number % 2:
            return ["CALL ducklake_rewrite_data_files('lake', 't', delete_threshold => 0.0)"]
        return ["CALL ducklake_merge_adjacent_files('lake', 't')"]
    if kind == "expire":
        versions = ", ".join(str(v) for v in range(expire_below))
        return [
            f"CALL ducklake_expire_snapshots('lake', versions => [{versions}])",
            "CALL ducklake_cleanup_old_files('lake', cleanup_all => true)",
        ]
    raise ValueError(kind)


def duck_sql(number: int, kind: str) -> list[str]:
    """The same change on a plain DuckDB table (kinds that change no rows have none)."""
    text = spark_sql(number, kind) if kind in (*DATA_KINDS, "setup") else []
    # DuckDB's range() names its column `range`: alias it to Spark's `id`
    return [_RANGE.sub(r"range(\1) r(id)", s.replace("main.", "")) for s in text]


def main(argv: list[str]) -> None:
    metadata, data_path, console_log, *steps = argv
    from dbt.adapters.ducklake.lake import Lake
    from dbt.adapters.ducklake.spark.engine import CommitInfo
    from dbt.adapters.ducklake.spark.session import SessionConfig, get_session
    from dbt.adapters.ducklake.spark.sql import LakeSQL

    spark = get_session(
        SessionConfig(
            master="local[2]",
            conf={
                "spark.sql.shuffle.partitions": "2",
                "spark.default.parallelism": "2",
                "spark.ui.enabled": "false",
            },
            console_log=console_log,
        )
    )
    print("ready", flush=True)
    if not steps:
        steps = sys.stdin.readline().split()
    lake = Lake.open(metadata, data_path=data_path)
    for step in steps:
        number_text, kind, *bound = step.split(":")
        number = int(number_text)
        commit = CommitInfo(author="crash-writer", message=f"crash step {number} {kind}")
        sql = LakeSQL(spark, lake, commit=commit)
        print(f"start {number} {kind}", flush=True)
        began = time.perf_counter()
        for text in spark_sql(number, kind, *map(int, bound)):
            sql.execute(text)
        print(f"done {number} {kind} {time.perf_counter() - began:.3f}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
