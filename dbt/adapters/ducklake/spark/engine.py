"""Table-level writes on the lake, each exactly one DuckLake snapshot.

CREATE [OR REPLACE] TABLE AS, INSERT INTO and INSERT OVERWRITE (the whole table, or only
the partitions present in the new data). Options come from the lake with DuckLake's
table > schema > global precedence; batches of at most `data_inlining_row_limit` rows
are stored in the catalog instead of files, as DuckDB does.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..lake import (
    AddDataFiles,
    CatalogNotFoundError,
    Column,
    ColumnSpec,
    Infinite,
    InsertInlined,
    Lake,
    Snapshot,
    StagedTable,
    Transaction,
    parse_size,
    resolve_option,
)
from .arrow import WriteOptions
from .collect import collect_rows
from .commit_info import CommitInfo
from .errors import NotNullViolation, WriteError
from .scan import read_back
from .types import ducklake_spec, spark_type
from .write import collect_arrow, driver_bound, partition_plan, write_data_files, write_here
from .write_task import partition_key, time_part

log = logging.getLogger("dbt.adapters.ducklake.spark")

DEFAULT_INLINING_ROW_LIMIT = 10  # DuckDB's default for lakes without the option


def begin(lake: Lake, commit: CommitInfo | None) -> Transaction:
    """A transaction carrying the commit's author, message and extra info."""
    commit = commit or CommitInfo()
    return lake.transaction(
        author=commit.author, commit_message=commit.message, extra_info=commit.extra_info
    )


def in_transaction(
    lake: Lake,
    commit: CommitInfo | None,
    tx: Transaction | None,
    stage: Callable[[Transaction], object],
) -> Snapshot | None:
    """Stage one operation into the caller's transaction (the caller commits, so None),
    or into a new one committed here as one snapshot."""
    if tx is not None:
        stage(tx)
        return None
    own = begin(lake, commit)
    stage(own)
    return own.commit()


def staged_on_driver(
    lake: Lake,
    commit: CommitInfo | None,
    tx: Transaction | None,
    target: tuple[str, str],
    stage: Callable[[Transaction, StagedTable], bool],
) -> tuple[bool, Snapshot | None]:
    """`in_transaction` for a change the driver may decline: `stage` gets the target
    table and returns False having staged nothing (Spark's path then runs the statement,
    and names a missing table). Its catalog reads share one connection; the commit
    follows them, outside it."""
    with lake.reading():
        own = begin(lake, commit) if tx is None else None
        staging = tx or own
        assert staging is not None
        try:
            table = staging.table(*target)
        except CatalogNotFoundError:
            return False, None
        if not stage(staging, table):
            return False, None  # an own transaction is dropped unstaged: nothing to undo
    return True, own.commit() if own is not None else None


def write_options(lake: Lake, table: StagedTable) -> WriteOptions:
    rows = lake.options()  # one catalog query for the four options

    def opt(key: str, default: str | None = None) -> str | None:
        default = lake.option_defaults.get(key, default)  # the profile's, else ours
        return resolve_option(
            rows, key, schema_id=table.schema.schema_id, table_id=table.table_id, default=default
        )

    level = opt("parquet_compression_level")
    return WriteOptions(
        root=table.root,
        files=lake.files,
        compression=(opt("parquet_compression", "snappy") or "snappy").lower(),
        compression_level=int(level) if level else None,
        row_group_size=int(opt("parquet_row_group_size", "122880") or 122880),
        target_file_size=parse_size(opt("target_file_size", "512MB") or "512MB"),
        deletion_vectors=(opt("write_deletion_vectors") or "false").lower() == "true",
        # DuckDB refuses a file without a key in an encrypted lake: every file is sealed
        encrypted=(opt("encrypted") or "false").lower() == "true",
    )


def inlining_limit(lake: Lake, table: StagedTable) -> int:
    if any(d.type in ("variant", "geometry") for c in table.column_list() for d in c.walk()):
        return 0  # kept in Parquet files only, as DuckDB keeps them
    value = lake.option(
        "data_inlining_row_limit", schema_id=table.schema.schema_id, table_id=table.table_id
    )
    return int(value) if value is not None else DEFAULT_INLINING_ROW_LIMIT


def stage_rows(
    lake: Lake,
    tx: Transaction,
    table: StagedTable,
    df: DataFrame,
    *,
    keep_row_ids: bool = False,
    write_first: bool | None = None,
    packed: bool = False,
) -> None:
    """Stage `df` as inlined rows when small enough, else as data files Spark writes.

    With `keep_row_ids` the last column holds ids the rows keep (UPDATE, MERGE). Whether
    a result is small is asked first with a LIMIT when that is cheap; a query that
    shuffles (aggregates, joins, windows) would be computed twice that way, so it is
    written at once and its files read back and dropped if it turns out small.
    `write_first` skips that question (planning to answer it costs about 50 ms): MERGE
    passes True for its persisted result, where the LIMIT would be one more job.
    `packed` (`df` reads a persisted result already computed, whose size Spark then
    knows) writes it in as few tasks as that size needs.
    """
    with not_null_errors():
        _stage_rows(lake, tx, table, guard_not_null(df, table), keep_row_ids, write_first, packed)


# a small result is written by one task per this many bytes (in memory) at most
_BYTES_PER_TASK = 64 * 1024 * 1024


def _packed(df: DataFrame, target_file_size: int) -> DataFrame:
    """`df` coalesced to the tasks its size needs. Each task writes its own files, so a
    1% MERGE spread over the shuffle's partitions left a small file per partition and
    kind (8 instead of 2). Big results keep their parallelism."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None:  # Spark Connect: no size to go by
        return df
    size = int(str(jdf.queryExecution().optimizedPlan().stats().sizeInBytes()))
    tasks = -(-size // min(target_file_size, _BYTES_PER_TASK))
    return df.coalesce(max(1, tasks)) if tasks < 1 << 20 else df


def _stage_rows(
    lake: Lake,
    tx: Transaction,
    table: StagedTable,
    df: DataFrame,
    keep_row_ids: bool,
    write_first: bool | None,
    packed: bool,
) -> None:
    limit = inlining_limit(lake, table)
    shuffles = None if write_first or packed else _shuffles(df)
    write_first = limit > 0 and (write_first if write_first is not None else bool(shuffles))
    # a query that shuffles (a repartition included) keeps Spark's layout of its files
    bound = None if write_first or packed or shuffles else driver_bound(df)
    if limit > 0 and not write_first and (bound is None or bound <= limit):
        head = _small_result(df, limit)
        if head is not None:
            inline_rows(tx, table, head, keep_row_ids=keep_row_ids)
            return
    sort = sorted_on_insert(lake, table)
    options = replace(write_options(lake, table), bytes_per_row=_bytes_per_row(tx, table))
    here = bound is not None and bound > limit and not (sort or table.current_partition())
    if (
        here
        and not options.encrypted
        and _staged_on_driver(tx, table, df, options, keep_row_ids, limit)
    ):
        return
    files = write_data_files(
        _packed(df, options.target_file_size) if packed else df,
        table,
        options,
        partition=table.current_partition(),
        sort=sort,
        row_ids=keep_row_ids,
    )
    if write_first and sum(f.record_count for f in files) <= limit:
        rows = _python_or_none(
            lambda: read_back(df.sparkSession, table, options.root, files, keep_row_ids)
        )
        if rows is not None:
            for f in files:  # never registered: nobody else knows them
                lake.files.delete(options.root + f.path)
            inline_rows(tx, table, rows, keep_row_ids=keep_row_ids)
            return
    tx.add_data_files(table, files)


def sorted_on_insert(lake: Lake, table: StagedTable) -> list[tuple[str, str, str]]:
    """The table's sort keys new files are written in (none when `sort_on_insert` is
    off)."""
    sort_on_insert = lake.option(
        "sort_on_insert", schema_id=table.schema.schema_id, table_id=table.table_id, default="true"
    )
    return table.current_sort() if str(sort_on_insert).lower() == "true" else []


def _staged_on_driver(
    tx: Transaction,
    table: StagedTable,
    df: DataFrame,
    options: WriteOptions,
    keep_row_ids: bool,
    limit: int,
) -> bool:
    """Stage a result of few rows (`driver_bound`: a VALUES list, range(100), a LIMIT)
    collected in one job and written here; inlined when it turns out small, which asks
    for it again (a bound above the inlining limit, a result below it). False: not
    staged, Spark's write decides."""
    data = collect_arrow(df)
    if data is None:
        return False
    if data.num_rows > limit or limit == 0:
        tx.add_data_files(table, write_here(data, table, options, keep_row_ids))
        return True
    head = _small_result(df, limit)
    if head is None:
        return False
    inline_rows(tx, table, head, keep_row_ids=keep_row_ids)
    return True


def _small_result(df: DataFrame, limit: int) -> list[tuple[Any, ...]] | None:
    """`df`'s rows if at most `limit` (at most limit + 1 rows reach the driver) and
    inlinable: DuckDB does not read an `infinity` inside a nested inlined value."""
    head = _python_or_none(lambda: collect_rows(df, limit + 1))
    if head is None or len(head) > limit:
        return None
    return None if any(_nested_infinity(v) for r in head for v in r) else head


def _nested_infinity(value: Any) -> bool:
    if isinstance(value, dict):
        value = [*value.keys(), *value.values()]
    if isinstance(value, list):
        return any(isinstance(v, Infinite) or _nested_infinity(v) for v in value)
    return False


def _python_or_none(collect: Callable[[], list[tuple[Any, ...]]]) -> list[tuple[Any, ...]] | None:
    """Rows as Python values, or None when a value has no Python form (DuckDB's DATE
    `infinity`, a year beyond 9999): such rows are written to a data file instead."""
    try:
        return collect()
    except (OverflowError, ValueError):
        return None


_LEARNED_FROM_ROWS = 10_000


def _bytes_per_row(tx: Transaction, table: StagedTable) -> float | None:
    """Compressed Parquet bytes per row of the table's files so far (its stats), which
    is how the next write sizes files to `target_file_size`; None for a new or small
    table."""
    if table.table_id is None:
        return None
    stats, _columns = tx.catalog.table_stats(table.table_id)
    if stats is None or stats.record_count < _LEARNED_FROM_ROWS or not stats.file_size_bytes:
        return None
    return float(stats.file_size_bytes / stats.record_count)


def inlinable(table: StagedTable, rows: list[tuple[Any, ...]]) -> bool:
    """Whether rows the driver holds (`collect_rows` values of the table's columns, maybe
    a row id after them) can be inlined, checked as `stage_rows` checks a small result:
    a NULL in a NOT NULL column raises; a value DuckDB cannot read inlined gives False
    (the caller writes a file instead)."""
    columns = table.column_list()
    for i, column in enumerate(columns):
        if not column.nullable and any(r[i] is None for r in rows):
            raise NotNullViolation(_not_null_message(table, column.name))
    nested = [i for i, c in enumerate(columns) if c.children]  # where a list or dict can be
    return not any(_nested_infinity(r[i]) for r in rows for i in nested)


def inline_rows(
    tx: Transaction, table: StagedTable, rows: list[tuple[Any, ...]], *, keep_row_ids: bool
) -> None:
    """Stage `inlinable` rows as inlined rows (a row id last with `keep_row_ids`)."""
    if rows and keep_row_ids:
        tx.insert_inlined(table, [r[:-1] for r in rows], row_ids=[r[-1] for r in rows])
    elif rows:
        tx.insert_inlined(table, rows)


def _shuffles(df: DataFrame) -> bool:
    """Whether the query's plan has an exchange, so that a LIMIT costs the whole query.
    Unknown (Spark Connect): no."""
    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        return False
    return "Exchange" in jdf.queryExecution().executedPlan().toString()


def create_table_as(
    lake: Lake,
    schema: str,
    name: str,
    df: DataFrame,
    *,
    replace: bool = False,
    partition_by: Sequence[tuple[str, str]] | None = None,
    sort_by: Sequence[tuple[str, str, str]] | None = None,
    columns: Sequence[ColumnSpec] | None = None,
    commit: CommitInfo | None = None,
    tx: Transaction | None = None,
) -> Snapshot | None:
    """CREATE [OR REPLACE] TABLE schema.name AS <df>: one snapshot, no moment without it.

    `columns` (names, types, NOT NULL) declare the table; the query's columns are cast
    to them by position. Every operation here stages into `tx` when given (the caller
    commits), else commits its own snapshot.
    """

    def stage(tx: Transaction) -> None:
        if columns is not None and len(columns) != len(df.columns):
            raise WriteError(
                f"CREATE TABLE {schema}.{name}: {len(columns)} columns declared, the query has "
                f"{len(df.columns)}"
            )
        if replace and tx.has_table(schema, name):
            tx.drop_table(schema, name)
        table = tx.create_table(
            schema,
            name,
            list(columns) if columns is not None else [ducklake_spec(f) for f in df.schema.fields],
            partition_by=partition_by,
            sort_by=sort_by,
        )
        data = _positional(df, table.column_list()) if columns is not None else df
        stage_rows(lake, tx, table, data)

    return in_transaction(lake, commit, tx, stage)


def insert_into(
    lake: Lake,
    schema: str,
    name: str,
    df: DataFrame,
    *,
    overwrite: bool = False,
    partitions_only: bool = False,
    commit: CommitInfo | None = None,
    tx: Transaction | None = None,
) -> Snapshot | None:
    """INSERT INTO / INSERT OVERWRITE schema.name <df> as one snapshot.

    `df` columns are matched to the table's by position, like SQL INSERT. With
    `partitions_only`, OVERWRITE replaces only the partitions the new data has.
    """

    def stage(tx: Transaction) -> None:
        table = tx.table(schema, name)
        names = [c.name for c in table.columns]
        if len(df.columns) != len(names):
            raise WriteError(
                f"INSERT into {table.qualified_name}: the query has {len(df.columns)} columns, "
                f"the table has {len(names)} ({', '.join(names)})"
            )
        data = _positional(df, [c.to_column() for c in table.columns])
        before = len(tx.data_ops)
        stage_rows(lake, tx, table, data)
        if overwrite:
            _overwrite(lake, tx, table, partitions_only, new_ops=tx.data_ops[before:])

    return in_transaction(lake, commit, tx, stage)


def _positional(df: DataFrame, target: list[Column]) -> DataFrame:
    """The query's columns cast to the table's, by position (query names may repeat).
    A query that already has the table's names and types is used as it is: the casts
    cost a few py4j calls per column, a tenth of a small INSERT's time."""
    fields = df.schema.fields
    same = len(fields) == len(target) and all(
        f.name == c.name and f.dataType == spark_type(c)
        for f, c in zip(fields, target, strict=True)
    )
    if same:
        return df
    positional = df.toDF(*[f"__ducklake_c{i}" for i in range(len(target))])
    return positional.select(
        *[F.col(f"__ducklake_c{i}").cast(spark_type(c)).alias(c.name) for i, c in enumerate(target)]
    )


_NOT_NULL_FAILED = re.compile(r"NOT NULL constraint failed: .*?nothing was committed")


def guard_not_null(df: DataFrame, table: StagedTable) -> DataFrame:
    """NOT NULL columns are enforced while the rows are written: a NULL fails the job
    (`raise_error`), so no separate counting pass computes the query again. Columns
    Spark knows cannot be NULL are left as they are."""
    nullable = {f.name.lower(): f.nullable for f in df.schema.fields}
    required = {
        c.name.lower(): c.name
        for c in table.column_list()
        if not c.nullable and nullable.get(c.name.lower(), True)
    }
    if not required:
        return df
    columns = []
    for f in df.schema.fields:
        col = F.col(f"`{f.name}`")
        name = required.get(f.name.lower())
        if name is not None:
            message = _not_null_message(table, name)
            col = F.when(col.isNull(), F.raise_error(F.lit(message))).otherwise(col)
        columns.append(col.alias(f.name))
    return df.select(*columns)


def _not_null_message(table: StagedTable, column: str) -> str:
    return (
        f"NOT NULL constraint failed: {table.qualified_name}.{column} would get NULL "
        "values; nothing was committed"
    )


@contextmanager
def not_null_errors() -> Iterator[None]:
    """A failed job whose cause is `guard_not_null`'s error surfaces as that error."""
    try:
        yield
    except NotNullViolation:
        raise
    except Exception as exc:
        found = _NOT_NULL_FAILED.search(str(exc))
        if found is None:
            raise
        raise NotNullViolation(found.group(0)) from None


def _partition_fields(table: StagedTable) -> tuple[list[tuple[str, str, str]], list[int]]:
    """Partition transforms of the table and the top-level position of each source column."""
    plan = partition_plan(table, table.current_partition())
    order = [c.column_id for c in table.column_list()]
    return [(k, c.type, t) for k, c, t in plan], [order.index(c.column_id) for _k, c, _t in plan]


def _row_key(
    row: Sequence[Any], positions: list[int], transforms: list[tuple[str, str, str]]
) -> tuple[str | None, ...]:
    values = [time_part(t, row[p]) for p, (_k, _type, t) in zip(positions, transforms, strict=True)]
    return partition_key(values, transforms)


def _overwrite(
    lake: Lake,
    tx: Transaction,
    table: StagedTable,
    partitions_only: bool,
    new_ops: Sequence[object],
) -> None:
    cat = tx.catalog
    info = cat.table(table.schema.name, table.name)
    files = cat.data_files(info)
    if partitions_only and table.current_partition():
        new_values = {
            spec.partition_values
            for op in new_ops
            if isinstance(op, AddDataFiles)
            for spec in op.files
        }
        transforms, positions = _partition_fields(table)
        for op in new_ops:
            if isinstance(op, InsertInlined):
                new_values |= {_row_key(row, positions, transforms) for row in op.rows}
        victims = [f.data_file_id for f in files if f.partition_values in new_values]
        inlined = [
            r.row_id
            for r in cat.inlined_rows(info.table_id)
            if _row_key(
                tuple(r.values[c.column_id] for c in table.column_list()), positions, transforms
            )
            in new_values
        ]
        log.info(
            "overwriting %s file(s) and %s inlined row(s) in the partitions of %s",
            len(victims),
            len(inlined),
            table.qualified_name,
        )
        tx.end_data_files(table, victims)
        tx.delete_inlined_rows(table, inlined)
        return
    tx.end_data_files(table, [f.data_file_id for f in files])
    live_inlined = [r.row_id for r in cat.inlined_rows(info.table_id)]
    # rows inlined by this same transaction are not in the catalog yet, so they survive
    tx.delete_inlined_rows(table, live_inlined)
