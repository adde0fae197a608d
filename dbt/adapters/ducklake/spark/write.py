"""DataFrame -> DuckLake data files, written by Spark tasks and registered by lake/.

The driver plans and registers; executors write (see arrow.py) and send back one small
row per file. Partitioned tables get Hive-style directories named and valued like
DuckDB's (`year=2024/v=a%2Fb/`, NULL as `__HIVE_DEFAULT_PARTITION__`); sorted tables are
sorted within each file by the active sort order.
"""

from __future__ import annotations

import json
import logging
import struct
from collections.abc import Iterator, Sequence
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any
from urllib.parse import quote

import pyarrow as pa
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..lake.codec import stats_string
from ..lake.models import Column
from ..lake.staged import DataFileSpec, FileColumnStats, StagedTable
from .arrow import FileWriter, WriteOptions
from .native_write import native_writable, write_native

log = logging.getLogger("dbt.adapters.ducklake.spark")

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"
_RESULT_SCHEMA = (
    "path string, record_count bigint, file_size bigint, footer_size bigint, stats string, "
    "partition_values string"
)
_PART_PREFIX = "__ducklake_part_"

# ---------------------------------------------------------------------------------------
# Iceberg's bucket transform: murmur3_x86_32 (seed 0) over the value's canonical bytes


def murmur3_32(data: bytes, seed: int = 0) -> int:
    c1, c2 = 0xCC9E2D51, 0x1B873593
    h = seed & 0xFFFFFFFF
    n = len(data) // 4
    for i in range(n):
        (k,) = struct.unpack_from("<I", data, i * 4)
        k = (k * c1) & 0xFFFFFFFF
        k = ((k << 15) | (k >> 17)) & 0xFFFFFFFF
        k = (k * c2) & 0xFFFFFFFF
        h ^= k
        h = ((h << 13) | (h >> 19)) & 0xFFFFFFFF
        h = (h * 5 + 0xE6546B64) & 0xFFFFFFFF
    tail = data[n * 4 :]
    k = 0
    for i, b in enumerate(tail):
        k |= b << (8 * i)
    if tail:
        k = (k * c1) & 0xFFFFFFFF
        k = ((k << 15) | (k >> 17)) & 0xFFFFFFFF
        k = (k * c2) & 0xFFFFFFFF
        h ^= k
    h ^= len(data)
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & 0xFFFFFFFF
    h ^= h >> 16
    return h - (1 << 32) if h & 0x80000000 else h


def _bucket_bytes(value: Any) -> bytes:
    if isinstance(value, bool):
        raise ValueError("bucket() is not defined for booleans")
    if isinstance(value, int):
        return struct.pack("<q", value)
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(UTC).replace(tzinfo=None)
        micros = (value - datetime(1970, 1, 1)) // timedelta(microseconds=1)
        return struct.pack("<q", micros)
    if isinstance(value, date):
        return struct.pack("<q", (value - date(1970, 1, 1)).days)
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, bytes):
        return value
    if isinstance(value, Decimal):
        unscaled = int(value.scaleb(-value.as_tuple().exponent))  # type: ignore[operator]
        length = max(1, (unscaled.bit_length() + 8) // 8)
        return unscaled.to_bytes(length, "big", signed=True)
    raise ValueError(f"bucket() is not defined for {type(value).__name__}")


def bucket(value: Any, n: int) -> int | None:
    if value is None:
        return None
    return (murmur3_32(_bucket_bytes(value)) & 0x7FFFFFFF) % n


# ---------------------------------------------------------------------------------------
# Planning on the driver


def partition_plan(
    table: StagedTable, partition: Sequence[tuple[int, str]] | None
) -> list[tuple[str, Column, str]]:
    """(directory key, source column, transform) per partition field."""
    flat = {c.column_id: c for top in table.column_list() for c in _walk(top)}
    plan = []
    seen: set[str] = set()
    for column_id, transform in partition or []:
        col = flat[column_id]
        key = col.name if transform == "identity" else transform.split("(")[0]
        if key in seen:  # DuckDB: a repeated key gets the column's name (bucket, bucket_id)
            key = f"{key}_{col.name}"
        seen.add(key)
        plan.append((key, col, transform))
    return plan


def partition_key(
    values: Sequence[Any], transforms: Sequence[tuple[str, str, str]]
) -> tuple[str | None, ...]:
    """Encoded partition values, as DuckDB stores them, from each field's source value
    (already year/month/day/hour-extracted by Spark for time transforms)."""
    out: list[str | None] = []
    for value, (_key, type_name, transform) in zip(values, transforms, strict=True):
        if value is None:
            out.append(None)
        elif transform.startswith("bucket("):
            out.append(str(bucket(value, int(transform[7:-1]))))
        elif transform == "identity":
            out.append(stats_string(type_name, value))
        else:
            out.append(str(int(value)))
    return tuple(out)


def time_part(transform: str, value: Any) -> Any:
    """year/month/day/hour of a Python date or datetime (UTC), as Spark extracts them."""
    if value is None or transform not in ("year", "month", "day", "hour"):
        return value
    if isinstance(value, datetime) and value.tzinfo is not None:
        value = value.astimezone(UTC)
    return getattr(value, transform)


def _walk(col: Column) -> Iterator[Column]:
    yield col
    for c in col.children:
        yield from _walk(c)


def _partition_expr(col: Column, transform: str) -> SparkColumn:
    src = F.col(f"`{col.name}`")
    if transform == "year":
        return F.year(src)
    if transform == "month":
        return F.month(src)
    if transform == "day":
        return F.dayofmonth(src)
    if transform == "hour":
        return F.hour(src)
    return src  # identity and bucket(N): bucket is hashed in the task


def write_data_files(
    df: DataFrame,
    table: StagedTable,
    options: WriteOptions,
    *,
    partition: Sequence[tuple[int, str]] | None = None,
    sort: Sequence[tuple[str, str, str]] | None = None,
    row_ids: bool = False,
    snapshot_ids: bool = False,
) -> list[DataFileSpec]:
    """Write `df` (columns in the table's top-level order) as data files of `table`.

    With `row_ids`, `df` has one more column, the ids its rows keep, written as
    `_ducklake_internal_row_id`; with `snapshot_ids` (compaction) one more after it, the
    snapshot that wrote each row, written as `_ducklake_internal_snapshot_id`.
    """
    columns = table.column_list()
    names = [c.name for c in columns] + (["_ducklake_internal_row_id"] if row_ids else [])
    names += ["_ducklake_internal_snapshot_id"] if snapshot_ids else []
    if [n.lower() for n in df.columns] != [n.lower() for n in names]:
        raise ValueError(
            f"data for {table.qualified_name} has columns {df.columns}; the table has {names}"
        )
    plan = partition_plan(table, partition)
    data = df.toDF(*names)
    part_cols = []
    for i, (_key, col, transform) in enumerate(plan):
        name = f"{_PART_PREFIX}{i}"
        data = data.withColumn(name, _partition_expr(col, transform))
        part_cols.append(name)
    sort_exprs = []
    for expression, direction, null_order in sort or []:
        c = F.col(f"`{expression}`")
        if direction == "ASC":
            sort_exprs.append(
                c.asc_nulls_first() if null_order == "NULLS_FIRST" else c.asc_nulls_last()
            )
        else:
            sort_exprs.append(
                c.desc_nulls_first() if null_order == "NULLS_FIRST" else c.desc_nulls_last()
            )
    if part_cols:
        data = data.repartition(*[F.col(c) for c in part_cols])
    if part_cols or sort_exprs:
        data = data.sortWithinPartitions(*[F.col(c) for c in part_cols], *sort_exprs)
    if native_writable(columns, options, bool(plan)):
        facts = write_native(data, columns, options, row_ids=row_ids, snapshot_ids=snapshot_ids)
        specs = [_spec({**f, "partition_values": "null"}) for f in facts]
        log.info("wrote %s file(s) for %s", len(specs), table.qualified_name)
        return specs
    transforms = [(key, col.type, transform) for key, col, transform in plan]
    task = _WriteTask(columns, options, transforms, row_ids, snapshot_ids)
    rows = data.mapInArrow(task, _RESULT_SCHEMA).collect()  # one small row per file
    specs = [_spec(r) for r in rows]
    log.info("wrote %s file(s) for %s", len(specs), table.qualified_name)
    return specs


def _spec(row: Any) -> DataFileSpec:
    """A result row (Spark Row or dict) as the file to register."""
    stats = {
        int(cid): FileColumnStats(
            value_count=s["value_count"],
            null_count=s["null_count"],
            min_value=s["min"],
            max_value=s["max"],
            contains_nan=s["nan"],
            column_size_bytes=s["size"],
        )
        for cid, s in json.loads(row["stats"]).items()
    }
    pv = json.loads(row["partition_values"])
    return DataFileSpec(
        path=row["path"],
        record_count=row["record_count"],
        file_size_bytes=row["file_size"],
        footer_size=row["footer_size"],
        column_stats=stats,
        partition_values=tuple(pv) if pv is not None else None,
    )


# ---------------------------------------------------------------------------------------
# Inside the task


class _WriteTask:
    """Picklable task body: split sorted batches by partition key, roll files per key."""

    def __init__(
        self,
        columns: list[Column],
        options: WriteOptions,
        transforms: list[tuple[str, str, str]],
        row_ids: bool = False,
        snapshot_ids: bool = False,
    ):
        self.columns = columns
        self.options = options
        self.transforms = transforms
        self.row_ids = row_ids
        self.snapshot_ids = snapshot_ids
        self.width = len(columns) + int(row_ids) + int(snapshot_ids)

    def _writer(self, subdir: str = "") -> FileWriter:
        return FileWriter(self.columns, self.options, subdir, self.row_ids, self.snapshot_ids)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        width = self.width
        writers: dict[tuple[str | None, ...], FileWriter] = {}
        for batch in batches:
            data = pa.RecordBatch.from_arrays(
                batch.columns[:width], names=batch.schema.names[:width]
            )
            if not self.transforms:
                key: tuple[str | None, ...] = ()
                writer = writers.get(key) or writers.setdefault(key, self._writer())
                writer.write(data)
                continue
            keys = [self._keys(batch, i) for i in range(batch.num_rows)]
            start = 0
            for i in range(1, batch.num_rows + 1):
                if i == batch.num_rows or keys[i] != keys[start]:
                    key = keys[start]
                    if key not in writers:
                        writers[key] = self._writer(self._subdir(key))
                    writers[key].write(data.slice(start, i - start))
                    start = i
        rows = []
        for key, writer in writers.items():
            for facts in writer.close():
                rows.append(
                    {
                        **facts,
                        "partition_values": json.dumps(list(key) if self.transforms else None),
                    }
                )
        if rows:
            yield pa.RecordBatch.from_pylist(rows)

    def _keys(self, batch: pa.RecordBatch, row: int) -> tuple[str | None, ...]:
        width = self.width
        values = [batch.column(width + i)[row].as_py() for i in range(len(self.transforms))]
        return partition_key(values, self.transforms)

    def _subdir(self, key: tuple[str | None, ...]) -> str:
        parts = []
        for (name, _t, _tr), value in zip(self.transforms, key, strict=True):
            shown = HIVE_NULL if value is None else quote(value, safe="")
            parts.append(f"{name}={shown}/")
        return "".join(parts)
