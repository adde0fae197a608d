"""INSERT … VALUES of plain literals commits on the driver, with exactly the rows (and the
errors) Spark's path gives for the same VALUES; anything uncertain takes Spark's path."""

from __future__ import annotations

import pytest

from dbt.adapters.ducklake.lake import ColumnDraft, Lake
from dbt.adapters.ducklake.spark.literal_insert import literal_rows
from dbt.adapters.ducklake.spark.sql import LakeSQL
from dbt.adapters.ducklake.spark.sql_rewrite import parse
from tests import duck
from tests.canon import canon_rows
from tests.conftest import Catalog

COLUMNS = (
    "i8 TINYINT, i16 SMALLINT, i32 INT, i64 BIGINT, f FLOAT, d DOUBLE, dec DECIMAL(10,2), "
    "big DECIMAL(38,10), s STRING, b BOOLEAN, day DATE"
)
# one row of VALUES, each value certain on the driver
PLAIN = ["1", "2", "3", "4", "5", "6", "7", "8", "'x'", "TRUE", "NULL"]
# one value Spark decides (rounding, another literal kind, a cast, concatenation) or
# refuses (out of range, overflow), put in PLAIN at its column
SPARK_DECIDES = [
    (0, "1.5"),
    (0, "128"),
    (2, "'3'"),
    (2, "2147483647 + 1"),
    (3, "9223372036854775808"),
    (4, "0.1"),
    (4, "16777217"),
    (5, "1e3"),
    (5, "0.1234567890123456789"),
    (6, "1.005"),
    (6, "123456789.00"),
    (8, "5"),
    (8, "'it''s'"),
    (9, "1"),
    (10, "DATE '2020-02-29'"),
    (10, "'2021-01-01'"),
]


def _row(values: list[str]) -> str:
    return f"({', '.join(values)})"


# (VALUES text, whether the driver commits it without Spark)
CASES = [
    (_row(PLAIN), True),
    (
        "(-128, -32768, -2147483648, -9223372036854775807, 16777216, 0.1, -0.05, "
        "12345678901234567890.0123456789, 'é ü 🦆', FALSE, NULL)",
        True,
    ),
    ("(NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)", True),
    (
        "(1 + 2, 3 * 4, 5 - 10, (2 + 3) * -4, -7, 123456789012345, 99999999.99, 0, '', TRUE, NULL)",
        True,
    ),
    (f"{_row(PLAIN)}, (9, 10, 11, 12, 13, 14, 15, 16, 'b', NULL, NULL)", True),
    *[(_row([*PLAIN[:at], value, *PLAIN[at + 1 :]]), False) for at, value in SPARK_DECIDES],
    (f"{_row(PLAIN)}, (2.5, 2, 3, 4, 5, 6, 7, 8, 'b', TRUE, NULL)", False),
    ("(1, 2, 3)", False),  # too few values: Spark's error
]


def _ours(sql: LakeSQL, table: str) -> list[tuple]:
    return [tuple(r) for r in sql.query(f"SELECT * FROM {table}").collect()]


def test_literal_rows_equal_what_spark_stores(spark, sqlite_catalog: Catalog) -> None:
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    sql = LakeSQL(spark, lake)
    sql.execute(f"CREATE TABLE fast ({COLUMNS})")
    sql.execute(f"CREATE TABLE slow ({COLUMNS})")
    cat = lake.catalog()
    drafts = [ColumnDraft.from_column(c) for c in cat.columns(cat.table("main", "fast").table_id)]
    queried: list[str] = []
    spark_query = sql.query
    sql.query = lambda text: queried.append(text) or spark_query(text)  # type: ignore[method-assign]
    for values, on_driver in CASES:
        tree = parse(f"INSERT INTO fast VALUES {values}")
        assert (literal_rows(tree.expression, drafts, None) is not None) == on_driver, values
        queried.clear()
        outcomes = []
        for statement in (
            f"INSERT INTO fast VALUES {values}",
            f"INSERT INTO slow SELECT * FROM VALUES {values}",
        ):
            try:
                sql.execute(statement)
                outcomes.append("ok")
            except Exception as exc:  # both paths must fail alike
                outcomes.append(type(exc).__name__)
        assert outcomes[0] == outcomes[1], (values, outcomes)
        assert (len(queried) == 1) == on_driver, (values, queried)  # only slow's SELECT
        assert canon_rows(_ours(sql, "fast")) == canon_rows(_ours(sql, "slow")), values
    assert outcomes[0] != "ok"  # the last case (too few values) fails on both
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach, alias="lake")
    fast = con.execute("SELECT * FROM lake.main.fast").fetchall()
    slow = con.execute("SELECT * FROM lake.main.slow").fetchall()
    assert len(fast) > 12 and canon_rows(fast) == canon_rows(slow)
    con.close()
    with lake.catalog().session() as cat:
        assert len(cat.table_state("main", "fast").data_files) == 0  # all inlined


def test_literal_inserts_keep_column_lists_not_null_and_blocks(spark, catalog: Catalog) -> None:
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    sql = LakeSQL(spark, lake)
    sql.execute("CREATE TABLE t (id BIGINT NOT NULL, v STRING, n INT)")
    sql.execute("INSERT INTO t (v, id) VALUES ('a', 1), ('b', 2)")
    with pytest.raises(Exception, match="NOT NULL"):
        sql.execute("INSERT INTO t VALUES (NULL, 'c', 3)")
    with pytest.raises(Exception, match=r"NOT NULL|\bid\b"):
        sql.execute("INSERT INTO t (v) VALUES ('d')")
    with pytest.raises(Exception, match="column list"):
        sql.execute("INSERT INTO t (v, nope) VALUES ('e', 5)")
    with pytest.raises(Exception, match="does not exist"):
        sql.execute("INSERT INTO missing VALUES (1)")
    before = lake.latest_snapshot().snapshot_id
    sql.execute(
        "BEGIN; INSERT INTO t VALUES (3, 'c', 30); INSERT INTO t VALUES (4, 'd', 40); COMMIT"
    )
    assert lake.latest_snapshot().snapshot_id == before + 1  # one snapshot for the block
    with pytest.raises(Exception, match=r"1\.0E99|out of range|cannot be"):
        sql.execute(
            "BEGIN; INSERT INTO t VALUES (5, 'e', 50); INSERT INTO t VALUES (6, 'f', 1e99); COMMIT"
        )
    assert lake.latest_snapshot().snapshot_id == before + 1  # the failed block left nothing
    expected = [(1, "a", None), (2, "b", None), (3, "c", 30), (4, "d", 40)]
    assert canon_rows(_ours(sql, "t")) == canon_rows(expected)
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach, alias="lake")
    assert canon_rows(con.execute("SELECT * FROM lake.main.t").fetchall()) == canon_rows(expected)
    con.close()
