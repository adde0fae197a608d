"""DELETE / UPDATE of an all-inlined table decided on the driver leave exactly the rows,
row ids and snapshots Spark's path leaves; what the driver cannot decide goes to Spark."""

from __future__ import annotations

import pytest

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark import sql as sql_module
from dbt.adapters.ducklake.spark.sql import LakeSQL
from tests import duck
from tests.conftest import Catalog

ROWS = (
    "(1, 10, 'a', TRUE, 1.5, 5), (2, 20, 'b', FALSE, 2.5, NULL), (3, 30, NULL, NULL, 0.0, 7), "
    "(4, NULL, 'c', TRUE, NULL, 5), (5, 50, 'é', FALSE, -1.0, NULL)"
)
COLUMNS = "id BIGINT, small INT, v STRING, b BOOLEAN, d DOUBLE, n INT"
# (WHERE condition, whether the driver decides it)
CONDITIONS = [
    ("id = 2", True),
    ("id <> 2", True),
    ("3 < id", True),
    ("id >= 2 AND v = 'b' OR small <= 10", True),
    ("v IN ('a', 'c', NULL)", True),
    ("v NOT IN ('a', NULL)", True),
    ("NOT (n = 5)", True),
    ("n IS NULL", True),
    ("n IS NOT NULL AND (id < 3 OR v > 'b')", True),
    ("b = TRUE OR small = NULL", True),
    ("fast.id = 1", False),
    ("d > 1.0", False),
    ("id + 1 = 3", False),
    ("v LIKE 'a%'", False),
    ("id = 2.0", False),
    ("small = 3000000000", False),
    ("b", False),
]
UPDATES = [
    ("v = 'z', n = 7", True),
    ("n = NULL, b = FALSE", True),
    ("d = 0.25", True),
    ("small = small + 1", False),
    ("v = 5", False),
]


def _state(con, table: str) -> list[tuple]:
    return con.execute(f"SELECT rowid, * FROM lake.main.{table} ORDER BY rowid").fetchall()


@pytest.fixture
def both(spark, sqlite_catalog: Catalog, monkeypatch):
    """A lake, its SQL, DuckDB on it, and a count of the statements Spark's path ran."""
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    sql = LakeSQL(spark, lake)
    spark_runs: list[str] = []

    def counted(real):
        def run(*args, **kwargs):
            spark_runs.append(real.__name__)
            return real(*args, **kwargs)

        return run

    for name in ("delete_where", "update_where"):
        monkeypatch.setattr(sql_module, name, counted(getattr(sql_module, name)))
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach, alias="lake")
    yield lake, sql, con, spark_runs
    con.close()


def _fresh(sql: LakeSQL) -> None:
    for table in ("fast", "slow"):
        sql.execute(f"CREATE OR REPLACE TABLE {table} ({COLUMNS})")
        sql.execute(f"INSERT INTO {table} VALUES {ROWS}")


def _same(lake, sql, con, statement_pairs, spark_runs, on_driver) -> None:
    outcomes = []
    for statement in statement_pairs:
        before = lake.latest_snapshot().snapshot_id
        spark_runs.clear()
        try:
            sql.execute(statement)
            outcomes.append(("ok", lake.latest_snapshot().snapshot_id - before, len(spark_runs)))
        except Exception as exc:  # both paths must fail alike
            outcomes.append((type(exc).__name__, 0, len(spark_runs)))
    (fast_kind, fast_snaps, fast_spark), (slow_kind, slow_snaps, slow_spark) = outcomes
    assert (fast_kind, fast_snaps) == (slow_kind, slow_snaps), (statement_pairs, outcomes)
    assert slow_spark == 1 and fast_spark == (0 if on_driver else 1), (statement_pairs, outcomes)
    assert _state(con, "fast") == _state(con, "slow"), statement_pairs


def test_deletes_on_the_driver_equal_sparks(both) -> None:
    lake, sql, con, spark_runs = both
    for condition, on_driver in CONDITIONS:
        _fresh(sql)
        pair = (
            f"DELETE FROM fast WHERE {condition}",
            # an aliased target is left to Spark
            f"DELETE FROM slow AS s WHERE {condition.replace('fast.', 's.')}",
        )
        _same(lake, sql, con, pair, spark_runs, on_driver)
    _fresh(sql)
    _same(lake, sql, con, ("DELETE FROM fast", "DELETE FROM slow AS s"), spark_runs, True)
    assert _state(con, "fast") == []


def test_updates_on_the_driver_equal_sparks(both) -> None:
    lake, sql, con, spark_runs = both
    for assignments, on_driver in UPDATES:
        for condition, decided in CONDITIONS[:4]:
            _fresh(sql)
            pair = (
                f"UPDATE fast SET {assignments} WHERE {condition}",
                f"UPDATE slow AS s SET {assignments} WHERE {condition}",
            )
            _same(lake, sql, con, pair, spark_runs, on_driver and decided)
    _fresh(sql)
    # NOT NULL, an unknown column: Spark's path says what is wrong
    sql.execute("CREATE OR REPLACE TABLE nn (id BIGINT NOT NULL, v STRING)")
    sql.execute("INSERT INTO nn VALUES (1, 'a')")
    with pytest.raises(Exception, match="NOT NULL"):
        sql.execute("UPDATE nn SET id = NULL WHERE v = 'a'")
    with pytest.raises(Exception, match="nope"):
        sql.execute("UPDATE nn SET nope = 1")
    assert con.execute("SELECT * FROM lake.main.nn").fetchall() == [(1, "a")]


def test_undecided_changes_and_changed_tables_go_to_spark(both) -> None:
    lake, sql, con, spark_runs = both
    sql.execute("CREATE TABLE big AS SELECT id, id % 7 AS k FROM range(5000)")  # a file
    spark_runs.clear()
    sql.execute("DELETE FROM big WHERE id BETWEEN 3 AND 3")
    sql.execute("UPDATE big SET k = k + 100 WHERE id = 4")
    assert spark_runs == ["delete_where", "update_where"]
    assert con.execute("SELECT count(*), max(k) FROM lake.main.big").fetchone() == (4999, 104)
    for table in ("t", "u"):
        sql.execute(f"CREATE TABLE {table} ({COLUMNS})")
        sql.execute(f"INSERT INTO {table} VALUES {ROWS}")
    before = lake.latest_snapshot().snapshot_id
    spark_runs.clear()
    sql.execute("BEGIN; DELETE FROM t WHERE id = 1; UPDATE u SET v = 'q' WHERE id = 2; COMMIT")
    assert spark_runs == [] and lake.latest_snapshot().snapshot_id == before + 1
    # a table the block changed already: Spark's path, which refuses to read it
    with pytest.raises(Exception, match="changed earlier in this transaction block"):
        sql.execute("BEGIN; DELETE FROM t WHERE id = 2; DELETE FROM t WHERE id = 3; COMMIT")
    assert lake.latest_snapshot().snapshot_id == before + 1
    rows = con.execute("SELECT id FROM lake.main.t ORDER BY id").fetchall()
    assert rows == [(2,), (3,), (4,), (5,)]
    assert con.execute("SELECT v FROM lake.main.u WHERE id = 2").fetchall() == [("q",)]
