"""information_schema, SHOW and DESCRIBE answered from DuckLake metadata: the
information_schema views equal DuckDB's over the same lake (DuckDB is the oracle), and
SHOW / DESCRIBE have Spark's output columns."""

from __future__ import annotations

from typing import Any

import pytest

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.catalog_queries import spark_pattern
from dbt.adapters.ducklake.spark.errors import LakeSQLError
from dbt.adapters.ducklake.spark.sql import LakeSQL
from tests import duck
from tests.conftest import Catalog

# written by DuckDB: every kind of column, comments, two schemas, views
SETUP = [
    "CREATE SCHEMA lake.shop",
    "CREATE SCHEMA lake.audit",
    "CREATE TABLE lake.shop.orders (id BIGINT, amount DECIMAL(10,2), note VARCHAR, "
    "small SMALLINT, tiny TINYINT, f FLOAT, d DOUBLE, ok BOOLEAN, day DATE, "
    "ts TIMESTAMP, tstz TIMESTAMPTZ, tags VARCHAR[], attrs MAP(VARCHAR, INTEGER), "
    "point STRUCT(x INTEGER, y INTEGER), big HUGEINT, raw BLOB)",
    "INSERT INTO lake.shop.orders (id, amount, note) VALUES (1, 2.50, 'a'), (2, 3.00, 'b')",
    "COMMENT ON TABLE lake.shop.orders IS 'all orders'",
    "COMMENT ON COLUMN lake.shop.orders.amount IS 'in EUR'",
    "CREATE TABLE lake.shop.customers (id INTEGER NOT NULL, name VARCHAR)",
    "CREATE TABLE lake.audit.log (msg VARCHAR)",
    "CREATE VIEW lake.shop.big_orders AS SELECT id, amount FROM lake.shop.orders WHERE amount > 2",
]


@pytest.fixture
def lake_sql(spark, catalog: Catalog) -> Any:
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach, data_path=catalog.data_path)
    for statement in SETUP:
        con.execute(statement)
    con.close()
    lake = Lake.open(catalog.metadata)
    return LakeSQL(spark, lake, default_schema="shop", catalog_name="lake")


def _duckdb(catalog: Catalog, sql: str) -> list[tuple[Any, ...]]:
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    try:
        return sorted(con.execute(sql).fetchall(), key=repr)
    finally:
        con.close()


def _ours(lake_sql: LakeSQL, sql: str) -> list[tuple[Any, ...]]:
    return sorted((tuple(r) for r in lake_sql.execute(sql).collect()), key=repr)


@pytest.mark.parametrize(
    ("view", "where"),
    [
        ("schemata", "catalog_name = 'lake'"),
        ("tables", "table_catalog = 'lake'"),
        ("columns", "table_catalog = 'lake'"),
        ("views", "table_catalog = 'lake'"),
    ],
)
def test_information_schema_equals_duckdbs(
    lake_sql, catalog: Catalog, view: str, where: str
) -> None:
    expected_columns = [
        d[0] for d in duck.connect().execute(f"SELECT * FROM information_schema.{view}").description
    ]
    ours = lake_sql.execute(f"SELECT * FROM lake.information_schema.{view}")
    assert ours.columns == expected_columns
    # schema_owner is DuckDB's own user name; everything else must match
    columns = ", ".join(c for c in expected_columns if c != "schema_owner")
    query = f"SELECT {columns} FROM information_schema.{view} WHERE {where}"
    expected = _duckdb(catalog, query)
    assert expected and _ours(lake_sql, query) == expected


def test_dbt_utils_relation_query(lake_sql) -> None:
    """dbt_utils.get_relations_by_pattern's query, unqualified and lake-qualified."""
    for source in ("information_schema.tables", "lake.information_schema.tables"):
        rows = _ours(
            lake_sql,
            "select distinct table_schema as table_schema, table_name as table_name, "
            "case table_type when 'BASE TABLE' then 'table' when 'VIEW' then 'view' end "
            f"as table_type from {source} where table_schema ilike 'shop' "
            "and table_name ilike '%orders%' and table_name not ilike 'big%'",
        )
        assert rows == [("shop", "orders", "table")]


def test_information_schema_reads_the_current_snapshot(lake_sql) -> None:
    lake_sql.execute("CREATE TABLE shop.later AS SELECT 1 AS x")
    names = _ours(lake_sql, "SELECT table_name FROM information_schema.tables")
    assert ("later",) in names
    with pytest.raises(LakeSQLError, match=r"information_schema\.routines: the lake answers"):
        lake_sql.execute("SELECT * FROM information_schema.routines")


def test_show_tables_views_schemas_columns(lake_sql) -> None:
    # DuckDB's view, whose text names {DUCKLAKE_CATALOG}.shop.orders, reads here too
    assert _ours(lake_sql, "SELECT * FROM shop.big_orders") == [(1, 2.5), (2, 3)]
    assert _ours(lake_sql, "SHOW TABLES") == [
        ("shop", "big_orders", False),
        ("shop", "customers", False),
        ("shop", "orders", False),
    ]
    assert lake_sql.execute("SHOW TABLES").columns == ["namespace", "tableName", "isTemporary"]
    assert _ours(lake_sql, "show tables in lake.audit") == [("audit", "log", False)]
    assert _ours(lake_sql, "SHOW TABLES FROM shop LIKE 'cust*|big*'") == [
        ("shop", "big_orders", False),
        ("shop", "customers", False),
    ]
    assert _ours(lake_sql, "SHOW VIEWS IN shop") == [("shop", "big_orders", False)]
    assert _ours(lake_sql, "SHOW SCHEMAS") == [("audit",), ("main",), ("shop",)]
    assert _ours(lake_sql, "SHOW DATABASES LIKE 'sh*'") == [("shop",)]
    columns = [r[0] for r in lake_sql.execute("SHOW COLUMNS IN customers").collect()]
    assert columns == ["id", "name"]
    columns = [r[0] for r in lake_sql.execute("SHOW COLUMNS FROM big_orders IN shop").collect()]
    assert columns == ["id", "amount"]


def test_show_table_extended_is_what_dbt_spark_parses(lake_sql) -> None:
    rows = {r[1]: r for r in lake_sql.execute("show table extended in shop like '*'").collect()}
    assert set(rows) == {"orders", "customers", "big_orders"}
    orders = rows["orders"][3]
    assert "Type: MANAGED" in orders and "Provider: ducklake" in orders
    assert "Comment: all orders" in orders
    assert " |-- amount: decimal(10,2) (nullable = true)" in orders
    view = rows["big_orders"][3]
    assert "Type: VIEW" in view and "View Text: SELECT id, amount FROM lake.shop.orders" in view


def test_describe_and_describe_extended(lake_sql) -> None:
    described = [tuple(r) for r in lake_sql.execute("DESCRIBE shop.customers").collect()]
    assert described == [("id", "int", None), ("name", "string", None)]
    rows = [tuple(r) for r in lake_sql.execute("describe table extended orders").collect()]
    assert ("amount", "decimal(10,2)", "in EUR") in rows
    assert ("tags", "array<string>", None) in rows
    detail = {r[0]: r[1] for r in rows[rows.index(("# Detailed Table Information", "", "")) :]}
    assert detail["Type"] == "MANAGED" and detail["Table"] == "orders"
    assert detail["Comment"] == "all orders" and detail["Location"].endswith("/")
    view = [tuple(r) for r in lake_sql.execute("DESC EXTENDED shop.big_orders").collect()]
    assert view[:2] == [("id", "bigint", None), ("amount", "decimal(10,2)", None)]
    assert ("Type", "VIEW", "") in view
    with pytest.raises(LakeSQLError, match=r"table or view shop\.nope does not exist"):
        lake_sql.execute("DESCRIBE nope")


def test_describe_falls_back_to_spark_for_temporary_views(lake_sql, spark) -> None:
    spark.range(2).createOrReplaceTempView("scratch_view")
    try:
        assert [r[0] for r in lake_sql.execute("DESCRIBE scratch_view").collect()] == ["id"]
    finally:
        spark.catalog.dropTempView("scratch_view")


@pytest.mark.parametrize(
    ("pattern", "name", "matches"),
    [
        ("*", "anything", True),
        ("ord*", "Orders", True),
        ("ord*", "my_orders", False),
        ("a|b*", "bee", True),
        ("a|b*", "ab", False),
        (None, "x", True),
    ],
)
def test_spark_like_patterns(pattern: str | None, name: str, matches: bool) -> None:
    assert bool(spark_pattern(pattern).fullmatch(name)) is matches
