"""Benchmark: a 1% MERGE (half updates, half inserts) into a table of many files.

Merge-on-read (`MERGE INTO` through the engine: delete files for touched files, new
files for changed rows) against the copy-on-write baseline a plain Spark user would run
for the same result — the merged table computed by a full outer join and written again
in full (`CREATE OR REPLACE TABLE ... AS`), measured in the same run and session, once
with the changed keys spread over the table and once packed inside one file (the table
is range-partitioned by key, so file stats can rule the other files out). Prints times,
the ratio, the files the target scan kept and the bytes each approach writes; then a 1%
DELETE and a 1% UPDATE, spread and clustered, against plain Spark rewriting the files.
`--smoke` runs a small size for CI.

    .venv/bin/python bench/merge.py            # 10,000,000 rows, 40 files
    .venv/bin/python bench/merge.py --smoke    # 100,000 rows, 40 files
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time

import sqlalchemy as sa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import bench_session, record, watch_pruning
from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.engine import create_table_as
from dbt.adapters.ducklake.spark.sql import LakeSQL

MERGE = (
    "MERGE INTO {t} USING changes s ON {t}.id = s.id "
    "WHEN MATCHED THEN UPDATE SET v = s.v, n = s.n WHEN NOT MATCHED THEN INSERT *"
)
COPY_ON_WRITE = """
    CREATE OR REPLACE TABLE {t} AS
    SELECT coalesce(s.id, t.id) AS id, CASE WHEN s.id IS NULL THEN t.v ELSE s.v END AS v,
           CASE WHEN s.id IS NULL THEN t.n ELSE s.n END AS n
    FROM {t} t FULL OUTER JOIN changes s ON t.id = s.id
"""


def written_bytes(lake: Lake, snapshot_id: int) -> int:
    with lake.connect() as conn:
        return int(
            conn.execute(
                sa.text(
                    "SELECT coalesce(sum(file_size_bytes), 0) FROM ("
                    " SELECT file_size_bytes FROM ducklake_data_file WHERE begin_snapshot = :s"
                    " UNION ALL"
                    " SELECT file_size_bytes FROM ducklake_delete_file WHERE begin_snapshot = :s)"
                ),
                {"s": snapshot_id},
            ).scalar_one()
        )


def changes(spark, rows: int, clustered: bool) -> None:  # type: ignore[no-untyped-def]
    """1% of the table: half updates of existing (even) ids, half inserts of new (odd)
    ids, spread over the whole key range or packed at its start (inside one file)."""
    half = rows // 200
    step = 1 if clustered else rows // half
    spark.sql(
        f"SELECT id * {step} * 2 AS id, 'changed' AS v, -1 AS n FROM range({half}) "
        f"UNION ALL SELECT id * {step} * 2 + 1, 'new', 1 FROM range({half})"
    ).createOrReplaceTempView("changes")


def raw_rewrite(spark, lake: Lake, root: str) -> float:  # type: ignore[no-untyped-def]
    """Plain Spark's copy-on-write: the same Parquet files read, full-outer-joined with
    the changes and written again with df.write.parquet (no table format at all)."""
    with lake.catalog().session() as cat:
        files = [f.path for f in cat.table_state("main", "cow").data_files]
    start = time.perf_counter()
    table = spark.read.parquet(*files).alias("t")
    merged = table.join(spark.table("changes").alias("s"), "id", "full_outer").selectExpr(
        "id",
        "CASE WHEN s.v IS NULL THEN t.v ELSE s.v END AS v",
        "CASE WHEN s.v IS NULL THEN t.n ELSE s.n END AS n",
    )
    merged.write.mode("overwrite").parquet(f"{root}/raw_rewrite")
    return time.perf_counter() - start


def dml_figures(spark, sql: LakeSQL, lake: Lake, root: str, rows: int, table) -> None:  # type: ignore[no-untyped-def]
    """1% DELETE and 1% UPDATE, spread and clustered, against plain Spark rewriting the
    table's files with the same change (read, filter or project, df.write.parquet)."""
    spread, clustered = "id % 200 = 0", f"id < {rows // 50}"
    for kind, where in (("spread keys", spread), ("clustered keys", clustered)):
        for verb, statement in (
            ("DELETE", "DELETE FROM dml WHERE {w}"),
            ("UPDATE", "UPDATE dml SET v = 'updated' WHERE {w}"),
        ):
            create_table_as(lake, "main", "dml", table, replace=True)
            with lake.catalog().session() as cat:
                files = [f.path for f in cat.table_state("main", "dml").data_files]
            start = time.perf_counter()
            sql.execute(statement.format(w=where))
            ours = time.perf_counter() - start
            start = time.perf_counter()
            data = spark.read.parquet(*files)
            if verb == "DELETE":
                data = data.where(f"NOT ({where})")
            else:
                data = data.selectExpr(
                    "id", f"CASE WHEN {where} THEN 'updated' ELSE v END AS v", "n"
                )
            data.write.mode("overwrite").parquet(f"{root}/raw_dml")
            raw = time.perf_counter() - start
            print(
                f"[{kind}] 1% {verb}: {ours:.2f} s, raw Spark rewrite {raw:.2f} s, "
                f"ratio {ours / raw:.2f}"
            )
            goal = "<= 0.10" if kind == "clustered keys" else "<= 0.25"
            record("DML", f"1% {verb}, {kind}, vs raw rewrite", ours / raw, "x", goal)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3, help="MERGE timings (median)")
    parser.add_argument("--smoke", action="store_true", help="100,000 rows, 1 timing (CI)")
    args = parser.parse_args()
    rows, repeat = (100_000, 1) if args.smoke else (args.rows, args.repeat)
    spark = bench_session()
    pruning = watch_pruning()
    print(f"rows={rows} files={args.files} changed={rows // 100} (1%) repeat={repeat}")
    with tempfile.TemporaryDirectory() as root:
        lake = Lake.open(f"sqlite:///{root}/meta.sqlite", data_path=f"{root}/data")
        sql = LakeSQL(spark, lake)
        table = spark.sql(
            f"SELECT id * 2 AS id, concat('value-', id) AS v, CAST(id % 97 AS INT) AS n "
            f"FROM range({rows})"
        ).repartitionByRange(args.files, "id")
        # warm-up on a small table (JVM JIT, Python workers), not part of the figures
        changes(spark, rows, clustered=False)
        create_table_as(lake, "main", "warm", table.limit(5000).repartition(2))
        sql.execute(MERGE.format(t="warm"))
        sql.execute(COPY_ON_WRITE.format(t="warm"))
        for clustered in (False, True):
            changes(spark, rows, clustered)
            for name in ("mor", "cow"):
                create_table_as(lake, "main", name, table, replace=True)
            table_bytes = written_bytes(lake, lake.latest_snapshot().snapshot_id - 1)
            pruning.lines.clear()
            start = time.perf_counter()
            mor_snap = sql.execute(MERGE.format(t="mor"))
            mor = time.perf_counter() - start
            scanned = pruning.lines[-1] if pruning.lines else "no file pruned"
            start = time.perf_counter()
            cow_snap = sql.execute(COPY_ON_WRITE.format(t="cow"))
            cow = time.perf_counter() - start
            raw = raw_rewrite(spark, lake, root)
            # more rounds, raw and ours taking turns, each MERGE into a fresh copy
            mors, raws = [mor], [raw]
            for _ in range(repeat - 1):
                raws.append(raw_rewrite(spark, lake, root))
                create_table_as(lake, "main", "again", table, replace=True)
                start = time.perf_counter()
                sql.execute(MERGE.format(t="again"))
                mors.append(time.perf_counter() - start)
            mor, raw = statistics.median(mors), statistics.median(raws)
            assert mor_snap is not None and cow_snap is not None
            counts = [sql.query(f"SELECT count(*) AS c FROM {t}").first() for t in ("mor", "cow")]
            assert counts[0] == counts[1], counts
            mor_bytes = written_bytes(lake, mor_snap.snapshot_id)
            cow_bytes = written_bytes(lake, cow_snap.snapshot_id)
            kind = "clustered keys" if clustered else "spread keys"
            print(f"[{kind}] target scan: {scanned}")
            print(
                f"[{kind}] MERGE INTO, merge-on-read:      {mor:.2f} s, wrote {mor_bytes:,} bytes"
            )
            print(
                f"[{kind}] baseline copy-on-write rewrite: {cow:.2f} s, wrote {cow_bytes:,} bytes"
            )
            print(f"[{kind}] raw Spark rewrite (read, full outer join, write): {raw:.2f} s")
            print(f"[{kind}] ratio time ours/baseline: {mor / cow:.2f}, ours/raw: {mor / raw:.2f}")
            print(
                f"[{kind}] bytes written / table bytes: ours {mor_bytes / table_bytes:.3f}, "
                f"baseline {cow_bytes / table_bytes:.3f}"
            )
            goal = "<= 0.10" if clustered else "<= 0.25"
            record("MERGE", f"1% into {rows:,} rows, {kind}, vs raw rewrite", mor / raw, "x", goal)
            record(
                "MERGE",
                f"{kind}: bytes written / table bytes",
                mor_bytes / table_bytes,
                "x",
                "<= 0.02",
            )
            found = re.search(r"(\d+) of (\d+) data files pruned", scanned)
            pruned, total = (int(found[1]), int(found[2])) if found else (0, args.files)
            record("MERGE", f"{kind}: target files read, of {total}", total - pruned, "files")
        dml_figures(spark, sql, lake, root, rows, table)


if __name__ == "__main__":
    main()
