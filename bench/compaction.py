"""Benchmark: reading a table of many small files before and after
`merge_adjacent_files`, measured in the same run and session (the baseline is the same
query on the uncompacted table). Each small file comes from its own snapshot, as a
stream of small incremental appends leaves them. Prints medians, the ratio and the
compaction's own time. `--smoke` runs a small size for CI.

    .venv/bin/python bench/compaction.py            # 500 files of 2,000 rows
    .venv/bin/python bench/compaction.py --smoke    # 60 files
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import functions as F

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import median_seconds, record
from dbt.adapters.ducklake.lake import ColumnSpec, DataFileSpec, FileColumnStats, Lake
from dbt.adapters.ducklake.spark import maintenance
from dbt.adapters.ducklake.spark.scan import scan_table
from dbt.adapters.ducklake.spark.session import SessionConfig, get_session


def build(root: str, files: int, rows: int) -> Lake:
    lake = Lake.open(f"sqlite:///{root}/meta.sqlite", data_path=f"{root}/data")
    with lake.transaction() as tx:
        table = tx.create_table(
            "main", "events", [ColumnSpec("id", "int64"), ColumnSpec("v", "varchar")]
        )
    os.makedirs(table.root, exist_ok=True)
    schema = pa.schema(
        [
            pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"}),
            pa.field("v", pa.string(), metadata={b"PARQUET:field_id": b"2"}),
        ]
    )
    for i in range(files):  # one snapshot per small append
        ids = list(range(i * rows, (i + 1) * rows))
        name = f"ducklake-{i:06d}.parquet"
        pq.write_table(
            pa.table({"id": ids, "v": [f"v{x}" for x in ids]}, schema=schema), table.root + name
        )
        spec = DataFileSpec(
            name,
            rows,
            os.path.getsize(table.root + name),
            None,
            {1: FileColumnStats(rows, 0, str(ids[0]), str(ids[-1]))},
        )
        with lake.transaction() as tx:
            tx.add_data_files(tx.table("main", "events"), [spec])
    return lake


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=500)
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="60 files, 2 repeats (CI)")
    args = parser.parse_args()
    files, repeat = (60, 2) if args.smoke else (args.files, args.repeat)
    spark = get_session(SessionConfig(master="local[2]", conf={"spark.ui.enabled": "false"}))
    spark.sparkContext.setLogLevel("ERROR")
    with tempfile.TemporaryDirectory() as root:
        lake = build(root, files, args.rows)

        def read() -> None:
            df = scan_table(spark, lake, "main", "events")
            df.agg(F.count("*"), F.sum("id"), F.max(F.length("v"))).collect()

        before = median_seconds(read, repeat)
        start = time.perf_counter()
        result = maintenance.merge_adjacent_files(spark, lake, table="events")
        merge = time.perf_counter() - start
        after = median_seconds(read, repeat)
        cat = lake.catalog()
        left = len(cat.data_files(cat.table("main", "events")))
        count = scan_table(spark, lake, "main", "events").count()
        assert count == files * args.rows, count
        assert sum(r.files_processed for r in result) == files and left == 1, (result, left)
    print(f"files={files} rows/file={args.rows} repeat={repeat}")
    print(f"full read, {files} small files (baseline): {before:.3f} s")
    print(f"full read, after merge_adjacent_files ({left} file): {after:.3f} s")
    print(f"ratio after/before: {after / before:.2f}")
    print(f"merge_adjacent_files itself: {merge:.3f} s")
    record("compaction", f"full read after merging {files} files vs before", after / before, "x")


if __name__ == "__main__":
    main()
