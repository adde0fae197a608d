"""Deletes applied inside the scan by the adapter's JVM classes (jvm/).

Files are read through `DELETES_SOURCE`, Spark's Parquet source with a reader that
tests each row's position against its file's deleted bits and skips the deleted rows of
each columnar batch without copying the rest (keeping the positions when the scan asks
for them). Scans of name-mapped files filter by `KeptRowsUdf` on (file size, position).
Either way each task loads the deletes of the data files it reads (delete files,
deletion vectors, inlined deletes) when it meets a file's first row; unlike the
anti-join of `scan_deletes`, no job reads the deletes first and no position of a file
without deletes is materialised. Files are told apart by their size (the reader, which
knows names too, by size and name where sizes repeat), and both run only where the
session has the adapter's classes (not through Spark Connect). Else the caller falls
back to the anti-join.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

from pyspark.sql import Column as SparkColumn
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from ..lake import DataFile
from .encrypted import has_engine_classes

IN_SCAN = True  # tests turn it off to run the anti-join fallback

DELETES_SOURCE = "ducklake.jvm.DeletesParquetFormat"

KeptFilter = Callable[[SparkColumn, SparkColumn], SparkColumn]

_registered: dict[int, set[str]] = {}


def deletes_spec(
    spark: SparkSession,
    files: Sequence[DataFile],
    inlined_deletes: Sequence[Any],
    snap: int,
    *,
    by_name: bool = False,
) -> str | None:
    """The deletes of `files` as of `snap` in the JVM classes' spec (`DeleteBits`), or
    None when they cannot run here or there is nothing to delete. Files are keyed by
    size; `by_name` (for the reader, which knows file names) keys files of equal size
    by size and name, so they need not be told apart by size alone."""
    if not IN_SCAN or not files:
        return None
    keys = _file_keys(files, by_name)
    if keys is None or not has_engine_classes(spark):
        return None
    inlined: dict[int, list[str]] = {}
    for d in inlined_deletes:
        if d.begin_snapshot <= snap:
            inlined.setdefault(d.data_file_id, []).append(str(d.position))
    lines, deleting = [], False
    for f, key in zip(files, keys, strict=True):
        d = f.delete_file
        positions = ",".join(inlined.get(f.data_file_id, ()))
        deleting = deleting or d is not None or bool(positions)
        fields = [key, "", "", "0", "", positions]
        if d is not None:
            if "\t" in d.path or "\n" in d.path:
                return None
            fields[1:4] = [d.path, d.format or "parquet", str(d.begin_snapshot)]
            fields[4] = d.encryption_key or ""
        lines.append("\t".join(fields))
    return "\n".join(lines) if deleting else None


def _file_keys(files: Sequence[DataFile], by_name: bool) -> list[str] | None:
    """Each file's key in the spec, or None when two files would share one."""
    sizes = Counter(f.file_size_bytes for f in files)
    keys = []
    for f in files:
        size = f.file_size_bytes
        if not size:
            return None
        key = str(size)
        if sizes[size] > 1:
            name = f.path.rstrip("/").rsplit("/", 1)[-1]
            if not by_name or "\t" in name or "\n" in name:
                return None
            key = f"{key}/{name}"
        keys.append(key)
    return keys if len(set(keys)) == len(keys) else None


def deletes_options(spec: str, snap: int) -> dict[str, str]:
    """The options of a `DELETES_SOURCE` read that drops the deletes of `spec`."""
    return {"ducklake.deletes": spec, "ducklake.deletes.snapshot": str(snap)}


def kept_filter(
    spark: SparkSession,
    files: Sequence[DataFile],
    inlined_deletes: Sequence[Any],
    snap: int,
) -> KeptFilter | None:
    """A filter of (file size, row position) that keeps the rows of `files` not deleted
    as of `snap`, or None when it cannot run here or there is nothing to delete."""
    spec = deletes_spec(spark, files, inlined_deletes, snap)
    if spec is None:
        return None
    name = _register(spark, spec, snap)
    return lambda size, position: F.call_udf(name, size, position)


def _register(spark: SparkSession, spec: str, snap: int) -> str:
    """The session's name for a KeptRowsUdf of this spec (registered once per spec)."""
    digest = hashlib.sha256(f"{snap}\n{spec}".encode()).hexdigest()[:20]
    name = f"ducklake_kept_{digest}"
    done = _registered.setdefault(id(spark), set())
    if name not in done:
        jspark: Any = spark._jsparkSession
        jvm: Any = spark._sc._jvm
        udf = jvm.ducklake.jvm.KeptRowsUdf(spec, snap, jspark.sessionState().newHadoopConf())
        jspark.udf().register(name, udf, jvm.org.apache.spark.sql.types.DataTypes.BooleanType)
        done.add(name)
    return name
