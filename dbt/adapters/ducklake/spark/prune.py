"""File pruning: skip data files whose stats or partition values rule out a predicate."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, datetime, timezone
from decimal import Decimal
from typing import Any

from ..lake import (
    FLOAT_TYPES,
    INTEGER_TYPES,
    Column,
    ColumnStats,
    DataFile,
    PartitionSpec,
    decode_scalar,
    is_decimal,
    iso_datetime,
)

OPS = ("=", "<", "<=", ">", ">=", "between", "in", "is_null", "is_not_null")


@dataclass(frozen=True)
class Predicate:
    """`column op value` on a top-level column; `between` takes (low, high), `in` a list."""

    column: str
    op: str
    value: Any = None

    def __post_init__(self) -> None:
        if self.op not in OPS:
            raise ValueError(f"predicate operator {self.op!r}: accepted {', '.join(OPS)}")

    def __str__(self) -> str:
        return (
            f"{self.column} {self.op} {self.value!r}"
            if self.value is not None
            else (f"{self.column} {self.op}")
        )


def coerce_value(type_name: str, value: Any) -> Any:
    if value is None:
        return None
    if type_name in INTEGER_TYPES:
        return int(value)
    if type_name in FLOAT_TYPES:
        return float(value)
    if is_decimal(type_name):
        return Decimal(str(value))
    if type_name == "date" and isinstance(value, str):
        return date.fromisoformat(value)
    if type_name in ("timestamp", "timestamptz") and isinstance(value, str):
        value = iso_datetime(value)
    if type_name == "timestamptz" and isinstance(value, datetime):
        return (
            value.astimezone(timezone.utc) if value.tzinfo else value.replace(tzinfo=timezone.utc)
        )
    return value


def _range_excludes(op: str, value: Any, lo: Any, hi: Any) -> bool:
    """True when no value in [lo, hi] can satisfy `x op value`."""
    try:
        if op == "=":
            return value < lo or value > hi
        if op == "<":
            return not lo < value
        if op == "<=":
            return not lo <= value
        if op == ">":
            return not hi > value
        if op == ">=":
            return not hi >= value
        if op == "between":
            low, high = value
            return high < lo or low > hi
        if op == "in":
            return all(v < lo or v > hi for v in value)
    except TypeError:
        return False
    return False


def _stats_exclude(col: Column, stats: ColumnStats, p: Predicate) -> bool:
    if p.op == "is_null":
        return stats.null_count == 0
    if p.op == "is_not_null":
        return stats.null_count is not None and stats.null_count == stats.value_count
    if stats.min_value is None or stats.max_value is None:
        return False
    if col.type in FLOAT_TYPES and stats.contains_nan is not False:
        return False  # NaN sorts above everything in Spark; without a clean flag keep the file
    try:
        lo, hi = decode_scalar(col.type, stats.min_value), decode_scalar(col.type, stats.max_value)
    except (ValueError, ArithmeticError):
        return False
    if col.type == "timestamptz":
        lo, hi = coerce_value(col.type, lo), coerce_value(col.type, hi)
    value: Any
    if p.op == "between":
        value = tuple(coerce_value(col.type, v) for v in p.value)
    elif p.op == "in":
        value = [coerce_value(col.type, v) for v in p.value if v is not None]
    else:
        value = coerce_value(col.type, p.value)
    return _range_excludes(p.op, value, lo, hi)


def _transform(transform: str, value: Any) -> str | None:
    if value is None:
        return None
    if transform == "identity":
        return None  # compared by stats instead
    if isinstance(value, datetime) and transform in ("year", "month", "day", "hour"):
        return str(getattr(value, transform))
    if isinstance(value, date) and transform in ("year", "month", "day"):
        return str(getattr(value, transform))
    return None


def _partition_excludes(col: Column, file: DataFile, spec: PartitionSpec, p: Predicate) -> bool:
    """Equality and IN on a time-transformed partition column: compare the file's value."""
    if p.op not in ("=", "in") or not file.partition_values:
        return False
    values = [p.value] if p.op == "=" else list(p.value)
    for f in spec.fields:
        if f.column_id != col.column_id or f.key_index >= len(file.partition_values):
            continue
        stored = file.partition_values[f.key_index]
        wanted = {_transform(f.transform, coerce_value(col.type, v)) for v in values}
        if None in wanted:
            continue
        if stored is not None and stored not in wanted:
            return True
    return False


def may_match(
    file: DataFile,
    columns: Sequence[Column],
    stats: dict[int, ColumnStats] | None,
    partition: PartitionSpec | None,
    predicates: Sequence[Predicate],
) -> bool:
    """False only when some predicate provably matches no row of the file."""
    by_name = {c.name.lower(): c for c in columns}
    for p in predicates:
        col = by_name.get(p.column.lower())
        if col is None or col.type in ("list", "struct", "map"):
            continue
        if stats and col.column_id in stats and _stats_exclude(col, stats[col.column_id], p):
            return False
        if partition is not None and _partition_excludes(col, file, partition, p):
            return False
    return True
