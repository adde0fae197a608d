"""Benchmark: a 1% MERGE (half updates, half inserts) into a table of many files.

Merge-on-read (`MERGE INTO` through the engine: delete files for touched files, new
files for changed rows) against the copy-on-write baseline a plain Spark user would run
for the same result — the merged table computed by a full outer join and written again
in full (`CREATE OR REPLACE TABLE ... AS`), measured in the same run and session. Prints
times, the ratio and the bytes each approach writes. `--smoke` runs a small size for CI.

    .venv/bin/python bench/merge.py            # 1,000,000 rows, 20 files
    .venv/bin/python bench/merge.py --smoke    # 100,000 rows, 20 files
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import sqlalchemy as sa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.engine import create_table_as
from dbt.adapters.ducklake.spark.session import SessionConfig, get_session
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--files", type=int, default=20)
    parser.add_argument("--smoke", action="store_true", help="100,000 rows (CI)")
    args = parser.parse_args()
    rows = 100_000 if args.smoke else args.rows
    spark = get_session(
        SessionConfig(
            master="local[2]",
            conf={"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "4"},
        )
    )
    spark.sparkContext.setLogLevel("ERROR")
    half = rows // 200
    step = rows // half
    spark.sql(
        f"SELECT id * {step} AS id, 'changed' AS v, -1 AS n FROM range({half}) "
        f"UNION ALL SELECT {rows} + id, 'new', 1 FROM range({half})"
    ).createOrReplaceTempView("changes")
    with tempfile.TemporaryDirectory() as root:
        lake = Lake.open(f"sqlite:///{root}/meta.sqlite", data_path=f"{root}/data")
        sql = LakeSQL(spark, lake)
        table = spark.sql(
            f"SELECT id, concat('value-', id) AS v, CAST(id % 97 AS INT) AS n FROM range({rows})"
        ).repartitionByRange(args.files, "id")
        for name in ("mor", "cow"):
            create_table_as(lake, "main", name, table)
        # warm-up on a small table (JVM JIT, Python workers), not part of the figures
        create_table_as(lake, "main", "warm", table.limit(5000).repartition(2))
        sql.execute(MERGE.format(t="warm"))
        sql.execute(COPY_ON_WRITE.format(t="warm"))
        table_bytes = written_bytes(lake, lake.latest_snapshot().snapshot_id - 3)

        start = time.perf_counter()
        mor_snap = sql.execute(MERGE.format(t="mor"))
        mor = time.perf_counter() - start
        start = time.perf_counter()
        cow_snap = sql.execute(COPY_ON_WRITE.format(t="cow"))
        cow = time.perf_counter() - start
        assert mor_snap is not None and cow_snap is not None
        counts = [sql.query(f"SELECT count(*) AS c FROM {t}").first() for t in ("mor", "cow")]
        assert counts[0] == counts[1], counts
        mor_bytes = written_bytes(lake, mor_snap.snapshot_id)
        cow_bytes = written_bytes(lake, cow_snap.snapshot_id)
    print(f"rows={rows} files={args.files} changed={2 * half} (1%)")
    print(f"MERGE INTO, merge-on-read:         {mor:.2f} s, wrote {mor_bytes:,} bytes")
    print(f"baseline copy-on-write rewrite:    {cow:.2f} s, wrote {cow_bytes:,} bytes")
    print(f"ratio time ours/baseline: {mor / cow:.2f}")
    print(
        f"bytes written / table bytes: ours {mor_bytes / table_bytes:.3f}, "
        f"baseline {cow_bytes / table_bytes:.3f}"
    )


if __name__ == "__main__":
    main()
