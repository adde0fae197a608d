"""Benchmark: driver time to plan a scan of a many-file DuckLake table.

Compares `scan_table` (catalog read + pruning + one Parquet scan over an exact file list)
with the baseline a plain PySpark user would write for the same files,
`spark.read.schema(...).parquet(*paths)`, measured in the same run and session.
Prints medians and the ratio. `--smoke` runs a small size for CI.

    .venv/bin/python bench/scan_planning.py            # 10,000 files
    .venv/bin/python bench/scan_planning.py --smoke    # 200 files
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import types as T

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import interleaved, record
from dbt.adapters.ducklake.lake import ColumnSpec, DataFileSpec, FileColumnStats, Lake
from dbt.adapters.ducklake.spark.scan import scan_table
from dbt.adapters.ducklake.spark.session import SessionConfig, get_session


def build(root: str, files: int) -> tuple[Lake, list[str]]:
    lake = Lake.open(f"sqlite:///{root}/meta.sqlite", data_path=f"{root}/data")
    with lake.transaction() as tx:
        table = tx.create_table("main", "events", [ColumnSpec("id", "int64")])
    os.makedirs(table.root, exist_ok=True)
    schema = pa.schema([pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"})])
    specs, paths = [], []
    for i in range(files):
        name = f"ducklake-{i:06d}.parquet"
        pq.write_table(pa.table({"id": [i * 10, i * 10 + 9]}, schema=schema), table.root + name)
        paths.append(table.root + name)
        specs.append(
            DataFileSpec(
                name,
                2,
                os.path.getsize(table.root + name),
                None,
                {1: FileColumnStats(2, 0, str(i * 10), str(i * 10 + 9))},
            )
        )
    with lake.transaction() as tx:
        tx.add_data_files(tx.table("main", "events"), specs)
    return lake, paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--smoke", action="store_true", help="200 files, 2 repeats (CI)")
    args = parser.parse_args()
    files, repeat = (200, 2) if args.smoke else (args.files, args.repeat)
    spark = get_session(SessionConfig(master="local[2]", conf={"spark.ui.enabled": "false"}))
    spark.sparkContext.setLogLevel("ERROR")
    with tempfile.TemporaryDirectory() as root:
        lake, paths = build(root, files)
        read_schema = T.StructType(
            [T.StructField("id", T.LongType(), True, {"parquet.field.id": 1})]
        )
        times = interleaved(
            {
                "ours": lambda: scan_table(spark, lake, "main", "events"),
                "baseline": lambda: spark.read.schema(read_schema).parquet(*paths),
            },
            repeat,
        )
        ours, baseline = times["ours"], times["baseline"]
        count = scan_table(spark, lake, "main", "events").count()
        assert count == 2 * files, count
    print(f"files={files} repeat={repeat}")
    print(f"scan_table planning (catalog + pruning + scan): {ours:.3f} s")
    print(f"baseline spark.read.parquet(*paths):            {baseline:.3f} s")
    print(f"ratio ours/baseline: {ours / baseline:.2f}")
    record("scan planning", f"driver time, {files:,} files", ours, "s", "< 1")
    record("scan planning", "vs spark.read.parquet(*paths)", ours / baseline, "x")


if __name__ == "__main__":
    main()
