"""Lake views as Spark DataFrames.

A view stores SQL in a dialect (DuckDB's, for views DuckDB created). It is parsed with
sqlglot, every reference to a lake table or view is replaced by a temporary view of its
scan at the same snapshot, and the result is generated as Spark SQL.
"""

from __future__ import annotations

import itertools
from datetime import datetime, timezone

import sqlglot
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructType
from sqlglot import exp
from sqlglot.errors import SqlglotError

from ..lake import CatalogNotFoundError, CatalogReader, Lake, LakeError, iso_datetime
from .errors import UnsupportedTypeError, ViewError
from .scan import scan_table
from .types import spark_schema

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
        raise ViewError(f"view {schema}.{name}: views nest deeper than {MAX_VIEW_DEPTH} levels")
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
        pinned = _pinned(table, schema, name)
        ref_cat = cat if pinned is None else _catalog_at(lake, pinned, schema, name, table)
        df = _relation(spark, lake, ref_cat, ref_schema, table.name, depth)
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


def _pinned(table: exp.Table, schema: str, name: str) -> int | datetime | None:
    """The snapshot a reference in a view travels to (Spark's `t VERSION AS OF n` /
    `TIMESTAMP AS OF '…'`, DuckDB's `t AT (VERSION => n)`): that table is read as of it,
    not as of the snapshot the view is read at. A timestamp without a zone means UTC."""
    travel = table.args.get("version") or table.args.get("when")
    if travel is None:
        return None
    kind = travel.text("kind") if isinstance(travel, exp.HistoricalData) else travel.name
    value = travel.expression
    if isinstance(value, exp.Cast):
        value = value.this
    if not isinstance(value, exp.Literal):
        raise ViewError(
            f"view {schema}.{name}: time travel to {value.sql()} (not a literal snapshot id "
            "or timestamp) is not supported"
        )
    if kind.upper() == "VERSION":
        return int(value.name)
    stamp = iso_datetime(value.name)
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=timezone.utc)


def _catalog_at(
    lake: Lake, pinned: int | datetime, schema: str, name: str, table: exp.Table
) -> CatalogReader:
    try:
        return lake.catalog(pinned)
    except CatalogNotFoundError:
        raise ViewError(
            f"view {schema}.{name} reads {table.db or schema}.{table.name} as of snapshot "
            f"{pinned}, which no longer exists (expired by ducklake_expire_snapshots); "
            "re-create the view (a dbt clone: dbt clone --full-refresh)"
        ) from None


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


def read_columns(
    spark: SparkSession, lake: Lake, query: exp.Expression, default_schema: str
) -> dict[str, dict[str, dict[str, str]]]:
    """The Spark column types of the relations `query` reads, by schema and name (what
    the DuckDB translation of a view needs to know about DECIMALs): lake tables from the
    catalog, lake views and Spark temporary views from Spark's analysis. A relation that
    cannot be resolved is left out; its columns count as unknown."""
    cat = lake.catalog()
    ctes = {c.alias_or_name.lower() for c in query.find_all(exp.CTE)}
    found: dict[str, dict[str, dict[str, str]]] = {}
    for table in query.find_all(exp.Table):
        if not table.name or (not table.db and table.name.lower() in ctes):
            continue
        schema = table.db or default_schema
        info = cat.find_table(schema, table.name)
        try:
            if info is not None:
                fields = spark_schema(cat.columns(info.table_id)).fields
            else:
                fields = _read_schema(spark, lake, cat, table, schema).fields
        except (LakeError, PySparkException, SqlglotError, UnsupportedTypeError):
            continue
        columns = {f.name: f.dataType.simpleString() for f in fields}
        found.setdefault(schema, {})[table.name] = columns
    return found


def _read_schema(
    spark: SparkSession, lake: Lake, cat: CatalogReader, table: exp.Table, schema: str
) -> StructType:
    try:
        return _view(spark, lake, cat, schema, table.name, depth=0).schema
    except CatalogNotFoundError:  # a Spark temporary view or table
        return spark.table(table.sql(dialect="spark")).schema
