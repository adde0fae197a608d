"""Views DuckDB created (DuckDB SQL) read identically through the Spark engine, at the
latest and at earlier snapshots, nested views and unqualified names included; views
created here keep the Spark text they were written in and read the same in DuckDB."""

from __future__ import annotations

import pytest

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.sql import LakeSQL
from dbt.adapters.ducklake.spark.views import scan_relation, scan_view
from tests import duck
from tests.canon import canon_rows
from tests.conftest import Catalog
from tests.spark.test_roundtrip import _spark_rows


def test_duckdb_views_read_identically(spark, catalog: Catalog) -> None:
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach, data_path=catalog.data_path)
    con.execute("USE lake")
    con.execute("CREATE SCHEMA s")
    con.execute("CREATE TABLE s.orders (id INTEGER, customer VARCHAR, amount DECIMAL(10,2))")
    con.execute(
        "INSERT INTO s.orders SELECT i, 'c' || (i % 4), (i * 1.5)::DECIMAL(10,2) "
        "FROM range(0, 40) r(i)"
    )
    con.execute(
        "CREATE VIEW s.big AS SELECT id, upper(customer) AS who, round(amount)::INTEGER AS whole, "
        "id // 3 AS third FROM orders WHERE amount > 10 AND customer ILIKE 'C%'"
    )
    con.execute(
        "CREATE VIEW s.per_customer AS WITH b AS (SELECT who, sum(whole) AS total FROM s.big "
        "GROUP BY who) SELECT who, total, list_value(total, total + 1) AS pair FROM b"
    )
    lake = Lake.open(catalog.metadata)
    before = lake.latest_snapshot().snapshot_id
    con.execute("DELETE FROM s.orders WHERE id % 2 = 0")
    for view in ("big", "per_customer"):
        for at in (None, before):
            clause = "" if at is None else f" AT (VERSION => {at})"
            if view == "per_customer" and at is not None:
                continue  # DuckDB applies AT only to the outer view, not the nested one
            expected = con.execute(f"SELECT * FROM s.{view}{clause}").fetchall()
            ours = _spark_rows(scan_view(spark, lake, "s", view, at=at))
            assert canon_rows(ours) == canon_rows(expected), (view, at)
    assert scan_relation(spark, lake, "s", "orders").count() == 20
    with pytest.raises(Exception, match=r"s\.nope does not exist"):
        scan_view(spark, lake, "s", "nope")
    con.close()


def test_views_created_here_keep_their_spark_text(spark, sqlite_catalog: Catalog) -> None:
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    sql = LakeSQL(spark, lake)
    sql.execute("CREATE TABLE t AS SELECT id, CAST(id * 1.5 AS DOUBLE) AS x FROM range(0, 5)")
    query = "SELECT id, `x` AS `the x`, date_format(DATE '2024-03-05', 'yyyy/MM') AS m FROM t"
    sql.execute(f"CREATE VIEW v AS {query}")
    view = lake.catalog().view("main", "v")
    assert view.spark_sql == query and view.dialect == "duckdb" and "`" not in view.sql
    ours = sorted(tuple(r) for r in sql.query("SELECT * FROM v").collect())
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach)
    theirs = sorted(con.execute("SELECT * FROM lake.main.v").fetchall())
    assert ours == theirs == [(i, i * 1.5, "2024/03") for i in range(5)]
    con.close()


def test_drop_cascade_drops_the_views_reading_it_in_one_snapshot(
    spark, sqlite_catalog: Catalog
) -> None:
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    sql = LakeSQL(spark, lake)
    sql.execute("CREATE SCHEMA other")
    sql.execute("CREATE TABLE t AS SELECT id FROM range(0, 3)")
    sql.execute("CREATE TABLE keep AS SELECT id FROM range(0, 3)")
    sql.execute("CREATE VIEW direct AS SELECT id FROM t WHERE id > 0")
    sql.execute("CREATE VIEW other.nested AS SELECT count(*) AS n FROM main.direct")
    sql.execute("CREATE VIEW unrelated AS SELECT id AS t FROM keep")  # a column named t
    sql.execute("CREATE VIEW plain AS SELECT id FROM t")
    before = lake.latest_snapshot().snapshot_id
    sql.execute("DROP VIEW plain")  # without CASCADE nothing else goes
    sql.execute("DROP TABLE t CASCADE")
    after = lake.latest_snapshot()
    assert after.snapshot_id == before + 2
    names = {(v.schema_name, v.name) for v in lake.catalog().views()}
    assert names == {("main", "unrelated")}
    assert lake.catalog().find_table("main", "t") is None
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach)
    changes = con.execute(
        f"SELECT changes FROM lake.snapshots() WHERE snapshot_id = {after.snapshot_id}"
    ).fetchone()
    assert changes is not None
    old = lake.catalog(before)
    ids = {v.name: str(v.view_id) for v in old.views()}
    table = old.find_table("main", "t")
    assert table is not None
    assert {k: sorted(v) for k, v in changes[0].items()} == {
        "tables_dropped": [str(table.table_id)],
        "views_dropped": sorted([ids["direct"], ids["nested"]]),
    }
    assert con.execute("SELECT count(*) FROM lake.main.unrelated").fetchone() == (3,)
    con.close()


def test_a_star_grouped_by_positions_runs_as_packages_mean_it(
    spark, sqlite_catalog: Catalog
) -> None:
    """dbt_utils.group_by writes `SELECT *, count(*) … GROUP BY 1, 2`, which Spark alone
    refuses (STAR_GROUP_BY_POS): the star is expanded to its columns first."""
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    sql = LakeSQL(spark, lake, default_schema="main", catalog_name="lake")
    pets = "VALUES ('cat', 1), ('cat', 1), ('dog', 2) AS v(kind, legs)"
    sql.execute(f"CREATE TABLE pets AS SELECT * FROM {pets}")
    sql.execute(
        "CREATE VIEW grouped AS WITH d AS (SELECT CAST('a' AS STRING) AS c1, 'b' AS c2) "
        "SELECT *, count(*) AS total FROM d GROUP BY 1, 2"
    )
    sql.execute("CREATE TABLE counted AS SELECT p.*, count(*) FROM main.pets p GROUP BY 1, 2")
    # the query itself, not only views and tables
    rows = sql.execute("SELECT *, count(*) AS n FROM pets GROUP BY 1, 2 ORDER BY 1").collect()
    assert [tuple(r) for r in rows] == [("cat", 1, 2), ("dog", 2, 1)]
    grouped = sql.execute("SELECT * FROM grouped")
    assert grouped.columns == ["c1", "c2", "total"]
    assert [tuple(r) for r in grouped.collect()] == [("a", "b", 1)]
    counted = sql.execute("SELECT * FROM counted")
    assert counted.columns == ["kind", "legs", "count(1)"]  # Spark's own name, unchanged
    assert sorted(tuple(r) for r in counted.collect()) == [("cat", 1, 2), ("dog", 2, 1)]
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach)
    assert con.execute("SELECT * FROM lake.main.grouped").fetchall() == [("a", "b", 1)]
    con.close()
    stored = {v.name: v.spark_sql for v in lake.catalog().views()}
    assert "GROUP BY 1, 2" in (stored["grouped"] or "")


def test_views_that_travel_in_time_read_their_snapshot(spark, sqlite_catalog: Catalog) -> None:
    """A view reading a table `AT (VERSION => n)` (DuckDB) or `VERSION AS OF n` /
    `TIMESTAMP AS OF` (written here) reads that snapshot of it, whatever the snapshot the
    view is read at: here and in DuckDB, both ways. Once the snapshot is expired, reading
    the view fails naming it."""
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach, data_path=sqlite_catalog.data_path)
    con.execute("USE lake")
    con.execute("CREATE TABLE t AS SELECT i AS id FROM range(0, 30) r(i)")
    lake = Lake.open(sqlite_catalog.metadata)
    first = lake.latest_snapshot()
    con.execute(f"CREATE VIEW by_duckdb AS SELECT id FROM t AT (VERSION => {first.snapshot_id})")
    sql = LakeSQL(spark, lake)
    sql.execute(
        f"CREATE VIEW main.by_spark AS SELECT id FROM main.t VERSION AS OF {first.snapshot_id}"
    )
    stamp = first.snapshot_time.isoformat()
    sql.execute(f"CREATE VIEW main.by_time AS SELECT id FROM main.t TIMESTAMP AS OF '{stamp}'")
    con.execute("DELETE FROM t WHERE id >= 10")
    for view in ("by_duckdb", "by_spark", "by_time"):
        ours = sorted(r[0] for r in sql.query(f"SELECT id FROM main.{view}").collect())
        theirs = sorted(r[0] for r in con.execute(f"SELECT id FROM {view}").fetchall())
        assert ours == theirs == list(range(30)), view
    assert sql.query("SELECT count(*) FROM main.t").collect()[0][0] == 10
    con.execute("CALL ducklake_expire_snapshots('lake', older_than => now())")
    with pytest.raises(
        Exception, match=r"by_spark reads main\.t as of snapshot \d+, which no longer"
    ):
        sql.query("SELECT * FROM main.by_spark").collect()
    con.close()
