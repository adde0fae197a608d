"""DELETE and UPDATE as distributed, merge-on-read Spark plans, each one snapshot.

Touched rows are found on executors (a scan with file ids and positions). Per data file
the driver receives only a count, then, like DuckDB: a file whose rows all go is ended;
up to `data_inlining_row_limit` positions are stored as inlined deletes; more are written
by Spark tasks as a positional delete file (a partial one, merged with the old file's
positions and snapshot ids, when the data file already had deletes). Untouched files are
never read for writing or rewritten. UPDATE also writes the new versions of the rows,
which keep their row ids.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, Row, SparkSession
from pyspark.sql import functions as F

from ..lake import (
    Column,
    DataFile,
    DeleteFileSpec,
    FileIO,
    Lake,
    Snapshot,
    StagedTable,
    Transaction,
)
from .arrow import DeleteTarget, WriteOptions
from .delete_task import (
    ENDED,
    INLINE,
    INLINED_ROWS,
    REPEATED,
    RESULT_SCHEMA,
    WRITTEN,
    FileFacts,
    StageDeletesTask,
)
from .engine import CommitInfo, in_transaction, inlining_limit, stage_rows, write_options
from .errors import WriteError
from .prune import Predicate
from .scan import ScanMetrics, scan_table
from .scan_files import FILE_ID_COL, POS_COL
from .sealed import HANDED_ON, HandOn, held_files, seal_here, sealed_rows, with_old_deletes
from .types import spark_type

log = logging.getLogger("dbt.adapters.ducklake.spark")

# victims staged on the driver at most: their (file, position, row id) triples are
# collected (24 bytes each) instead of shuffled to tasks
FEW_VICTIMS = 1_000


def few_victims(count: int) -> bool:
    """Whether `count` victims are staged on the driver (`stage_deletes(few=True)`)."""
    return count <= FEW_VICTIMS


def _condition(condition: str | SparkColumn | None) -> SparkColumn:
    if condition is None:
        return F.lit(True)
    return F.expr(condition) if isinstance(condition, str) else condition


def target_rows(
    spark: SparkSession,
    lake: Lake,
    tx: Transaction,
    schema: str,
    name: str,
    predicates: Sequence[Predicate] | Callable[[Sequence[Column]], Sequence[Predicate]] = (),
    metrics: ScanMetrics | None = None,
    prune_from_rows: int = 1,
) -> DataFrame:
    """The rows as of the transaction's base snapshot, with lineage and file positions,
    in the columns the transaction gives the table: a column the transaction added
    reads as NULL (DuckLake's rule for files written before it), so DML may follow
    ADD/DROP COLUMN in one snapshot. `predicates` only prune files; `metrics` gets the
    files read, which `stage_deletes` needs; a function giving `predicates` is asked only
    when the data files hold `prune_from_rows` rows (see `scan_table`)."""
    table = tx.table(schema, name)
    base_names = {cid: c.name for cid, c in table.base_columns.items()}
    df = scan_table(
        spark,
        lake,
        schema,
        name,
        at=tx.base.snapshot_id,
        lineage=True,
        positions=True,
        predicates=predicates,
        metrics=metrics,
        prune_from_rows=prune_from_rows,
    )
    for col in table.column_list():
        if col.column_id in base_names and base_names[col.column_id] != col.name:
            raise WriteError(
                f"{table.qualified_name}: column {base_names[col.column_id]!r} was renamed to "
                f"{col.name!r} in this transaction; change its rows before the rename or "
                "after COMMIT"
            )
        if col.column_id not in base_names:
            df = df.withColumn(col.name, F.lit(None).cast(spark_type(col)))
    return df


def delete_where(
    spark: SparkSession,
    lake: Lake,
    schema: str,
    name: str,
    condition: str | SparkColumn | None,
    *,
    commit: CommitInfo | None = None,
    tx: Transaction | None = None,
) -> Snapshot | None:
    """DELETE FROM schema.name WHERE condition (Spark SQL expression or Column)."""

    def stage(tx: Transaction) -> None:
        table = tx.table(schema, name)
        scan = ScanMetrics()
        victims = target_rows(spark, lake, tx, schema, name, metrics=scan)
        stage_deletes(spark, lake, tx, table, victims.where(_condition(condition)), scan.files)

    return in_transaction(lake, commit, tx, stage)


def update_where(
    spark: SparkSession,
    lake: Lake,
    schema: str,
    name: str,
    assignments: Mapping[str, str | SparkColumn],
    condition: str | SparkColumn | None = None,
    *,
    commit: CommitInfo | None = None,
    tx: Transaction | None = None,
) -> Snapshot | None:
    """UPDATE schema.name SET col = expr, ... WHERE condition, keeping row ids."""

    def stage(tx: Transaction) -> None:
        table = tx.table(schema, name)
        columns = table.column_list()
        known = {c.name.lower(): c for c in columns}
        for col in assignments:
            if col.lower() not in known:
                raise WriteError(
                    f"UPDATE {table.qualified_name}: no column {col!r}; columns are "
                    f"{', '.join(c.name for c in columns)}"
                )
        scan = ScanMetrics()
        matched = target_rows(spark, lake, tx, schema, name, metrics=scan)
        matched = matched.where(_condition(condition))
        # only inlined rows (no file read): a local plan Spark answers without a job,
        # which a cache would cost
        local = not scan.files
        if not local:
            matched = matched.persist()
        try:
            # the count fills the cache: no matches skip both steps, few are staged on
            # the driver, and more than the inlining limit are written at once
            n = None if local else matched.count()
            if n == 0:
                return
            exprs = {
                k.lower(): (F.expr(v) if isinstance(v, str) else v) for k, v in assignments.items()
            }
            new_rows = matched.select(
                *[
                    (exprs[c.name.lower()] if c.name.lower() in exprs else F.col(f"`{c.name}`"))
                    .cast(spark_type(c))
                    .alias(c.name)
                    for c in columns
                ],
                F.col("rowid").alias("_ducklake_internal_row_id"),
            )
            few = n is None or few_victims(n)
            stage_deletes(spark, lake, tx, table, matched, scan.files, few=few)
            big = n is not None and n > inlining_limit(lake, table)
            stage_rows(lake, tx, table, new_rows, keep_row_ids=True, write_first=big, packed=True)
        finally:
            if not local:
                matched.unpersist()

    return in_transaction(lake, commit, tx, stage)


def stage_deletes(
    spark: SparkSession,
    lake: Lake,
    tx: Transaction,
    table: StagedTable,
    victims: DataFrame,
    scanned: Sequence[DataFile],
    *,
    on_repeat: Callable[[int], Exception] | None = None,
    few: bool = False,
) -> int:
    """Stage the removal of `victims` (rows of a `positions=True` lineage scan that read
    the data files `scanned`).

    One Spark job groups the victims by file and writes the delete files
    (`StageDeletesTask`); the driver gets a row per touched file. With `on_repeat`
    (MERGE, where a target row may meet several source rows) a row listed twice raises
    `on_repeat(its row id)`, the files written are removed, and nothing is staged.
    When the caller knows the victims are `few` (`few_victims`), or the scan
    read no data file (the victims are inlined rows, already on the driver), their ids
    and positions are collected and the same task runs here: a shuffle and a task set
    cost more than the work.
    """
    assert table.table_id is not None
    options = write_options(lake, table)
    held = held_files(spark, options, table.qualified_name)
    task = StageDeletesTask(
        {f.data_file_id: _facts(f, table, held or lake.files, options) for f in scanned},
        inlining_limit(lake, table),
        tx.stamp_snapshot_id,
        options.compression,
        check_repeats=on_repeat is not None,
    )
    lineage = victims.select(F.col(FILE_ID_COL).alias("fid"), F.col(POS_COL).alias("pos"), "rowid")
    run: Callable[..., Any] = task
    if held is not None:  # an encrypted lake: delete files are sealed (sealed.py)
        lineage = with_old_deletes(spark, lineage, scanned)
        run = HandOn(task, held, table.root)
    if few or not scanned:
        outcomes = _on_driver(run, lineage)
        if held is not None:
            outcomes = seal_here(spark, [r.asDict() for r in outcomes], lake.files, table)
    else:
        staged = lineage.repartition(F.col("fid")).sortWithinPartitions("fid", "pos")
        if held is not None:
            handed_on = staged.mapInArrow(run, f"{RESULT_SCHEMA}, {HANDED_ON}")
            outcomes = sealed_rows(handed_on, RESULT_SCHEMA, lake.files, table.qualified_name)
        else:
            outcomes = staged.mapInArrow(task, RESULT_SCHEMA).collect()  # a row per file
    by_file = sorted((r for r in outcomes if r.fid is not None), key=lambda r: r.fid)
    written = [r for r in by_file if r.outcome == WRITTEN]
    twice = [r.repeated for r in outcomes if r.outcome == REPEATED]
    if twice and on_repeat is not None:
        for r in written:  # never registered: nobody else knows them
            lake.files.delete(table.root + r.path)
        raise on_repeat(twice[0])
    return _stage_outcomes(tx, table, outcomes, by_file, written)


def stage_victims_here(
    lake: Lake, tx: Transaction, table: StagedTable, files: Sequence[DataFile], victims: pa.Table
) -> int:
    """`stage_deletes(few=True)` for victims the driver found itself (`driver_files`):
    (fid, pos, rowid) rows, fid and pos NULL for inlined rows, in the unencrypted data
    files `files`. The number of rows deleted."""
    assert table.table_id is not None
    options = write_options(lake, table)
    task = StageDeletesTask(
        {f.data_file_id: _facts(f, table, lake.files, options) for f in files},
        inlining_limit(lake, table),
        tx.stamp_snapshot_id,
        options.compression,
        check_repeats=False,
    )
    outcomes = _run_here(task, victims.combine_chunks().to_batches())
    by_file = sorted((r for r in outcomes if r.fid is not None), key=lambda r: r.fid)
    written = [r for r in by_file if r.outcome == WRITTEN]
    return _stage_outcomes(tx, table, outcomes, by_file, written)


def _on_driver(task: Callable[..., Any], lineage: DataFrame) -> list[Row]:
    """`task` run here over the collected (fid, pos, rowid) triples; its result rows
    as Spark returns them."""
    triples = lineage.collect()
    if not triples:
        return []
    batch = pa.RecordBatch.from_arrays(
        [pa.array([t[i] for t in triples], pa.int64()) for i in range(len(lineage.columns))],
        names=lineage.columns,
    )
    return _run_here(task, [batch])


def _run_here(task: Callable[..., Any], batches: list[pa.RecordBatch]) -> list[Row]:
    """`task` over the victims sorted as a Spark partition would give them."""
    if not batches or not sum(b.num_rows for b in batches):
        return []
    batch = pa.Table.from_batches(batches).combine_chunks().to_batches()[0]
    order = pc.sort_indices(batch, [("fid", "ascending"), ("pos", "ascending")])
    return [Row(**r) for out in task(iter([batch.take(order)])) for r in out.to_pylist()]


def _stage_outcomes(
    tx: Transaction, table: StagedTable, outcomes: list[Any], by_file: list[Any], written: list[Any]
) -> int:
    """Stage what the delete task did per file; the number of rows deleted."""
    inlined = sorted(i for r in outcomes if r.outcome == INLINED_ROWS for i in r.rowids)
    if inlined:
        tx.delete_inlined_rows(table, inlined)
    ended = [r.fid for r in by_file if r.outcome == ENDED]
    if ended:
        tx.end_data_files(table, ended)
    for r in by_file:
        if r.outcome == INLINE:
            tx.delete_inlined_positions(table, r.fid, list(r.positions))
    if written:
        tx.add_delete_files(table, [delete_file_spec(r.fid, r.asDict()) for r in written])
    log.info(
        "%s: %s file(s) ended, %s with inlined deletes, %s with delete files, "
        "%s inlined row(s) deleted",
        table.qualified_name,
        len(ended),
        sum(r.outcome == INLINE for r in by_file),
        len(written),
        len(inlined),
    )
    return sum(r.n for r in by_file) + len(inlined)


def _facts(f: DataFile, table: StagedTable, files: FileIO, options: WriteOptions) -> FileFacts:
    """The task's view of a data file. Like DuckDB, only its delete file counts as rows
    already gone: a file with inlined deletes is not ended but gets the rest of its rows
    as deletes (DuckDB's change feed of an ended file does not apply inlined deletes)."""
    old = f.delete_file
    return FileFacts(
        record_count=f.record_count,
        already_deleted=old.delete_count if old else 0,
        target=DeleteTarget(
            root=table.root,
            files=files,
            data_file=f.path,
            old_delete_file=old.path if old else None,
            old_begin_snapshot=old.begin_snapshot if old else None,
            old_delete_format=old.format if old else None,
            write_vector=options.deletion_vectors,
            old_encrypted=bool(old and old.encryption_key),
        ),
    )


def delete_file_spec(data_file_id: int, facts: dict[str, Any]) -> DeleteFileSpec:
    """The catalog entry of a delete file `write_delete_file` wrote."""
    return DeleteFileSpec(
        data_file_id=data_file_id,
        path=facts["path"],
        delete_count=facts["delete_count"],
        file_size_bytes=facts["file_size"],
        footer_size=facts["footer_size"],
        begin_snapshot=facts["begin_snapshot"],
        partial_max=facts["partial_max"],
        format=facts.get("format") or "parquet",
        encryption_key=facts.get("encryption_key"),
    )
