"""DuckLake's maintenance functions with DuckDB's names, parameters and result rows; the
data work (reading, sorting and writing compacted files, deleting files) runs as Spark
jobs, the catalog work through lake/maintenance.

merge_adjacent_files, rewrite_data_files and flush_inlined_data commit one snapshot each
(with the caller's commit info); expire_snapshots, cleanup_old_files and
delete_orphaned_files change no snapshot, as in DuckDB. checkpoint runs them all in
DuckDB's order.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..lake import (
    CatalogReader,
    Column,
    DataFileSpec,
    FileGroup,
    FileIO,
    Flush,
    InlinedRow,
    Lake,
    Snapshot,
    StagedTable,
    TableInfo,
    Transaction,
    cleanup_candidates,
    find_orphans,
    forget_scheduled,
    merge_groups,
    normalize_path,
    remove_folders,
    rewrite_groups,
    sweep_stages,
    tables_in_scope,
)
from ..lake import (
    expire_snapshots as expire_in_catalog,
)
from .arrow import WriteOptions
from .defaults import column_defaults
from .dml import delete_file_spec
from .engine import CommitInfo, begin, write_options
from .read_values import inlined_frame
from .remove_task import RemovePaths
from .scan import read_files, spark_rows
from .scan_files import local_path, read_parquet
from .sealed import write_delete_here
from .types import FIELD_ID, ROW_ID_FIELD_ID, SNAPSHOT_FIELD_ID, spark_schema
from .write import write_data_files

log = logging.getLogger("dbt.adapters.ducklake.spark")

ONE_FILE = 1 << 62  # a target size no compaction group reaches: one output file per group


@dataclass(frozen=True)
class CompactionRow:
    """One output file, as DuckDB's merge_adjacent_files / rewrite_data_files return."""

    schema_name: str
    table_name: str
    files_processed: int
    files_created: int


def merge_adjacent_files(
    spark: SparkSession,
    lake: Lake,
    commit: CommitInfo | None = None,
    *,
    table: str | None = None,
    schema: str | None = None,
    max_compacted_files: int | None = None,
    min_file_size: int | None = None,
    max_file_size: int | None = None,
) -> list[CompactionRow]:
    """Merge small adjacent files into partial files that keep each row's snapshot and
    row id, so time travel and the change feed read as before. One snapshot."""
    cat = lake.catalog()
    tx = begin(lake, commit)
    rows: list[CompactionRow] = []
    for info in tables_in_scope(lake, cat, schema, table):
        groups = merge_groups(
            lake,
            cat,
            info,
            max_compacted_files=max_compacted_files,
            min_file_size=min_file_size,
            max_file_size=max_file_size,
        )
        if not groups:
            continue
        staged = tx.table(info.schema_name, info.name)
        for n, group in enumerate(groups, 1):
            log.info(
                "merge_adjacent_files %s: group %s/%s, %s files",
                info.qualified_name,
                n,
                len(groups),
                len(group.files),
            )
            data = _read(spark, cat, group, live_only=False)
            specs = _write(lake, staged, data, snapshot_ids=True)
            specs = [
                replace(
                    s,
                    ids_in_file=True,
                    begin_snapshot=group.begin_snapshot,
                    partial_max=group.last_snapshot,
                )
                for s in specs
            ]
            tx.merge_adjacent_files(staged, group.files, specs)
            rows.append(CompactionRow(info.schema_name, info.name, len(group.files), len(specs)))
    _commit(tx, "merge_adjacent_files", rows)
    return rows


def rewrite_data_files(
    spark: SparkSession,
    lake: Lake,
    commit: CommitInfo | None = None,
    *,
    table: str | None = None,
    schema: str | None = None,
    delete_threshold: float | None = None,
) -> list[CompactionRow]:
    """Rewrite files whose deleted share reaches the threshold without the deleted rows
    (rows keep their ids); the old files end in this snapshot."""
    cat = lake.catalog()
    tx = begin(lake, commit)
    rows: list[CompactionRow] = []
    for info in tables_in_scope(lake, cat, schema, table):
        groups = rewrite_groups(lake, cat, info, delete_threshold=delete_threshold)
        if not groups:
            continue
        staged = tx.table(info.schema_name, info.name)
        for group in groups:
            data = _read(spark, cat, group, live_only=True)
            specs = [replace(s, ids_in_file=True) for s in _write(lake, staged, data)]
            tx.rewrite_deleted_files(staged, group.files, specs)
            rows.append(CompactionRow(info.schema_name, info.name, len(group.files), len(specs)))
    _commit(tx, "rewrite_data_files", rows)
    return rows


@dataclass(frozen=True)
class FlushRow:
    schema_name: str
    table_name: str
    rows_flushed: int


def flush_inlined_data(
    spark: SparkSession,
    lake: Lake,
    commit: CommitInfo | None = None,
    *,
    table: str | None = None,
    schema: str | None = None,
) -> list[FlushRow]:
    """Move inlined rows (deleted ones too, with a partial delete file so time travel
    still sees them) and inlined deletions of files into Parquet. One snapshot."""
    cat = lake.catalog()
    tx = begin(lake, commit)
    rows: list[FlushRow] = []
    for info in tables_in_scope(lake, cat, schema, table):
        flushed = _flush_table(spark, lake, cat, tx, info)
        if flushed is not None:
            rows.append(FlushRow(info.schema_name, info.name, flushed))
    _commit(tx, "flush_inlined_data", rows)
    return rows


def _flush_table(
    spark: SparkSession, lake: Lake, cat: CatalogReader, tx: Transaction, info: TableInfo
) -> int | None:
    with cat.session():
        columns = cat.columns(info.table_id)
        inlined = cat.inlined_rows(info.table_id, include_ended=True)
        file_deletes = cat.inlined_deletes(info.table_id)
        targets = cat.data_files(info, only={d.data_file_id for d in file_deletes})
    if not inlined and not file_deletes:
        return None
    staged = tx.table(info.schema_name, info.name)
    options = write_options(lake, staged)
    flush = Flush(row_ids=[r.row_id for r in inlined])
    if inlined:
        _flush_rows(spark, lake, staged, columns, inlined, options, flush)
    by_file: dict[int, dict[int, int]] = {}
    for d in file_deletes:
        by_file.setdefault(d.data_file_id, {})[d.position] = d.begin_snapshot
        flush.deleted_positions.append((d.data_file_id, d.position))
    for f in targets:
        stamps = by_file[f.data_file_id]
        facts = write_delete_here(spark, staged, options, f.path, f.delete_file, stamps)
        flush.file_deletes.append(delete_file_spec(f.data_file_id, facts))
    tx.flush_inlined(staged, flush)
    log.info(
        "flush_inlined_data %s: %s row(s) to %s file(s), %s inlined deletion(s)",
        info.qualified_name,
        len(inlined),
        len(flush.files),
        len(file_deletes),
    )
    return len(inlined)


def _flush_rows(
    spark: SparkSession,
    lake: Lake,
    staged: StagedTable,
    columns: Sequence[Column],
    inlined: Sequence[InlinedRow],
    options: WriteOptions,
    flush: Flush,
) -> None:
    """Write the inlined rows (ended ones too) to a file that keeps their row ids and
    snapshots; rows that had ended get a delete file stamped with their end."""
    values = [
        (*[r.values[c.column_id] for c in columns], r.row_id, r.begin_snapshot) for r in inlined
    ]
    schema = spark_schema(list(columns))
    schema = schema.add("_ducklake_internal_row_id", T.LongType())
    schema = schema.add("_ducklake_internal_snapshot_id", T.LongType())
    data = inlined_frame(spark, spark_rows(values, columns), schema).coalesce(1)
    first = min(r.begin_snapshot for r in inlined)
    last = max(r.begin_snapshot for r in inlined)
    specs = [
        replace(s, ids_in_file=True, begin_snapshot=first, partial_max=last)
        for s in _write(lake, staged, data, snapshot_ids=True)
    ]
    flush.files.extend(specs)
    # an UPDATE leaves two versions of a row id: the ended one is (id, its begin)
    ended = {
        (r.row_id, r.begin_snapshot): r.end_snapshot for r in inlined if r.end_snapshot is not None
    }
    if ended:
        keys = {staged.root + s.path: s.encryption_key for s in specs if s.encryption_key}
        paths = [staged.root + s.path for s in specs]
        for index, (path, stamps) in enumerate(_positions(spark, paths, ended, keys)):
            facts = write_delete_here(spark, staged, options, path, None, stamps)
            flush.new_file_deletes.append((index, delete_file_spec(-1, facts)))


def _positions(
    spark: SparkSession, paths: list[str], ended: dict[tuple[int, int], int], keys: dict[str, str]
) -> list[tuple[str, dict[int, int]]]:
    """Where the ended rows landed in the flushed files: (path, position -> snapshot)."""
    schema = T.StructType(
        [
            T.StructField("rid", T.LongType(), True, {FIELD_ID: ROW_ID_FIELD_ID}),
            T.StructField("snap", T.LongType(), True, {FIELD_ID: SNAPSHOT_FIELD_ID}),
        ]
    )
    found = (
        read_parquet(spark, schema, paths, keys)
        .where(F.col("rid").isin(sorted({rid for rid, _ in ended})))
        .select(
            "rid",
            "snap",
            local_path(F.col("_metadata.file_path")).alias("path"),
            F.col("_metadata.row_index").alias("pos"),
        )
        .collect()  # bounded by the inlined rows
    )
    by_path: dict[str, dict[int, int]] = {}
    for r in found:
        if (r.rid, r.snap) in ended:
            by_path.setdefault(normalize_path(r.path), {})[r.pos] = ended[(r.rid, r.snap)]
    return [(p, by_path[normalize_path(p)]) for p in paths if normalize_path(p) in by_path]


def expire_snapshots(
    lake: Lake,
    *,
    versions: Sequence[int] | None = None,
    older_than: datetime | None = None,
    dry_run: bool = False,
) -> list[Snapshot]:
    expired = expire_in_catalog(lake, versions=versions, older_than=older_than, dry_run=dry_run)
    verb = "would expire" if dry_run else "expired"
    log.info("expire_snapshots: %s %s snapshot(s)", verb, len(expired))
    return expired


def cleanup_old_files(
    spark: SparkSession,
    lake: Lake,
    *,
    older_than: datetime | None = None,
    cleanup_all: bool = False,
    dry_run: bool = False,
) -> list[str]:
    """Delete files scheduled for deletion (before `older_than`, or all)."""
    files = cleanup_candidates(lake, older_than=older_than, cleanup_all=cleanup_all)
    paths = _delete(spark, lake, "cleanup_old_files", [f.path for f in files], dry_run)
    if not dry_run:
        forget_scheduled(lake, files)
    return paths


def delete_orphaned_files(
    spark: SparkSession,
    lake: Lake,
    *,
    older_than: datetime | None = None,
    cleanup_all: bool = False,
    dry_run: bool = False,
) -> list[str]:
    """Delete the files under the data path that the catalog does not track: Parquet
    files and dead writers' staging folders, after dropping the staging copies dead
    `publish: atomic` builds left (the files of live builds' copies stay)."""
    stages = sweep_stages(lake, older_than=older_than, cleanup_all=cleanup_all, dry_run=dry_run)
    orphans = find_orphans(
        lake, older_than=older_than, cleanup_all=cleanup_all, keep=stages.live_files
    )
    deleted = _delete(spark, lake, "delete_orphaned_files", orphans.files, dry_run)
    if not dry_run:
        remove_folders(lake, orphans.staging)
    return deleted


def _delete(
    spark: SparkSession, lake: Lake, what: str, paths: list[str], dry_run: bool
) -> list[str]:
    if not dry_run:
        remove_files(spark, lake.files, paths)
    log.info("%s: %s %s file(s)", what, "would delete" if dry_run else "deleted", len(paths))
    return paths


def checkpoint(spark: SparkSession, lake: Lake, commit: CommitInfo | None = None) -> None:
    """DuckDB's CHECKPOINT order with the lake's options as parameters."""
    flush_inlined_data(spark, lake, commit)
    expire_snapshots(lake)
    merge_adjacent_files(spark, lake, commit)
    rewrite_data_files(spark, lake, commit)
    cleanup_old_files(spark, lake)
    delete_orphaned_files(spark, lake)


# -- helpers ------------------------------------------------------------------------------


def _read(
    spark: SparkSession, cat: CatalogReader, group: FileGroup, *, live_only: bool
) -> DataFrame:
    """The group's rows with their row ids (and snapshot ids), in one partition."""
    columns = cat.columns(group.table.table_id)
    with cat.session():
        has_defaults = bool(column_defaults(columns))  # struct fields' too
        stats = cat.file_column_stats(group.table.table_id) if has_defaults else {}
        deletes = cat.inlined_deletes(group.table.table_id) if live_only else []
    data = read_files(
        spark,
        cat,
        columns,
        group.files,
        stats,
        deletes,
        cat.snapshot_id if live_only else None,
        lineage=True,
    )
    names = [c.name for c in columns] + ["_ducklake_internal_row_id"]
    if live_only:
        data = data.drop("snapshot_id")
    else:
        names.append("_ducklake_internal_snapshot_id")
    return data.toDF(*names).coalesce(1)


def _write(
    lake: Lake, staged: StagedTable, data: DataFrame, *, snapshot_ids: bool = False
) -> list[DataFileSpec]:
    options = replace(write_options(lake, staged), target_file_size=ONE_FILE)
    return write_data_files(
        data,
        staged,
        options,
        partition=staged.current_partition(),
        sort=staged.current_sort(),
        row_ids=True,
        snapshot_ids=snapshot_ids,
    )


def _commit(tx: Transaction, what: str, rows: Sequence[Any]) -> None:
    snapshot = tx.commit()
    if snapshot is not None:
        log.info("%s: committed snapshot %s (%s)", what, snapshot.snapshot_id, len(rows))


def remove_files(spark: SparkSession, files: FileIO, paths: Sequence[str]) -> int:
    """Delete files in a Spark job (a file already gone counts as deleted)."""
    if not paths:
        return 0
    frame = spark.createDataFrame([(p,) for p in paths], "path string")
    parts = max(1, min(len(paths) // 256 + 1, 16))
    done = frame.repartition(parts).mapInArrow(RemovePaths(files), "removed long").collect()
    return sum(r.removed for r in done)
