"""Benchmark: the engine's write and scan paths against plain Spark on the same data.

Data: N rows x 5 columns (`id bigint, s string, n int, d double, dt date`), as in the
performance issue. In one session and run it times
- write: `create_table_as` (one DuckLake snapshot) vs `df.write.parquet` and Spark's
  `CREATE TABLE ... USING parquet AS` (same codec), and the bytes each leaves;
- scan: `select n, count(*), sum(d) ... group by n` over the lake table vs
  `spark.read.parquet` of the very files the table holds;
- scan with 10% of rows deleted through delete files vs the same raw read (no deletes),
  also with deletion vectors, and with every file split between four tasks (both reads).
Each figure is the median of `--repeat` runs after one warm-up. `--smoke` is a small size
for CI, where the figures are printed but fixed job costs dominate them.

    .venv/bin/python bench/engine_paths.py                 # 10,000,000 rows
    .venv/bin/python bench/engine_paths.py --smoke         # 200,000 rows
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from bench.common import bench_session, interleaved, record
from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.engine import create_table_as
from dbt.adapters.ducklake.spark.scan import scan_table
from dbt.adapters.ducklake.spark.sql import LakeSQL


def source(spark: SparkSession, rows: int, partitions: int) -> DataFrame:
    return spark.range(rows, numPartitions=partitions).select(
        F.col("id"),
        F.concat(F.lit("value-"), F.col("id").cast("string")).alias("s"),
        (F.col("id") % 97).cast("int").alias("n"),
        F.rand(7).alias("d"),
        F.date_add(F.lit("2020-01-01").cast("date"), (F.col("id") % 1000).cast("int")).alias("dt"),
    )


def aggregate(df: DataFrame) -> list[tuple[int, int, int]]:
    """97 rows: per n, the count and the sum of d (to 3 places; summing order varies)."""
    rows = df.groupBy("n").agg(F.count("*").alias("c"), F.sum("d").alias("sd")).collect()
    return sorted((r.n, r.c, round(r.sd * 1000)) for r in rows)


def dir_bytes(path: str) -> int:
    return sum(
        os.path.getsize(os.path.join(d, f))
        for d, _, files in os.walk(path)
        for f in files
        if f.endswith(".parquet")
    )


def table_files(lake: Lake, table: str) -> list[str]:
    with lake.catalog().session() as cat:
        return [f.path for f in cat.table_state("main", table).data_files]


def split_files_ratio(
    spark: SparkSession,
    files: list[str],
    lake_scan: Callable[[], object],
    raw_scan: Callable[[], object],
    repeat: int,
) -> float:
    """The scan with deletes against the raw read when Spark splits every file between four
    tasks (DuckDB's 512 MB files are split so): its reader counts positions from the row
    groups of each part's footer."""
    largest = max(os.path.getsize(f.removeprefix("file://")) for f in files)
    key = "spark.sql.files.maxPartitionBytes"
    before = spark.conf.get(key)
    spark.conf.set(key, str(max(largest // 4, 1 << 16)))
    try:
        times = interleaved({"ours": lake_scan, "raw": raw_scan}, repeat)
    finally:
        spark.conf.set(key, before)
    ratio = times["ours"] / times["raw"]
    print(f"scan   10% deleted, files split in 4: {times['ours']:.2f} s, ratio to raw {ratio:.2f}")
    return ratio


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="200,000 rows, 1 repeat (CI)")
    parser.add_argument("--only", choices=["write", "scan"], default=None)
    args = parser.parse_args()
    rows, repeat = (200_000, 1) if args.smoke else (args.rows, args.repeat)
    spark = bench_session()
    df = source(spark, rows, args.partitions)
    root = tempfile.mkdtemp(prefix="bench-engine-")
    try:
        lake = Lake.open(f"sqlite:///{root}/meta.sqlite", data_path=f"{root}/data")
        print(f"rows={rows} partitions={args.partitions} repeat={repeat} spark={spark.version}")
        if args.only in (None, "write"):
            counter = iter(range(1000))

            def ours_write() -> None:
                create_table_as(lake, "main", f"w{next(counter)}", df)

            def raw_write() -> None:
                df.write.mode("overwrite").parquet(f"{root}/raw")

            def raw_row_groups() -> None:  # the row-group size DuckLake files keep
                df.write.mode("overwrite").option(
                    "parquet.block.row.count.limit", "122880"
                ).parquet(f"{root}/raw_rg")

            df.createOrReplaceTempView("bench_source")

            def spark_ctas() -> None:  # what dbt-spark runs for a parquet table model
                spark.sql("DROP TABLE IF EXISTS bench_ctas")
                spark.sql(
                    f"CREATE TABLE bench_ctas USING parquet LOCATION '{root}/ctas{next(counter)}' "
                    "AS SELECT * FROM bench_source"
                )

            times = interleaved(
                {"ours": ours_write, "raw": raw_write, "ctas": spark_ctas, "rg": raw_row_groups},
                repeat,
            )
            ours, raw, ctas, rg = times["ours"], times["raw"], times["ctas"], times["rg"]
            spark.sql("DROP TABLE IF EXISTS bench_ctas")
            ours_bytes = sum(os.path.getsize(p) for p in table_files(lake, "w0"))
            raw_bytes = dir_bytes(f"{root}/raw")
            print(f"write  ours create_table_as {ours:7.2f} s   raw df.write.parquet {raw:7.2f} s")
            print(f"write  Spark CREATE TABLE ... USING parquet AS {ctas:7.2f} s")
            print(f"write  raw with 122,880-row row groups (DuckDB's) {rg:7.2f} s")
            print(
                f"write  ratio time {ours / raw:.2f} (raw), {ours / ctas:.2f} (Spark CTAS)   "
                f"bytes {ours_bytes / raw_bytes:.2f}"
            )
            size = f"{rows:,} rows"
            record(
                "write", f"CREATE TABLE AS {size} vs df.write.parquet", ours / raw, "x", "<= 1.10"
            )
            record("write", f"CREATE TABLE AS {size} vs Spark CTAS", ours / ctas, "x", "<= 1.10")
            record("write", "data bytes vs Spark's", ours_bytes / raw_bytes, "x", "<= 1.05")
            record("write", "raw write with DuckDB's row-group size vs raw", rg / raw, "x")
        if args.only in (None, "scan"):
            create_table_as(lake, "main", "t", df)
            files = table_files(lake, "t")
            raw_df = spark.read.parquet(*files)
            expected = aggregate(raw_df)
            assert aggregate(scan_table(spark, lake, "main", "t")) == expected

            def lake_scan() -> object:
                return aggregate(scan_table(spark, lake, "main", "t"))

            def raw_scan() -> object:
                return aggregate(spark.read.parquet(*files))

            times = interleaved({"ours": lake_scan, "raw": raw_scan}, repeat)
            ours, raw = times["ours"], times["raw"]
            scan_ratio = ours / raw  # `raw` is measured again below, beside the deletes
            print(f"scan   ours scan_table     {ours:7.2f} s   raw spark.read.parquet {raw:7.2f} s")
            print(f"scan   ratio {scan_ratio:.2f}")
            LakeSQL(spark, lake).execute("DELETE FROM main.t WHERE id % 10 = 3")
            # the same table and delete with deletion vectors (puffin) for delete files
            with lake.transaction() as tx:
                tx.create_schema("dv")
                tx.set_option("write_deletion_vectors", "true", schema="dv")
            create_table_as(lake, "dv", "t", df)
            LakeSQL(spark, lake).execute("DELETE FROM dv.t WHERE id % 10 = 3")

            def vector_scan() -> object:
                return aggregate(scan_table(spark, lake, "dv", "t"))

            assert vector_scan() == lake_scan()
            times = interleaved({"ours": lake_scan, "dv": vector_scan, "raw": raw_scan}, repeat)
            deleted, vectors, raw = times["ours"], times["dv"], times["raw"]
            print(f"scan   10% deleted         {deleted:7.2f} s   ratio to raw {deleted / raw:.2f}")
            print(
                f"scan   10% deleted, deletion vectors {vectors:7.2f} s   "
                f"ratio to Parquet delete files {vectors / deleted:.2f}, to raw {vectors / raw:.2f}"
            )

            # the raw read that also produces `_metadata.row_index`, no row tested yet: the
            # floor of a filter on positions Spark's reader fills (what reads of split files
            # or with pushed filters pay; a whole unfiltered file's positions are counted)
            def raw_positions() -> object:
                with_pos = spark.read.parquet(*files).where(F.col("_metadata.row_index") >= 0)
                return aggregate(with_pos)

            times = interleaved({"positions": raw_positions, "raw": raw_scan}, repeat)
            floor = times["positions"] / times["raw"]
            print(
                f"scan   floor: raw read with row positions {times['positions']:.2f} s = "
                f"{floor:.2f} of raw"
            )
            split = split_files_ratio(spark, files, lake_scan, raw_scan, repeat)
            record(
                "scan",
                f"group-by over {rows:,} rows vs spark.read.parquet",
                scan_ratio,
                "x",
                "<= 1.10",
            )
            record(
                "scan",
                "same, 10% of rows deleted, vs the no-delete raw read",
                deleted / raw,
                "x",
                "<= 1.30",
            )
            # the goal for deletion vectors is the one for delete files: <= 1.3x
            # the no-delete read (and <= 1.0x Iceberg, in bench/peers.py)
            record(
                "scan",
                "same, 10% deleted as deletion vectors, vs the no-delete raw read",
                vectors / raw,
                "x",
                "<= 1.30",
            )
            record(
                "scan",
                "10% deleted: deletion vectors vs Parquet delete files",
                vectors / deleted,
                "x",
            )
            record(
                "scan",
                "floor with deletes (the raw read with row positions) vs raw",
                floor,
                "x",
            )
            record("scan", "10% deleted, files split in 4 tasks, vs raw split alike", split, "x")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
