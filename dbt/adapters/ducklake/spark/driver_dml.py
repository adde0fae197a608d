"""DELETE and UPDATE of a table whose rows are all inlined, decided on the driver.

Such a table's rows are in the catalog already; planning a Spark query over them cost
150 to 250 ms of py4j calls for what is a handful of rows. When the WHERE clause compares
plain columns with literals (`=`, `<>`, `<`, `<=`, `>`, `>=`, `IN`, `IS [NOT] NULL`,
`AND` / `OR` / `NOT`) and every SET is a literal (`literal_insert` decides which are
certain), the rows are filtered here with SQL's three-valued logic and the change is
staged as Spark's path stages it: the matched inlined rows end, updated rows are
inlined again under their row ids. Anything else returns False and Spark runs the
statement.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

from sqlglot import exp

from ..lake import Column, Lake, Snapshot, StagedTable, Transaction
from .engine import CommitInfo, inlining_limit, staged_on_driver
from .literal_insert import NotCertain, literal_value

__all__ = ["delete_on_driver", "update_on_driver"]

# column types whose values compare here as Spark compares them (not floats: Spark's
# NaN equals itself and sorts above every number)
_COMPARABLE = ("int8", "int16", "int32", "int64", "varchar", "boolean")
# column types whose catalog-decoded values are what Spark's path would collect and
# inline again, so updated rows copy them as they are
_COPIED = (*_COMPARABLE, "float64")
_COMPARISONS: dict[type[exp.Expression], Callable[[Any, Any], bool]] = {
    exp.EQ: operator.eq,
    exp.NEQ: operator.ne,
    exp.LT: operator.lt,
    exp.LTE: operator.le,
    exp.GT: operator.gt,
    exp.GTE: operator.ge,
}
_FLIPPED: dict[type[exp.Expression], type[exp.Expression]] = {
    exp.EQ: exp.EQ,
    exp.NEQ: exp.NEQ,
    exp.LT: exp.GT,
    exp.LTE: exp.GTE,
    exp.GT: exp.LT,
    exp.GTE: exp.LTE,
}
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

    def stage(staging: Transaction, table: StagedTable, rows: list[tuple[int, Row]]) -> bool:
        test = _test(where, table)
        if test is None:
            return False
        staging.delete_inlined_rows(table, [rid for rid, row in rows if test(row) is True])
        return True

    return _on_driver(lake, commit, tx, target, stage)


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

    def stage(staging: Transaction, table: StagedTable, rows: list[tuple[int, Row]]) -> bool:
        columns = table.column_list()
        test = _test(where, table)
        new_values = _assignments(sets, columns)
        if test is None or new_values is None or any(c.type not in _COPIED for c in columns):
            return False
        matched = [(rid, row) for rid, row in rows if test(row) is True]
        if len(matched) > inlining_limit(lake, table):
            return False  # Spark's path writes them to a file
        staging.delete_inlined_rows(table, [rid for rid, _row in matched])
        updated = [
            tuple(new_values.get(c.name.lower(), row[c.name.lower()]) for c in columns)
            for _rid, row in matched
        ]
        staging.insert_inlined(table, updated, row_ids=[rid for rid, _row in matched])
        return True

    return _on_driver(lake, commit, tx, target, stage)


def _on_driver(
    lake: Lake,
    commit: CommitInfo,
    tx: Transaction | None,
    target: tuple[str, str],
    stage: Callable[[Transaction, StagedTable, list[tuple[int, Row]]], bool],
) -> tuple[bool, Snapshot | None]:
    if tx is not None and tx.has_changed(*target):
        return False, None  # Spark's path says why a changed table is not read

    def with_rows(staging: Transaction, table: StagedTable) -> bool:
        info = staging.catalog.find_table(*target)
        if info is None or table.table_id is None or staging.catalog.data_files(info):
            return False  # rows in files: Spark reads them
        names = {c.column_id: c.name.lower() for c in table.column_list()}
        rows = [
            (r.row_id, {names[cid]: v for cid, v in r.values.items() if cid in names})
            for r in staging.catalog.inlined_rows(table.table_id)
        ]
        return stage(staging, table, rows)

    return staged_on_driver(lake, commit, tx, target, with_rows)


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
        name = _column(node.this, columns).name.lower()
        return lambda row: row[name] is None
    if isinstance(node, exp.In) and not node.args.get("query"):
        column = _column(node.this, columns)
        return _in(column.name.lower(), [literal_value(v, column) for v in node.expressions])
    compare = _COMPARISONS.get(type(node))
    if compare is not None:
        kind = type(node)
        left, right = node.this, node.expression
        if not isinstance(left, exp.Column):  # 5 < id is id > 5
            left, right, kind = right, left, _FLIPPED[kind]
        column = _column(left, columns)
        return _comparison(column.name.lower(), _COMPARISONS[kind], literal_value(right, column))
    raise NotCertain


def _column(node: exp.Expression, columns: dict[str, Column]) -> Column:
    """A plain, unqualified column of the table (Spark's path decides what a qualified
    name means)."""
    if not isinstance(node, exp.Column) or node.table:
        raise NotCertain
    column = columns.get(node.name.lower())
    if column is None or column.type not in _COMPARABLE:
        raise NotCertain  # Spark's path names an unknown column
    return column


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
