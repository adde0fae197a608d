"""`INSERT INTO t VALUES (…)` of plain literals, committed without Spark.

A few literal rows under the table's inlining limit end as inlined rows in the catalog
either way; planning them as a Spark query first cost ~100 ms of py4j calls per
statement. Here the driver turns each literal into the value Spark's cast to the
column's type would give, and only where that value is certain: integers in range,
decimals that fit without rounding, doubles from short decimal text, strings, booleans
and NULL. Anything else (an expression beyond integer arithmetic, a date literal, a
value Spark would round or refuse, an escape) returns None, and the statement takes the
Spark path, which decides — so both paths always agree.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from decimal import Context, Decimal, InvalidOperation
from typing import Any

from sqlglot import exp

from ..lake import (
    Column,
    ColumnDraft,
    Lake,
    Snapshot,
    StagedTable,
    Transaction,
    decimal_params,
    is_decimal,
)
from .engine import CommitInfo, inlining_limit, staged_on_driver

__all__ = ["NotCertain", "insert_literals", "literal_rows", "literal_value"]

_INT_RANGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
}
_INT32 = _INT_RANGES["int32"]
_INT64 = _INT_RANGES["int64"]
_EXACT_FLOAT32 = 2**24  # every integer up to this is a float32 as it is
_WIDE = Context(prec=80)  # beyond DECIMAL(38)'s digits: quantize never rounds here
_DOUBLE_DIGITS = 15  # decimal text of at most this many digits is one correct rounding


class NotCertain(Exception):
    """A value whose Spark result is not certain here: Spark decides."""


def insert_literals(
    lake: Lake,
    commit: CommitInfo,
    tx: Transaction | None,
    target: tuple[str, str],
    values: exp.Values,
    listed: list[str] | None,
) -> tuple[bool, Snapshot | None]:
    """Stage the literal rows as inlined rows (committed here unless `tx` is the caller's).
    Returns (False, None) with nothing staged when Spark must run the statement."""

    def stage(staging: Transaction, table: StagedTable) -> bool:
        rows = literal_rows(values, table.columns, listed)
        if rows is None or not rows or len(rows) > inlining_limit(lake, table):
            return False
        staging.insert_inlined(table, rows)
        return True

    return staged_on_driver(lake, commit, tx, target, stage)


def literal_rows(
    values: exp.Values, columns: list[ColumnDraft], listed: list[str] | None
) -> list[tuple[Any, ...]] | None:
    """The VALUES rows in the table's column order as the values Spark would store, or
    None when any of them is not certain. Unlisted columns get NULL, as on Spark's path."""
    positions = _positions(columns, listed)
    if positions is None:
        return None
    rows = []
    for row in values.expressions:
        if not isinstance(row, exp.Tuple) or len(row.expressions) != len(positions):
            return None
        by_column: list[Any] = [None] * len(columns)
        try:
            for value, at in zip(row.expressions, positions, strict=True):
                by_column[at] = literal_value(value, columns[at])
        except NotCertain:
            return None
        if any(v is None and not c.nullable for v, c in zip(by_column, columns, strict=True)):
            return None  # Spark's path raises the NOT NULL error
        rows.append(tuple(by_column))
    return rows


def _positions(columns: list[ColumnDraft], listed: list[str] | None) -> list[int] | None:
    if listed is None:
        return list(range(len(columns)))
    index = {c.name.lower(): i for i, c in enumerate(columns)}
    positions = [index.get(n.lower()) for n in listed]
    if None in positions or len(set(positions)) != len(positions):
        return None  # Spark's path names the unknown or repeated column
    return [p for p in positions if p is not None]


def literal_value(value: exp.Expression, column: Column | ColumnDraft) -> Any:
    """The value Spark's cast of the literal `value` to `column`'s type gives, or
    NotCertain."""
    if isinstance(value, exp.Null):
        return None
    convert = _CONVERTERS.get(column.type)
    if convert is None and is_decimal(column.type):
        convert = _decimal
    if convert is None:
        raise NotCertain
    return convert(value, column)


def _integer(value: exp.Expression, column: Column | ColumnDraft) -> int:
    number, _wide = _integer_expression(value)
    low, high = _INT_RANGES[column.type]
    if not low <= number <= high:
        raise NotCertain  # Spark's ANSI cast fails on overflow: let it say so
    return number


def _integer_expression(value: exp.Expression) -> tuple[int, bool]:
    """An integer literal or +, -, * of them, and whether Spark types it BIGINT. Every
    step must fit its Spark type (INT unless a literal needs BIGINT): Spark's ANSI
    arithmetic fails on overflow, which is Spark's to report."""
    if isinstance(value, exp.Paren):
        return _integer_expression(value.this)
    if isinstance(value, exp.Neg):
        number, wide = _integer_expression(value.this)
        return _fits(-number, wide), wide
    if isinstance(value, exp.Literal) and not value.is_string:
        text = value.this
        if not isinstance(text, str) or not (text.isascii() and text.isdigit()):
            raise NotCertain
        number = int(text)
        if number > _INT64[1]:
            raise NotCertain  # a DECIMAL literal in Spark
        return number, number > _INT32[1]
    operations: dict[type[exp.Expression], Callable[[int, int], int]] = {
        exp.Add: lambda a, b: a + b,
        exp.Sub: lambda a, b: a - b,
        exp.Mul: lambda a, b: a * b,
    }
    operation = operations.get(type(value))
    if operation is None:
        raise NotCertain
    left, left_wide = _integer_expression(value.this)
    right, right_wide = _integer_expression(value.expression)
    wide = left_wide or right_wide
    return _fits(operation(left, right), wide), wide


def _fits(number: int, wide: bool) -> int:
    low, high = _INT64 if wide else _INT32
    if not low <= number <= high:
        raise NotCertain
    return number


def _number_text(value: exp.Expression) -> str:
    """A numeric literal's text, with its sign."""
    if isinstance(value, exp.Neg):
        return "-" + _number_text(value.this)
    if isinstance(value, exp.Literal) and not value.is_string and isinstance(value.this, str):
        return value.this
    raise NotCertain


def _plain_decimal(text: str) -> Decimal:
    """Decimal text without an exponent (which Spark types DOUBLE)."""
    digits = text.lstrip("-")
    if not digits or any(ch not in "0123456789." for ch in digits) or digits.count(".") > 1:
        raise NotCertain
    try:
        return Decimal(text)
    except InvalidOperation as exc:
        raise NotCertain from exc


def _decimal(value: exp.Expression, column: Column | ColumnDraft) -> Decimal:
    number = _plain_decimal(_number_text(value))
    precision, scale = decimal_params(column.type)
    quantum = Decimal(1).scaleb(-scale)
    try:
        exact = number.quantize(quantum, context=_WIDE)
    except InvalidOperation as exc:
        raise NotCertain from exc
    if exact != number or len(exact.as_tuple().digits) > precision:
        raise NotCertain  # Spark would round, or fail on overflow
    return exact


def _double(value: exp.Expression, column: Column | ColumnDraft) -> float:
    text = _number_text(value)
    number = _plain_decimal(text)
    if len(number.as_tuple().digits) > _DOUBLE_DIGITS:
        raise NotCertain  # Spark's decimal-to-double may round twice
    return float(text)


def _float(value: exp.Expression, column: Column | ColumnDraft) -> float:
    number, _wide = _integer_expression(value)
    if abs(number) > _EXACT_FLOAT32:
        raise NotCertain  # rounding to float32 is Spark's to do
    as_float32: float = struct.unpack("f", struct.pack("f", float(number)))[0]
    return as_float32


def _string(value: exp.Expression, column: Column | ColumnDraft) -> str:
    if isinstance(value, exp.Literal) and value.is_string and isinstance(value.this, str):
        return value.this
    raise NotCertain


def _boolean(value: exp.Expression, column: Column | ColumnDraft) -> bool:
    if isinstance(value, exp.Boolean):
        return bool(value.this)
    raise NotCertain


_CONVERTERS: dict[str, Callable[[exp.Expression, Column | ColumnDraft], Any]] = {
    **dict.fromkeys(_INT_RANGES, _integer),
    "float64": _double,
    "float32": _float,
    "varchar": _string,
    "boolean": _boolean,
}
