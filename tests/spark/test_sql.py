"""Spark SQL on the lake: references are replaced in place, so queries mean exactly what
they mean over equivalent temp views; time travel equals DuckDB's AT; DML statements
run as engine operations."""

from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest

from dbt.adapters.ducklake.lake import InvalidChangeError, Lake
from dbt.adapters.ducklake.spark.engine import create_table_as
from dbt.adapters.ducklake.spark.errors import LakeSQLError
from dbt.adapters.ducklake.spark.sql import LakeSQL
from tests import duck
from tests.canon import canon_rows
from tests.conftest import Catalog
from tests.spark.test_roundtrip import _spark_rows
from tests.spark_lines import runs_on_this_spark

ORDERS = (
    "SELECT id, CAST(id % 7 AS INT) AS cust, CAST(id * 2.5 AS DOUBLE) AS amount, "
    "array(concat('tag', id % 3), 'all') AS tags FROM range(0, 60)"
)
CUSTOMERS = "SELECT CAST(id AS INT) AS cust, concat('name', id) AS name FROM range(0, 7)"

# {o} / {c}: the orders / customers relation, spelled differently per query
CORPUS = [
    "SELECT * FROM {o}",
    "SELECT count(*), sum(amount) FROM {o}",
    "SELECT cust, count(*) AS n FROM {o} GROUP BY cust HAVING n > 8",
    "SELECT o.id, c.name FROM {o} o JOIN {c} c ON o.cust = c.cust WHERE o.id < 10",
    "SELECT * FROM {o} WHERE cust IN (SELECT cust FROM {c} WHERE name LIKE 'name1%')",
    "SELECT * FROM {o} o WHERE EXISTS (SELECT 1 FROM {c} c WHERE c.cust = o.cust AND c.cust > 3)",
    "SELECT id, rank() OVER (PARTITION BY cust ORDER BY amount DESC) AS r FROM {o}",
    "SELECT id, sum(amount) OVER (ORDER BY id ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM {o}",
    "SELECT id, lag(amount) OVER (ORDER BY id) AS prev FROM {o}",
    "SELECT id, tag FROM {o} LATERAL VIEW explode(tags) t AS tag",
    "SELECT id, tag FROM {o} LATERAL VIEW OUTER explode(tags) t AS tag WHERE id < 5",
    "SELECT 'shop.orders' AS lookalike, count(*) FROM {o}",
    'SELECT "shop.orders" AS dq FROM {c} LIMIT 1',
    "-- shop.orders in a comment\nSELECT count(*) FROM {o}",
    "/* FROM shop.customers */ SELECT max(id) FROM {o}",
    "WITH orders AS (SELECT 1 AS id) SELECT * FROM orders",
    "WITH customers AS (SELECT cust FROM {o} WHERE id < 3) SELECT * FROM customers",
    "WITH a AS (SELECT * FROM {o}), b AS (SELECT * FROM a WHERE cust = 1) SELECT count(*) FROM b",
    "SELECT * FROM (SELECT cust, avg(amount) AS a FROM {o} GROUP BY cust) x WHERE a > 70",
    "SELECT cust FROM {o} UNION SELECT cust FROM {c}",
    "SELECT cust FROM {c} EXCEPT SELECT cust FROM {o} WHERE id > 100",
    "SELECT cust FROM {o} INTERSECT SELECT cust FROM {c}",
    "SELECT c.name, o.n FROM {c} c LEFT JOIN (SELECT cust, count(*) n FROM {o} GROUP BY cust) o "
    "ON o.cust = c.cust",
    "SELECT id FROM {o} ORDER BY amount DESC LIMIT 5",
    "SELECT DISTINCT cust FROM {o}",
    "SELECT cust, collect_list(id) FROM {o} WHERE id < 14 GROUP BY cust",
    "SELECT CASE WHEN amount > 100 THEN 'big' ELSE 'small' END k, count(*) FROM {o} GROUP BY 1",
    "SELECT id, size(tags), tags[0] FROM {o} WHERE id % 10 = 0",
    "SELECT * FROM {o} o1 JOIN {o} o2 ON o1.id = o2.id + 1 WHERE o1.id < 5",
    "SELECT cust, max_by(id, amount) FROM {o} GROUP BY cust",
    "SELECT percentile_approx(amount, 0.5) FROM {o}",
    "SELECT concat_ws(',', sort_array(collect_set(cust))) FROM {o}",
    "SELECT * FROM {o} TABLESAMPLE (100 PERCENT) WHERE id = 3",
    "SELECT id FROM {o} WHERE amount BETWEEN 10 AND 20",
    "SELECT cust, count_if(amount > 50) FROM {o} GROUP BY cust",
    "SELECT named_struct('i', id, 'c', cust) AS s FROM {o} WHERE id < 3",
    "SELECT transform(tags, t -> upper(t)) FROM {o} WHERE id < 4",
    "SELECT id FROM {o} WHERE cust = (SELECT min(cust) FROM {c})",
    "SELECT o.* FROM {o} AS o WHERE o.id IN (1, 2, 3)",
    "SELECT cust, name, (SELECT count(*) FROM {o} o WHERE o.cust = c.cust) AS n FROM {c} c",
    "SELECT grouping(cust), cust, count(*) FROM {o} GROUP BY ROLLUP(cust)",
    "SELECT id FROM {o} QUALIFY row_number() OVER (PARTITION BY cust ORDER BY id) = 1",
]

SPELLINGS = {
    "plain": ("shop.orders", "shop.customers"),
    "quoted": ("`shop`.`orders`", "shop.`customers`"),
    "catalog": ("ducklake.shop.orders", "ducklake.shop.customers"),
}


@pytest.fixture(scope="module")
def shop(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("shop")
    lake = Lake.open(f"sqlite:///{root}/m.sqlite", data_path=str(root / "d"))
    with lake.transaction() as tx:
        tx.create_schema("shop")
    create_table_as(lake, "shop", "orders", spark.sql(ORDERS))
    create_table_as(lake, "shop", "customers", spark.sql(CUSTOMERS))
    spark.sql(ORDERS).createOrReplaceTempView("orders_v")
    spark.sql(CUSTOMERS).createOrReplaceTempView("customers_v")
    return lake, root


@pytest.fixture(scope="module")
def over_temp_views(spark, shop) -> dict[str, list]:
    """Each corpus query's rows over the plain temp views: the same for every spelling,
    so computed once."""
    return {
        query: canon_rows(_spark_rows(spark.sql(query.format(o="orders_v", c="customers_v"))))
        for query in CORPUS
        if runs_on_this_spark(query)
    }


@pytest.mark.parametrize("spelling", sorted(SPELLINGS))
def test_corpus_means_the_same_as_over_temp_views(
    spark, shop, over_temp_views: dict[str, list], spelling: str
) -> None:
    lake, _ = shop
    assert len(CORPUS) >= 40
    runner = LakeSQL(spark, lake, default_schema="shop")
    o, c = SPELLINGS[spelling]
    for query in filter(runs_on_this_spark, CORPUS):
        ours = runner.query(query.format(o=o, c=c))
        assert canon_rows(_spark_rows(ours)) == over_temp_views[query], query


def test_rewrite_only_touches_lake_references(spark, shop) -> None:
    lake, _ = shop
    runner = LakeSQL(spark, lake, default_schema="shop")
    text = (
        "-- shop.orders\nSELECT 'shop.orders', x.id FROM shop.orders x JOIN orders_v v USING (id)"
    )
    out = runner.rewrite(text)
    assert out.startswith("-- shop.orders\nSELECT 'shop.orders', x.id FROM __ducklake_")
    assert out.endswith(" x JOIN orders_v v USING (id)")


def test_time_travel_equals_duckdb(spark, catalog: Catalog) -> None:
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    runner = LakeSQL(spark, lake)
    runner.execute("CREATE TABLE main.t AS SELECT id, CAST(id AS STRING) AS v FROM range(0, 30)")
    first = lake.latest_snapshot()
    time.sleep(0.05)
    stamp = datetime.now(timezone.utc)
    runner.execute("DELETE FROM main.t WHERE id < 5")
    runner.execute("INSERT INTO main.t SELECT 100, 'x'")
    with lake.transaction() as tx:
        from dbt.adapters.ducklake.lake import ColumnSpec

        tx.add_column(tx.table("main", "t"), ColumnSpec("extra", "int32", default="7"))
    runner.execute("UPDATE main.t SET v = 'u' WHERE id = 7")
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    for snap in lake.snapshots()[1:]:
        n = snap.snapshot_id
        ours = runner.query(f"SELECT * FROM main.t VERSION AS OF {n}")
        theirs = con.execute(f"SELECT * FROM lake.main.t AT (VERSION => {n})").fetchall()
        assert canon_rows(_spark_rows(ours)) == canon_rows(theirs), n
    ours = runner.query(f"SELECT * FROM main.t TIMESTAMP AS OF '{stamp.isoformat()}'")
    theirs = con.execute(
        f"SELECT * FROM lake.main.t AT (TIMESTAMP => '{stamp.isoformat()}'::TIMESTAMPTZ)"
    ).fetchall()
    assert canon_rows(_spark_rows(ours)) == canon_rows(theirs)
    assert len(theirs) == 30 and first.snapshot_id < n
    con.close()


def test_dml_statements_run_on_the_lake(spark, catalog: Catalog) -> None:
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    runner = LakeSQL(spark, lake)
    runner.execute("CREATE TABLE main.t AS SELECT id, CAST(id AS STRING) AS v FROM range(0, 40)")
    runner.execute("INSERT INTO main.t (id, v) SELECT id + 100, 'n' FROM main.t WHERE id < 3")
    runner.execute("UPDATE main.t SET v = concat(v, '!') WHERE id BETWEEN 10 AND 29")
    runner.execute("DELETE FROM main.t WHERE id % 4 = 0")
    spark.sql("SELECT id, 'm' AS v FROM range(35, 45)").createOrReplaceTempView("src")
    runner.execute(
        "MERGE INTO main.t AS t USING src AS s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *"
    )
    runner.execute(
        "CREATE OR REPLACE TABLE main.t2 AS SELECT v, count(*) AS n FROM main.t GROUP BY v"
    )
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    rows = dict(con.execute("SELECT id, v FROM lake.main.t").fetchall())
    assert rows[1] == "1" and 4 not in rows and rows[13] == "13!" and rows[101] == "n"
    assert rows[37] == "m" and rows[44] == "m" and rows[40] == "m"  # deleted, then re-inserted
    assert con.execute("SELECT sum(n) FROM lake.main.t2").fetchone() == (len(rows),)
    with pytest.raises(LakeSQLError, match="does not exist"):
        runner.execute("DELETE FROM main.nope WHERE 1 = 1")
    with pytest.raises(LakeSQLError, match="not supported on the lake yet"):
        runner.execute("MSCK REPAIR TABLE main.t2")
    con.close()


def test_merge_with_schema_qualified_columns_equals_duckdb(spark, sqlite_catalog, tmp_path) -> None:
    """`MERGE INTO main.q USING main.src ON main.q.id = main.src.id` (no aliases) is
    valid in Spark and DuckDB; both lakes end with the same rows."""
    merge = (
        "MERGE INTO main.q USING main.src ON main.q.id = main.src.id "
        "WHEN MATCHED AND main.src.v <> main.q.v THEN UPDATE SET v = main.src.v "
        "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (main.src.id, main.src.v)"
    )
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    runner = LakeSQL(spark, lake)
    runner.execute("CREATE TABLE main.q AS SELECT id, CAST(id AS STRING) AS v FROM range(0, 20)")
    runner.execute("CREATE TABLE main.src AS SELECT id, 'new' AS v FROM range(15, 25)")
    runner.execute(merge)
    con = duck.connect()
    duck.attach(con, f"sqlite:{tmp_path}/twin.sqlite", alias="twin", data_path=str(tmp_path / "tw"))
    con.execute("USE twin")
    con.execute(
        "CREATE TABLE main.q AS SELECT i AS id, CAST(i AS VARCHAR) AS v FROM range(0, 20) r(i)"
    )
    con.execute("CREATE TABLE main.src AS SELECT i AS id, 'new' AS v FROM range(15, 25) r(i)")
    con.execute(merge)
    duck.attach(con, sqlite_catalog.duckdb_attach, alias="ours")
    ours = con.execute("SELECT id, v FROM ours.main.q ORDER BY id").fetchall()
    assert ours == con.execute("SELECT id, v FROM twin.main.q ORDER BY id").fetchall()
    assert ours[14] == (14, "14") and ours[15] == (15, "new") and len(ours) == 25
    con.close()


def test_ddl_statements_and_views_duckdb_can_query(spark, catalog: Catalog) -> None:
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    sql = LakeSQL(spark, lake)
    sql.execute("CREATE SCHEMA IF NOT EXISTS shop")
    sql.execute("CREATE SCHEMA IF NOT EXISTS shop")  # idempotent
    sql.execute("CREATE TABLE shop.orders AS SELECT id, CAST(id % 3 AS INT) AS k FROM range(0, 20)")
    sql.execute("ALTER TABLE shop.orders ADD COLUMNS (note STRING, tags ARRAY<STRING>)")
    sql.execute("ALTER TABLE shop.orders ALTER COLUMN k TYPE BIGINT")
    sql.execute("ALTER TABLE shop.orders RENAME COLUMN note TO remark")
    sql.execute("ALTER TABLE shop.orders DROP COLUMN tags")
    sql.execute("COMMENT ON TABLE shop.orders IS 'all orders'")
    sql.execute("CREATE OR REPLACE VIEW shop.big AS SELECT id, k FROM shop.orders WHERE id > 10")
    sql.execute("COMMENT ON VIEW shop.big IS 'big ones'")
    sql.execute("ALTER TABLE shop.orders RENAME TO shop.orders2")
    sql.execute("CREATE OR REPLACE VIEW shop.big AS SELECT id, k FROM shop.orders2 WHERE id > 15")
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    described = con.execute("DESCRIBE lake.shop.orders2").fetchall()
    assert [(d[0], d[1]) for d in described] == [
        ("id", "BIGINT"),
        ("k", "BIGINT"),
        ("remark", "VARCHAR"),
    ]
    assert sorted(con.execute("SELECT id FROM lake.shop.big").fetchall()) == [
        (16,),
        (17,),
        (18,),
        (19,),
    ]
    assert con.execute(
        "SELECT comment FROM duckdb_views() WHERE view_name = 'big' AND database_name = 'lake'"
    ).fetchall() == [(None,)]  # replacing the view dropped its comment, as DuckDB does
    assert con.execute(
        "SELECT comment FROM duckdb_tables() WHERE table_name = 'orders2'"
    ).fetchall() == [("all orders",)]
    assert sorted(r.id for r in sql.query("SELECT id FROM shop.big").collect()) == [16, 17, 18, 19]
    sql.execute("DROP VIEW shop.big")
    sql.execute("DROP TABLE IF EXISTS shop.nope")
    with pytest.raises(InvalidChangeError, match=r"still contains orders2 \(use cascade\)"):
        sql.execute("DROP SCHEMA shop")
    sql.execute("DROP SCHEMA shop CASCADE")
    assert lake.catalog().tables() == [] and len(lake.catalog().schemas()) == 1
    con.close()
