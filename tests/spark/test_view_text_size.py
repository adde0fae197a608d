"""A view's DuckDB text stays about as long as its Spark text, however deep its casts nest
(dbt-spark's dateadd and last_day nest to_timestamp and casts several levels deep), and
each cast whose operand type the text shows takes the branch DuckDB itself would take:
Spark and DuckDB read the same rows."""

from __future__ import annotations

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.sql import LakeSQL
from tests import duck
from tests.conftest import Catalog
from tests.spark.test_view_meaning import ROWS, _read, _same, _spark_read


def _nested(expression: str, wrapper: str, depth: int) -> str:
    for _ in range(depth):
        expression = wrapper.format(x=expression)
    return expression


# each operand kind a cast to TIMESTAMP or STRING can meet, and nestings of both
EXPRESSIONS = {
    "exact": "to_timestamp(CAST(b AS BIGINT) + CAST(i AS INT))",
    "decimal": "to_timestamp(CAST(dec AS DECIMAL(12, 3)))",
    "float": "to_timestamp(CAST(b AS DOUBLE) * 1.5)",
    "truncated": "to_timestamp(date_trunc('MONTH', ts))",
    "text": "to_timestamp(CAST(s_ts AS STRING))",
    "double as text": "CAST(CAST(d * 100 AS DOUBLE) AS STRING)",
    # Spark writes it in exponent notation, DuckDB cannot: DuckDB refuses the view
    "big double as text": "CAST(CAST(d * 1e8 AS DOUBLE) AS STRING)",
    "timestamp as text": "CAST(to_timestamp(b) AS STRING)",
    "integer as text": "CAST(CAST(i AS BIGINT) AS STRING)",
    "date as text": "CAST(CAST(s_date AS DATE) AS STRING)",
    "boolean as text": "CAST(CAST(flag AS BOOLEAN) AS STRING)",
    "epochs, nested": _nested("ts", "to_timestamp(to_unix_timestamp({x}) + 3600)", 6),
    "texts, nested": _nested("ts", "CAST(CAST({x} AS STRING) AS TIMESTAMP)", 6),
}


def test_nested_casts_keep_the_text_short_and_the_meaning(spark, sqlite_catalog: Catalog) -> None:
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    sql = LakeSQL(spark, lake, default_schema="main", catalog_name="lake")
    sql.execute(ROWS)
    names = {kind: f"v{n}" for n, kind in enumerate(EXPRESSIONS)}
    sql.execute("BEGIN")
    for kind, expression in EXPRESSIONS.items():
        sql.execute(f"CREATE VIEW {names[kind]} AS SELECT i, {expression} AS r FROM t")
    sql.execute("COMMIT")

    stored = {v.name: v.sql for v in lake.catalog().views()}
    for kind, expression in EXPRESSIONS.items():
        # a CASE over typeof(x) per level copied x four times a level: 4^6 times here
        assert len(stored[names[kind]]) < 30 * len(expression) + 400, kind

    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach)
    for kind, name in names.items():
        ours, _ = _spark_read(spark, lake, int(name[1:]))
        theirs = _read(lambda name=name: con.execute(f"SELECT * FROM lake.main.{name}").fetchall())
        if kind == "big double as text":
            assert not isinstance(ours, Exception) and "double to STRING" in str(theirs)
            continue
        assert isinstance(ours, Exception) == isinstance(theirs, Exception), (kind, ours, theirs)
        if not isinstance(ours, Exception):
            assert _same(ours, theirs), (kind, ours, theirs)
    con.close()
