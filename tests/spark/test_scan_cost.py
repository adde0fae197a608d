"""Planning a scan of a 2,000-file table: a bounded number of metadata queries and less
than a second of driver time, whatever the number of files."""

from __future__ import annotations

import os
import time

import pyarrow as pa
import pyarrow.parquet as pq
from sqlalchemy import event

from dbt.adapters.ducklake.lake import ColumnSpec, DataFileSpec, FileColumnStats, Lake
from dbt.adapters.ducklake.spark.prune import Predicate
from dbt.adapters.ducklake.spark.scan import ScanMetrics, scan_table
from tests.conftest import Catalog


def _lake_with_files(catalog: Catalog, n: int) -> Lake:
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    with lake.transaction() as tx:
        t = tx.create_table("main", "many", [ColumnSpec("id", "int64")])
    schema = pa.schema([pa.field("id", pa.int64(), metadata={b"PARQUET:field_id": b"1"})])
    specs = []
    for i in range(n):
        name = f"ducklake-{i:05d}.parquet"
        path = os.path.join(t.root, name)
        os.makedirs(t.root, exist_ok=True)
        pq.write_table(pa.table({"id": [i * 10, i * 10 + 9]}, schema=schema), path)
        specs.append(
            DataFileSpec(
                name,
                2,
                os.path.getsize(path),
                None,
                {1: FileColumnStats(2, 0, str(i * 10), str(i * 10 + 9))},
            )
        )
    with lake.transaction() as tx:
        tx.add_data_files(tx.table("main", "many"), specs)
    return lake


def _plan(spark, lake: Lake, predicates=()) -> tuple[int, float, ScanMetrics]:
    count = [0]

    def before(*_args) -> None:
        count[0] += 1

    event.listen(lake.engine, "before_cursor_execute", before)
    metrics = ScanMetrics()
    started = time.perf_counter()
    scan_table(spark, lake, "main", "many", predicates=predicates, metrics=metrics)
    elapsed = time.perf_counter() - started
    event.remove(lake.engine, "before_cursor_execute", before)
    return count[0], elapsed, metrics


def test_planning_a_2000_file_scan_is_bounded(spark, sqlite_catalog: Catalog, tmp_path) -> None:
    small = _lake_with_files(
        Catalog("sqlite", f"sqlite:///{tmp_path}/small.sqlite", "", str(tmp_path / "small")), 20
    )
    big = _lake_with_files(sqlite_catalog, 2000)
    _plan(spark, small)  # warm up the JVM (JIT) once; the claim is about steady planning
    _plan(spark, big)
    small_queries, _, _ = _plan(spark, small)
    queries, elapsed, metrics = _plan(spark, big)
    assert metrics.files_read == 2000
    assert queries == small_queries  # the same queries for 20 and 2,000 files
    # its time is bench/scan_planning.py's to measure (a wall-clock bound here is at the
    # mercy of a loaded machine)
    print(f"planning a scan of 2,000 files: {elapsed:.3f}s, {queries} metadata statements")
    queries, elapsed, metrics = _plan(spark, big, [Predicate("id", "=", 12345)])
    assert metrics.files_read == 1 and queries == small_queries
    assert scan_table(spark, big, "main", "many").count() == 4000
