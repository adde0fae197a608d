"""Lake views as Spark DataFrames.

A view stores SQL in a dialect (DuckDB's, for views DuckDB created). It is parsed with
sqlglot, every reference to a lake table or view is replaced by a temporary view of its
scan at the same snapshot, and the result is generated as Spark SQL.
"""

from __future__ import annotations

import itertools
from datetime import datetime

import sqlglot
from pyspark.sql import DataFrame, SparkSession
from sqlglot import exp

from ..lake.errors import CatalogNotFoundError
from ..lake.lake import Lake
from ..lake.reader import CatalogReader
from .scan import scan_table

_ids = itertools.count()
MAX_VIEW_DEPTH = 16


def scan_view(
    spark: SparkSession,
    lake: Lake,
    schema: str,
    name: str,
    *,
    at: int | datetime | None = None,
) -> DataFrame:
    cat = lake.catalog(at)
    return _view(spark, lake, cat, schema, name, depth=0)


def scan_relation(
    spark: SparkSession, lake: Lake, schema: str, name: str, *, at: int | datetime | None = None
) -> DataFrame:
    """A table or a view of the lake, whichever `schema.name` is."""
    cat = lake.catalog(at)
    if cat.find_table(schema, name) is not None:
        return scan_table(spark, lake, schema, name, at=cat.snapshot_id)
    return _view(spark, lake, cat, schema, name, depth=0)


def _view(
    spark: SparkSession, lake: Lake, cat: CatalogReader, schema: str, name: str, depth: int
) -> DataFrame:
    if depth > MAX_VIEW_DEPTH:
        raise ValueError(f"view {schema}.{name}: views nest deeper than {MAX_VIEW_DEPTH} levels")
    view = cat.view(schema, name)
    if view.spark_sql:  # created here: run the text it was written in
        tree = sqlglot.parse_one(view.spark_sql, read="spark")
    else:
        # DuckDB stores `{DUCKLAKE_CATALOG}.schema.table` for references into its own lake
        text = view.sql.replace("{DUCKLAKE_CATALOG}", "__ducklake_catalog")
        tree = sqlglot.parse_one(text, read=view.dialect or "duckdb")
    cte_names = {c.alias_or_name.lower() for c in tree.find_all(exp.CTE)}
    for table in list(tree.find_all(exp.Table)):
        if not table.name or (not table.db and table.name.lower() in cte_names):
            continue
        ref_schema = table.db or schema
        df = _relation(spark, lake, cat, ref_schema, table.name, depth)
        if df is None:
            continue  # not a lake relation: left for Spark to resolve
        temp = f"__ducklake_view_{next(_ids)}"
        df.createOrReplaceTempView(temp)
        alias = table.alias or table.name
        table.replace(exp.to_table(temp).as_(alias))
    result = spark.sql(tree.sql(dialect="spark"))
    if view.column_aliases:
        result = result.toDF(*view.column_aliases.split(","))
    return result


def _relation(
    spark: SparkSession, lake: Lake, cat: CatalogReader, schema: str, name: str, depth: int
) -> DataFrame | None:
    if cat.find_table(schema, name) is not None:
        return scan_table(spark, lake, schema, name, at=cat.snapshot_id)
    try:
        cat.view(schema, name)
    except CatalogNotFoundError:
        return None
    return _view(spark, lake, cat, schema, name, depth + 1)
