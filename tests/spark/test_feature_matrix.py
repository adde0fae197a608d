"""DuckLake features DuckDB 1.5.5 writes, one small table each: the engine reads each
exactly as DuckDB reads it (EXCEPT ALL both ways, at every snapshot), on both catalogs.
A feature that cannot be read the same is refused naming it (see test_encrypted_lakes.py
for the refusals' form)."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pytest

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.errors import spark_error_text
from dbt.adapters.ducklake.spark.sql import LakeSQL
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


def test_struct_fields_added_with_a_default_read_it_in_older_files(
    spark, catalog: Catalog, tmp_path: Path
) -> None:
    """`ALTER TABLE t ADD COLUMN s.c INTEGER DEFAULT 5`: rows of files written before
    read `s.c = 5` (a NULL struct stays NULL), at every snapshot; also a field of a
    struct inside the struct."""
    con = _duckdb(catalog)
    con.execute("CREATE TABLE t (id INTEGER, s STRUCT(a INTEGER, deep STRUCT(x VARCHAR)))")
    con.execute(
        "INSERT INTO t SELECT i, CASE WHEN i % 5 = 0 THEN NULL "
        "ELSE {'a': i, 'deep': {'x': 'v' || i}} END FROM range(20) r(i)"
    )
    con.execute("ALTER TABLE t ADD COLUMN s.c INTEGER DEFAULT 5")
    con.execute(
        "INSERT INTO t SELECT i, {'a': i, 'deep': {'x': 'w'}, 'c': 7} FROM range(20, 23) r(i)"
    )
    con.execute("ALTER TABLE t ADD COLUMN s.deep.y VARCHAR DEFAULT 'dflt'")
    con.execute("INSERT INTO t VALUES (30, {'a': 30, 'deep': {'x': 'z', 'y': 'given'}, 'c': NULL})")
    assert con.execute("SELECT s.c, s.deep.y FROM t WHERE id = 1").fetchone() == (5, "dflt")
    assert con.execute("SELECT s FROM t WHERE id = 0").fetchone() == (None,)
    counts = assert_same_in_duckdb(spark, catalog.metadata, con, "t", tmp_path / "ours")
    assert counts[max(counts)] == 24
    con.close()


def test_fields_added_with_a_default_inside_lists_and_maps(
    spark, catalog: Catalog, tmp_path: Path
) -> None:
    """`ADD COLUMN l.element.c … DEFAULT 5` and `m.value.c … DEFAULT 6`: every element
    and map value of older files reads the default; NULL and empty containers stay."""
    con = _duckdb(catalog)
    con.execute(
        "CREATE TABLE t (id INTEGER, l STRUCT(a INTEGER)[], m MAP(VARCHAR, STRUCT(a INTEGER)))"
    )
    con.execute(
        "INSERT INTO t SELECT i, CASE i % 4 WHEN 0 THEN NULL WHEN 1 THEN [] "
        "ELSE [{'a': i}, NULL, {'a': -i}] END, "
        "CASE WHEN i % 3 = 0 THEN NULL ELSE MAP {'k' || i: {'a': i}, 'z': NULL} END "
        "FROM range(12) r(i)"
    )
    con.execute("ALTER TABLE t ADD COLUMN l.element.c INTEGER DEFAULT 5")
    con.execute("ALTER TABLE t ADD COLUMN m.value.c INTEGER DEFAULT 6")
    con.execute("INSERT INTO t VALUES (20, [{'a': 1, 'c': 9}], MAP {'n': {'a': 2, 'c': 8}})")
    assert con.execute("SELECT l[1].c, m['k2'].c FROM t WHERE id = 2").fetchone() == (5, 6)
    counts = assert_same_in_duckdb(spark, catalog.metadata, con, "t", tmp_path / "ours")
    assert counts[max(counts)] == 13
    con.close()


def test_brotli_files_read_as_duckdb_reads_them(spark, catalog: Catalog, tmp_path: Path) -> None:
    """Hadoop ships no Brotli codec, so Spark failed a table DuckDB wrote with
    `parquet_compression 'brotli'` (ClassNotFoundException deep in the Java causes); the
    adapter's JVM classes carry one (jvm/, Google's pure-Java decoder): the table reads
    as DuckDB reads it, strings, nested values and deletes included."""
    con = _duckdb(catalog)
    con.execute("CALL ducklake_set_option('lake', 'parquet_compression', 'brotli')")
    con.execute(
        "CREATE TABLE t AS SELECT range AS id, 'text ' || range AS s, "
        "[range, NULL] AS l, {'a': range * 1.5} AS st FROM range(5000)"
    )
    con.execute("DELETE FROM t WHERE id % 7 = 0")
    codecs = con.execute(
        f"SELECT DISTINCT compression FROM parquet_metadata('{catalog.data_path}**/*.parquet') "
        "WHERE path_in_schema = 'id'"
    ).fetchall()
    assert codecs == [("BROTLI",)], codecs
    counts = assert_same_in_duckdb(spark, catalog.metadata, con, "t", tmp_path / "ours")
    assert counts[max(counts)] == 5000 - 715
    con.close()


def test_hugeint_beyond_decimal_38_fails_naming_the_column(spark, sqlite_catalog: Catalog) -> None:
    """DuckDB keeps HUGEINT as DOUBLE in Parquet: a value near 1.5e38 has no Spark
    DECIMAL(38, 0); the read fails naming the column and the type (it used to say only
    NUMERIC_VALUE_OUT_OF_RANGE), and values that fit read as DuckDB reads them."""
    con = _duckdb(sqlite_catalog)
    con.execute("CREATE TABLE t (id INTEGER, h HUGEINT)")
    con.execute("INSERT INTO t VALUES (1, 12345), (2, -4503599627370496)")
    con.execute(
        "CREATE TABLE big AS SELECT 1 AS id, 150000000000000000000000000000000000000::HUGEINT AS h"
    )
    con.close()
    lake = Lake.open(sqlite_catalog.metadata)
    sql = LakeSQL(spark, lake)
    rows = sorted(tuple(r) for r in sql.execute("SELECT id, h FROM main.t").collect())
    assert [(i, int(h)) for i, h in rows] == [(1, 12345), (2, -4503599627370496)]
    with pytest.raises(Exception) as failed:
        sql.execute("SELECT sum(h) FROM main.big").collect()
    text = spark_error_text(failed.value)
    assert "column 'h': HUGEINT value 1.5E38 does not fit Spark's DECIMAL(38, 0)" in text, text
    lake.close()
