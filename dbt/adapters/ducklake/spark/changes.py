"""The change feed: `table_changes`, `table_insertions`, `table_deletions` between two
snapshots (inclusive), with DuckDB's columns and update detection.

Only what the window touched is read: data files that began, ended or got deletes in
it (and files with per-row snapshot ids), their delete files, and inlined rows and
deletes. Each file is read for what the window did to it: a file that only lost rows
(an UPDATE's old file) is read once, for the deleted rows, not also for new ones. A
row deleted and inserted again under the same row id in one snapshot is an update
(`update_preimage` / `update_postimage`), paired as DuckDB pairs them. Rows are read
with the table's columns as of the end snapshot.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession, Window
from pyspark.sql import functions as F

from ..lake import CatalogReader, Column, DataFile, DeleteFile, InlinedDelete, InlinedRow, Lake
from .driver_changes import WindowParts, feed_on_driver, inlined_values, lineage_schema
from .errors import ChangeFeedError
from .local_rows import local_frame
from .read_values import inlined_frame
from .scan import ScanMetrics, read_files, scan_table
from .scan_deletes import delete_positions
from .scan_files import DELETE_FILE_ID_COL, DELETE_POS_COL, DELETE_SNAPSHOT, FILE_ID_COL, POS_COL

# "events": the changes with each inserted and deleted row once, for consumers that
# apply them (a CDC snapshot), where "changes" repeats them per pair as DuckDB does
FEEDS = ("changes", "insertions", "deletions", "events")
# deleted positions up to this many are sent to every task reading the changed files
# rather than shuffled with them
BROADCAST_DELETES = 2_000_000


def table_changes(
    spark: SparkSession,
    lake: Lake,
    schema: str,
    name: str,
    start: int | datetime,
    end: int | datetime | None = None,
    *,
    feed: str = "changes",
    metrics: ScanMetrics | None = None,
) -> DataFrame:
    """Changes of schema.name made by snapshots start..end (ids or times; end = latest).

    `feed` "changes" gives `snapshot_id, rowid, change_type, <columns>`; "insertions"
    and "deletions" give the table's columns only — what DuckDB 1.5's extension returns,
    although DuckLake's documentation shows `snapshot_id, rowid` in front. "events" is
    "changes" with each inserted and deleted row once (see `_as_changes`).
    """
    first, cat = _window(lake, schema, name, start, end, feed)
    last = cat.snapshot_id
    with cat.session():
        info = cat.table(schema, name)
        columns = cat.columns(info.table_id)
        files, delete_files = cat.changed_files(info, first)
        inlined = cat.inlined_rows(info.table_id, include_ended=True)
        ids = {f.data_file_id for f in files}
        inlined_deletes = [d for d in cat.inlined_deletes(info.table_id) if d.data_file_id in ids]
    if metrics is not None:
        _count_read(metrics, files, inlined, first)
    parts = _window_parts(columns, files, delete_files, inlined_deletes, inlined, (first, last))
    names = _quoted([c.name for c in columns])
    small = feed_on_driver(spark, lake.files, parts, feed)
    if small is not None:
        return small if feed in ("changes", "events") else small.select(*names)
    ins, dels = _read_window(spark, cat, parts, cat.file_column_stats(info.table_id))
    if feed == "insertions":
        return ins.select(*names)
    if feed == "deletions":
        return dels.select(*names)
    return _as_changes(ins, dels, [c.name for c in columns], repeat=feed == "changes")


def _window_parts(
    columns: list[Column],
    files: list[DataFile],
    delete_files: list[DeleteFile],
    inlined_deletes: list[InlinedDelete],
    inlined: list[InlinedRow],
    window: tuple[int, int],
) -> WindowParts:
    """What the window touched; each file is read for what the window did to it: new
    rows, lost rows, or both."""
    first, last = window
    losing = _files_losing(files, delete_files, inlined_deletes, first, last)
    lost_ids = {f.data_file_id for f in losing}
    return WindowParts(
        columns=columns,
        gaining=_files_gaining(files, first),
        losing=losing,
        delete_files=[d for d in delete_files if d.data_file_id in lost_ids],
        inlined_deletes=[d for d in inlined_deletes if d.data_file_id in lost_ids],
        born=[r for r in inlined if first <= r.begin_snapshot],
        ended=[
            r for r in inlined if r.end_snapshot is not None and first <= r.end_snapshot <= last
        ],
        first=first,
        last=last,
    )


def _read_window(
    spark: SparkSession, cat: CatalogReader, parts: WindowParts, file_stats: dict[int, Any]
) -> tuple[DataFrame, DataFrame]:
    """The window's inserted and deleted rows (`<columns>, rowid, snapshot_id`), as
    Spark plans."""
    columns = parts.columns
    in_window = F.col("snapshot_id").between(parts.first, parts.last)
    # a frame of inlined rows only when there are some: an empty one costs ~70 ms of
    # planning (Arrow conversion) in every feed read
    inserted = [_inlined(spark, columns, parts.born)] if parts.born else []
    deleted = [_inlined(spark, columns, parts.ended, at_end=True)] if parts.ended else []
    if parts.gaining:
        rows = read_files(spark, cat, columns, parts.gaining, file_stats, [], None, lineage=True)
        inserted.append(
            rows.where(in_window).select(
                *_quoted([c.name for c in columns]), "rowid", "snapshot_id"
            )
        )
    lost = _lost_rows(spark, cat, parts, file_stats)
    if lost is not None:
        deleted.append(lost)
    # no rows of a kind: an empty frame of the feed's columns
    ins = _union(inserted or [_inlined(spark, columns, [])]).where(in_window)
    dels = _union(deleted or [_inlined(spark, columns, [])])
    return ins, dels


def rows_as_changes(
    spark: SparkSession, lake: Lake, schema: str, name: str, at: int | datetime
) -> DataFrame:
    """The rows of schema.name at snapshot `at` in the feed's columns, each an `insert`
    stamped with the snapshot that wrote it: a feed from the table's beginning with
    the rows deleted since left out."""
    rows = scan_table(spark, lake, schema, name, at=at, lineage=True)
    names = [c for c in rows.columns if c not in ("rowid", "snapshot_id")]
    return rows.select(
        "snapshot_id", "rowid", F.lit("insert").alias("change_type"), *_quoted(names)
    )


def _window(
    lake: Lake,
    schema: str,
    name: str,
    start: int | datetime,
    end: int | datetime | None,
    feed: str,
) -> tuple[int, CatalogReader]:
    """The first snapshot of the window and the catalog at its last one, checked."""
    if feed not in FEEDS:
        raise ChangeFeedError(f"change feed {feed!r}: accepted {', '.join(FEEDS)}")
    first = lake.snapshot(start).snapshot_id
    cat = lake.catalog(end)
    if first > cat.snapshot_id:
        raise ChangeFeedError(
            f"table_{feed} of {schema}.{name}: start snapshot {first} is after end "
            f"{cat.snapshot_id}"
        )
    return first, cat


def _lost_rows(
    spark: SparkSession, cat: CatalogReader, parts: WindowParts, file_stats: dict[int, Any]
) -> DataFrame | None:
    """The file rows the window deleted, stamped with the deleting snapshot (None: no
    file lost rows in it). Only the files that lost rows are read, joined to their
    deleted positions."""
    losing, their_deletes, their_inlined = parts.losing, parts.delete_files, parts.inlined_deletes
    gone = _deleted_positions(spark, losing, their_deletes, their_inlined, parts.first, parts.last)
    if gone is None:
        return None
    columns = parts.columns
    rows = read_files(
        spark, cat, columns, losing, file_stats, [], None, lineage=True, positions=True
    )
    small = _deletes_at_most(losing, their_deletes, their_inlined) <= BROADCAST_DELETES
    return _deleted_rows(rows, F.broadcast(gone) if small else gone, [c.name for c in columns])


def _files_gaining(files: Sequence[DataFile], first: int) -> list[DataFile]:
    """The files that can hold rows inserted in the window: begun in it, or holding rows
    of several snapshots up to one in it. Older files lost rows at most."""
    return [f for f in files if max(f.begin_snapshot, f.partial_max or 0) >= first]


def _files_losing(
    files: Sequence[DataFile],
    delete_files: Sequence[DeleteFile],
    inlined_deletes: Sequence[InlinedDelete],
    first: int,
    last: int,
) -> list[DataFile]:
    """The files that can have lost rows in the window: ended in it, or with deletes
    stamped in it. Only their rows are read for the deleted rows' values."""
    touched = {
        d.data_file_id for d in delete_files if max(d.begin_snapshot, d.partial_max or 0) >= first
    }
    touched |= {d.data_file_id for d in inlined_deletes if d.begin_snapshot >= first}
    return [
        f
        for f in files
        if f.data_file_id in touched
        or (f.end_snapshot is not None and first <= f.end_snapshot <= last)
    ]


def _deletes_at_most(
    files: Sequence[DataFile],
    delete_files: Sequence[DeleteFile],
    inlined_deletes: Sequence[InlinedDelete],
) -> int:
    """An upper bound of the positions the window can have deleted, from the catalog."""
    ended = sum(f.record_count for f in files if f.end_snapshot is not None)
    return ended + sum(d.delete_count for d in delete_files) + len(inlined_deletes)


def _deleted_rows(rows: DataFrame, gone: DataFrame, names: list[str]) -> DataFrame:
    """The file rows at the deleted positions, stamped with the deleting snapshot."""
    at = (rows[FILE_ID_COL] == gone[DELETE_FILE_ID_COL]) & (rows[POS_COL] == gone[DELETE_POS_COL])
    stamped = F.col(DELETE_SNAPSHOT).alias("snapshot_id")
    return rows.join(gone, at).select(*_quoted(names), "rowid", stamped)


def _as_changes(ins: DataFrame, dels: DataFrame, names: list[str], *, repeat: bool) -> DataFrame:
    """Inserted and deleted rows as one feed, paired as DuckDB pairs them: a row id one
    snapshot both deleted and inserted is an update, each deletion with each insertion
    giving a pre- and a post-image; a row id the snapshot only deleted (DuckDB's
    cumulative deletion vectors re-stamp older deletions) or only inserted keeps that
    kind. Without `repeat`, each row once."""
    both = ins.withColumn("change_type", F.lit("insert")).unionByName(
        dels.withColumn("change_type", F.lit("delete"))
    )
    inserting = F.col("change_type") == "insert"
    same_row = Window.partitionBy("snapshot_id", "rowid")
    inserts = F.sum(inserting.cast("int")).over(same_row)
    deletes = F.sum((~inserting).cast("int")).over(same_row)
    counted = both.select(
        "*", inserts.alias("__ducklake_inserts"), deletes.alias("__ducklake_deletes")
    )
    paired = (F.col("__ducklake_inserts") > 0) & (F.col("__ducklake_deletes") > 0)
    change_type = (
        F.when(paired & inserting, F.lit("update_postimage"))
        .when(paired, F.lit("update_preimage"))
        .otherwise(F.col("change_type"))
    )
    columns: list[SparkColumn | str] = [
        "snapshot_id",
        "rowid",
        change_type.alias("change_type"),
        *_quoted(names),
    ]
    if not repeat:
        return counted.select(*columns)
    copies = F.when(paired & inserting, F.col("__ducklake_deletes")).when(
        paired, F.col("__ducklake_inserts")
    )
    copy = F.explode(F.array_repeat(F.lit(0), F.coalesce(copies, F.lit(1)).cast("int")))
    return counted.select(*columns, copy.alias("__ducklake_copy")).drop("__ducklake_copy")


def _count_read(
    metrics: ScanMetrics, files: Sequence[DataFile], inlined: Sequence[InlinedRow], first: int
) -> None:
    window_rows = [r for r in inlined if r.begin_snapshot >= first or r.end_snapshot]
    metrics.files_read = len(files)
    metrics.inlined_rows = len(window_rows)
    metrics.rows_read = sum(f.record_count for f in files) + len(window_rows)


def _quoted(names: list[str]) -> list[str]:
    return [f"`{n.replace('`', '``')}`" for n in names]


def _inlined(
    spark: SparkSession, columns: list[Column], rows: list[InlinedRow], *, at_end: bool = False
) -> DataFrame:
    values = inlined_values(columns, rows, at_end=at_end)
    return inlined_frame(spark, values, lineage_schema(columns))


def _deleted_positions(
    spark: SparkSession,
    files: list[DataFile],
    delete_files: list[DeleteFile],
    inlined_deletes: list[InlinedDelete],
    first: int,
    last: int,
) -> DataFrame | None:
    """(file id, position, deleting snapshot) of rows of `files` deleted in the window:
    positional deletes stamped in it, and the remaining rows of files ended in it."""
    known = delete_positions(spark, delete_files, inlined_deletes)
    parts = []
    if known is not None:
        known = known.select(DELETE_FILE_ID_COL, DELETE_POS_COL, DELETE_SNAPSHOT)
        if _positions_may_repeat(delete_files, inlined_deletes):
            known = known.groupBy(DELETE_FILE_ID_COL, DELETE_POS_COL).agg(
                F.min(DELETE_SNAPSHOT).alias(DELETE_SNAPSHOT)
            )
        parts.append(known.where(F.col(DELETE_SNAPSHOT).between(first, last)))
    ended = [
        (f.data_file_id, f.end_snapshot, f.record_count)
        for f in files
        if f.end_snapshot is not None and first <= f.end_snapshot <= last
    ]
    if ended:
        ends = local_frame(
            spark, ended, f"{DELETE_FILE_ID_COL} bigint, {DELETE_SNAPSHOT} bigint, n bigint"
        )
        every = ends.select(
            DELETE_FILE_ID_COL,
            DELETE_SNAPSHOT,
            F.explode(F.sequence(F.lit(0).cast("bigint"), F.col("n") - 1)).alias(DELETE_POS_COL),
        )
        if known is not None:  # rows deleted before the file ended went then
            every = every.join(
                known.drop(DELETE_SNAPSHOT), [DELETE_FILE_ID_COL, DELETE_POS_COL], "left_anti"
            )
        parts.append(every.select(DELETE_FILE_ID_COL, DELETE_POS_COL, DELETE_SNAPSHOT))
    return _union(parts) if parts else None


def _positions_may_repeat(
    delete_files: Sequence[DeleteFile], inlined_deletes: Sequence[InlinedDelete]
) -> bool:
    """Whether a deleted position can be listed twice, so that its first deletion must be
    found. DuckLake 1.0 keeps one delete file per data file (a partial one stamps each
    position), and its positions are distinct: then each is listed once, and the shuffle
    that finds the first is saved."""
    per_file = [d.data_file_id for d in delete_files]
    return bool(inlined_deletes) or len(per_file) != len(set(per_file))


def _union(parts: list[DataFrame]) -> DataFrame:
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out
