"""Scripts of several statements, transaction blocks that commit as one snapshot (or
not at all), and DuckLake's layout ALTERs — checked through DuckDB on the same lake."""

from __future__ import annotations

import pytest

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.errors import LakeSQLError, WriteError
from dbt.adapters.ducklake.spark.sql import LakeSQL
from dbt.adapters.ducklake.spark.statements import (
    StatementError,
    parse_layout_alter,
    partition_fields,
    sort_fields,
    split_statements,
)
from tests import duck
from tests.canon import canon_rows
from tests.conftest import Catalog
from tests.spark.test_roundtrip import _spark_rows
from tests.spark_lines import runs_on_this_spark


def test_split_statements_respects_strings_and_comments() -> None:
    script = "SELECT 'a;b' AS x; -- tail; comment\n SELECT 2 /* ; */ ;; \n"
    assert split_statements(script) == ["SELECT 'a;b' AS x", "-- tail; comment\n SELECT 2 /* ; */"]


def test_layout_items_and_errors() -> None:
    assert partition_fields(["region", "year(ts)", "bucket(8, `id`)"]) == [
        ("region", "identity"),
        ("ts", "year"),
        ("id", "bucket(8)"),
    ]
    assert sort_fields(["a DESC NULLS FIRST", "b"]) == [
        ("a", "DESC", "NULLS_FIRST"),
        ("b", "ASC", "NULLS_LAST"),
    ]
    with pytest.raises(StatementError, match=r"accepted: col, year\(col\)"):
        partition_fields(["week(ts)"])
    with pytest.raises(StatementError, match="parenthesised list"):
        parse_layout_alter("ALTER TABLE t SET SORTED BY a")
    assert parse_layout_alter("ALTER TABLE t ADD COLUMN x INT") is None


def test_transaction_block_commits_one_snapshot(spark, catalog: Catalog) -> None:
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    sql = LakeSQL(spark, lake)
    before = lake.latest_snapshot().snapshot_id
    sql.execute(
        """
        BEGIN;
        CREATE SCHEMA shop;
        CREATE TABLE shop.orders AS SELECT id, CAST(id % 4 AS INT) AS region,
            TIMESTAMP '2024-01-01 00:00:00' + make_interval(0, 0, 0, id) AS ts FROM range(0, 40);
        ALTER TABLE shop.orders SET PARTITIONED BY (region);
        ALTER TABLE shop.orders SET SORTED BY (ts DESC);
        COMMENT ON TABLE shop.orders IS 'built in one go';
        COMMIT;
        """
    )
    snaps = lake.snapshots(since=before)
    assert len(snaps) == 1, [s.changes for s in snaps]
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    assert con.execute("SELECT count(*) FROM lake.shop.orders").fetchone() == (40,)
    # a later insert is laid out by the new spec, in DuckDB's own files too
    sql.execute("INSERT INTO shop.orders SELECT id, 9, TIMESTAMP '2025-01-01' FROM range(40, 60)")
    meta = "__ducklake_metadata_lake"
    assert con.execute(
        f"SELECT partition_value FROM {meta}.ducklake_file_partition_value"
    ).fetchall() == [("9",)]
    assert con.execute(
        f"SELECT expression, sort_direction, null_order FROM {meta}.ducklake_sort_expression"
    ).fetchall() == [("ts", "DESC", "NULLS_LAST")]
    sql.execute(
        "ALTER TABLE shop.orders RESET PARTITIONED BY; ALTER TABLE shop.orders RESET SORTED BY"
    )
    assert lake.catalog().partition_spec(lake.catalog().table("shop", "orders").table_id) is None
    con.close()


def test_failed_block_commits_nothing(spark, sqlite_catalog: Catalog) -> None:
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    sql = LakeSQL(spark, lake)
    sql.execute("CREATE TABLE t AS SELECT id FROM range(0, 5)")
    before = lake.latest_snapshot().snapshot_id
    with pytest.raises(LakeSQLError, match="does not exist"):
        sql.execute("BEGIN; INSERT INTO t SELECT 99; DELETE FROM nope WHERE 1 = 1; COMMIT")
    assert not sql.in_transaction
    assert lake.latest_snapshot().snapshot_id == before
    # reading a table the block already changed is refused, not silently stale
    with pytest.raises(LakeSQLError, match="changed earlier in this transaction block"):
        sql.execute("BEGIN; INSERT INTO t SELECT 7; SELECT count(*) FROM t")
    assert lake.latest_snapshot().snapshot_id == before
    # ROLLBACK discards; a block spread over several calls commits at COMMIT
    sql.execute("BEGIN; INSERT INTO t SELECT 8; ROLLBACK")
    sql.execute("BEGIN")
    sql.execute("INSERT INTO t SELECT 10")
    sql.execute("INSERT INTO t SELECT 11")
    assert lake.latest_snapshot().snapshot_id == before
    snap = sql.execute("COMMIT")
    assert snap is not None and snap.snapshot_id == before + 1
    rows = sorted(r.id for r in sql.query("SELECT id FROM t").collect())
    assert rows == [0, 1, 2, 3, 4, 10, 11]
    with pytest.raises(LakeSQLError, match="GRANT is not supported on the lake yet"):
        sql.execute("GRANT SELECT ON t TO bob")
    with pytest.raises(LakeSQLError, match="unknown function ducklake_nope"):
        sql.execute("CALL ducklake_nope('lake')")
    assert lake.latest_snapshot().snapshot_id == before + 1


def test_postgres_text_casts_become_spark_strings(spark, sqlite_catalog: Catalog) -> None:
    sql = LakeSQL(spark, Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path))
    query = "SELECT 1::text AS a, cast(2 AS TEXT) AS b, 'x::text' AS text"
    assert sql.rewrite(query) == "SELECT 1::string AS a, cast(2 AS string) AS b, 'x::text' AS text"
    if runs_on_this_spark(query):
        assert tuple(sql.query(query).first()) == ("1", "2", "x::text")
    else:  # Spark 3.5 has no `::` cast: its parser says so
        with pytest.raises(Exception, match="PARSE_SYNTAX_ERROR"):
            sql.query(query)


def test_create_table_with_layout_is_laid_out_from_its_first_snapshot(
    spark, sqlite_catalog: Catalog
) -> None:
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    sql = LakeSQL(spark, lake)
    before = lake.latest_snapshot().snapshot_id
    sql.execute(
        "/* dbt */ CREATE OR REPLACE TABLE main.events PARTITIONED BY (year(ts), region) "
        "SORTED BY (amount DESC NULLS FIRST) AS SELECT CAST(id % 3 AS INT) AS region, "
        "CAST(id AS DOUBLE) AS amount, TIMESTAMP_NTZ '2023-06-01' + make_interval(id % 2) AS ts "
        "FROM range(0, 1200)"
    )
    assert lake.latest_snapshot().snapshot_id == before + 1
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach)
    meta = "__ducklake_metadata_lake"
    assert con.execute(
        f"SELECT partition_key_index, transform FROM {meta}.ducklake_partition_column "
        "ORDER BY partition_key_index"
    ).fetchall() == [(0, "year"), (1, "identity")]
    values = con.execute(
        f"SELECT data_file_id, list(partition_value ORDER BY partition_key_index) "
        f"FROM {meta}.ducklake_file_partition_value GROUP BY data_file_id"
    ).fetchall()
    assert sorted(v for _, v in values) == sorted(
        [str(y), str(r)] for y in (2023, 2024) for r in range(3)
    )
    assert con.execute(
        f"SELECT expression, sort_direction, null_order FROM {meta}.ducklake_sort_expression"
    ).fetchall() == [("amount", "DESC", "NULLS_FIRST")]
    # each file is written in the table's sort order
    table_dir = f"{sqlite_catalog.data_path}main/events/"
    for file_id, _ in values:
        path = con.execute(
            f"SELECT path FROM {meta}.ducklake_data_file WHERE data_file_id = {file_id}"
        ).fetchone()
        assert path is not None
        amounts = [
            r[0]
            for r in con.execute(
                f"SELECT amount FROM read_parquet('{table_dir}{path[0]}')"
            ).fetchall()
        ]
        assert amounts == sorted(amounts, reverse=True)
    ours = canon_rows(_spark_rows(sql.query("SELECT * FROM events")))
    theirs = canon_rows(con.execute("SELECT * FROM lake.main.events").fetchall())
    assert ours == theirs and len(ours) == 1200
    with pytest.raises(LakeSQLError, match=r"accepted: col, year\(col\)"):
        sql.execute("CREATE TABLE bad PARTITIONED BY (week(ts)) AS SELECT 1 AS ts")
    with pytest.raises(LakeSQLError, match="need AS <query>"):
        sql.execute("CREATE TABLE empty (id INT) PARTITIONED BY (id)")
    con.close()


def test_column_alters_and_dml_in_one_block(spark, catalog: Catalog) -> None:
    """on_schema_change's shape: ADD/DROP COLUMN, then MERGE / DELETE / UPDATE in the same
    block (nested BEGIN … COMMIT joining it) — one snapshot, equal to DuckDB's reading."""
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    sql = LakeSQL(spark, lake)
    sql.execute(
        "CREATE TABLE t AS SELECT CAST(id AS INT) AS id, CAST(id * 10 AS INT) AS old_col, "
        "concat('v', id) AS v FROM range(0, 30)"
    )
    spark.sql(
        "SELECT CAST(id AS INT) AS id, concat('w', id) AS v, CAST(id AS DOUBLE) AS extra "
        "FROM range(25, 35)"
    ).createOrReplaceTempView("incoming")
    before = lake.latest_snapshot().snapshot_id
    snap = sql.execute(
        """
        BEGIN;
        BEGIN; ALTER TABLE t ADD COLUMNS (extra DOUBLE); ALTER TABLE t DROP COLUMN old_col; COMMIT;
        MERGE INTO t USING incoming s ON t.id = s.id
            WHEN MATCHED THEN UPDATE SET v = s.v, extra = s.extra
            WHEN NOT MATCHED THEN INSERT (id, v, extra) VALUES (s.id, s.v, s.extra);
        COMMIT
        """
    )
    assert snap is not None and snap.snapshot_id == before + 1
    assert lake.latest_snapshot().snapshot_id == before + 1
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    theirs = sorted(con.execute("SELECT id, v, extra FROM lake.main.t").fetchall())
    ours = sorted(tuple(r) for r in sql.query("SELECT id, v, extra FROM t").collect())
    expected = [(i, f"v{i}", None) for i in range(25)] + [
        (i, f"w{i}", float(i)) for i in range(25, 35)
    ]
    assert ours == theirs == expected
    assert [d[0] for d in con.execute("DESCRIBE lake.main.t").fetchall()] == ["id", "v", "extra"]
    # a renamed column cannot be changed in the same block (its rows would be misread)
    with pytest.raises(WriteError, match="renamed to 'w' in this transaction"):
        sql.execute("BEGIN; ALTER TABLE t RENAME COLUMN v TO w; UPDATE t SET w = 'x'; COMMIT")
    # DELETE after ADD COLUMN in one block
    sql.execute("BEGIN; ALTER TABLE t ADD COLUMNS (z INT); DELETE FROM t WHERE id < 5; COMMIT")
    assert con.execute("SELECT count(*), count(z) FROM lake.main.t").fetchone() == (30, 0)
    con.close()
