"""DuckLake features DuckDB 1.5.5 writes, one small table each: the engine reads each
exactly as DuckDB reads it (EXCEPT ALL both ways, at every snapshot), on both catalogs.
A feature that cannot be read the same is refused naming it (see test_encrypted_lakes.py
for the refusals' form)."""

from __future__ import annotations

from pathlib import Path

import duckdb

from tests import duck
from tests.conftest import Catalog
from tests.spark.every_snapshot import assert_same_in_duckdb


def _duckdb(catalog: Catalog) -> duckdb.DuckDBPyConnection:
    con = duck.connect()
    options = "DATA_INLINING_ROW_LIMIT 0"
    duck.attach(con, catalog.duckdb_attach, data_path=catalog.data_path, options=options)
    con.execute("USE lake")
    return con


def test_hive_partitioned_added_files_read_their_partition_columns(
    spark, catalog: Catalog, tmp_path: Path
) -> None:
    """`ducklake_add_data_files(..., hive_partitioning => true)`: the partition columns
    live in the files' directories (`year=2021/cat=x%2Fy/`), not in the files; their
    name mapping says `is_partition`. Values with escapes, NULL partitions, a DATE."""
    con = _duckdb(catalog)
    source = tmp_path / "hive"
    con.execute(
        "COPY (SELECT range AS id, 2020 + range % 3 AS year, "
        "CASE range % 4 WHEN 0 THEN 'a b' WHEN 1 THEN 'x/y' WHEN 2 THEN NULL ELSE 'p=q' END "
        "AS cat, DATE '2024-01-01' + (range % 2)::INTEGER AS d, range * 1.5::DOUBLE AS v "
        f"FROM range(240)) TO '{source}' (FORMAT parquet, PARTITION_BY (year, cat, d))"
    )
    con.execute("CREATE TABLE t (id BIGINT, year INTEGER, cat VARCHAR, d DATE, v DOUBLE)")
    con.execute(
        f"CALL ducklake_add_data_files('lake', 't', '{source}/**/*.parquet', "
        "hive_partitioning => true)"
    )
    mapped = con.execute(
        "SELECT source_name FROM __ducklake_metadata_lake.ducklake_name_mapping "
        "WHERE is_partition ORDER BY 1"
    ).fetchall()
    assert mapped == [("cat",), ("d",), ("year",)], mapped
    # what DuckDB reads back: the partition values, NULL where the directory says so
    assert con.execute("SELECT count(DISTINCT year), count(cat), count(d) FROM t").fetchone() == (
        3,
        180,
        240,
    )
    counts = assert_same_in_duckdb(spark, catalog.metadata, con, "t", tmp_path / "ours")
    assert counts[max(counts)] == 240
    con.close()
