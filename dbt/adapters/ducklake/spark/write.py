"""DataFrame -> DuckLake data files, written by Spark tasks and registered by lake/.

The driver plans and registers; executors write (see arrow.py) and send back one small
row per file. Partitioned tables get Hive-style directories named and valued like
DuckDB's (`year=2024/v=a%2Fb/`, NULL as `__HIVE_DEFAULT_PARTITION__`); sorted tables are
sorted within each file by the active sort order.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import pyarrow as pa
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..lake import Column, DataFileSpec, FileColumnStats, StagedTable
from .arrow import WriteOptions
from .errors import WriteError
from .local_rows import arrow_table
from .native_write import native_writable, write_native
from .sealed import HANDED_ON, HandOn, held_files, sealed_rows
from .write_task import WriteTask

log = logging.getLogger("dbt.adapters.ducklake.spark")

_RESULT_SCHEMA = (
    "path string, record_count bigint, file_size bigint, footer_size bigint, stats string, "
    "partition_values string"
)
_PART_PREFIX = "__ducklake_part_"

# ---------------------------------------------------------------------------------------
# Planning on the driver


def partition_plan(
    table: StagedTable, partition: Sequence[tuple[int, str]] | None
) -> list[tuple[str, Column, str]]:
    """(directory key, source column, transform) per partition field."""
    flat = {c.column_id: c for top in table.column_list() for c in top.walk()}
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
        raise WriteError(
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
    rows = _write_in_tasks(
        data, table, options, WriteTask(columns, options, transforms, row_ids, snapshot_ids)
    )
    specs = [_spec(r) for r in rows]
    log.info("wrote %s file(s) for %s", len(specs), table.qualified_name)
    return specs


# A result Spark's plan bounds to this many rows (a VALUES list, `range(100)`, a LIMIT) is
# collected and written by the driver: one Spark job where deciding whether to inline it
# and Spark's write took two or three (INSERT of 100 rows: 330 -> 172-179 ms).
DRIVER_WRITE_ROWS = 10_000
_DRIVER_TYPES = (
    T.BooleanType,
    T.ByteType,
    T.ShortType,
    T.IntegerType,
    T.LongType,
    T.FloatType,
    T.DoubleType,
    T.StringType,
    T.BinaryType,
    T.DateType,
    T.TimestampType,
    T.TimestampNTZType,
    T.DecimalType,
)


def driver_bound(df: DataFrame) -> int | None:
    """The most rows `df` can have, when its plan says and it is at most
    `DRIVER_WRITE_ROWS` rows of flat types the driver writes as the tasks would; else
    None (also through Spark Connect, whose plans are not at hand)."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None or not all(isinstance(f.dataType, _DRIVER_TYPES) for f in df.schema.fields):
        return None
    bound = jdf.queryExecution().optimizedPlan().maxRows()
    if not bound.isDefined() or int(bound.get()) > DRIVER_WRITE_ROWS:
        return None
    return int(bound.get())


def collect_arrow(df: DataFrame) -> pa.Table | None:
    """`df` (as `write_data_files` takes it: the table's columns by position) on the
    driver, in one Spark job planned once with the questions asked of it before; None
    when a value has no exact Arrow form here. Rows, not `toArrow`: a failed or
    cancelled job then says why, where `toArrow` says only "awaitResult"."""
    return arrow_table(df.collect(), df.schema)


def write_here(
    data: pa.Table, table: StagedTable, options: WriteOptions, row_ids: bool
) -> list[DataFileSpec]:
    """Write collected rows as data files of `table` from the driver, with the task body
    Spark's tasks run (no partitions, no sort, not sealed)."""
    task = WriteTask(table.column_list(), options, [], row_ids)
    try:
        rows = [r for batch in task(iter(data.to_batches())) for r in batch.to_pylist()]
    except OSError as exc:  # in a task Spark would say it; here we do, naming the table
        raise WriteError(
            f"cannot write the data files of {table.qualified_name} under {options.root}: {exc}"
        ) from exc
    log.info("wrote %s file(s) for %s on the driver", len(rows), table.qualified_name)
    return [_spec(r) for r in rows]


def _write_in_tasks(
    data: DataFrame, table: StagedTable, options: WriteOptions, task: WriteTask
) -> list[Any]:
    """Run `task` over `data`: one small result row per file written; in an encrypted
    lake, files are held in memory and sealed before they are stored (sealed.py)."""
    held = held_files(data.sparkSession, options, table.qualified_name)
    if held is None:
        return data.mapInArrow(task, _RESULT_SCHEMA).collect()
    task.options = replace(options, files=held)
    handed_on = data.mapInArrow(HandOn(task, held, options.root), f"{_RESULT_SCHEMA}, {HANDED_ON}")
    return sealed_rows(handed_on, _RESULT_SCHEMA, options.files, table.qualified_name)


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
        encryption_key=(row.asDict() if hasattr(row, "asDict") else row).get("encryption_key"),
    )


# ---------------------------------------------------------------------------------------
# Inside the task
