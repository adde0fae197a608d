"""`dbt docs generate`: the catalog (tables, views, columns, types, comments, row count
and size) from DuckLake metadata in a fixed number of queries — never Spark DESCRIBE."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pyspark.sql import SparkSession

from .lake.lake import Lake
from .spark.types import spark_type
from .spark.views import scan_relation

CATALOG_COLUMNS = (
    "table_database",
    "table_schema",
    "table_name",
    "table_type",
    "table_comment",
    "table_owner",
    "column_name",
    "column_index",
    "column_type",
    "column_comment",
    "stats:rows:label",
    "stats:rows:value",
    "stats:rows:description",
    "stats:rows:include",
    "stats:bytes:label",
    "stats:bytes:value",
    "stats:bytes:description",
    "stats:bytes:include",
)


def catalog_rows(
    spark: SparkSession, lake: Lake, database: str, schemas: Iterable[str]
) -> list[tuple[Any, ...]]:
    """One row per column of every table and view in `schemas` (names compared
    case-insensitively, as dbt does)."""
    wanted = {s.lower() for s in schemas}
    cat = lake.catalog()
    with cat.session():
        tables = [t for t in cat.tables() if t.schema_name.lower() in wanted]
        views = [v for v in cat.views() if v.schema_name.lower() in wanted]
        columns = cat.all_columns()
        stats = cat.all_table_stats()
    rows: list[tuple[Any, ...]] = []
    for t in tables:
        s = stats.get(t.table_id)
        numbers = (
            (
                ("Row count", s.record_count, "Rows in the table (DuckLake table stats)", True),
                ("Size", s.file_size_bytes, "Bytes of the table's data files", True),
            )
            if s is not None
            else (("Row count", None, "", False), ("Size", None, "", False))
        )
        flat = tuple(x for group in numbers for x in group)
        for i, c in enumerate(columns.get(t.table_id, []), start=1):
            rows.append(
                (
                    database,
                    t.schema_name,
                    t.name,
                    "BASE TABLE",
                    t.comment,
                    None,
                    c.name,
                    i,
                    spark_type(c).simpleString(),
                    c.comment,
                    *flat,
                )
            )
    for v in views:
        fields = scan_relation(spark, lake, v.schema_name, v.name).schema.fields  # analysis only
        for i, f in enumerate(fields, start=1):
            rows.append(
                (
                    database,
                    v.schema_name,
                    v.name,
                    "VIEW",
                    v.comment,
                    None,
                    f.name,
                    i,
                    f.dataType.simpleString(),
                    None,
                    "Row count",
                    None,
                    "",
                    False,
                    "Size",
                    None,
                    "",
                    False,
                )
            )
    return rows
