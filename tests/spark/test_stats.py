"""File column stats written by this engine equal DuckDB's for the same data: DuckDB
prunes files with them, so a wrong encoding would silently drop rows from its results."""

from __future__ import annotations

import pyarrow.parquet as pq
import pytest

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.engine import create_table_as
from tests import duck
from tests.conftest import Catalog

DATA = """SELECT CAST(id AS INT) AS i, id * 1000000007 AS big, CAST(id AS TINYINT) AS tiny,
    CASE WHEN id = 7 THEN double('nan') WHEN id = 8 THEN double('-inf') ELSE id / 8.0 END AS f,
    CAST(id / 3 AS DECIMAL(12,3)) AS dec, CASE WHEN id % 5 = 0 THEN NULL ELSE 'v' || id END AS s,
    DATE '2024-02-27' + CAST(id AS INT) AS d,
    TIMESTAMP '2024-01-01 10:00:00.5' + make_interval(0, 0, 0, 0, CAST(id AS INT)) AS ts,
    TIMESTAMP_NTZ '2020-05-05 05:05:05' + make_interval(0, 0, 0, CAST(id AS INT)) AS ntz,
    id % 2 = 0 AS b, array(CAST(id AS INT), NULL) AS arr
    FROM range(0, 40)"""


# flat columns only: written by the driver (40 rows, as Spark's plan bounds them), or
# where the plan bounds them to more by Spark's own Parquet writer (native_write.py),
# stats from its footers; with the list column, by the Arrow writer in Spark's tasks
FLAT = DATA.replace(", array(CAST(id AS INT), NULL) AS arr", "")
UNBOUNDED = FLAT.replace("FROM range(0, 40)", "FROM range(0, 20000) WHERE id < 40")


@pytest.mark.parametrize(
    "query", [DATA, UNBOUNDED, FLAT], ids=["arrow_writer", "spark_writer", "driver_writer"]
)
def test_file_stats_match_duckdbs(spark, catalog: Catalog, query: str) -> None:
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    create_table_as(lake, "main", "ours", spark.sql(query).coalesce(1))
    (written,) = lake.catalog().data_files(lake.catalog().table("main", "ours"))
    writer = pq.read_metadata(written.path).created_by
    assert ("parquet-mr" in writer) == (query == UNBOUNDED), writer
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    con.execute("USE lake")
    con.execute("SET ducklake_default_data_inlining_row_limit = 0")
    con.execute("CREATE TABLE theirs AS SELECT * FROM ours")
    cat = lake.catalog()

    def stats(name: str) -> dict[int, tuple]:
        table = cat.table("main", name)
        (only,) = cat.file_column_stats(table.table_id).values()
        return {
            cid: (s.null_count, s.min_value, s.max_value, bool(s.contains_nan))
            for cid, s in only.items()
        }

    ours, theirs = stats("ours"), stats("theirs")
    assert set(ours) == set(theirs)
    for cid in sorted(theirs):
        assert ours[cid] == theirs[cid], cid
    # and DuckDB's pruning with our stats keeps every matching row
    for predicate in (
        "f > 3",
        "ts >= TIMESTAMP '2024-01-01 10:00:20'",
        "s = 'v13'",
        "dec BETWEEN 2 AND 4",
        "d = DATE '2024-03-01'",
        "big < 5000000035",
    ):
        assert con.execute(f"SELECT count(*) FROM ours WHERE {predicate}").fetchone() == (
            con.execute(f"SELECT count(*) FROM theirs WHERE {predicate}").fetchone()
        ), predicate
    con.close()


@pytest.mark.parametrize("inlined", [True, False], ids=["inlined_rows", "parquet_rows"])
def test_a_column_added_to_rows_keeps_no_table_stats(
    spark, sqlite_catalog: Catalog, inlined: bool
) -> None:
    """Rows written before ADD COLUMN read it as NULL: table stats claiming it holds no
    NULL would let DuckDB answer count(column) as count(*). Like DuckDB, the table keeps
    no stats for such a column, whatever is written into it later."""
    from dbt.adapters.ducklake.spark.sql import LakeSQL

    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    sql = LakeSQL(spark, lake)
    sql.execute("CREATE TABLE main.t AS SELECT CAST(id AS INT) AS id FROM range(1, 31)")
    sql.execute("ALTER TABLE main.t ADD COLUMNS (doubled INT)")
    new_rows = 5 if inlined else 40  # ≤ 10 rows are inlined
    sql.execute(
        "INSERT INTO main.t SELECT CAST(id AS INT), CAST(id * 2 AS INT) "
        f"FROM range(100, {100 + new_rows})"
    )
    sql.execute("UPDATE main.t SET doubled = 0 WHERE id = 3")
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach)
    got = con.execute(
        "SELECT count(*), count(doubled), count(*) FILTER (doubled IS NOT NULL), "
        "min(doubled), max(doubled) FROM lake.main.t"
    ).fetchone()
    assert got == (30 + new_rows, new_rows + 1, new_rows + 1, 0, (99 + new_rows) * 2)
    spark_count = sql.execute("SELECT count(doubled) FROM main.t").collect()[0][0]
    assert spark_count == new_rows + 1
