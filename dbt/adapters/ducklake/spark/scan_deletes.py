"""Deleted rows of a scan: positions from delete files and inlined deletions, and the
anti-join (plain or by 64-position masks) that drops them."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..lake import (
    DataFile,
    DeleteFile,
    is_deletion_vector,
)
from .encrypted import file_keys
from .local_rows import local_frame
from .scan_files import (
    DELETE_SNAPSHOT,
    FILE_ID_KEY,
    POS_KEY,
    ROW_SNAPSHOT,
    file_match,
    read_parquet,
)
from .types import (
    DELETE_POS_FIELD_ID,
    FIELD_ID,
    SNAPSHOT_FIELD_ID,
)
from .vector_task import DecodeVectorsTask

log = logging.getLogger("dbt.adapters.ducklake.spark")


def deleted_rows(
    spark: SparkSession,
    files: Sequence[DataFile],
    inlined_deletes: Sequence[Any],
    snap: int,
    offsets: Mapping[int, int],
) -> DataFrame | None:
    """The row number (`row_numbering`) of every row deleted as of `snap`."""
    positions = delete_positions(
        spark,
        [f.delete_file for f in files if f.delete_file is not None],
        [d for d in inlined_deletes if d.data_file_id in offsets],
        offsets,
    )
    if positions is None:
        return None
    number = F.col("__ducklake_del_off") + F.col("__ducklake_del_pos")
    return positions.where(F.col(DELETE_SNAPSHOT) <= F.lit(snap)).select(
        number.alias("__ducklake_del_number")
    )


_CHUNK_BITS = 6  # 64 positions per mask


def row_numbering(files: Sequence[DataFile]) -> dict[int, int]:
    """Per data file, the number its first row gets when the files' rows are numbered
    one after the other; each file starts a new run of 64 (see `drop_deleted`)."""
    offsets, start = {}, 0
    for f in files:
        offsets[f.data_file_id] = start
        start += -(-f.record_count >> _CHUNK_BITS) << _CHUNK_BITS
    return offsets


# up to this many deleted rows, a plain anti-join on row numbers (no aggregation stage)
FEW_DELETES = 1 << 17


def use_masks(deleted: int) -> bool:
    """Many deleted rows are dropped by 64-position masks (an aggregation stage)."""
    return deleted > FEW_DELETES


def drop_deleted(data: DataFrame, deletes: DataFrame, *, masks: bool) -> DataFrame:
    """`data` (with `__ducklake_off` and positions) without the rows `deletes` numbers.

    Rows are numbered across the scanned files (`row_numbering`). Few deletes are a
    broadcast anti-join on that one long. Many become a 64-bit mask per run of 64
    numbers: each row looks up its run (a long key with nearly contiguous values, which
    Spark keeps as a plain array) and tests one bit, a tenth of the entries of the
    anti-join and no hashing per row, for the price of one aggregation stage.
    """
    numbered = data.withColumn("__ducklake_row_number", F.col("__ducklake_off") + F.col(POS_KEY))
    if not masks:
        kept = numbered.join(
            F.broadcast(deletes),
            F.col("__ducklake_row_number") == F.col("__ducklake_del_number"),
            "left_anti",
        )
        return kept.drop("__ducklake_row_number")
    masks_by_run = deletes.groupBy(
        F.shiftright("__ducklake_del_number", _CHUNK_BITS).alias("__ducklake_del_chunk")
    ).agg(
        F.bit_or(F.expr("shiftleft(1L, CAST(__ducklake_del_number % 64 AS INT))")).alias(
            "__ducklake_mask"
        )
    )
    kept = numbered.join(
        F.broadcast(masks_by_run),
        F.shiftright("__ducklake_row_number", _CHUNK_BITS) == F.col("__ducklake_del_chunk"),
        "left",
    ).where(
        F.col("__ducklake_mask").isNull()
        | F.expr("shiftright(__ducklake_mask, CAST(__ducklake_row_number % 64 AS INT)) & 1 = 0")
    )
    return kept.drop("__ducklake_row_number", "__ducklake_del_chunk", "__ducklake_mask")


def delete_positions(
    spark: SparkSession,
    delete_files: Sequence[DeleteFile],
    inlined_deletes: Sequence[Any],
    offsets: Mapping[int, int] | None = None,
) -> DataFrame | None:
    """(data file id, position, deleting snapshot) of every delete in these delete files
    (per-row snapshot ids of partial files, else the file's begin) and inlined deletes;
    with `offsets`, also each data file's `__ducklake_del_off` from it."""
    parts = []
    off = offsets or {}
    vectors = [d for d in delete_files if is_deletion_vector(d.format)]
    if vectors:
        parts.append(_vector_positions(spark, vectors, off))
    delete_files = [d for d in delete_files if not is_deletion_vector(d.format)]
    if delete_files:
        paths = [d.path for d in delete_files]
        match = file_match(paths, [d.file_size_bytes for d in delete_files])
        delete_info = {
            "__ducklake_del_fid": [d.data_file_id for d in delete_files],
            "__ducklake_del_begin": [d.begin_snapshot for d in delete_files],
            "__ducklake_del_off": [off.get(d.data_file_id, 0) for d in delete_files],
        }
        schema = T.StructType(
            [
                T.StructField("pos", T.LongType(), True, {FIELD_ID: DELETE_POS_FIELD_ID}),
                T.StructField(ROW_SNAPSHOT, T.LongType(), True, {FIELD_ID: SNAPSHOT_FIELD_ID}),
            ]
        )
        deletes = read_parquet(spark, schema, paths, file_keys(delete_files)).select(
            "*", match.per_row.alias("__ducklake_del_path")
        )
        read = match.attach(
            spark, deletes, "__ducklake_del_path", delete_info, few_rows=True
        ).select(
            F.col("__ducklake_del_fid").alias(FILE_ID_KEY),
            F.col("pos").alias("__ducklake_del_pos"),
            F.coalesce(F.col(ROW_SNAPSHOT), F.col("__ducklake_del_begin")).alias(DELETE_SNAPSHOT),
            F.col("__ducklake_del_off"),
        )
        parts.append(read)
    if inlined_deletes:
        rows = [
            (d.data_file_id, d.position, d.begin_snapshot, off.get(d.data_file_id, 0))
            for d in inlined_deletes
        ]
        parts.append(
            local_frame(
                spark,
                rows,
                f"{FILE_ID_KEY} bigint, __ducklake_del_pos bigint, {DELETE_SNAPSHOT} bigint, "
                "__ducklake_del_off bigint",
            )
        )
    if not parts:
        return None
    out = parts[0]
    for p in parts[1:]:
        out = out.unionByName(p)
    return out


_POSITION_COLUMNS = (FILE_ID_KEY, "__ducklake_del_pos", DELETE_SNAPSHOT, "__ducklake_del_off")


def _vector_positions(
    spark: SparkSession, vectors: Sequence[DeleteFile], offsets: Mapping[int, int]
) -> DataFrame:
    """The positions of deletion vectors, decoded by tasks from the files' bytes (one
    Spark row per vector file; a Parquet reader must never see a puffin file)."""
    raw = spark.read.format("binaryFile").load([d.path for d in vectors])
    schema = ", ".join(f"{name} bigint" for name in _POSITION_COLUMNS)
    return raw.select("path", "length", "content").mapInArrow(
        DecodeVectorsTask(vectors, offsets, _POSITION_COLUMNS), schema
    )
