"""What a Spark task runs to write data files through pyarrow, and the partition values
both sides compute (DuckDB's encoding, Iceberg's bucket hash).

Executors unpickle `WriteTask` and import this module: it needs pyarrow and the
dependency-free parts of `lake/`, never dbt, SQLAlchemy or pyspark.
"""

from __future__ import annotations

import json
import struct
from collections.abc import Iterator, Sequence
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal
from typing import Any
from urllib.parse import quote

import pyarrow as pa

from ..lake import Column, stats_string
from .arrow import FileWriter, WriteOptions

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"

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
            value = value.astimezone(timezone.utc).replace(tzinfo=None)
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
        value = value.astimezone(timezone.utc)
    return getattr(value, transform)


class WriteTask:
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
