"""A DuckLake table at a snapshot as a Spark DataFrame.

The driver reads the catalog (a fixed number of queries), prunes files with their stats
and partition values, and plans one Parquet scan over the kept files. Executors read
columns by field id (renames, drops and promotions follow), drop deleted positions
(delete files, partial delete files, inlined deletes) with an anti-join, filter partial
files by `_ducklake_internal_snapshot_id`, and inlined rows are unioned in.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import reduce
from typing import Any

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..lake import (
    CatalogReader,
    Column,
    DataFile,
    DataFileSpec,
    Lake,
    NameMap,
    StagedTable,
)
from .collect import collect_rows
from .compat import has_deletes_reader, reader_widens
from .defaults import Default, apply_defaults, column_defaults
from .encrypted import file_keys, require_decryption
from .kept_rows import DELETES_SOURCE, deletes_options, deletes_spec, kept_filter
from .local_rows import local_frame
from .prune import Predicate, may_match
from .read_values import inlined_frame, logical_column, say_what_changes, spark_rows
from .scan_deletes import deleted_rows, drop_deleted, row_numbering, use_masks
from .scan_files import (
    FILE_ID_COL,
    POS_COL,
    POS_KEY,
    ROW_ID,
    ROW_INDEX,
    ROW_SNAPSHOT,
    FileMatch,
    file_match,
    hive_value,
    positioned,
    read_parquet,
    with_position,
)
from .stored_types import as_today, by_stored_types
from .types import (
    FIELD_ID,
    ROW_ID_FIELD_ID,
    SNAPSHOT_FIELD_ID,
    spark_schema,
)

log = logging.getLogger("dbt.adapters.ducklake.spark")


@dataclass
class ScanMetrics:
    """What the last scan planned; tests and logs use it to show pruning."""

    files_total: int = 0
    files_read: int = 0
    inlined_rows: int = 0
    rows_read: int = 0  # rows of the data files read (before deletes) plus inlined rows
    pruned_by: list[str] = field(default_factory=list)
    files: list[DataFile] = field(default_factory=list)  # the data files the scan reads
    # how deleted rows were dropped: IN_SCAN_JVM and/or ANTI_JOIN (the Python fallback)
    deletes_applied: list[str] = field(default_factory=list)


# Characters Hadoop's Path keeps as they are in the URI Spark reports as
# `_metadata.file_path` (java.net.URI's path characters); any other ASCII is %XX-encoded.
def scan_table(
    spark: SparkSession,
    lake: Lake,
    schema: str,
    name: str,
    *,
    at: int | datetime | None = None,
    lineage: bool = False,
    positions: bool = False,
    predicates: Sequence[Predicate] | Callable[[Sequence[Column]], Sequence[Predicate]] = (),
    metrics: ScanMetrics | None = None,
    catalog: CatalogReader | None = None,
    prune_from_rows: int = 1,
) -> DataFrame:
    """The table as of `at` (snapshot id, time, or latest), with current names and types.

    `lineage` adds `rowid` and `snapshot_id` (the snapshot that wrote each row);
    `positions` adds `__ducklake_fid` and `__ducklake_pos`, the data file id and row
    position of each row (NULL for inlined rows), which merge-on-read DML needs.
    `predicates` (or a function of the table's columns giving them, called only when
    the table's data files hold at least `prune_from_rows` rows) only prune files;
    callers still filter rows. `catalog`, when the caller has one open, is read instead
    of opening another at `at`.
    """
    cat = catalog if catalog is not None else lake.catalog(at)
    with cat.session():
        state = cat.table_state(schema, name)
        require_decryption(spark, f"{schema}.{name}", state.data_files)
        say_what_changes(state.columns, f"{schema}.{name}")
        if callable(predicates):  # it may cost a job: asked only when pruning can pay
            rows = sum(f.record_count for f in state.data_files)
            predicates = predicates(state.columns) if rows >= prune_from_rows else ()
        file_stats = cat.file_column_stats(state.table.table_id)
        inlined_deletes = cat.inlined_deletes(state.table.table_id)
        inlined = cat.inlined_rows(state.table.table_id)
    return _plan(
        spark,
        cat,
        state.columns,
        state.data_files,
        file_stats,
        inlined_deletes,
        inlined,
        lineage=lineage,
        positions=positions,
        predicates=predicates,
        metrics=metrics,
        partition=state.partition,
    )


def _plan(
    spark: SparkSession,
    cat: CatalogReader,
    columns: Sequence[Column],
    files: Sequence[DataFile],
    file_stats: dict[int, Any],
    inlined_deletes: Sequence[Any],
    inlined: Sequence[Any],
    *,
    lineage: bool,
    positions: bool,
    predicates: Sequence[Predicate],
    metrics: ScanMetrics | None,
    partition: Any,
) -> DataFrame:
    snap = cat.snapshot_id
    kept = [
        f
        for f in files
        if may_match(f, columns, file_stats.get(f.data_file_id), partition, predicates)
    ]
    _count_scan(
        metrics if metrics is not None else ScanMetrics(), snap, files, kept, inlined, predicates
    )
    out_schema = spark_schema(list(columns))
    if lineage:
        out_schema = out_schema.add("rowid", T.LongType()).add("snapshot_id", T.LongType())
    if positions:
        out_schema = out_schema.add(FILE_ID_COL, T.LongType()).add(POS_COL, T.LongType())
    parts: list[DataFrame] = []
    if kept:
        parts.append(
            read_files(
                spark,
                cat,
                columns,
                kept,
                file_stats,
                inlined_deletes,
                snap,
                lineage,
                positions,
                metrics,
            )
        )
    if inlined:
        rows = [
            tuple(r.values[c.column_id] for c in columns)
            + ((r.row_id, r.begin_snapshot) if lineage else ())
            + ((None, None) if positions else ())
            for r in inlined
        ]
        parts.append(inlined_frame(spark, spark_rows(rows, columns), out_schema))
    if not parts:
        return local_frame(spark, [], out_schema)
    result = parts[0]
    for extra in parts[1:]:
        result = result.unionByName(extra)
    return result


def _count_scan(
    metrics: ScanMetrics,
    snap: int,
    files: Sequence[DataFile],
    kept: list[DataFile],
    inlined: Sequence[Any],
    predicates: Sequence[Predicate],
) -> None:
    metrics.files_total = len(files)
    metrics.files_read = len(kept)
    metrics.files = kept
    metrics.inlined_rows = len(inlined)
    metrics.rows_read = sum(f.record_count for f in kept) + len(inlined)
    if predicates:
        metrics.pruned_by = [str(p) for p in predicates]
        log.info(
            "scan at snapshot %s: %s of %s data files pruned by %s",
            snap,
            len(files) - len(kept),
            len(files),
            ", ".join(metrics.pruned_by),
        )


def read_files(
    spark: SparkSession,
    cat: CatalogReader,
    columns: Sequence[Column],
    files: Sequence[DataFile],
    file_stats: dict[int, Any],
    inlined_deletes: Sequence[Any],
    snap: int | None,
    lineage: bool,
    positions: bool = False,
    metrics: ScanMetrics | None = None,
) -> DataFrame:
    """Rows of `files` as of snapshot `snap`, or every row they ever held when None.

    Files that need nothing per row (no deletes, no rows of later snapshots, no missing
    defaults, field ids present) are read as a plain Parquet scan when the caller asks
    for no per-file columns, and so are those needing only their deletes where the JVM
    reader skips them (`kept_rows`); only the others are matched to their file.
    """
    args = (file_stats, inlined_deletes, snap, lineage, positions, metrics)
    eras = by_stored_types(spark, cat, columns, files)
    if eras is None:
        return _read_as_stored(spark, cat, columns, files, *args)
    # Spark 3.5 and files written before a type promotion: a read per set of types
    reads = [as_today(_read_as_stored(spark, cat, c, f, *args), columns) for c, f in eras]
    return reduce(DataFrame.unionByName, reads)


def _read_as_stored(
    spark: SparkSession,
    cat: CatalogReader,
    columns: Sequence[Column],
    files: Sequence[DataFile],
    file_stats: dict[int, Any],
    inlined_deletes: Sequence[Any],
    snap: int | None,
    lineage: bool,
    positions: bool,
    metrics: ScanMetrics | None,
) -> DataFrame:
    """read_files for files whose Parquet types this session reads as `columns`' types."""
    defaults = column_defaults(columns)
    plain: list[DataFile] = []
    deleting: list[DataFile] = []
    if not (lineage or positions):
        plain, deleting, files = _split_plain(files, file_stats, defaults, inlined_deletes, snap)
    parts: list[DataFrame] = []
    plain_schema = spark_schema(list(columns), reading=True)
    if plain:
        raw = read_parquet(spark, plain_schema, [f.path for f in plain], file_keys(plain))
        parts.append(raw.select(*[logical_column(c) for c in columns]))
    options = _reader_options(spark, columns, deleting, inlined_deletes, snap)
    if options is not None:
        # files whose rows need only their deletes: a scan whose reader skips them
        paths, keys = [f.path for f in deleting], file_keys(deleting)
        raw = read_parquet(spark, plain_schema, paths, keys, source=DELETES_SOURCE, options=options)
        parts.append(raw.select(*[logical_column(c) for c in columns]))
        _say_deletes(metrics, IN_SCAN_READER)
    else:
        files = [*deleting, *files]
    if files:
        parts.append(
            _read_per_file(
                spark,
                cat,
                columns,
                files,
                file_stats,
                defaults,
                inlined_deletes,
                snap,
                lineage,
                positions,
                metrics,
            )
        )
    result = parts[0]
    for extra in parts[1:]:
        result = result.unionByName(extra)
    return result


def _reader_options(
    spark: SparkSession,
    columns: Sequence[Column],
    files: Sequence[DataFile],
    inlined_deletes: Sequence[Any],
    snap: int | None,
) -> dict[str, str] | None:
    """The options of one scan of `files` whose reader drops their deletes as of
    `snap`, or None when it cannot: nothing to delete, no JVM classes, a name-mapped
    file (read by a scan of its own), or a column named as Spark's row-position field
    (it would be taken for the positions)."""
    if snap is None or any(f.mapping_id is not None for f in files):
        return None
    if not has_deletes_reader(spark):
        return None
    if any(c.name.lower() == ROW_INDEX for c in columns):
        return None
    spec = deletes_spec(spark, files, inlined_deletes, snap, by_name=True)
    return deletes_options(spec, snap) if spec is not None else None


def _split_plain(
    files: Sequence[DataFile],
    file_stats: dict[int, Any],
    defaults: Mapping[int, Default],
    inlined_deletes: Sequence[Any],
    snap: int | None,
) -> tuple[list[DataFile], list[DataFile], list[DataFile]]:
    """(files readable as they are, files needing only their deletes dropped, files
    needing other per-row work)."""
    with_inlined_deletes = {d.data_file_id for d in inlined_deletes}
    plain: list[DataFile] = []
    deleting: list[DataFile] = []
    other: list[DataFile] = []
    for f in files:
        stats = file_stats.get(f.data_file_id) or {}
        if (
            f.mapping_id is not None
            or (bool(stats) and any(cid not in stats for cid in defaults))
            or (snap is not None and f.partial_max is not None and f.partial_max > snap)
        ):
            other.append(f)
        elif snap is not None and (
            f.delete_file is not None or f.data_file_id in with_inlined_deletes
        ):
            deleting.append(f)
        else:
            plain.append(f)
    return plain, deleting, other


def _read_per_file(
    spark: SparkSession,
    cat: CatalogReader,
    columns: Sequence[Column],
    files: Sequence[DataFile],
    file_stats: dict[int, Any],
    defaults: Mapping[int, Default],
    inlined_deletes: Sequence[Any],
    snap: int | None,
    lineage: bool,
    positions: bool,
    metrics: ScanMetrics | None,
) -> DataFrame:
    read_schema = spark_schema(list(columns), reading=True)
    read_schema = read_schema.add(
        T.StructField(ROW_ID, T.LongType(), True, {FIELD_ID: ROW_ID_FIELD_ID})
    )
    read_schema = read_schema.add(
        T.StructField(ROW_SNAPSHOT, T.LongType(), True, {FIELD_ID: SNAPSHOT_FIELD_ID})
    )
    # One scan over all files with field ids (plus one per name mapping, for files
    # written without ids); files older than a column with a default get it per file.
    # Rows find their file by the URI Spark reports, precomputed here when possible.
    match = file_match([f.path for f in files], [f.file_size_bytes for f in files])
    offsets = row_numbering(files)
    file_info = {
        "__ducklake_fid": [f.data_file_id for f in files],
        "__ducklake_row_id_start": [f.row_id_start for f in files],
        "__ducklake_begin": [f.begin_snapshot for f in files],
        "__ducklake_off": [offsets[f.data_file_id] for f in files],
    }
    # the reader that skips deleted rows keeps positions too
    options = _reader_options(spark, columns, files, inlined_deletes, snap)
    raw = _read_raw(spark, cat, columns, files, read_schema, match, options)
    kept = None
    if options is not None:
        _say_deletes(metrics, IN_SCAN_READER)
    elif snap is not None and match.key_type == "bigint":  # rows carry their file's size
        kept = kept_filter(spark, files, inlined_deletes, snap)
    if kept is not None:
        raw = raw.where(kept(F.col("__ducklake_path"), F.col(POS_KEY)))
        _say_deletes(metrics, IN_SCAN_JVM)
    data = match.attach(spark, raw, "__ducklake_path", file_info)
    if defaults:
        data = apply_defaults(data, files, file_stats, defaults)
    deletes = None
    if snap is not None:
        if any(f.partial_max is not None and f.partial_max > snap for f in files):
            # a partial file holds rows of several snapshots; keep those visible at `snap`
            visible = F.col(ROW_SNAPSHOT).isNull() | (F.col(ROW_SNAPSHOT) <= F.lit(snap))
            data = data.where(visible)
        if kept is None and options is None:
            deletes = deleted_rows(spark, files, inlined_deletes, snap, offsets)
    if deletes is not None:
        deleted = sum(f.delete_file.delete_count for f in files if f.delete_file is not None)
        data = drop_deleted(data, deletes, masks=use_masks(deleted + len(inlined_deletes)))
        _say_deletes(metrics, ANTI_JOIN)
    return data.select(*_output_columns(columns, lineage, positions))


IN_SCAN_READER = "in the scan (JVM reader)"
IN_SCAN_JVM = "in the scan (JVM filter)"
ANTI_JOIN = "anti-join"


def _say_deletes(metrics: ScanMetrics | None, how: str) -> None:
    """Record (and log at debug) how this scan drops deleted rows."""
    if metrics is not None and how not in metrics.deletes_applied:
        metrics.deletes_applied.append(how)
    log.debug("scan: deleted rows dropped %s", how)


def _read_raw(
    spark: SparkSession,
    cat: CatalogReader,
    columns: Sequence[Column],
    files: Sequence[DataFile],
    read_schema: T.StructType,
    match: FileMatch,
    deletes: dict[str, str] | None = None,
) -> DataFrame:
    """One scan over the files with field ids, plus one per name mapping (files
    written without ids), each row with its position in its file. `deletes`: the
    options of a scan whose reader drops deleted rows (files with field ids only)."""
    by_id = [f.path for f in files if f.mapping_id is None]
    keys = file_keys(files)
    mapped: dict[int, list[str]] = {}
    for f in files:
        if f.mapping_id is not None:
            mapped.setdefault(f.mapping_id, []).append(f.path)
    raw: DataFrame | None = None
    if by_id:
        schema, position = positioned(read_schema)
        source = DELETES_SOURCE if deletes else "parquet"
        read = read_parquet(spark, schema, by_id, keys, source=source, options=deletes)
        raw = with_position(read, match, position)
    mappings = cat.name_mappings(mapped) if mapped else {}
    for mapping_id, paths in mapped.items():
        mapping = mappings.get(mapping_id, [])
        part = _read_mapped(spark, columns, mapping, paths, match, keys)
        raw = part if raw is None else raw.unionByName(part)
    assert raw is not None
    return raw


def _output_columns(columns: Sequence[Column], lineage: bool, positions: bool) -> list[SparkColumn]:
    select = [logical_column(c) for c in columns]
    if lineage:
        select.append(
            F.coalesce(F.col(ROW_ID), F.col("__ducklake_row_id_start") + F.col(POS_KEY)).alias(
                "rowid"
            )
        )
        select.append(
            F.coalesce(F.col(ROW_SNAPSHOT), F.col("__ducklake_begin")).alias("snapshot_id")
        )
    if positions:
        select += [F.col("__ducklake_fid").alias(FILE_ID_COL), F.col(POS_KEY).alias(POS_COL)]
    return select


def _read_mapped(
    spark: SparkSession,
    columns: Sequence[Column],
    mapping: Sequence[NameMap],
    paths: list[str],
    match: FileMatch,
    keys: Mapping[str, str],
) -> DataFrame:
    """Files without field ids: read each column by the name its mapping gives it."""
    entry_field = {m.column_id: m.target_field_id for m in mapping}
    stored = _stored_types(spark, paths, keys)
    by_field: dict[tuple[int | None, int], NameMap] = {}
    for m in mapping:
        parent = entry_field.get(m.parent_column) if m.parent_column is not None else None
        by_field[(parent, m.target_field_id)] = m

    def field(col: Column, parent: int | None) -> T.StructField | None:
        entry = by_field.get((parent, col.column_id))
        if entry is None or entry.is_partition:
            return None
        dt = spark_schema([col], reading=True)[0].dataType
        if parent is None and not col.children and entry.source_name in stored:
            dt = stored[entry.source_name]  # Spark 3.5: read as stored, cast below
        if col.type == "struct":
            kids = [(field(c, col.column_id), c) for c in col.children]
            dt = T.StructType(
                [
                    k
                    if k is not None
                    else T.StructField(f"__absent_{c.column_id}", spark_schema([c])[0].dataType)
                    for k, c in kids
                ]
            )
        return T.StructField(entry.source_name, dt, True)

    fields = {c.column_id: field(c, None) for c in columns}
    schema, position = positioned(T.StructType([f for f in fields.values() if f is not None]))
    df = read_parquet(spark, schema, paths, keys)
    hive = {}
    for c in columns:
        entry = by_field.get((None, c.column_id))
        if entry is not None and entry.is_partition:
            hive[c.column_id] = f"__ducklake_hive_{c.column_id}"
            df = df.withColumn(hive[c.column_id], hive_value(entry.source_name))
    df = with_position(df, match, position)
    select = []
    for c in columns:
        target = spark_schema([c], reading=True)[0].dataType
        f = fields[c.column_id]
        if c.column_id in hive:
            value = F.col(hive[c.column_id]).cast(target)
        elif f is not None:
            value = F.col(f"`{f.name}`").cast(target)
        else:
            value = F.lit(None).cast(target)
        select.append(value.alias(c.name))
    return df.select(*select, *_located_without_lineage())


def _located_without_lineage() -> list[SparkColumn]:
    """A name-mapped file's rows have no stored row ids or snapshots; path and position
    locate them."""
    return [
        F.lit(None).cast("bigint").alias(ROW_ID),
        F.lit(None).cast("bigint").alias(ROW_SNAPSHOT),
        F.col("__ducklake_path"),
        F.col(POS_KEY),
    ]


def _stored_types(
    spark: SparkSession, paths: list[str], keys: Mapping[str, str]
) -> dict[str, T.DataType]:
    """Top-level Parquet types of a name-mapped file (its footer, on the driver), where
    this Spark's reader does not widen them itself; {} where it does."""
    if reader_widens(spark) or keys:
        return {}
    return {f.name: f.dataType for f in spark.read.parquet(paths[0]).schema.fields}


def read_back(
    spark: SparkSession,
    table: StagedTable,
    root: str,
    files: Sequence[DataFileSpec],
    row_ids: bool,
) -> list[tuple[Any, ...]]:
    """The rows of a few just-written, unregistered files (a result that turned out
    small enough to inline), in the order they were written; with `row_ids` each row
    ends with its `_ducklake_internal_row_id`."""
    columns = table.column_list()
    schema = spark_schema(columns, reading=True)
    out_schema = spark_schema(columns)
    select = [logical_column(c) for c in columns]
    if row_ids:
        schema = schema.add(T.StructField(ROW_ID, T.LongType(), True, {FIELD_ID: ROW_ID_FIELD_ID}))
        out_schema = out_schema.add(ROW_ID, T.LongType())
        select.append(F.col(ROW_ID))
    parts = [
        read_parquet(spark, schema, [root + f.path]).select(
            F.lit(i).alias("__ducklake_file_order"),
            F.col("_metadata.row_index").alias(POS_KEY),
            *select,
        )
        for i, f in enumerate(files)
        if f.record_count
    ]
    if not parts:
        return []
    union = parts[0]
    for part in parts[1:]:
        union = union.unionByName(part)
    ordered = union.orderBy("__ducklake_file_order", POS_KEY).drop("__ducklake_file_order", POS_KEY)
    return collect_rows(ordered)  # at most the inlining limit
