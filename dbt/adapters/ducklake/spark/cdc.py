"""CDC snapshots: a dbt snapshot (SCD type 2) of a lake table built from its change
feed. Each run reads only the changes since the source snapshot the previous run
consumed, records every version a key had in between (not only the latest state),
dates each version by the source snapshot that wrote it, and closes deleted keys at the
snapshot that deleted them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlglot
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from sqlglot import exp
from sqlglot.dialects.spark import Spark

from ..lake import CatalogReader, Lake
from .changes import table_changes
from .errors import CdcError
from .local_rows import local_frame
from .scan import ScanMetrics, scan_table


@dataclass(frozen=True)
class SnapshotColumns:
    """dbt's snapshot meta columns (snapshot_table_column_names)."""

    scd_id: str = "dbt_scd_id"
    updated_at: str = "dbt_updated_at"
    valid_from: str = "dbt_valid_from"
    valid_to: str = "dbt_valid_to"


@dataclass(frozen=True)
class Source:
    schema: str | None
    name: str
    columns: tuple[str, ...] | None  # None: every column (select *)


def source_of(sql: str) -> Source:
    """The one lake table a `changes` snapshot reads: `select * | <columns> from <table>`.

    Filters, joins and expressions are refused: a row moving in or out of a WHERE is
    not a change of that row, and the feed cannot say what an expression was."""
    accepted = (
        "strategy 'changes' snapshots one lake table through its change feed: write "
        "`select * from {{ source(...) }}` or a plain column list"
    )
    try:
        tree = sqlglot.parse_one(sql, read=Spark)
    except sqlglot.errors.ParseError as exc:
        raise CdcError(f"{accepted} ({exc})") from exc
    tables = list(tree.find_all(exp.Table))
    if not isinstance(tree, exp.Select) or len(tables) != 1 or tree.args.get("joins"):
        raise CdcError(f"{accepted}; got: {sql.strip()[:200]}")
    for clause in ("where", "group", "having", "qualify", "limit", "order", "distinct"):
        if tree.args.get(clause):
            raise CdcError(f"{accepted}; this query has {clause.upper()}")
    columns: list[str] = []
    for projection in tree.expressions:
        if isinstance(projection, exp.Star):
            return Source(tables[0].db or None, tables[0].name, None)
        if not isinstance(projection, exp.Column):
            raise CdcError(f"{accepted}; {projection.sql()} is not a plain column")
        columns.append(projection.name)
    return Source(tables[0].db or None, tables[0].name, tuple(columns))


@dataclass
class CdcBatch:
    """One run's work: versions to insert and keys whose open version ends."""

    source_snapshot: int  # the source's snapshot this run consumes up to
    new_versions: DataFrame
    closes: DataFrame | None  # key columns + valid_to; None on the first run
    metrics: ScanMetrics


def _refuse_a_view(catalog: CatalogReader, schema: str, name: str) -> None:
    """A view has no change feed: say so (its name is not a table's, which read as
    "does not exist")."""
    if any(v.name.lower() == name.lower() for v in catalog.views(schema)):
        raise CdcError(
            f"strategy 'changes' reads a table's change feed, and {schema}.{name} is a "
            "view (views have none): select from the table it reads, or use strategy "
            "'timestamp' or 'check'"
        )


def changes_batch(
    spark: SparkSession,
    lake: Lake,
    source: Source,
    default_schema: str,
    unique_key: list[str],
    since: int | None,
    names: SnapshotColumns,
) -> CdcBatch | None:
    """The versions since snapshot `since` (exclusive; None: the first run takes the
    current rows, each dated by the snapshot that wrote it). None when the source has
    not changed since."""
    schema = source.schema or default_schema
    latest = lake.latest_snapshot().snapshot_id
    if not unique_key:
        raise CdcError("strategy 'changes' needs a unique_key")
    catalog = lake.catalog()
    _refuse_a_view(catalog, schema, source.name)
    table_ids = {str(i) for i in catalog.table_ids_ever(schema, source.name)}
    history = lake.snapshots(since=since)
    if since is not None and not any(c.value in table_ids for s in history for c in s.changes):
        return None
    times = local_frame(
        spark,
        [(s.snapshot_id, s.snapshot_time) for s in history],
        "__cdc_snapshot bigint, __cdc_time timestamp",
    )
    metrics = ScanMetrics()
    if since is None:
        rows = scan_table(
            spark, lake, schema, source.name, at=latest, lineage=True, metrics=metrics
        )
        cols = _columns(rows, source, unique_key)
        versions = rows.join(F.broadcast(times), F.col("snapshot_id") == F.col("__cdc_snapshot"))
        new = _versions(versions, cols, unique_key, F.col("__cdc_time"), None, names)
        return CdcBatch(latest, new, None, metrics)
    # "events": each change once (DuckDB's feed repeats images per deletion and insertion)
    window = (since + 1, latest)
    feed = table_changes(spark, lake, schema, source.name, *window, feed="events", metrics=metrics)
    cols = _columns(feed, source, unique_key)
    # an update's preimage ends the old version (of the old key, should the key change);
    # within one snapshot the end comes before the new version
    upsert = F.col("change_type").isin("insert", "update_postimage")
    events = feed.join(
        F.broadcast(times), F.col("snapshot_id") == F.col("__cdc_snapshot")
    ).withColumn("__cdc_upsert", upsert.cast("int"))
    keys = [F.col(f"`{k}`") for k in unique_key]
    order = Window.partitionBy(*keys).orderBy("snapshot_id", "__cdc_upsert", "rowid")
    events = events.withColumn("__cdc_next", F.lead("__cdc_time").over(order))
    new = _versions(
        events.where(F.col("__cdc_upsert") == 1),
        cols,
        unique_key,
        F.col("__cdc_time"),
        F.col("__cdc_next"),
        names,
    )
    closes = events.groupBy(*keys).agg(F.min("__cdc_time").alias(names.valid_to))
    return CdcBatch(latest, new, closes, metrics)


def _columns(df: DataFrame, source: Source, unique_key: list[str]) -> list[str]:
    available = {c.lower(): c for c in df.columns}
    wanted = (
        list(source.columns)
        if source.columns
        else [c for c in df.columns if c not in ("snapshot_id", "rowid", "change_type")]
    )
    missing = [c for c in [*wanted, *unique_key] if c.lower() not in available]
    if missing:
        raise CdcError(
            f"columns {', '.join(missing)} are not in {source.schema}.{source.name} "
            f"(it has {', '.join(c for c in df.columns if c not in ('snapshot_id', 'rowid'))})"
        )
    return [available[c.lower()] for c in wanted]


def _versions(
    df: DataFrame,
    cols: list[str],
    unique_key: list[str],
    valid_from: SparkColumn,
    valid_to: SparkColumn | None,
    names: SnapshotColumns,
) -> DataFrame:
    scd_parts: list[Any] = [
        F.coalesce(F.col(f"`{k}`").cast("string"), F.lit("")) for k in unique_key
    ]
    scd_parts.append(valid_from.cast("string"))
    return df.select(
        *[F.col(f"`{c}`") for c in cols],
        F.md5(F.concat_ws("|", *scd_parts)).alias(names.scd_id),
        valid_from.alias(names.updated_at),
        valid_from.alias(names.valid_from),
        (valid_to if valid_to is not None else F.lit(None).cast("timestamp")).alias(names.valid_to),
    )
