"""The carried form of values PySpark cannot move between Python and the JVM as they
are: a MAP as its list of entries (PySpark hands maps over as Java hash maps, losing the
order DuckDB keeps), DATE as days and TIMESTAMP as microseconds (Python's date cannot
hold DuckDB's `infinity`). Inlined rows travel into Spark in it (`read_values`), small
results out of Spark in it (`collect`)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, timedelta, timezone
from typing import Any

from pyspark.sql import Column as SparkColumn
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..lake import Infinite
from .compat import micros_from_ntz, ntz_from_micros
from .types import python_value

EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
INFINITE_DAYS = 2_147_483_647  # DuckDB's DATE 'infinity' (negated: '-infinity')
INFINITE_MICROS = 9_223_372_036_854_775_807  # TIMESTAMP 'infinity'


def carried_form(dt: T.DataType) -> T.DataType | None:
    """The type inlined values of `dt` travel in when a Python value of `dt` would lose
    something: a MAP as a list of entries (a Python dict reaches the JVM as a hash map,
    losing DuckDB's entry order), DATE as days and TIMESTAMP as microseconds (Python's
    date cannot hold `infinity`). None when `dt` holds neither."""
    if isinstance(dt, T.MapType):
        key, value = carried_form(dt.keyType), carried_form(dt.valueType)
        entry = T.StructType(
            [T.StructField("key", key or dt.keyType), T.StructField("value", value or dt.valueType)]
        )
        return T.ArrayType(entry)
    if isinstance(dt, T.ArrayType):
        element = carried_form(dt.elementType)
        return T.ArrayType(element) if element is not None else None
    if isinstance(dt, T.StructType):
        kids = [carried_form(f.dataType) for f in dt.fields]
        if all(k is None for k in kids):
            return None
        return T.StructType(
            [T.StructField(f.name, k or f.dataType) for f, k in zip(dt.fields, kids, strict=True)]
        )
    if isinstance(dt, T.DateType):
        return T.IntegerType()
    if isinstance(dt, T.TimestampType | T.TimestampNTZType):
        return T.LongType()
    return None


def carried_value(value: Any, dt: T.DataType) -> Any:
    """A Python value of `dt` (as `createDataFrame` takes it) in `carried_form(dt)`."""
    if value is None:
        return None
    if isinstance(dt, T.MapType):
        return [
            (carried_value(k, dt.keyType), carried_value(v, dt.valueType)) for k, v in value.items()
        ]
    if isinstance(dt, T.ArrayType):
        return [carried_value(v, dt.elementType) for v in value]
    if isinstance(dt, T.StructType):
        return {f.name: carried_value(value.get(f.name), f.dataType) for f in dt.fields}
    if isinstance(value, Infinite):
        big = INFINITE_DAYS if isinstance(dt, T.DateType) else INFINITE_MICROS
        return -big if value.negative else big
    if isinstance(dt, T.DateType):
        return (value - date(1970, 1, 1)).days
    if isinstance(dt, T.TimestampType | T.TimestampNTZType):
        if value.tzinfo is None:
            value = value.replace(tzinfo=timezone.utc)
        return (value - EPOCH) // timedelta(microseconds=1)
    return value


def from_carried(value: SparkColumn, dt: T.DataType) -> SparkColumn:
    """A column in `carried_form(dt)` back as `dt`."""
    if isinstance(dt, T.MapType):
        key, item = dt.keyType, dt.valueType
        if carried_form(key) is not None or carried_form(item) is not None:
            value = F.transform(
                value,
                lambda e: F.struct(
                    _maybe_from_carried(e["key"], key).alias("key"),
                    _maybe_from_carried(e["value"], item).alias("value"),
                ),
            )
        return F.map_from_entries(value)
    if isinstance(dt, T.ArrayType):
        element = dt.elementType
        return F.transform(value, lambda item: from_carried(item, element))
    if isinstance(dt, T.StructType):
        fields = [_maybe_from_carried(value[f.name], f.dataType).alias(f.name) for f in dt.fields]
        return F.when(value.isNull(), F.lit(None)).otherwise(F.struct(*fields))
    if isinstance(dt, T.DateType):
        return F.date_from_unix_date(value)
    if isinstance(dt, T.TimestampType):
        return F.timestamp_micros(value)
    return ntz_from_micros(value)


def _maybe_from_carried(value: SparkColumn, dt: T.DataType) -> SparkColumn:
    return from_carried(value, dt) if carried_form(dt) is not None else value


def _holds_carried(value: Any) -> bool:
    """Whether a value holds something only the carried form keeps (an infinity)."""
    if isinstance(value, Infinite):
        return True
    if isinstance(value, dict):
        return any(_holds_carried(v) or _holds_carried(k) for k, v in value.items())
    if isinstance(value, list | tuple):
        return any(_holds_carried(v) for v in value)
    return False


def carried_columns(rows: Sequence[Sequence[Any]], schema: T.StructType) -> list[int]:
    """Positions of the fields whose values travel in their carried form: every MAP (for
    its order), and dates or timestamps when some value is infinite."""
    out = []
    for i, f in enumerate(schema.fields):
        if _has_map(f.dataType) or (
            carried_form(f.dataType) is not None and any(_holds_carried(r[i]) for r in rows)
        ):
            out.append(i)
    return out


def _has_map(dt: T.DataType) -> bool:
    if isinstance(dt, T.MapType):
        return True
    if isinstance(dt, T.ArrayType):
        return _has_map(dt.elementType)
    if isinstance(dt, T.StructType):
        return any(_has_map(f.dataType) for f in dt.fields)
    return False


def to_carried(value: SparkColumn, dt: T.DataType) -> SparkColumn:
    """A column of `dt` in `carried_form(dt)` (the inverse of `from_carried`)."""
    if isinstance(dt, T.MapType):
        key, item = dt.keyType, dt.valueType
        return F.transform(
            F.map_entries(value),
            lambda e: F.struct(
                _maybe_to_carried(e["key"], key).alias("key"),
                _maybe_to_carried(e["value"], item).alias("value"),
            ),
        )
    if isinstance(dt, T.ArrayType):
        element = dt.elementType
        return F.transform(value, lambda x: to_carried(x, element))
    if isinstance(dt, T.StructType):
        fields = [_maybe_to_carried(value[f.name], f.dataType).alias(f.name) for f in dt.fields]
        return F.when(value.isNull(), F.lit(None)).otherwise(F.struct(*fields))
    if isinstance(dt, T.DateType):
        return F.unix_date(value)
    if isinstance(dt, T.TimestampType):
        return F.unix_micros(value)
    return micros_from_ntz(value)


def _maybe_to_carried(value: SparkColumn, dt: T.DataType) -> SparkColumn:
    return to_carried(value, dt) if carried_form(dt) is not None else value


def python_from_carried(value: Any, dt: T.DataType) -> Any:
    if value is None:
        return None
    if isinstance(dt, T.MapType):
        return {
            python_from_carried(k, dt.keyType): python_from_carried(v, dt.valueType)
            for k, v in value
        }
    if isinstance(dt, T.ArrayType):
        return [python_from_carried(v, dt.elementType) for v in value]
    if isinstance(dt, T.StructType):
        return {
            f.name: python_from_carried(v, f.dataType)
            for f, v in zip(dt.fields, value, strict=True)
        }
    if isinstance(dt, T.DateType):
        if abs(value) == INFINITE_DAYS:
            return Infinite(value < 0)
        return date(1970, 1, 1) + timedelta(days=value)
    if isinstance(dt, T.TimestampType | T.TimestampNTZType):
        if abs(value) == INFINITE_MICROS:
            return Infinite(value < 0)
        moment = EPOCH + timedelta(microseconds=value)
        return moment if isinstance(dt, T.TimestampType) else moment.replace(tzinfo=None)
    return python_value(value, dt)
