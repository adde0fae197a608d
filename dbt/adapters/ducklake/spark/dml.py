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
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..lake.lake import Lake
from ..lake.models import DataFile, Snapshot
from ..lake.staged import DeleteFileSpec, StagedTable
from ..lake.transaction import Transaction
from .arrow import DeleteTarget, write_delete_file
from .engine import CommitInfo, begin, finish, inlining_limit, stage_rows, write_options
from .prune import Predicate
from .scan import FILE_ID_COL, POS_COL, scan_table
from .types import spark_type

log = logging.getLogger("dbt.adapters.ducklake.spark")

_DELETE_RESULT = (
    "fid bigint, path string, delete_count bigint, file_size bigint, footer_size bigint, "
    "begin_snapshot bigint, partial_max bigint"
)


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
    predicates: Sequence[Predicate] = (),
) -> DataFrame:
    """The rows as of the transaction's base snapshot, with lineage and file positions,
    in the columns the transaction gives the table: a column the transaction added
    reads as NULL (DuckLake's rule for files written before it), so DML may follow
    ADD/DROP COLUMN in one snapshot. `predicates` only prune files."""
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
    )
    for col in table.column_list():
        if col.column_id in base_names and base_names[col.column_id] != col.name:
            raise ValueError(
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
    own = tx is None
    tx = tx or begin(lake, commit)
    table = tx.table(schema, name)
    victims = target_rows(spark, lake, tx, schema, name).where(_condition(condition))
    stage_deletes(spark, lake, tx, table, victims)
    return finish(tx, own)


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
    own = tx is None
    tx = tx or begin(lake, commit)
    table = tx.table(schema, name)
    columns = table.column_list()
    known = {c.name.lower(): c for c in columns}
    for col in assignments:
        if col.lower() not in known:
            raise ValueError(
                f"UPDATE {table.qualified_name}: no column {col!r}; columns are "
                f"{', '.join(c.name for c in columns)}"
            )
    matched = target_rows(spark, lake, tx, schema, name).where(_condition(condition))
    matched = matched.persist()
    try:
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
        stage_deletes(spark, lake, tx, table, matched)
        stage_rows(lake, tx, table, new_rows, keep_row_ids=True)
        return finish(tx, own)
    finally:
        matched.unpersist()


def stage_deletes(
    spark: SparkSession,
    lake: Lake,
    tx: Transaction,
    table: StagedTable,
    victims: DataFrame,
    *,
    on_repeat: Callable[[int], Exception] | None = None,
) -> int:
    """Stage the removal of `victims` (rows of a `positions=True` lineage scan).

    With `on_repeat` (MERGE, where a target row may meet several source rows) a row
    listed twice raises `on_repeat(its row id)` before anything is staged; the check
    rides on the per-file count instead of costing a query of its own.
    """
    assert table.table_id is not None
    keys = victims.select(
        F.col(FILE_ID_COL).alias("fid"), F.col(POS_COL).alias("pos"), F.col("rowid")
    ).persist()
    try:
        limit = inlining_limit(lake, table)
        # one small job: per touched file its count, and the ids of inlined rows removed
        # (collect_list skips the NULLs every file row gives it)
        rows, repeated = keys.withColumn("k", F.lit(1)), F.lit(None).cast("bigint")
        if on_repeat is not None:
            rows = keys.groupBy("fid", "pos", "rowid").agg(F.count("*").alias("k"))
            repeated = F.max(F.when(F.col("k") > 1, F.col("rowid")))
        summary = (
            rows.groupBy("fid")
            .agg(
                F.sum("k").alias("n"),
                F.collect_list(F.when(F.col("fid").isNull(), F.col("rowid"))).alias("rowids"),
                repeated.alias("repeated"),
            )
            .collect()
        )
        twice = [r.repeated for r in summary if r.repeated is not None]
        if twice and on_repeat is not None:
            raise on_repeat(twice[0])
        per_file = {r.fid: r.n for r in summary if r.fid is not None}
        inlined = [i for r in summary if r.fid is None for i in r.rowids]
        if inlined:
            tx.delete_inlined_rows(table, inlined)
        if not per_file:
            return len(inlined)
        info = tx.catalog.table_by_id(table.table_id)
        files = {f.data_file_id: f for f in tx.catalog.data_files(info, only=per_file)}
        already = _deleted_counts(files)
        ended, small, large = [], [], []
        for fid, n in per_file.items():
            if n + already.get(fid, 0) >= files[fid].record_count:
                ended.append(fid)
            elif 0 < n <= limit:
                small.append(fid)
            else:
                large.append(fid)
        if ended:
            tx.end_data_files(table, ended)
        if small:
            positions: dict[int, list[int]] = {}
            for r in keys.where(F.col("fid").isin(small)).select("fid", "pos").collect():
                positions.setdefault(r.fid, []).append(r.pos)  # at most `limit` per file
            for fid, pos in sorted(positions.items()):
                tx.delete_inlined_positions(table, fid, pos)
        if large:
            tx.add_delete_files(
                table,
                _write_delete_files(
                    keys.where(F.col("fid").isin(large)),
                    {fid: files[fid] for fid in large},
                    tx,
                    table,
                    lake,
                ),
            )
        log.info(
            "%s: %s file(s) ended, %s with inlined deletes, %s with delete files, "
            "%s inlined row(s) deleted",
            table.qualified_name,
            len(ended),
            len(small),
            len(large),
            len(inlined),
        )
        return sum(per_file.values()) + len(inlined)
    finally:
        keys.unpersist()


def _deleted_counts(files: dict[int, DataFile]) -> dict[int, int]:
    """Rows already gone per data file, counting only its delete file: like DuckDB, a
    file with inlined deletes is not ended but gets the rest of its rows as deletes
    (DuckDB's change feed of an ended file does not apply inlined deletes)."""
    return {fid: f.delete_file.delete_count for fid, f in files.items() if f.delete_file}


def _write_delete_files(
    keys: DataFrame, files: dict[int, DataFile], tx: Transaction, table: StagedTable, lake: Lake
) -> list[DeleteFileSpec]:
    targets = {
        fid: DeleteTarget(
            root=table.root,
            data_file=f.path,
            old_delete_file=f.delete_file.path if f.delete_file else None,
            old_begin_snapshot=f.delete_file.begin_snapshot if f.delete_file else None,
        )
        for fid, f in files.items()
    }
    task = _DeleteTask(targets, tx.stamp_snapshot_id, write_options(lake, table).compression)
    rows = (
        keys.select("fid", "pos")
        .repartition(F.col("fid"))
        .sortWithinPartitions("fid", "pos")
        .mapInArrow(task, _DELETE_RESULT)
        .collect()  # one small row per delete file
    )
    return [delete_file_spec(r.fid, r.asDict()) for r in rows]


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
    )


class _DeleteTask:
    """Picklable task: one delete file per data file id in this partition."""

    def __init__(self, targets: dict[int, DeleteTarget], stamp: int, compression: str):
        self.targets = targets
        self.stamp = stamp
        self.compression = compression

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        positions: dict[int, list[int]] = {}
        for batch in batches:
            fids = batch.column(0).to_pylist()
            pos = batch.column(1).to_pylist()
            for f, p in zip(fids, pos, strict=True):
                positions.setdefault(f, []).append(p)
        rows: list[dict[str, Any]] = []
        for fid, pos_list in positions.items():
            facts = write_delete_file(self.targets[fid], pos_list, self.stamp, self.compression)
            rows.append({"fid": fid, **facts})
        if rows:
            yield pa.RecordBatch.from_pylist(rows)
