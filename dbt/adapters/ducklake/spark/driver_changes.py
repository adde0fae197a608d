"""The change feed of a small window, read on the driver.

An incremental model fed by its upstream's changes mostly reads a window of a few
thousand rows. As a Spark plan that window cost ~0.8 s: a read of the new files, a read
of the files that lost rows joined to their deleted positions, and a window pairing
updates, planned and run for a handful of rows. When the rows a window holds are few
(`DRIVER_FEED_ROWS`: new files' rows and inlined rows counted from the catalog, deleted
positions once the delete files are read; the files that lost rows hold at most
`DRIVER_ROWS`), every column is of a type pyarrow reads from Parquet as Spark does
(integers, floats, text, booleans), and every file is unencrypted Parquet with field
ids holding every column, the driver reads those rows with pyarrow (new files whole,
only the row groups holding deleted positions of the others), pairs updates with
numpy, and hands Spark the feed as a `LocalRelation`. Anything else returns None and
Spark reads the window (changes.py).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from ..lake import (
    Column,
    DataFile,
    DeleteFile,
    FileIO,
    InlinedDelete,
    InlinedRow,
    first_per_position,
)
from .carried import carried_columns
from .compat import builds_from_arrow
from .driver_files import DRIVER_ROWS, delete_file_positions, names_by_field_id, rows_at
from .gc_pause import collection_paused
from .local_rows import arrow_table, arrow_type_of
from .read_values import spark_rows
from .types import ROW_ID_FIELD_ID, SNAPSHOT_FIELD_ID, spark_schema

__all__ = [
    "DRIVER_FEED_ROWS",
    "WindowParts",
    "feed_on_driver",
    "inlined_values",
    "lineage_schema",
]

log = logging.getLogger("dbt.adapters.ducklake.spark")

# rows a window may hold at most (new file rows, deleted positions, inlined rows) for the
# driver to read it: ~20 ms of pyarrow per 10,000 rows, and a LocalRelation that size
DRIVER_FEED_ROWS = 100_000
# DuckLake types whose Parquet values pyarrow reads as the values Spark's scan returns
_READ_AS_SPARK = ("int8", "int16", "int32", "int64", "float32", "float64", "varchar", "boolean")
_FEED_NAMES = ("snapshot_id", "rowid", "change_type")
_CHANGE_TYPES = pa.array(["insert", "delete", "update_preimage", "update_postimage"])
_FEED_SCHEMA = T.StructType(
    [
        T.StructField("snapshot_id", T.LongType()),
        T.StructField("rowid", T.LongType()),
        T.StructField("change_type", T.StringType()),
    ]
)


class _NotHere(Exception):
    """A file the driver cannot read as Spark would: Spark reads the window."""


@dataclass(frozen=True)
class WindowParts:
    """What the catalog says a window of one table touched."""

    columns: list[Column]  # the table's, at the window's end
    gaining: list[DataFile]  # files that can hold rows inserted in the window
    losing: list[DataFile]  # files that can have lost rows in it
    delete_files: list[DeleteFile]  # every delete file of the losing files
    inlined_deletes: list[InlinedDelete]  # every inlined delete of the losing files
    born: list[InlinedRow]  # inlined rows inserted from the window's start on
    ended: list[InlinedRow]  # inlined rows deleted inside the window
    first: int
    last: int


@collection_paused()
def feed_on_driver(
    spark: SparkSession, files_io: FileIO, parts: WindowParts, feed: str = "changes"
) -> DataFrame | None:
    """The window's changes (`snapshot_id, rowid, change_type, <columns>`) read here, or
    None when Spark must read them. `feed`: as `changes.table_changes` takes it."""
    if not builds_from_arrow(spark) or not _small_and_plain(parts):
        return None
    columns = parts.columns
    try:
        # delete files hold every deleted position of their data file, most of them
        # often older than the window: its own are counted once read
        gone = [_deleted_positions(files_io, f, parts) for f in parts.losing]
        if _rows_but_deletes(parts) + sum(len(p) for p, _ in gone) > DRIVER_FEED_ROWS:
            return None
        inserted = [_new_rows(files_io, columns, f, parts) for f in parts.gaining]
        deleted = [
            _lost_rows(files_io, columns, f, at) for f, at in zip(parts.losing, gone, strict=True)
        ]
        inlined = [
            _inlined(columns, parts.born, parts, at_end=False),
            _inlined(columns, parts.ended, parts, at_end=True),
        ]
    # IndexError: a file shorter than its catalog row says; Spark's read decides
    except (_NotHere, pa.ArrowException, IndexError):
        return None
    ins = _concat([t for t in [*inserted, inlined[0]] if t is not None], columns)
    dels = _concat([t for t in [*deleted, inlined[1]] if t is not None], columns)
    if feed in ("insertions", "deletions"):
        ins, dels = (ins, dels.slice(0, 0)) if feed == "insertions" else (ins.slice(0, 0), dels)
    rows = _paired(ins, dels, columns, repeat=feed == "changes")
    log.debug(
        "change feed %d..%d: %d rows read on the driver", parts.first, parts.last, rows.num_rows
    )
    schema = T.StructType(_FEED_SCHEMA.fields + spark_schema(columns).fields)
    return spark.createDataFrame(rows, schema)


def _small_and_plain(parts: WindowParts) -> bool:
    """Whether the window is few rows of plain columns in files read here."""
    if any(
        c.type not in _READ_AS_SPARK or c.children or c.name.lower() in _FEED_NAMES
        for c in parts.columns
    ):
        return False
    files = [*parts.gaining, *parts.losing]
    return (
        _rows_but_deletes(parts) <= DRIVER_FEED_ROWS
        # delete files, and row groups of deleted positions, are read whole
        and sum(f.record_count for f in parts.losing) <= DRIVER_ROWS
        and all(
            f.file_format == "parquet" and f.mapping_id is None and not f.encryption_key
            for f in files
        )
        and not any(d.encryption_key for d in parts.delete_files)
    )


def _rows_but_deletes(parts: WindowParts) -> int:
    """At most how many rows the window holds, but for the positional deletes."""
    ended = sum(f.record_count for f in parts.losing if f.end_snapshot is not None)
    return (
        sum(f.record_count for f in parts.gaining)
        + ended
        + len(parts.inlined_deletes)
        + len(parts.born)
        + len(parts.ended)
    )


def _new_rows(
    files_io: FileIO, columns: list[Column], f: DataFile, parts: WindowParts
) -> pa.Table | None:
    """The file's rows written in the window, with `rowid` and `snapshot_id`."""
    parquet, names, read = _opened(files_io, f, columns)
    lineage = [names[i] for i in (ROW_ID_FIELD_ID, SNAPSHOT_FIELD_ID) if i in names]
    data = parquet.read(columns=read + lineage)
    positions = np.arange(data.num_rows, dtype=np.int64)
    rowid = _stored_or(data, names.get(ROW_ID_FIELD_ID), _row_ids(f, positions))
    begun = np.full(data.num_rows, f.begin_snapshot, np.int64)
    snapshot = _stored_or(data, names.get(SNAPSHOT_FIELD_ID), begun)
    keep = (snapshot >= parts.first) & (snapshot <= parts.last)
    if not keep.any():
        return None
    return _table(columns, data, read, rowid, snapshot).filter(pa.array(keep))


def _lost_rows(
    files_io: FileIO, columns: list[Column], f: DataFile, gone: tuple[np.ndarray, np.ndarray]
) -> pa.Table | None:
    """The file's rows deleted in the window (`gone`: their positions and deleting
    snapshots), stamped with the deleting snapshot."""
    positions, stamps = gone
    if not len(positions):
        return None
    parquet, names, read = _opened(files_io, f, columns)
    stored_ids = names.get(ROW_ID_FIELD_ID)
    data = rows_at(parquet, positions, read + ([stored_ids] if stored_ids else []))
    rowid = _stored_or(data, stored_ids, _row_ids(f, positions))
    return _table(columns, data, read, rowid, stamps)


def _deleted_positions(
    files_io: FileIO, f: DataFile, parts: WindowParts
) -> tuple[np.ndarray, np.ndarray]:
    """(positions, deleting snapshots) of the file's rows deleted in the window, sorted
    by position: each position's first deletion, and the rows left when it ended."""
    found = [
        delete_file_positions(files_io, f, d)
        for d in parts.delete_files
        if d.data_file_id == f.data_file_id
    ]
    mine = [d for d in parts.inlined_deletes if d.data_file_id == f.data_file_id]
    found.append(
        (
            np.array([d.position for d in mine], np.int64),
            np.array([d.begin_snapshot for d in mine], np.int64),
        )
    )
    pos, snap = first_per_position(
        np.concatenate([p.astype(np.int64) for p, _ in found]),
        np.concatenate([s.astype(np.int64) for _, s in found]),
    )
    in_window = (snap >= parts.first) & (snap <= parts.last)
    out_pos, out_snap = pos[in_window], snap[in_window]
    end = f.end_snapshot
    if end is not None and parts.first <= end <= parts.last:
        # the rows still there when the file ended went with it
        rest = np.setdiff1d(np.arange(f.record_count, dtype=np.int64), pos, assume_unique=True)
        out_pos = np.concatenate([out_pos, rest])
        out_snap = np.concatenate([out_snap, np.full(len(rest), end, np.int64)])
        order = np.argsort(out_pos, kind="stable")
        out_pos, out_snap = out_pos[order], out_snap[order]
    return out_pos, out_snap


def _opened(
    files_io: FileIO, f: DataFile, columns: Sequence[Column]
) -> tuple[pq.ParquetFile, dict[int, str], list[str]]:
    """The file's footer, its columns by field id, and the stored names of `columns`."""
    parquet = files_io.parquet_file(f.path)
    names = names_by_field_id(parquet.schema_arrow)
    return parquet, names, [_stored_name(names, c) for c in columns]


def _row_ids(f: DataFile, positions: np.ndarray) -> np.ndarray | None:
    """Row ids from the file's first one (None: a file that stores each row's id)."""
    return None if f.row_id_start is None else positions + f.row_id_start


def _stored_name(names: dict[int, str], column: Column) -> str:
    name = names.get(column.column_id)
    if name is None:  # added after the file: its default is Spark's path
        raise _NotHere
    return name


def _stored_or(data: pa.Table, name: str | None, fallback: np.ndarray | None) -> np.ndarray:
    """A lineage column stored in the file where not NULL, else `fallback` (None: the
    stored column must be whole, or Spark decides)."""
    if name is None and fallback is None:
        raise _NotHere
    if name is None:
        assert fallback is not None
        return fallback
    stored = data.column(name).combine_chunks()
    if not stored.null_count:
        return stored.to_numpy().astype(np.int64)
    if fallback is None:
        raise _NotHere
    return pc.coalesce(stored.cast(pa.int64()), pa.array(fallback)).to_numpy()


def _as_spark(values: pa.ChunkedArray, column: Column) -> pa.ChunkedArray:
    """A file column as Spark's type for `column`: the same type, or a narrower integer
    or float widened (a promoted column), else not read here."""
    want = arrow_type_of(spark_schema([column])[0].dataType)
    have = values.type
    if pa.types.is_dictionary(have):
        values, have = values.cast(have.value_type), have.value_type
    if pa.types.is_large_string(have):
        values, have = values.cast(pa.string()), pa.string()
    widened = (pa.types.is_signed_integer(have) and pa.types.is_signed_integer(want)) or (
        pa.types.is_floating(have) and pa.types.is_floating(want)
    )
    if want is None or not (have == want or (widened and have.bit_width <= want.bit_width)):
        raise _NotHere
    return values if have == want else values.cast(want)


def _table(
    columns: Sequence[Column],
    data: pa.Table,
    read: list[str],
    rowid: np.ndarray,
    snap: np.ndarray,
) -> pa.Table:
    """The `read` columns of `data` as Spark's types for `columns`, with lineage."""
    values = [_as_spark(data.column(n), c) for n, c in zip(read, columns, strict=True)]
    arrays = [*values, pa.array(rowid, pa.int64()), pa.array(snap, pa.int64())]
    return pa.table(arrays, names=[*(c.name for c in columns), "rowid", "snapshot_id"])


def lineage_schema(columns: list[Column]) -> T.StructType:
    """The table's columns with `rowid` and `snapshot_id`: inserted or deleted rows."""
    return spark_schema(columns).add("rowid", T.LongType()).add("snapshot_id", T.LongType())


def inlined_values(
    columns: list[Column], rows: Sequence[InlinedRow], *, at_end: bool
) -> list[tuple[Any, ...]]:
    """Inlined rows as Python values of `lineage_schema(columns)`, stamped with the
    snapshot that wrote them (or, `at_end`, ended them)."""
    values = [
        (
            *(r.values[c.column_id] for c in columns),
            r.row_id,
            r.end_snapshot if at_end else r.begin_snapshot,
        )
        for r in rows
    ]
    return spark_rows(values, columns)


def _inlined(
    columns: list[Column], rows: list[InlinedRow], parts: WindowParts, *, at_end: bool
) -> pa.Table | None:
    """Inlined rows inserted (or, `at_end`, deleted) in the window."""
    stamps = [(r, r.end_snapshot if at_end else r.begin_snapshot) for r in rows]
    inside = [r for r, at in stamps if at is not None and parts.first <= at <= parts.last]
    if not inside:
        return None
    schema = lineage_schema(columns)
    converted = inlined_values(columns, inside, at_end=at_end)
    table = None if carried_columns(converted, schema) else arrow_table(converted, schema)
    if table is None:
        raise _NotHere
    return table


def _concat(tables: list[pa.Table], columns: list[Column]) -> pa.Table:
    if tables:
        return pa.concat_tables([t.cast(tables[0].schema) for t in tables])
    empty = arrow_table([], lineage_schema(columns))
    assert empty is not None  # plain types only reach here
    return empty


def _paired(ins: pa.Table, dels: pa.Table, columns: list[Column], *, repeat: bool) -> pa.Table:
    """Inserted and deleted rows as one feed, paired as DuckDB pairs them (changes.py
    does the same): a row id one snapshot both deleted and inserted is an update, each
    deletion with each insertion giving a pre- and a post-image; a row id the snapshot
    only deleted (DuckDB's cumulative deletion vectors re-stamp older deletions) or
    only inserted keeps that kind. Without `repeat`, each row once."""
    both = pa.concat_tables([ins, dels.cast(ins.schema)])
    inserted = np.concatenate([np.ones(ins.num_rows, bool), np.zeros(dels.num_rows, bool)])
    snapshots, row_ids = both.column("snapshot_id").to_numpy(), both.column("rowid").to_numpy()
    paired = np.zeros(len(inserted), bool)
    copies = np.ones(len(inserted), np.int64)
    if len(inserted):
        # each row's (snapshot, row id) group: sorted by both, a group starts where one differs
        order = np.lexsort((row_ids, snapshots))
        s, r = snapshots[order], row_ids[order]
        starts = np.concatenate([[True], (s[1:] != s[:-1]) | (r[1:] != r[:-1])])
        where = np.empty(len(order), np.int64)
        where[order] = np.cumsum(starts) - 1
        inserts = np.bincount(where, weights=inserted).astype(np.int64)[where]
        deletes = np.bincount(where, weights=~inserted).astype(np.int64)[where]
        paired = (inserts > 0) & (deletes > 0)
        copies = np.where(paired, np.where(inserted, deletes, inserts), 1)
    kind = np.where(paired, np.where(inserted, 3, 2), np.where(inserted, 0, 1)).astype(np.int8)
    change_type = pa.DictionaryArray.from_arrays(kind, _CHANGE_TYPES).cast(pa.string())
    names = [c.name for c in columns]
    arrays = [
        both.column("snapshot_id"),
        both.column("rowid"),
        change_type,
        *(both.column(i) for i in range(len(names))),
    ]
    feed = pa.table(arrays, names=["snapshot_id", "rowid", "change_type", *names])
    if repeat and (copies > 1).any():
        feed = feed.take(pa.array(np.repeat(np.arange(len(inserted)), copies)))
    return feed
