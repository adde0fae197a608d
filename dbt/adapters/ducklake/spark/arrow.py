"""Parquet files as DuckLake wants them, written with pyarrow inside Spark tasks.

Spark's own Parquet writer cannot put field ids on list elements or map keys/values,
and DuckDB needs them; so executors write each file with pyarrow (every field id set,
INT64 microsecond timestamps) and report the file's footer facts back as one small row.
Nothing here imports pyspark: it runs inside Python workers.
"""

from __future__ import annotations

import itertools
import json
import math
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..lake import (
    FLOAT_TYPES,
    NESTED_TYPES,
    Column,
    FileIO,
    decimal_params,
    encode_blob,
    first_deletions,
    is_decimal,
    is_deletion_vector,
    merge_max,
    merge_min,
    read_vectors,
    stats_string,
)
from .delete_rows import OldDeletes, merged_deletes, repeated_text
from .errors import UnsupportedTypeError

FIELD_ID_KEY = b"PARQUET:field_id"
ROW_ID_FIELD = 2147483540

_ARROW: dict[str, pa.DataType] = {
    "boolean": pa.bool_(),
    "int8": pa.int8(),
    "int16": pa.int16(),
    "int32": pa.int32(),
    "int64": pa.int64(),
    "uint8": pa.uint8(),
    "uint16": pa.uint16(),
    "uint32": pa.uint32(),
    "uint64": pa.uint64(),
    "float32": pa.float32(),
    "float64": pa.float64(),
    "varchar": pa.string(),
    "json": pa.string(),
    "blob": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us"),
    "timestamptz": pa.timestamp("us", tz="UTC"),
}


def _fid(column_id: int) -> dict[bytes, bytes]:
    return {FIELD_ID_KEY: str(column_id).encode()}


def arrow_type(col: Column) -> pa.DataType:
    if col.type == "list":
        return pa.list_(arrow_field(col.children[0]))
    if col.type == "struct":
        return pa.struct([arrow_field(c) for c in col.children])
    if col.type == "map":
        key, value = col.children
        key_field = pa.field(
            key.name, arrow_type(key), nullable=False, metadata=_fid(key.column_id)
        )
        return pa.map_(key_field, arrow_field(value))
    if is_decimal(col.type):
        return pa.decimal128(*decimal_params(col.type))
    if col.type == "variant":
        raise UnsupportedTypeError(
            f"column {col.name!r}: VARIANT is written only by Spark's own Parquet writer: "
            "a top-level column of an unpartitioned table on a local or HDFS data path "
            "with snappy, zstd, gzip or no compression"
        )
    if col.type not in _ARROW:
        raise UnsupportedTypeError(f"column {col.name!r}: cannot write DuckLake type {col.type}")
    return _ARROW[col.type]


def arrow_field(col: Column) -> pa.Field:
    return pa.field(col.name, arrow_type(col), nullable=True, metadata=_fid(col.column_id))


def arrow_schema(columns: Sequence[Column]) -> pa.Schema:
    return pa.schema([arrow_field(c) for c in columns])


@dataclass(frozen=True)
class WriteOptions:
    root: str  # absolute table directory (local or s3://), ends with '/'
    files: FileIO  # how tasks reach it
    compression: str = "snappy"
    compression_level: int | None = None
    row_group_size: int = 122_880
    target_file_size: int = 512 * 1024 * 1024
    deletion_vectors: bool = False  # write_deletion_vectors: puffin delete files
    encrypted: bool = False  # an encrypted lake: every Parquet file sealed (sealed.py)
    # compressed bytes per row of the table's files so far, when it has enough of them
    bytes_per_row: float | None = None


# ---------------------------------------------------------------------------------------
# Footer facts


def _leaf_columns(columns: Sequence[Column]) -> list[Column]:
    """Leaves in Parquet column-chunk order (depth-first)."""
    out: list[Column] = []
    for c in columns:
        if c.type in NESTED_TYPES:
            out.extend(_leaf_columns(list(c.children)))
        else:
            out.append(c)
    return out


def _stat_value(col: Column, value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, bool):
        return "1" if value else "0"  # DuckDB's file stats (partition values say true/false)
    if isinstance(value, bytes) and col.type in ("varchar", "json"):
        value = value.decode("utf-8", "replace")
    if isinstance(value, datetime | date | Decimal | int | float | str | bytes | bool):
        return stats_string(col.type, value)
    return str(value)


# DuckDB's DATE and TIMESTAMP `infinity`, as Parquet stores them (negated: `-infinity`)
_ENDLESS = {2_147_483_647, 9_223_372_036_854_775_807}


class _UnknownBound(Exception):
    pass


def _bound(leaf: Column, st: Any, which: str) -> str | None:
    """A footer bound as a stats string. Python's date cannot hold DuckDB's `infinity`
    (nor years past 9999): such bounds are read raw, `infinity` kept, others unknown."""
    try:
        return _stat_value(leaf, getattr(st, which))
    except (OverflowError, ValueError):
        raw = getattr(st, f"{which}_raw")
        if isinstance(raw, int) and abs(raw) in _ENDLESS:
            return "-infinity" if raw < 0 else "infinity"
        raise _UnknownBound from None


def file_facts(
    files: FileIO,
    path: str,
    columns: Sequence[Column],
    nan_flags: dict[int, bool] | None,
    stored_path: str,
    meta: pq.FileMetaData | None = None,
) -> dict[str, Any]:
    """record count, sizes and per-leaf stats of a written file (from its footer).

    `nan_flags` None: the file was written by Spark, whose float min/max count NaN as
    the largest value; a NaN bound marks a NaN, and only then is that column read to
    find the bounds without it, as DuckDB keeps them.
    """
    meta = meta if meta is not None else files.read_metadata(path)
    exact: dict[int, tuple[str | None, str | None]] = {}
    if nan_flags is None:
        nan_flags = nan_from_footer(meta, columns)
        if any(nan_flags.values()):
            exact = _float_bounds(
                files, path, columns, [cid for cid, nan in nan_flags.items() if nan]
            )
    leaves = _leaf_columns(columns)
    stats = _footer_stats(meta, leaves)
    for leaf in leaves:
        entry = stats[leaf.column_id]
        if entry.pop("incomplete", False):
            entry["min"] = entry["max"] = None
        if leaf.column_id in exact:
            entry["min"], entry["max"] = exact[leaf.column_id]
        if leaf.type in FLOAT_TYPES:
            entry["nan"] = nan_flags.get(leaf.column_id, False)
    return {
        "path": stored_path,
        "record_count": meta.num_rows,
        "file_size": files.size(path),
        "footer_size": meta.serialized_size,
        "stats": json.dumps(stats),
    }


def _footer_stats(meta: pq.FileMetaData, leaves: Sequence[Column]) -> dict[int, dict[str, Any]]:
    """Per leaf column id: counts, size and min/max merged over the row groups; a
    group without statistics marks the column `incomplete` (its bounds are unknown)."""
    stats: dict[int, dict[str, Any]] = {}
    for leaf in leaves:
        stats[leaf.column_id] = {
            "value_count": 0,
            "null_count": 0,
            "min": None,
            "max": None,
            "size": 0,
            "nan": None,
        }
    chunks = leaf_chunks(meta, leaves)
    for rg in range(meta.num_row_groups):
        group = meta.row_group(rg)
        for i, leaf in zip(chunks, leaves, strict=True):
            chunk = group.column(i)
            entry = stats[leaf.column_id]
            entry["size"] += chunk.total_compressed_size
            entry["value_count"] += chunk.num_values
            st = chunk.statistics
            if st is None or leaf.type == "variant":  # a variant has no bounds
                entry["incomplete"] = True
                continue
            if st.has_null_count:
                entry["null_count"] += st.null_count
            if st.has_min_max:
                try:
                    lo, hi = _bound(leaf, st, "min"), _bound(leaf, st, "max")
                except _UnknownBound:
                    entry["incomplete"] = True
                    continue
                entry["min"] = merge_min(leaf.type, entry["min"], lo)
                entry["max"] = merge_max(leaf.type, entry["max"], hi)
            else:
                entry["incomplete"] = True
    return stats


def leaf_chunks(meta: pq.FileMetaData, leaves: Sequence[Column]) -> list[int]:
    """Each leaf's column chunk: the next one, except that a VARIANT leaf is a group of
    several chunks (metadata, value, shredded values) of which the first is taken."""
    paths = [meta.schema.column(j).path for j in range(meta.num_columns)]
    out: list[int] = []
    j = 0
    for leaf in leaves:
        out.append(j)
        if leaf.type == "variant":
            group = paths[j].rsplit(".", 1)[0] + "."
            while j < len(paths) and paths[j].startswith(group):
                j += 1
        else:
            j += 1
    return out


def nan_from_footer(meta: pq.FileMetaData, columns: Sequence[Column]) -> dict[int, bool]:
    leaves = _leaf_columns(columns)
    flags: dict[int, bool] = {}
    for i, leaf in zip(leaf_chunks(meta, leaves), leaves, strict=True):
        if leaf.type not in FLOAT_TYPES:
            continue
        flags[leaf.column_id] = False
        for rg in range(meta.num_row_groups):
            st = meta.row_group(rg).column(i).statistics
            if st is not None and st.has_min_max and (_is_nan(st.min) or _is_nan(st.max)):
                flags[leaf.column_id] = True
    return flags


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _float_bounds(
    files: FileIO, path: str, columns: Sequence[Column], column_ids: Sequence[int]
) -> dict[int, tuple[str | None, str | None]]:
    """min/max without NaN of top-level float columns, read from the file."""
    by_id = {c.column_id: c for c in columns}
    table = files.read_table(path, columns=[by_id[cid].name for cid in column_ids])
    out: dict[int, tuple[str | None, str | None]] = {}
    for cid in column_ids:
        col = by_id[cid]
        array = table.column(col.name)
        bounds = pc.min_max(pc.filter(array, pc.invert(pc.is_nan(array))))
        lo, hi = bounds["min"].as_py(), bounds["max"].as_py()
        out[cid] = (_stat_value(col, lo), _stat_value(col, hi))
    return out


def _contains_nan(table: pa.RecordBatch, leaf: Column, columns: Sequence[Column]) -> bool:
    """Exact NaN presence for a float leaf, nested ones included."""
    by_id = {c.column_id: c for top in columns for c in top.walk()}
    chain = [leaf]
    while chain[-1].parent_id is not None:
        chain.append(by_id[chain[-1].parent_id])
    chain.reverse()
    array: Any = table.column(chain[0].name)
    for parent, child in itertools.pairwise(chain):
        if parent.type == "struct":
            array = pc.struct_field(array, child.name)
        elif parent.type == "list":
            array = pc.list_flatten(array)
        elif parent.type == "map":
            array = array.keys if child.name == "key" else array.items
    return bool(pc.any(pc.is_nan(array)).as_py() or False)


# ---------------------------------------------------------------------------------------
# Writing inside a task


class FileWriter:
    """Rolls Parquet files under a directory at the target size; returns their facts."""

    def __init__(
        self,
        columns: Sequence[Column],
        options: WriteOptions,
        subdir: str = "",
        with_row_ids: bool = False,
        with_snapshot_ids: bool = False,
    ):
        self.columns = list(columns)
        self.schema = arrow_schema(self.columns)
        if with_row_ids:  # rows that keep their ids (UPDATE, MERGE) carry them explicitly
            self.schema = self.schema.append(
                pa.field(
                    "_ducklake_internal_row_id",
                    pa.int64(),
                    nullable=False,
                    metadata=_fid(ROW_ID_FIELD),
                )
            )
        if with_snapshot_ids:  # compacted rows keep the snapshot that wrote them
            self.schema = self.schema.append(_SNAPSHOT_FIELD)
        self.options = options
        self.subdir = subdir
        self.results: list[dict[str, Any]] = []
        self._writer: pq.ParquetWriter | None = None
        self._path = ""
        self._stored = ""
        self._float_leaves = [c for c in _leaf_columns(self.columns) if c.type in FLOAT_TYPES]
        self._nan: dict[int, bool] = {}
        self._bytes = 0

    def _open(self) -> None:
        self._stored = f"{self.subdir}ducklake-{uuid.uuid4()}.parquet"
        self._path = self.options.root + self._stored
        self._writer = self.options.files.parquet_writer(
            self._path,
            self.schema,
            compression=self.options.compression,
            compression_level=self.options.compression_level,
            use_dictionary=True,
            write_statistics=True,
            coerce_timestamps="us",
            allow_truncated_timestamps=False,
        )

    def write(self, batch: pa.RecordBatch) -> None:
        """Append rows, rolling to a new file at the target size (measured in memory)."""
        if batch.num_rows == 0:
            return
        batch = conform(batch, self.schema)
        row_bytes = max(1, batch.nbytes // batch.num_rows)
        start = 0
        while start < batch.num_rows:
            room = max(1, (self.options.target_file_size - self._bytes) // row_bytes)
            self._write(batch.slice(start, room))
            start += room

    def _write(self, batch: pa.RecordBatch) -> None:
        if self._writer is None:
            self._open()
        assert self._writer is not None
        self._writer.write_batch(batch, row_group_size=self.options.row_group_size)
        for leaf in self._float_leaves:
            if not self._nan.get(leaf.column_id):
                self._nan[leaf.column_id] = _contains_nan(batch, leaf, self.columns)
        self._bytes += batch.nbytes
        if self._bytes >= self.options.target_file_size:
            self.close_file()

    def close_file(self) -> None:
        if self._writer is None:
            return
        self._writer.close()
        self.results.append(
            file_facts(self.options.files, self._path, self.columns, self._nan, self._stored)
        )
        self._writer, self._nan, self._bytes = None, {}, 0

    def close(self) -> list[dict[str, Any]]:
        self.close_file()
        return self.results


def conform(batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
    """Rename and cast Spark's Arrow batch onto the field-id schema (same shape)."""
    arrays = []
    for i, field in enumerate(schema):
        arrays.append(_cast(batch.column(i), field.type))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _cast(array: pa.Array, target: pa.DataType) -> pa.Array:
    if pa.types.is_struct(target):
        children = [_cast(array.field(i), target.field(i).type) for i in range(target.num_fields)]
        return pa.StructArray.from_arrays(
            children,
            fields=[target.field(i) for i in range(target.num_fields)],
            mask=array.is_null() if array.null_count else None,
        )
    if pa.types.is_list(target):
        values = _cast(array.values, target.value_type)
        offsets = array.offsets.cast(pa.int32())  # Spark 4 hands over large lists
        return pa.ListArray.from_arrays(
            offsets, values, type=target, mask=array.is_null() if array.null_count else None
        )
    if pa.types.is_map(target):
        keys = _cast(array.keys, target.key_type)
        items = _cast(array.items, target.item_type)
        return pa.MapArray.from_arrays(
            array.offsets,
            keys,
            items,
            type=target,
            mask=array.is_null() if array.null_count else None,
        )
    if array.type.equals(target):
        return array
    return array.cast(target)


class FooterTask:
    """Picklable task body: the footer facts of each file path it is given (files
    written by Spark, see native_write.py)."""

    def __init__(self, columns: list[Column], root: str, files: FileIO):
        self.columns = columns
        self.root = root
        self.files = files

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        rows = []
        for batch in batches:
            for stored in batch.column(0).to_pylist():
                path = self.root + stored
                rows.append(file_facts(self.files, path, self.columns, None, stored))
        if rows:
            yield pa.RecordBatch.from_pylist(rows)


# ---------------------------------------------------------------------------------------
# Delete files

DELETE_PATH_ID = 2147483646
DELETE_POS_ID = 2147483645
SNAPSHOT_ID = 2147483539

_DELETE_FIELDS = [
    pa.field("file_path", pa.string(), nullable=False, metadata=_fid(DELETE_PATH_ID)),
    pa.field("pos", pa.int64(), nullable=False, metadata=_fid(DELETE_POS_ID)),
]
_SNAPSHOT_FIELD = pa.field(
    "_ducklake_internal_snapshot_id", pa.int64(), nullable=False, metadata=_fid(SNAPSHOT_ID)
)


@dataclass(frozen=True)
class DeleteTarget:
    """What a task needs to write the delete file of one data file."""

    root: str  # table directory, ends with '/'
    files: FileIO  # how the task reaches it
    data_file: str  # absolute path of the data file, written into `file_path`
    old_delete_file: str | None  # its live delete file, merged into a partial one
    old_begin_snapshot: int | None
    old_delete_format: str | None = None  # parquet, or puffin (a deletion vector)
    write_vector: bool = False  # write a deletion vector (puffin), not Parquet
    old_encrypted: bool = False  # its live delete file is encrypted: see `OldDeletes`


def old_deletes(target: DeleteTarget) -> OldDeletes:
    """(positions, deleting snapshots) of the data file's live delete file."""
    path = target.old_delete_file
    assert path is not None and target.old_begin_snapshot is not None
    if is_deletion_vector(target.old_delete_format):
        vectors = read_vectors(target.files.read_bytes(path), path)
        return first_deletions(vectors, target.old_begin_snapshot)
    if target.old_encrypted:  # Python cannot decrypt: the caller reads it (sealed.py)
        raise RuntimeError(f"{path} is encrypted: its positions must be handed to the task")
    try:  # not file_path: a delete file's only text, the same in every row
        rows = target.files.read_table(path, columns=["pos", _SNAPSHOT_FIELD.name])
    except pa.ArrowInvalid:  # a delete file that is not partial has no snapshot ids
        rows = target.files.read_table(path, columns=["pos"])
    return deletes_of(rows, target.old_begin_snapshot)


def deletes_of(old: pa.Table, begin_snapshot: int) -> OldDeletes:
    """(positions, deleting snapshots) of a Parquet delete file's rows."""
    positions = old.column("pos").to_numpy()
    if _SNAPSHOT_FIELD.name in old.column_names:
        return positions, old.column(_SNAPSHOT_FIELD.name).to_numpy()
    return positions, np.full(len(positions), begin_snapshot, np.int64)


def write_delete_file(
    target: DeleteTarget,
    positions: Sequence[int],
    stamp: int,
    compression: str,
    stamps: dict[int, int] | None = None,
    old: OldDeletes | None = None,
) -> dict[str, Any]:
    """A positional delete file; partial (with snapshot ids) when one already existed, or
    when `stamps` gives each position its own deleting snapshot (a flush). With
    `target.write_vector` (and no stamps), a deletion vector of old and new positions.
    `old`: the live delete file's deletes, when the caller has read them."""
    if target.old_delete_file is not None and old is None:
        old = old_deletes(target)
    if target.write_vector and stamps is None:
        return _write_vector(target, positions, old)
    new = np.unique(np.asarray(positions, np.int64))
    name = f"ducklake-{uuid.uuid4()}-delete.parquet"
    path = target.root + name
    if target.old_delete_file is None and stamps is None:
        table = pa.table(
            [repeated_text(target.data_file, len(new)), pa.array(new, pa.int64())],
            schema=pa.schema(_DELETE_FIELDS),
        )
        begin, partial_max = None, None
    else:
        order, snaps = merged_deletes(new, stamp, stamps, old)
        table = pa.table(
            [repeated_text(target.data_file, len(order)), pa.array(order), pa.array(snaps)],
            schema=pa.schema([*_DELETE_FIELDS, _SNAPSHOT_FIELD]),
        )
        begin, partial_max = int(snaps.min()), int(snaps.max())
    target.files.write_table(table, path, compression=compression)
    meta = target.files.read_metadata(path)
    return {
        "path": name,
        "delete_count": table.num_rows,
        "file_size": target.files.size(path),
        "footer_size": meta.serialized_size,
        "begin_snapshot": begin,
        "partial_max": partial_max,
        "format": "parquet",
    }


def _write_vector(
    target: DeleteTarget, positions: Sequence[int], old: OldDeletes | None
) -> dict[str, Any]:
    """A `.puffin` deletion vector (one bare blob, as DuckDB 1.5 writes it) holding the
    live delete file's positions too: its snapshot is the commit's, for all of them."""
    merged = np.asarray(positions, np.int64)
    if old is not None:
        merged = np.concatenate([merged, old[0]])
    merged = np.unique(merged)
    blob = encode_blob(merged)
    name = f"ducklake-{uuid.uuid4()}-delete.puffin"
    target.files.write_bytes(blob, target.root + name)
    return {
        "path": name,
        "delete_count": len(merged),
        "file_size": len(blob),
        "footer_size": 0,
        "begin_snapshot": None,
        "partial_max": None,
        "format": "puffin",
    }
