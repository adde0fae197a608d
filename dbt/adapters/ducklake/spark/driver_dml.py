"""DELETE and UPDATE of a few rows, decided on the driver.

Inlined rows are in the catalog already, and the few rows of small data files are found
by `driver_files`; planning a Spark query over them cost 150 to 800 ms of py4j calls
and jobs for what is a handful of rows. When the WHERE clause compares
plain columns with literals (`=`, `<>`, `<`, `<=`, `>`, `>=`, `IN`, `IS [NOT] NULL`,
`AND` / `OR` / `NOT`) and every SET is a literal (`literal_insert` decides which are
certain), the rows are filtered here with SQL's three-valued logic and the change is
staged as Spark's path stages it: matched inlined rows end, matched file rows become
inlined deletes (or a delete file past the inlining limit), updated rows are inlined
again under their row ids. Anything else returns False and Spark runs the
statement.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
from sqlglot import exp

from ..lake import Column, Lake, Snapshot, StagedTable, Transaction
from .dml import stage_victims_here
from .driver_files import (
    COMPARABLE,
    COMPARISONS,
    FLIPPED,
    FileVictims,
    find_file_victims,
    plain_column,
)
from .engine import CommitInfo, inlining_limit, staged_on_driver, write_options
from .literal_insert import NotCertain, literal_value

__all__ = ["delete_on_driver", "update_on_driver"]

# column types whose catalog-decoded values are what Spark's path would collect and
# inline again, so updated rows copy them as they are
_COPIED = (*COMPARABLE, "float64")
Row = dict[str, Any]  # lower-case column name -> value
Test = Callable[[Row], bool | None]


def delete_on_driver(
    lake: Lake,
    commit: CommitInfo,
    tx: Transaction | None,
    target: tuple[str, str],
    where: exp.Expression | None,
) -> tuple[bool, Snapshot | None]:
    """DELETE FROM target WHERE where; (False, None) with nothing staged when Spark must
    run it."""

    def stage(
        staging: Transaction, table: StagedTable, rows: list[tuple[int, Row]], found: Found
    ) -> bool:
        test = _test(where, table)
        if test is None:
            return False
        inlined = [rid for rid, row in rows if test(row) is True]
        if found is None:
            staging.delete_inlined_rows(table, inlined)
        else:
            stage_victims_here(lake, staging, table, found.files, _with_inlined(found, inlined))
        return True

    return _on_driver(lake, commit, tx, target, where, False, stage)


def update_on_driver(
    lake: Lake,
    commit: CommitInfo,
    tx: Transaction | None,
    target: tuple[str, str],
    sets: list[tuple[str, exp.Expression]],
    where: exp.Expression | None,
) -> tuple[bool, Snapshot | None]:
    """UPDATE target SET … WHERE where, keeping row ids; (False, None) with nothing
    staged when Spark must run it."""

    def stage(
        staging: Transaction, table: StagedTable, rows: list[tuple[int, Row]], found: Found
    ) -> bool:
        columns = table.column_list()
        test = _test(where, table)
        new_values = _assignments(sets, columns)
        if test is None or new_values is None or any(c.type not in _COPIED for c in columns):
            return False
        matched = [(rid, row) for rid, row in rows if test(row) is True]
        in_files: list[tuple[int, Row]] = []
        if found is not None:
            assert found.rows is not None
            in_files = list(zip(found.triples.column("rowid").to_pylist(), found.rows, strict=True))
        if len(matched) + len(in_files) > inlining_limit(lake, table):
            return False  # Spark's path writes them to a file
        inlined = [rid for rid, _row in matched]
        if found is None:
            staging.delete_inlined_rows(table, inlined)
        else:
            stage_victims_here(lake, staging, table, found.files, _with_inlined(found, inlined))
        updated = [
            tuple(new_values.get(c.name.lower(), row[c.name.lower()]) for c in columns)
            for _rid, row in matched + in_files
        ]
        staging.insert_inlined(table, updated, row_ids=[rid for rid, _row in matched + in_files])
        return True

    return _on_driver(lake, commit, tx, target, where, True, stage)


Found = FileVictims | None


def _with_inlined(found: FileVictims, inlined: list[int]) -> pa.Table:
    """The file victims' triples, then the inlined ones (no file, no position)."""
    none = pa.nulls(len(inlined), pa.int64())
    rows = pa.table({"fid": none, "pos": none, "rowid": pa.array(inlined, pa.int64())})
    return pa.concat_tables([found.triples, rows])


def _on_driver(
    lake: Lake,
    commit: CommitInfo,
    tx: Transaction | None,
    target: tuple[str, str],
    where: exp.Expression | None,
    with_rows: bool,
    stage: Callable[[Transaction, StagedTable, list[tuple[int, Row]], Found], bool],
) -> tuple[bool, Snapshot | None]:
    if tx is not None and tx.has_changed(*target):
        return False, None  # Spark's path says why a changed table is not read

    def with_rows_found(staging: Transaction, table: StagedTable) -> bool:
        info = staging.catalog.find_table(*target)
        if info is None or table.table_id is None:
            return False
        found = None
        files = staging.catalog.data_files(info)
        if files:  # the few rows of small files the driver can find, or Spark's path
            if write_options(lake, table).encrypted:
                return False  # delete files are sealed by the engine (sealed.py)
            found = find_file_victims(
                lake.files,
                table.column_list(),
                files,
                staging.catalog.file_column_stats(table.table_id),
                staging.catalog.inlined_deletes(table.table_id),
                where,
                staging.base.snapshot_id,
                with_rows,
            )
            if found is None:
                return False
        names = {c.column_id: c.name.lower() for c in table.column_list()}
        rows = [
            (r.row_id, {names[cid]: v for cid, v in r.values.items() if cid in names})
            for r in staging.catalog.inlined_rows(table.table_id)
        ]
        return stage(staging, table, rows, found)

    return staged_on_driver(lake, commit, tx, target, with_rows_found)


def _assignments(
    sets: list[tuple[str, exp.Expression]], columns: list[Column]
) -> dict[str, Any] | None:
    by_name = {c.name.lower(): c for c in columns}
    values = {}
    for name, value in sets:
        column = by_name.get(name.lower())
        if column is None or name.lower() in values:
            return None  # Spark's path names the unknown column
        try:
            values[name.lower()] = literal_value(value, column)
        except NotCertain:
            return None
        if values[name.lower()] is None and not column.nullable:
            return None  # Spark's path raises the NOT NULL error
    return values


def _test(where: exp.Expression | None, table: StagedTable) -> Test | None:
    """`where` as a test of a row (True, False or None for SQL's unknown), or None when
    some part of it is not certain here."""
    if where is None:
        return lambda row: True
    columns = {c.name.lower(): c for c in table.column_list()}
    try:
        return _compiled(where, columns)
    except NotCertain:
        return None


def _compiled(node: exp.Expression, columns: dict[str, Column]) -> Test:
    if isinstance(node, exp.Paren):
        return _compiled(node.this, columns)
    if isinstance(node, exp.And | exp.Or):
        left = _compiled(node.this, columns)
        right = _compiled(node.expression, columns)
        return _connective(left, right, decisive=isinstance(node, exp.Or))
    if isinstance(node, exp.Not):
        inner = _compiled(node.this, columns)
        return lambda row: None if (v := inner(row)) is None else not v
    if isinstance(node, exp.Is) and isinstance(node.expression, exp.Null):
        name = plain_column(node.this, columns).name.lower()
        return lambda row: row[name] is None
    if isinstance(node, exp.In) and not node.args.get("query"):
        column = plain_column(node.this, columns)
        return _in(column.name.lower(), [literal_value(v, column) for v in node.expressions])
    compare = COMPARISONS.get(type(node))
    if compare is not None:
        kind = type(node)
        left, right = node.this, node.expression
        if not isinstance(left, exp.Column):  # 5 < id is id > 5
            left, right, kind = right, left, FLIPPED[kind]
        column = plain_column(left, columns)
        return _comparison(column.name.lower(), COMPARISONS[kind], literal_value(right, column))
    raise NotCertain


def _comparison(name: str, compare: Callable[[Any, Any], bool], value: Any) -> Test:
    if value is None:
        return lambda row: None  # a comparison with NULL is unknown
    return lambda row: None if row[name] is None else compare(row[name], value)


def _in(name: str, values: list[Any]) -> Test:
    known = [v for v in values if v is not None]
    has_null = len(known) < len(values)

    def test(row: Row) -> bool | None:
        value = row[name]
        if value is None:
            return None
        if value in known:
            return True
        return None if has_null else False

    return test


def _connective(left: Test, right: Test, decisive: bool) -> Test:
    """AND (`decisive` False) or OR (True) in SQL's three-valued logic: either side's
    decisive value decides, else an unknown side leaves the result unknown."""

    def test(row: Row) -> bool | None:
        a, b = left(row), right(row)
        if a is decisive or b is decisive:
            return decisive
        return None if a is None or b is None else not decisive

    return test
