"""Temporary views: CREATE OR REPLACE of one named like a lake table creates the view
(the name is not a read of the table), other forms and the views Spark refuses are as
Spark's SQL has them; DROP VIEW of a session's temporary view drops it (also when it was
cached: the cache entry goes with it); an unqualified name that is no temporary view is
the lake's view."""

from __future__ import annotations

import pytest

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.errors import LakeSQLError
from dbt.adapters.ducklake.spark.sql import LakeSQL
from tests import duck


def test_views_are_created_as_spark_creates_them(spark, tmp_path) -> None:
    sql = LakeSQL(spark, Lake.open(f"sqlite:///{tmp_path}/c.sqlite", data_path=f"{tmp_path}/d/"))
    sql.execute("CREATE TABLE t AS SELECT id, cast(id AS int) AS v FROM range(4)")
    sql.execute(
        '/* {"app": "dbt"} */\ncreate or replace temporary view `tv plain` as '
        "select id, v::text as s from t where id > 1"
    )
    rows = spark.sql("select * from `tv plain` order by id").collect()
    assert [tuple(r) for r in rows] == [(2, "2"), (3, "3")]
    sql.execute("CREATE TABLE u AS SELECT 1 AS id")  # a lake table named like the view
    sql.execute("create or replace temporary view u as select id + 1 as id from t")
    assert [r.id for r in spark.table("u").collect()] == [1, 2, 3, 4]
    sql.execute("create or replace temporary view tv_named (a, b) as select id, v from t")
    assert spark.table("tv_named").columns == ["a", "b"]


@pytest.mark.parametrize(
    "statement",
    [
        # two columns of one name: Spark's CREATE VIEW refuses them
        "create or replace temporary view tv_twice as select id, v as ID from t",
        # a view of itself
        "create or replace temporary view tv_self as select * from tv_self",
    ],
)
def test_views_spark_refuses_are_refused(spark, tmp_path, statement) -> None:
    sql = LakeSQL(spark, Lake.open(f"sqlite:///{tmp_path}/c.sqlite", data_path=f"{tmp_path}/d/"))
    sql.execute("CREATE TABLE t AS SELECT id, cast(id AS int) AS v FROM range(4)")
    spark.sql("create or replace temporary view tv_self as select 1 as id")
    with pytest.raises(LakeSQLError):
        sql.execute(statement)


def _cached(spark) -> bool:
    return not spark._jsparkSession.sharedState().cacheManager().isEmpty()


def test_temporary_views_are_dropped_and_uncached(spark, tmp_path) -> None:
    sql = LakeSQL(spark, Lake.open(f"sqlite:///{tmp_path}/c.sqlite", data_path=f"{tmp_path}/d/"))
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW tvd_plain AS SELECT 1 AS a")
    sql.execute("/* dbt */ drop view if exists tvd_plain")
    assert not spark.catalog.tableExists("tvd_plain")
    sql.execute("drop view if exists tvd_plain")  # gone already: nothing to do
    spark.sql("CREATE OR REPLACE TEMPORARY VIEW tvd_cached AS SELECT 2 AS a")
    spark.catalog.cacheTable("tvd_cached")
    assert _cached(spark)
    sql.execute("DROP VIEW IF EXISTS tvd_cached")
    assert not spark.catalog.tableExists("tvd_cached")
    assert not _cached(spark)  # no cached plan left reading a dropped view


def test_a_lake_view_of_that_name_is_dropped_from_the_lake(spark, tmp_path) -> None:
    catalog, data = f"{tmp_path}/c.sqlite", f"{tmp_path}/d/"
    sql = LakeSQL(spark, Lake.open(f"sqlite:///{catalog}", data_path=data))
    sql.execute("CREATE TABLE t AS SELECT 1 AS a")
    sql.execute("CREATE VIEW tvd_lake AS SELECT a FROM t")
    con = duck.connect()
    duck.attach(con, f"sqlite:{catalog}", alias="lake", data_path=data)
    assert con.execute("SELECT a FROM lake.tvd_lake").fetchall() == [(1,)]
    con.close()
    sql.execute("DROP VIEW IF EXISTS tvd_lake")
    con = duck.connect()
    duck.attach(con, f"sqlite:{catalog}", alias="lake", data_path=data)
    names = [
        r[0]
        for r in con.execute(
            "SELECT view_name FROM duckdb_views() WHERE database_name = 'lake'"
        ).fetchall()
    ]
    assert "tvd_lake" not in names
