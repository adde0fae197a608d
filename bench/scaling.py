"""Benchmark: how write and MERGE times grow with the table.

For each size (1M and 10M rows; 50M with `--large`) it times, in one session:
- write: CREATE TABLE AS of N rows x 5 columns (the data of bench/engine_paths.py)
  beside raw `df.write.parquet` of the same rows, and the seconds per million rows;
  a linear write keeps that figure flat;
- MERGE: 10,000 changed keys (half updates, half inserts) packed in one key range of a
  table of N rows range-partitioned into files of 250,000 rows. The files it touches stay
  one, so its time should stay flat while the table grows; the files the scan kept are
  printed beside it.
`--smoke` runs 100k and 300k rows for CI.

    .venv/bin/python bench/scaling.py            # 1M, 10M
    .venv/bin/python bench/scaling.py --large    # 1M, 10M, 50M
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import bench_session, record, watch_pruning
from bench.engine_paths import source
from bench.merge import MERGE
from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.engine import create_table_as
from dbt.adapters.ducklake.spark.sql import LakeSQL

ROWS_PER_FILE = 250_000
CHANGED = 10_000


def timed(fn, *args, **kwargs) -> float:  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    fn(*args, **kwargs)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--large", action="store_true", help="add 50,000,000 rows")
    parser.add_argument("--smoke", action="store_true", help="100k and 300k rows (CI)")
    args = parser.parse_args()
    if args.smoke:
        sizes, per_file, changed = [100_000, 300_000], 50_000, 1_000
    else:
        sizes = [1_000_000, 10_000_000] + ([50_000_000] if args.large else [])
        per_file, changed = ROWS_PER_FILE, CHANGED
    spark = bench_session()
    pruning = watch_pruning()
    root = tempfile.mkdtemp(prefix="bench-scaling-")
    try:
        lake = Lake.open(f"sqlite:///{root}/meta.sqlite", data_path=f"{root}/data")
        sql = LakeSQL(spark, lake)
        # warm-up: JIT, Python workers, the first files of the session
        warm = source(spark, sizes[0], 8)
        create_table_as(lake, "main", "warm", warm)
        warm.write.mode("overwrite").parquet(f"{root}/raw")
        # more rows than the driver's small-change path takes, so the warm-up runs the
        # MERGE path the timed ones do (with 100 it ran none of it)
        spark.sql("SELECT id, 'x' AS v, 1 AS n FROM range(5000)").createOrReplaceTempView("changes")
        sql.execute(
            "MERGE INTO warm USING changes s ON warm.id = s.id "
            "WHEN MATCHED THEN UPDATE SET s = s.v, n = s.n WHEN NOT MATCHED THEN INSERT "
            "(id, s, n) VALUES (s.id, s.v, s.n)"
        )
        print(
            f"{'rows':>12} {'write s':>8} {'raw s':>8} {'ratio':>6} {'s/M rows':>9} "
            f"{'merge s':>8} {'files read':>12}"
        )
        first_rate = first_merge = 0.0
        for rows in sizes:
            df = source(spark, rows, max(8, rows // 1_250_000))
            raw = timed(df.write.mode("overwrite").parquet, f"{root}/raw")
            ours = timed(create_table_as, lake, "main", "w", df, replace=True)
            rate = ours / (rows / 1e6)
            files = max(1, rows // per_file)
            table = spark.sql(
                f"SELECT id * 2 AS id, concat('value-', id) AS v, CAST(id % 97 AS INT) AS n "
                f"FROM range({rows})"
            ).repartitionByRange(files, "id")
            create_table_as(lake, "main", "m", table, replace=True)
            half = changed // 2
            spark.sql(
                f"SELECT id * 2 AS id, 'changed' AS v, -1 AS n FROM range({half}) "
                f"UNION ALL SELECT id * 2 + 1, 'new', 1 FROM range({half})"
            ).createOrReplaceTempView("changes")
            pruning.lines.clear()
            merge = timed(sql.execute, MERGE.format(t="m"))
            found = re.search(r"(\d+) of (\d+) data files pruned", " ".join(pruning.lines))
            kept = f"{int(found[2]) - int(found[1])} of {found[2]}" if found else "all"
            print(
                f"{rows:>12,} {ours:8.2f} {raw:8.2f} {ours / raw:6.2f} {rate:9.3f} "
                f"{merge:8.2f} {kept:>12}"
            )
            label = f"{rows / 1e6:g}M rows"
            record("scaling", f"write, {label}", ours, "s")
            record("scaling", f"write per million rows, {label}", rate, "s")
            record("scaling", f"MERGE {changed:,} keys in 1 of {files} files, {label}", merge, "s")
            if rows == sizes[0]:
                first_rate, first_merge = rate, merge
        print(f"write s/M rows, largest vs smallest: {rate / first_rate:.2f} (1.0 = linear)")
        print(f"MERGE time, largest vs smallest table: {merge / first_merge:.2f} (1.0 = flat)")
        record("scaling", "write s/M rows, largest vs smallest size", rate / first_rate, "x")
        record("scaling", "MERGE time, largest vs smallest table", merge / first_merge, "x")
        spark.sql("DROP VIEW IF EXISTS changes")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
