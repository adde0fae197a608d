"""A MERGE into a small target whose changes are few is staged from one query's rows
on the driver (`few_changes.py`): deletes of file rows and inlined rows, updates that
are inlined, inserts over the inlining limit written as one file. DuckDB reads exactly
what the general path would have committed; a NULL for a NOT NULL column commits
nothing; values that cannot travel that way (a list column over the inlining limit)
take the general path."""

from __future__ import annotations

import logging

import pytest

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.compat import CLIENT_IS_SPARK_4 as SPARK_4
from dbt.adapters.ducklake.spark.errors import NotNullViolation
from dbt.adapters.ducklake.spark.sql import LakeSQL
from tests import duck
from tests.conftest import Catalog

FEW = "MERGE of"


def _files(con, table: str) -> int:  # type: ignore[no-untyped-def]
    return con.execute(f"SELECT count(*) FROM ducklake_list_files('lake', '{table}')").fetchone()[0]


def test_few_changes_are_staged_from_the_driver_as_duckdb_reads_them(
    spark, sqlite_catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    sql = LakeSQL(spark, lake)
    # 40 rows in two files, then 3 inlined rows
    sql.execute(
        "CREATE TABLE t AS SELECT id, concat('v', id) AS v FROM range(0, 40) DISTRIBUTE BY id % 2"
    )
    sql.execute("INSERT INTO t VALUES (100, 'a'), (101, 'b'), (102, 'c')")
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach)
    files_before = _files(con, "t")
    con.execute("DETACH lake")
    source = (
        "SELECT * FROM VALUES (3, 'delete'), (4, 'delete'), (101, 'delete'), "
        "(5, 'new5'), (6, 'new6'), (100, 'new100') AS s(id, v) "
        "UNION ALL SELECT id, concat('n', id) FROM range(200, 215)"  # 15 inserts
    )
    with caplog.at_level(logging.INFO, logger="dbt.adapters.ducklake.spark"):
        sql.execute(
            f"MERGE INTO t USING ({source}) AS s ON t.id = s.id "
            "WHEN MATCHED AND s.v = 'delete' THEN DELETE "
            "WHEN MATCHED THEN UPDATE SET v = s.v "
            "WHEN NOT MATCHED THEN INSERT *"
        )
    # (Spark 3.5 builds no DataFrame from Arrow rows: its MERGE takes Spark's path)
    assert any(FEW in r.getMessage() for r in caplog.records) == SPARK_4, caplog.text
    expected = (
        [(i, f"v{i}") for i in range(40) if i not in (3, 4, 5, 6)]
        + [(5, "new5"), (6, "new6"), (100, "new100"), (102, "c")]
        + [(i, f"n{i}") for i in range(200, 215)]
    )
    duck.attach(con, sqlite_catalog.duckdb_attach)
    assert sorted(con.execute("SELECT id, v FROM lake.t").fetchall()) == sorted(expected)
    assert sorted(tuple(r) for r in sql.query("SELECT id, v FROM t").collect()) == sorted(expected)
    # the 15 new rows are one new file; the 3 updates stayed under the limit (inlined)
    assert _files(con, "t") == files_before + 1
    con.close()


def test_a_null_for_a_not_null_column_commits_nothing(spark, sqlite_catalog: Catalog) -> None:
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    sql = LakeSQL(spark, lake)
    sql.execute("CREATE TABLE nn (id BIGINT NOT NULL, v STRING)")
    sql.execute("INSERT INTO nn VALUES (1, 'a'), (2, 'b')")
    last = lake.latest_snapshot()
    with pytest.raises(NotNullViolation, match=r"main\.nn\.id would get NULL"):
        sql.execute(
            "MERGE INTO nn USING (SELECT * FROM VALUES (CAST(NULL AS BIGINT), 'x'), (2, 'y') "
            "AS s(id, v)) AS s ON nn.id = s.id "
            "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
        )
    assert lake.latest_snapshot() == last
    assert sorted(tuple(r) for r in sql.query("SELECT id, v FROM nn").collect()) == [
        (1, "a"),
        (2, "b"),
    ]


def test_list_values_over_the_inlining_limit_take_the_general_path(
    spark, sqlite_catalog: Catalog, caplog: pytest.LogCaptureFixture
) -> None:
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    sql = LakeSQL(spark, lake)
    sql.execute("CREATE TABLE l AS SELECT id, array(id, id + 1) AS xs FROM range(0, 5)")
    with caplog.at_level(logging.INFO, logger="dbt.adapters.ducklake.spark"):
        sql.execute(
            "MERGE INTO l USING (SELECT id, array(id * 10) AS xs FROM range(3, 20)) AS s "
            "ON l.id = s.id WHEN MATCHED THEN UPDATE SET xs = s.xs "
            "WHEN NOT MATCHED THEN INSERT *"
        )
    assert not any(FEW in r.getMessage() for r in caplog.records), caplog.text
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach)
    got = sorted(con.execute("SELECT id, xs FROM lake.l").fetchall())
    assert got == [(i, [i, i + 1]) for i in range(3)] + [(i, [i * 10]) for i in range(3, 20)]
    con.close()
