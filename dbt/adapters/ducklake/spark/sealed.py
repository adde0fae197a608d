"""Writing the files of an encrypted lake as DuckDB writes them.

DuckDB gives every Parquet file of an encrypted lake its own AES key (base64 in the
catalog's `encryption_key`) and a layout of its own (see jvm/EncryptedParquet.java).
Python has no AES with only `pyspark[sql]` installed, so the work is split:

1. the usual task (pyarrow) writes each Parquet file into memory (`HeldFiles`), and
   `HandOn` puts its bytes and a fresh key into the file's result row;
2. `ducklake_seal`, the adapter's Java UDF, encrypts them in the same task's JVM;
3. `StoreSealed` stores the sealed bytes where the file belongs and fills in its size.

All three run in one task: plaintext stays in memory and keys travel only inside result
rows, into the catalog. On the driver (small deletes, flushes) the same sealing is one
call into the driver's JVM. Deletion vectors stay plaintext, as DuckDB writes them, but
get a key in the catalog as DuckDB's do.
"""

from __future__ import annotations

import base64
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..lake import DataFile, DeleteFile, FileIO, StagedTable, is_deletion_vector
from .arrow import DeleteTarget, WriteOptions, deletes_of, write_delete_file
from .encrypted import require_engine_classes
from .scan_deletes import delete_positions
from .scan_files import DELETE_SNAPSHOT, FILE_ID_KEY

SEAL_UDF = "ducklake_seal"
_SEAL_CLASS = "ducklake.jvm.SealUdf"
# what `HandOn` adds to a task's result rows, as Spark's mapInArrow takes a schema
HANDED_ON = "sealed_path string, sealed binary, encryption_key string"
_HANDED_ON_FIELDS = (
    ("sealed_path", pa.string()),
    ("sealed", pa.binary()),
    ("encryption_key", pa.string()),
)
_KEY_BYTES = 16  # AES-128, as DuckDB's keys


def new_key() -> str:
    return base64.b64encode(os.urandom(_KEY_BYTES)).decode()


@dataclass(frozen=True)
class HeldFiles(FileIO):
    """File operations whose Parquet writes stay in this process's memory until
    `take`n: the task's writer and footer reads work unchanged, nothing reaches storage
    in plaintext. Other writes (deletion vectors) and reads of stored files go through."""

    held: dict[str, Any] = field(default_factory=dict, compare=False, hash=False)
    # written through in plaintext (deletion vectors), yet recorded with a key: DuckDB
    # refuses any file of an encrypted lake without one
    plain: set[str] = field(default_factory=set, compare=False, hash=False)

    def write_bytes(self, data: bytes, path: str) -> None:
        super().write_bytes(data, path)
        self.plain.add(path)

    def parquet_writer(self, path: str, schema: pa.Schema, **options: Any) -> pq.ParquetWriter:
        sink = pa.BufferOutputStream()
        self.held[path] = sink
        return pq.ParquetWriter(sink, schema, **options)

    def write_table(self, table: pa.Table, path: str, **options: Any) -> None:
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink, **options)
        self.held[path] = sink.getvalue()

    def _buffer(self, path: str) -> pa.Buffer | None:
        held = self.held.get(path)
        if isinstance(held, pa.BufferOutputStream):  # its writer has closed
            held = self.held[path] = held.getvalue()
        return held

    def size(self, path: str) -> int:
        held = self._buffer(path)
        return held.size if held is not None else super().size(path)

    def read_metadata(self, path: str) -> pq.FileMetaData:
        held = self._buffer(path)
        if held is None:
            return super().read_metadata(path)
        return pq.read_metadata(pa.BufferReader(held))

    def read_table(self, path: str, columns: list[str] | None = None) -> pa.Table:
        held = self._buffer(path)
        if held is None:
            return super().read_table(path, columns)
        return pq.read_table(pa.BufferReader(held), columns=columns)

    def delete(self, path: str) -> None:
        if self.held.pop(path, None) is None:
            super().delete(path)

    def take(self, path: str) -> pa.Buffer | None:
        """The bytes of a held file, no longer held."""
        held = self._buffer(path)
        self.held.pop(path, None)
        return held


def held_files(spark: SparkSession, options: WriteOptions, table: str) -> HeldFiles | None:
    """Where a write into `table` holds its Parquet files for sealing: None when the
    lake is not encrypted; refused (naming the table) before anything is written when
    this session cannot seal."""
    if not options.encrypted:
        return None
    require_engine_classes(spark, f"table {table} is encrypted", "writing its files")
    return HeldFiles(s3=options.files.s3)


class HandOn:
    """Picklable mapInArrow task: `task`, with each file it wrote into `held` handed
    on in the result row naming it (`path`, relative to `root`) with a fresh key; one
    batch per row, so a batch holds one file's bytes."""

    def __init__(self, task: Callable[..., Iterator[pa.RecordBatch]], held: HeldFiles, root: str):
        self.task = task
        self.held = held
        self.root = root

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for out in self.task(batches):
            schema = out.schema
            for name, kind in _HANDED_ON_FIELDS:
                schema = schema.append(pa.field(name, kind))
            for row in out.to_pylist():
                yield pa.RecordBatch.from_pylist([self.hand_on(row)], schema=schema)

    def hand_on(self, row: dict[str, Any]) -> dict[str, Any]:
        relative = row.get("path")
        path = self.root + relative if relative else None
        held = self.held.take(path) if path else None
        if held is None:
            key = new_key() if path in self.held.plain else None
            return {**row, "sealed_path": None, "sealed": None, "encryption_key": key}
        return {**row, "sealed_path": path, "sealed": memoryview(held), "encryption_key": new_key()}


class StoreSealed:
    """Picklable mapInArrow task: store each row's sealed file at its path and record
    its size and footer size; the bytes do not go on."""

    def __init__(self, files: FileIO):
        self.files = files

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            rows = [store_sealed(self.files, row) for row in batch.to_pylist()]
            schema = batch.schema
            for name in ("sealed", "sealed_path"):
                schema = schema.remove(schema.get_field_index(name))
            if rows:
                yield pa.RecordBatch.from_pylist(rows, schema=schema)


def store_sealed(files: FileIO, row: dict[str, Any]) -> dict[str, Any]:
    sealed, path = row.pop("sealed"), row.pop("sealed_path")
    if sealed is not None:
        files.write_bytes(sealed, path)
        row["file_size"] = len(sealed)
        # DuckDB's footer_size of an encrypted file: the crypto metadata and the
        # encrypted footer module, the length before the closing magic
        row["footer_size"] = int.from_bytes(sealed[-8:-4], "little")
    return row


def sealed_rows(handed_on: DataFrame, result_schema: str, files: FileIO, table: str) -> list[Row]:
    """Run a `HandOn` task's output through the sealing UDF and `StoreSealed`: the
    task's result rows, each written file's with its `encryption_key`."""
    register_seal(handed_on.sparkSession, table)
    sealed = handed_on.withColumn("sealed", F.expr(f"{SEAL_UDF}(sealed, encryption_key)"))
    return sealed.mapInArrow(
        StoreSealed(files), f"{result_schema}, encryption_key string"
    ).collect()


def seal_here(
    spark: SparkSession, rows: list[dict[str, Any]], files: FileIO, table: StagedTable
) -> list[Row]:
    """`HandOn` rows made on the driver, sealed by the driver's JVM and stored."""
    require_engine_classes(spark, f"table {table.qualified_name} is encrypted", "writing its files")
    jvm: Any = spark._jvm
    out = []
    for row in rows:
        if row["sealed"] is not None:
            key = base64.b64decode(row["encryption_key"])
            row["sealed"] = bytes(
                jvm.ducklake.jvm.EncryptedParquet.encrypt(
                    bytes(row["sealed"]), key, row["sealed_path"]
                )
            )
        out.append(Row(**store_sealed(files, row)))
    return out


def open_here(spark: SparkSession, files: FileIO, path: str, key: str) -> pa.Table:
    """A small encrypted Parquet file (a delete file), decrypted by the driver's JVM."""
    jvm: Any = spark._jvm
    plain = jvm.ducklake.jvm.EncryptedParquet.decrypt(
        files.read_bytes(path), base64.b64decode(key), path
    )
    return pq.read_table(pa.BufferReader(bytes(plain)))


def with_old_deletes(
    spark: SparkSession, lineage: DataFrame, scanned: Sequence[DataFile]
) -> DataFrame:
    """`lineage` (fid, pos, rowid of the victims) with an `old_snapshot` column, and the
    deletes of the encrypted live delete files of `scanned` as more rows (fid, pos,
    NULL, their snapshot): Spark decrypts them for the delete task, which cannot."""
    lineage = lineage.withColumn("old_snapshot", F.lit(None).cast("bigint"))
    old = [
        f.delete_file
        for f in scanned
        if f.delete_file is not None
        and f.delete_file.encryption_key
        and not is_deletion_vector(f.delete_file.format)
    ]
    positions = delete_positions(spark, old, [])
    if positions is None:
        return lineage
    return lineage.unionByName(
        positions.select(
            F.col(FILE_ID_KEY).alias("fid"),
            F.col("__ducklake_del_pos").alias("pos"),
            F.lit(None).cast("bigint").alias("rowid"),
            F.col(DELETE_SNAPSHOT).alias("old_snapshot"),
        )
    )


def write_delete_here(
    spark: SparkSession,
    table: StagedTable,
    options: WriteOptions,
    data_file: str,
    old: DeleteFile | None,
    stamps: dict[int, int],
) -> dict[str, Any]:
    """A delete file written on the driver (a flush), with its own snapshot per
    position: sealed in an encrypted lake, where an old encrypted delete file is
    decrypted by the driver's JVM to be merged."""
    files = held_files(spark, options, table.qualified_name) or options.files
    target = DeleteTarget(
        table.root,
        files,
        data_file,
        old.path if old else None,
        old.begin_snapshot if old else None,
        old.format if old else None,
    )
    previous = None
    if old is not None and old.encryption_key and not is_deletion_vector(old.format):
        assert old.begin_snapshot is not None
        plain = open_here(spark, options.files, old.path, old.encryption_key)
        previous = deletes_of(plain, old.begin_snapshot)
    facts = write_delete_file(target, list(stamps), 0, options.compression, stamps, previous)
    if not isinstance(files, HeldFiles):
        return facts
    handed = HandOn(_no_task, files, table.root).hand_on(facts)
    return seal_here(spark, [handed], options.files, table)[0].asDict()


def _no_task(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    return iter(())


_registered: set[int] = set()


def register_seal(spark: SparkSession, table: str) -> None:
    """`ducklake_seal` in this session, refused (naming `table`) unless the adapter's
    jar is on its class path."""
    require_engine_classes(spark, f"table {table} is encrypted", "writing its files")
    if id(spark) not in _registered:
        spark.udf.registerJavaFunction(SEAL_UDF, _SEAL_CLASS, T.BinaryType())
        _registered.add(id(spark))
