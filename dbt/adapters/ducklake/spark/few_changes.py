"""A MERGE whose changes are few, staged from the driver.

A MERGE into a small target (a dbt snapshot, an incremental model's merge) mostly
changes a handful of rows. The general path keeps the joined rows, counts them per
clause, then runs one job per step (delete files, updated rows, new rows); on a dbt
snapshot of 20 rows that was ~2 s of planning and jobs. Here one query brings each
changed row's lineage and new values to the driver (at most `FEW_CHANGES` + 1 rows),
and every step is staged from there: deletes by the same task, run here; new rows
inlined under the table's inlining limit, else written from a local relation.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..lake import DataFile, Lake, StagedTable, Transaction
from .collect import at_most
from .dml import FEW_VICTIMS, stage_deletes
from .engine import inlinable, inline_rows, inlining_limit, stage_rows
from .local_rows import arrow_frame, local_frame
from .scan_files import FILE_ID_COL, POS_COL

FEW_CHANGES = FEW_VICTIMS  # so that the victims among them are staged on the driver
ROW_ID = "_ducklake_internal_row_id"
log = logging.getLogger("dbt.adapters.ducklake.spark")


@dataclass(frozen=True)
class Outcome:
    """What the joined rows of a MERGE become, as columns over them."""

    removed: list[int]  # the clauses whose rows lose their target row
    chosen: dict[str, list[int]]  # "update" / "insert": its clauses (actions with any)
    lineage: list[SparkColumn]  # the target row's file id, position and row id
    values: dict[str, list[SparkColumn]]  # per action, the new row's columns (update: + row id)


def stage_few(
    spark: SparkSession,
    lake: Lake,
    tx: Transaction,
    table: StagedTable,
    decided: DataFrame,
    outcome: Outcome,
    scanned: Sequence[DataFile],
    on_repeat: Callable[[int], Exception],
) -> bool:
    """Stage the MERGE's changes from the driver if they are few; False, with nothing
    staged, when they are not or a value cannot travel that way (the caller then
    stages them with Spark)."""
    if not hasattr(spark, "_jsparkSession"):  # Spark Connect: rows travel differently
        return False
    wanted = [F.col("__ducklake_clause"), *outcome.lineage]
    spans: dict[str, tuple[int, int]] = {}
    for action, columns in outcome.values.items():
        spans[action] = (len(wanted), len(wanted) + len(columns))
        wanted += [c.alias(f"__ducklake_{action}_{k}") for k, c in enumerate(columns)]
    selected = decided.select(*wanted)
    rows = at_most(selected, FEW_CHANGES)
    if rows is None:
        return False
    limit = inlining_limit(lake, table)
    staged: list[Callable[[], None]] = []
    for action, (start, end) in spans.items():
        new = [r[start:end] for r in rows if r[0] in outcome.chosen[action]]
        fields = selected.schema.fields[start:end]
        step = new_rows_step(spark, lake, tx, table, new, fields, limit, moved=action == "update")
        if step is None:
            return False
        staged.append(step)
    victims = [r[1:4] for r in rows if r[0] in outcome.removed]
    if victims:
        schema = f"{FILE_ID_COL} bigint, {POS_COL} bigint, rowid bigint"
        found = local_frame(spark, victims, schema)
        stage_deletes(spark, lake, tx, table, found, scanned, on_repeat=on_repeat, few=True)
    for step in staged:
        step()
    log.info("%s: MERGE of %s row(s) staged from the driver", table.qualified_name, len(rows))
    return True


def new_rows_step(
    spark: SparkSession,
    lake: Lake,
    tx: Transaction,
    table: StagedTable,
    rows: list[tuple[Any, ...]],
    fields: Sequence[T.StructField],
    limit: int,
    *,
    moved: bool,
) -> Callable[[], None] | None:
    """How rows of the table's columns (and a row id, for updates) are staged: inlined,
    or written as `stage_rows` would write them; None when they cannot be."""
    if not rows:
        return lambda: None
    if len(rows) <= limit and inlinable(table, rows):
        return lambda: inline_rows(tx, table, rows, keep_row_ids=moved)
    names = [c.name for c in table.column_list()] + ([ROW_ID] if moved else [])
    schema = T.StructType(
        [T.StructField(n, f.dataType, True) for n, f in zip(names, fields, strict=True)]
    )
    frame = arrow_frame(spark, rows, schema)
    if frame is None:
        return None
    big = len(rows) > limit
    return lambda: stage_rows(
        lake, tx, table, frame, keep_row_ids=moved, write_first=big, packed=True
    )
