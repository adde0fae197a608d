"""A MERGE whose source the driver holds, decided on the driver.

An incremental model fed by its upstream's change feed MERGEs a few thousand rows into
a table of millions. As Spark plans it, that cost 1.1-1.4 s whatever the source: a job
for the source's key ranges, a semi join and an outer join over the target's key
column, a count per clause, a job staging the victims and one writing the new rows.
When the source's rows are on the driver already (a VALUES list, a change feed
`driver_changes` read) and few, and ON is nothing but equal keys of plain types, they
come back in one query (keys, each clause's condition and values, computed by Spark), the
target's key columns are read with pyarrow from the row groups their stats say may hold
a source key, the match is made here, and every step is staged from the driver: victims
as `driver_dml` stages them, new rows inlined or written as `stage_rows` writes a small
result. Anything else (a clause reading a target column, an UPDATE leaving a column as
it was, NOT MATCHED BY SOURCE, an encrypted lake, files the driver cannot read as Spark
does, too many rows) returns False with nothing staged, and Spark runs the MERGE.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from ..lake import Column, DataFile, Lake, StagedTable, Transaction
from .arrow import WriteOptions
from .dml import stage_victims_here
from .driver_files import (
    COMPARABLE,
    DRIVER_ROWS,
    delete_file_positions,
    names_by_field_id,
    readable_here,
    rows_at,
)
from .engine import inlinable, inlining_limit, sorted_on_insert, write_options
from .few_changes import ROW_ID, new_rows_step
from .gc_pause import collection_paused
from .local_rows import arrow_table
from .merge_source import Clause, Layout, asked_of, fields_of, layout_of, source_rows
from .prune import Predicate, may_match
from .scan import ScanMetrics
from .types import ROW_ID_FIELD_ID, keys_compare, spark_type
from .write import write_here

__all__ = ["DRIVER_SOURCE_BYTES", "merge_on_driver"]

log = logging.getLogger("dbt.adapters.ducklake.spark")

# a source the driver holds of at most this size (Spark's estimate) is asked for here (at
# most DRIVER_SOURCE_ROWS + 1 rows of it come back; more and Spark runs the MERGE)
DRIVER_SOURCE_BYTES = 16 * 1024 * 1024
DRIVER_SOURCE_ROWS = 100_000

Key = tuple[Any, ...]
Hit = tuple[int | None, int | None, int, Key]  # (fid, pos, rowid, key) of a target row


@collection_paused()
def merge_on_driver(
    spark: SparkSession,
    lake: Lake,
    tx: Transaction,
    table: StagedTable,
    source: DataFrame,
    keys: Sequence[tuple[str, str]],
    clauses: Sequence[Clause],
    aliases: tuple[str, str],
    scan: ScanMetrics,
    on_repeat: Callable[[int], Exception],
) -> bool:
    """Stage `MERGE INTO table AS t USING source AS s ON <keys equal> <clauses>` from
    the driver; False, with nothing staged, when Spark must run it. `keys`: the
    (target column, source column) pairs that are the whole ON condition."""
    if not keys or not _applicable(source, clauses, table, tx, spark):
        return False
    options = write_options(lake, table)
    if options.encrypted:
        return False  # delete files are sealed by the engine (sealed.py)
    columns = table.column_list()
    key_columns = _key_columns(keys, columns, source)
    asked = asked_of(clauses, columns, keys, aliases)
    if key_columns is None or asked is None:
        return False
    asked_rows = source_rows(spark, source, keys, asked, aliases[1], DRIVER_SOURCE_ROWS)
    if asked_rows is None:
        return False
    rows, fields = asked_rows
    found = _target_rows(lake, tx, table, key_columns, [r[: len(keys)] for r in rows], scan)
    if found is None:
        return False
    layout = layout_of(clauses, len(keys), len(columns))
    victims, updated, inserted = _decide(rows, len(keys), clauses, layout, found, on_repeat)
    limit = inlining_limit(lake, table)
    staged = [
        _new_rows(
            spark, lake, tx, table, new, fields_of(fields, clauses, action), action, options, limit
        )
        for new, action in ((updated, "update"), (inserted, "insert"))
    ]
    if any(step is None for step in staged):
        return False
    _stage_victims(lake, tx, table, found, victims)
    for step in staged:
        assert step is not None
        step()
    log.info(
        "%s: MERGE of %s source row(s) decided on the driver (%s of %s data files read)",
        table.qualified_name,
        len(rows),
        scan.files_read,
        scan.files_total,
    )
    return True


def _applicable(
    source: DataFrame,
    clauses: Sequence[Clause],
    table: StagedTable,
    tx: Transaction,
    spark: SparkSession,
) -> bool:
    """The checks that need no rows and no catalog: classic PySpark, no NOT MATCHED BY
    SOURCE, a source the driver holds, a table unchanged so far in this transaction (the
    catalog's base snapshot shows it as it is)."""
    return (
        hasattr(spark, "_jsparkSession")
        and table.table_id is not None
        and not any(c.kind == "not_matched_by_source" for c in clauses)
        and _small(source)
        and not tx.has_changed(table.schema.name, table.name)
    )


_TRIPLE = ("fid", "pos", "rowid")


def _stage_victims(
    lake: Lake, tx: Transaction, table: StagedTable, found: _Found, victims: Rows
) -> None:
    """Stage the removal of the (fid, pos, rowid) victims (fid None: inlined rows)."""
    if victims:
        files = [f for f in found.files if f.data_file_id in {v[0] for v in victims}]
        triples = pa.table(
            {n: pa.array([v[i] for v in victims], pa.int64()) for i, n in enumerate(_TRIPLE)}
        )
        stage_victims_here(lake, tx, table, files, triples)


def _small(source: DataFrame) -> bool:
    """Whether the source's rows are on the driver already (every leaf of its plan is a
    `LocalRelation`: a VALUES list, a change feed read here) and Spark's size for them
    is small: asking for them moves no table's rows to the driver."""
    jdf = getattr(source, "_jdf", None)
    if jdf is None:
        return False
    plan = jdf.queryExecution().analyzed()  # at hand: optimizing it only to look costs
    leaves = plan.collectLeaves()
    for i in range(leaves.size()):
        if leaves.apply(i).getClass().getSimpleName() not in _HELD:
            return False
    return int(str(plan.stats().sizeInBytes())) <= DRIVER_SOURCE_BYTES


_HELD = ("LocalRelation", "OneRowRelation")


def _key_columns(
    keys: Sequence[tuple[str, str]], columns: Sequence[Column], source: DataFrame
) -> list[Column] | None:
    """The target's key columns, when each compares with its source column here as
    Spark compares them (integers with integers, text with text, booleans)."""
    by_name = {c.name.lower(): c for c in columns}
    fields = {f.name.lower(): f.dataType for f in source.schema.fields}
    out = []
    for t_name, s_name in keys:
        column, kind = by_name.get(t_name.lower()), fields.get(s_name.lower())
        if column is None or kind is None or column.type not in COMPARABLE:
            return None
        if not keys_compare(spark_type(column), kind):
            return None
        out.append(column)
    return out


class _Found:
    """The target rows whose keys some source row has: (fid, pos, rowid, key); fid and
    pos None for inlined rows. `files`: the data files read."""

    def __init__(self) -> None:
        self.rows: list[Hit] = []
        self.files: list[DataFile] = []


def _target_rows(
    lake: Lake,
    tx: Transaction,
    table: StagedTable,
    key_columns: list[Column],
    source_keys: list[Key],
    scan: ScanMetrics,
) -> _Found | None:
    """The live target rows whose keys are among `source_keys`, or None when the driver
    cannot read them as Spark would or they are not few."""
    assert table.table_id is not None
    catalog = tx.catalog
    info = catalog.find_table(table.schema.name, table.name)
    if info is None:
        return None
    wanted = {k for k in source_keys if None not in k}
    found = _Found()
    for row in catalog.inlined_rows(table.table_id):
        key = tuple(row.values.get(c.column_id) for c in key_columns)
        if key in wanted:
            found.rows.append((None, None, row.row_id, key))
    files = catalog.data_files(info)
    scan.files_total = len(files)
    if not wanted or not files:
        return found
    columns = table.column_list()
    ranges = [
        (min(k[i] for k in wanted), max(k[i] for k in wanted)) for i in range(len(key_columns))
    ]
    predicates = [Predicate(c.name, "between", r) for c, r in zip(key_columns, ranges, strict=True)]
    stats = catalog.file_column_stats(table.table_id)
    candidates = [
        f for f in files if may_match(f, columns, stats.get(f.data_file_id), None, predicates)
    ]
    snapshot = tx.base.snapshot_id
    if any(not readable_here(f, snapshot) for f in candidates):
        return None
    gone: dict[int, list[int]] = {}
    for d in catalog.inlined_deletes(table.table_id):
        gone.setdefault(d.data_file_id, []).append(d.position)
    read = 0
    for f in candidates:
        try:
            hits = _file_hits(lake, f, key_columns, ranges, wanted, gone.get(f.data_file_id, []))
        except (pa.ArrowException, TypeError):  # typed unlike Spark's reading: Spark decides
            return None
        if hits is None:
            return None
        rows_read, part = hits
        read += rows_read
        if read > DRIVER_ROWS:
            return None
        found.rows.extend(part)
        found.files.append(f)
    scan.files_read, scan.files = len(found.files), list(found.files)
    scan.rows_read = read
    return found


def _file_hits(
    lake: Lake,
    f: DataFile,
    key_columns: list[Column],
    ranges: list[tuple[Any, Any]],
    wanted: set[Key],
    inlined_gone: list[int],
) -> tuple[int, list[Hit]] | None:
    """(rows read, the file's live rows with a wanted key), reading the key columns of
    the row groups whose stats may hold one; None when a key column is not in the file
    (added later: Spark's path reads its default)."""
    parquet = lake.files.parquet_file(f.path)
    names = names_by_field_id(parquet.schema_arrow)
    if any(c.column_id not in names for c in key_columns):
        return None
    stored = [names[c.column_id] for c in key_columns]
    groups, starts = _row_groups(parquet, stored, ranges)
    if not groups:
        return 0, []
    data = parquet.read_row_groups(groups, columns=stored)
    positions = np.concatenate(
        [np.arange(starts[g], starts[g + 1], dtype=np.int64) for g in groups]
    )
    mask = None
    for name, i in zip(stored, range(len(key_columns)), strict=True):
        values = pa.array(sorted({k[i] for k in wanted}))
        part = pc.is_in(_typed_as(data.column(name), values.type), value_set=values)
        mask = part if mask is None else pc.and_(mask, part)
    assert mask is not None
    chosen = np.flatnonzero(mask.to_numpy(zero_copy_only=False))
    if not len(chosen):
        return data.num_rows, []
    keys = list(zip(*(data.column(n).take(chosen).to_pylist() for n in stored), strict=True))
    pos = positions[chosen]
    keep = np.array([k in wanted for k in keys], dtype=bool)
    already = list(inlined_gone)
    if f.delete_file is not None:
        already.extend(delete_file_positions(lake.files, f, f.delete_file)[0].tolist())
    if already:
        keep &= ~np.isin(pos, np.array(already, dtype=np.int64))
    pos = pos[keep]
    keys = [k for k, kept in zip(keys, keep, strict=True) if kept]
    row_ids: pa.Array | pa.ChunkedArray = pa.array(pos + f.row_id_start, pa.int64())
    stored_ids = names.get(ROW_ID_FIELD_ID)
    if stored_ids and len(pos):  # rows moved here by an UPDATE keep their ids
        at = rows_at(parquet, pos, [stored_ids]).column(stored_ids).cast(pa.int64())
        row_ids = pc.coalesce(at, row_ids)
    out: list[Hit] = [
        (f.data_file_id, int(p), int(r), k)
        for p, r, k in zip(pos.tolist(), row_ids.to_pylist(), keys, strict=True)
    ]
    return data.num_rows, out


def _row_groups(
    parquet: pq.ParquetFile, stored: list[str], ranges: list[tuple[Any, Any]]
) -> tuple[list[int], np.ndarray]:
    """The row groups whose min/max of each key column may hold a key in its range, and
    where each row group starts (one more entry: the file's row count)."""
    meta = parquet.metadata
    index = {meta.schema.column(j).path: j for j in range(meta.num_columns)}
    sizes = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
    starts = np.concatenate([[0], np.cumsum(sizes, dtype=np.int64)])
    groups = []
    for g in range(meta.num_row_groups):
        group = meta.row_group(g)
        if all(
            _may_hold(group.column(index[n]).statistics, r)
            for n, r in zip(stored, ranges, strict=True)
            if n in index
        ):
            groups.append(g)
    return groups, starts


def _may_hold(stats: Any, bounds: tuple[Any, Any]) -> bool:
    if stats is None or not stats.has_min_max:
        return True
    low, high = bounds
    try:
        return not (stats.max < low or stats.min > high)
    except TypeError:  # stats of another type than the key's (bytes): read the group
        return True


def _typed_as(values: pa.ChunkedArray, kind: pa.DataType) -> pa.ChunkedArray:
    """A file's key column typed as the source keys are (integers widened to int64,
    strings as strings)."""
    if pa.types.is_integer(values.type) and pa.types.is_integer(kind):
        return values.cast(pa.int64())
    if pa.types.is_large_string(values.type) or pa.types.is_string_view(values.type):
        return values.cast(pa.string())
    if values.type != kind:
        raise TypeError(f"key column of type {values.type}, source keys {kind}")
    return values


Rows = list[tuple[Any, ...]]


def _decide(
    rows: Rows,
    n_keys: int,
    clauses: Sequence[Clause],
    layout: Layout,
    found: _Found,
    on_repeat: Callable[[int], Exception],
) -> tuple[Rows, Rows, Rows]:
    """(victims as (fid, pos, rowid), updated rows with their row ids, inserted rows):
    each joined row takes the first clause of its kind whose condition holds; a target
    row two source rows take raises `on_repeat(its row id)`."""
    by_key: dict[Key, list[int]] = {}
    for i, row in enumerate(rows):
        key = row[:n_keys]
        if None not in key:
            by_key.setdefault(key, []).append(i)
    victims: Rows = []
    updated: Rows = []
    inserted: Rows = []
    matched: set[int] = set()
    for fid, pos, rowid, key in found.rows:
        taken = 0
        for i in by_key.get(key, []):
            matched.add(i)
            clause = _first(rows[i], layout, clauses, "matched")
            if clause is None:
                continue
            taken += 1
            if taken > 1:
                raise on_repeat(rowid)
            victims.append((fid, pos, rowid))
            if clauses[clause].action == "update":
                start, end = layout[clause][1]
                updated.append((*rows[i][start:end], rowid))
    for i, row in enumerate(rows):
        if i in matched:
            continue
        clause = _first(row, layout, clauses, "not_matched")
        if clause is not None:
            start, end = layout[clause][1]
            inserted.append(tuple(row[start:end]))
    return victims, updated, inserted


def _first(
    row: tuple[Any, ...],
    layout: Layout,
    clauses: Sequence[Clause],
    kind: str,
) -> int | None:
    for i, clause in enumerate(clauses):
        condition = layout[i][0]
        if clause.kind == kind and (condition is None or row[condition] is True):
            return i
    return None


def _new_rows(
    spark: SparkSession,
    lake: Lake,
    tx: Transaction,
    table: StagedTable,
    rows: Rows,
    fields: list[T.StructField],
    action: str,
    options: WriteOptions,
    limit: int,
) -> Callable[[], None] | None:
    """How the new rows are staged: inlined under the limit, written here when the
    table has no sort or partitions (as `stage_rows` writes a small result), else as
    `few_changes` stages them; None when they cannot be staged from here."""
    if not rows:
        return lambda: None
    moved = action == "update"
    if not inlinable(table, rows) or len(rows) <= limit:  # (a NULL in a NOT NULL column raises)
        return new_rows_step(spark, lake, tx, table, rows, fields, limit, moved=moved)
    names = [c.name for c in table.column_list()] + ([ROW_ID] if moved else [])
    schema = T.StructType(
        [T.StructField(n, f.dataType, True) for n, f in zip(names, fields, strict=True)]
    )
    data = None
    if not (sorted_on_insert(lake, table) or table.current_partition()):
        data = arrow_table(rows, schema)
    if data is None:
        return new_rows_step(spark, lake, tx, table, rows, fields, limit, moved=moved)
    return lambda: tx.add_data_files(table, write_here(data, table, options, moved))
