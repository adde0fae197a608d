"""`dbt docs generate`: the catalog (tables, views, columns, types, comments, row count
and size) from DuckLake metadata in a fixed number of queries — never Spark DESCRIBE."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from dbt.artifacts.schemas.catalog import CatalogTable
from dbt_common.contracts.metadata import ColumnMetadata, StatsItem, TableMetadata

from .lake import Lake, TableStats

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

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
    spark: SparkSession,
    lake: Lake,
    database: str,
    schemas: Iterable[str],
    only: str | None = None,
) -> list[tuple[Any, ...]]:
    """One row per column of every table and view in `schemas`, or of the one named
    `only` (names compared case-insensitively, as dbt does)."""
    from .spark.types import spark_type  # the Spark layer loads when a command needs it
    from .spark.views import scan_relation

    wanted = {s.lower() for s in schemas}

    def chosen(schema: str, name: str) -> bool:
        return schema.lower() in wanted and (only is None or name.lower() == only.lower())

    cat = lake.catalog()
    with cat.session():
        tables = [t for t in cat.tables() if chosen(t.schema_name, t.name)]
        views = [v for v in cat.views() if chosen(v.schema_name, v.name)]
        columns = cat.all_columns()
        stats = cat.all_table_stats()
    rows: list[tuple[Any, ...]] = []
    for t in tables:
        relation = (database, t.schema_name, t.name, "BASE TABLE", t.comment, None)
        numbers = _stats(stats.get(t.table_id))
        for i, c in enumerate(columns.get(t.table_id, []), start=1):
            rows.append((*relation, c.name, i, spark_type(c).simpleString(), c.comment, *numbers))
    for v in views:
        relation = (database, v.schema_name, v.name, "VIEW", v.comment, None)
        fields = scan_relation(spark, lake, v.schema_name, v.name).schema.fields  # analysis only
        for i, f in enumerate(fields, start=1):
            rows.append((*relation, f.name, i, f.dataType.simpleString(), None, *_stats(None)))
    return rows


def _stats(stats: TableStats | None) -> tuple[Any, ...]:
    """dbt's two table stats per column row: (label, value, description, include)."""
    if stats is None:
        return ("Row count", None, "", False, "Size", None, "", False)
    rows = ("Row count", stats.record_count, "Rows in the table (DuckLake table stats)", True)
    size = ("Size", stats.file_size_bytes, "Bytes of the table's data files", True)
    return (*rows, *size)


def catalog_table(rows: list[tuple[Any, ...]]) -> CatalogTable | None:
    """The rows of one relation (from `catalog_rows`) as dbt's CatalogTable."""
    if not rows:
        return None
    first = dict(zip(CATALOG_COLUMNS, rows[0], strict=True))
    metadata = TableMetadata(
        type=first["table_type"],
        schema=first["table_schema"],
        name=first["table_name"],
        database=first["table_database"],
        comment=first["table_comment"],
        owner=first["table_owner"],
    )
    columns = {r[6]: ColumnMetadata(type=r[8], index=r[7], name=r[6], comment=r[9]) for r in rows}
    stats: dict[str, StatsItem] = {}
    for key in ("rows", "bytes"):
        label, value, description, include = (first[f"stats:{key}:{p}"] for p in _STAT_PARTS)
        if include:
            stats[key] = StatsItem(
                id=key, label=label, value=value, include=True, description=description
            )
    stats["has_stats"] = StatsItem(
        id="has_stats",
        label="Has Stats?",
        value=bool(stats),
        include=False,
        description="Indicates whether there are statistics for this table",
    )
    return CatalogTable(metadata=metadata, columns=columns, stats=stats)


_STAT_PARTS = ("label", "value", "description", "include")
