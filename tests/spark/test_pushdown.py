"""A query's filters on a lake table prune its files before Spark reads them — only
where that is certainly right — and every query still returns what DuckDB returns."""

from __future__ import annotations

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.sql import LakeSQL
from tests import duck
from tests.canon import canon_rows
from tests.conftest import Catalog
from tests.spark.test_roundtrip import _spark_rows


def test_partition_and_stats_filters_prune_files(spark, sqlite_catalog: Catalog) -> None:
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    sql = LakeSQL(spark, lake)
    sql.execute(
        "CREATE TABLE ev PARTITIONED BY (region) AS SELECT CAST(id AS INT) AS id, "
        "CAST(id % 4 AS INT) AS region, DATE '2024-01-01' + CAST(id % 4 AS INT) AS day, "
        "concat('n', id % 4) AS name, CAST(id % 4 AS DOUBLE) / 2 AS half FROM range(0, 400)"
    )
    sql.execute("CREATE TABLE other AS SELECT CAST(id AS INT) AS region FROM range(0, 2)")
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach)
    con.execute("USE lake")

    cases = {
        # query -> files read of ev's 4 (one per region)
        "SELECT * FROM ev WHERE region = 1": 1,
        "SELECT * FROM ev e WHERE e.region IN (1, 2) AND id > 10": 2,
        "SELECT * FROM ev WHERE 2 < region": 1,
        "SELECT * FROM ev WHERE region BETWEEN 1 AND 2": 2,
        "SELECT * FROM ev WHERE day = DATE '2024-01-03'": 1,
        "SELECT * FROM ev WHERE day >= '2024-01-03'": 2,
        "SELECT * FROM ev WHERE name = 'n3'": 1,
        "SELECT * FROM ev WHERE half > 1.2": 1,
        "SELECT * FROM ev WHERE region IS NULL": 0,
        # not certainly about ev alone, or not of the column's kind: nothing pruned
        "SELECT * FROM ev WHERE region = 1 OR id = 5": 4,
        "SELECT * FROM ev WHERE region < 1.5": 4,
        "SELECT * FROM ev WHERE region = '1'": 4,
        "SELECT * FROM ev WHERE day > '2024-1-2'": 4,
        "SELECT e.* FROM ev e JOIN other o ON e.region = o.region WHERE e.region = 1": 4,
        "SELECT o.region, e.id FROM other o LEFT JOIN ev e ON e.region = o.region "
        "WHERE e.id IS NULL": 4,
        "SELECT * FROM (SELECT * FROM ev) s WHERE s.region = 1": 4,
    }
    for query, files in cases.items():
        ours = _spark_rows(sql.query(query))
        scans = dict(sql.last_scans)
        assert scans["main.ev"].files_total == 4, query
        assert scans["main.ev"].files_read == files, query
        theirs = con.execute(query).fetchall()
        assert canon_rows(ours) == canon_rows(theirs), query
    con.close()
