"""A small result's rows as Python values, exactly: maps in their entry order (PySpark
hands a MAP over as a Java hash map, losing the order DuckDB keeps) and DuckDB's DATE and
TIMESTAMP `infinity` as `Infinite` (Python's date cannot hold it). Used where rows
reach the driver: inlining a small write, and results dbt fetches."""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..lake import Infinite
from .read_values import EPOCH, INFINITE_DAYS, INFINITE_MICROS, carried_form
from .types import python_value


def collect_rows(df: DataFrame, limit: int | None = None) -> list[tuple[Any, ...]]:
    """`df`'s rows (at most `limit`) as Python values of its schema's types."""
    schema = df.schema
    carried = [carried_form(f.dataType) is not None for f in schema.fields]
    if any(carried):
        df = df.select(
            *[
                _to_carried(F.col(f"`{f.name}`"), f.dataType).alias(f.name)
                if c
                else F.col(f"`{f.name}`")
                for f, c in zip(schema.fields, carried, strict=True)
            ]
        )
    rows = (df.limit(limit) if limit is not None else df).collect()
    return [
        tuple(
            _from_carried(v, f.dataType) if c else python_value(v, f.dataType)
            for v, f, c in zip(r, schema.fields, carried, strict=True)
        )
        for r in rows
    ]


def _to_carried(value: SparkColumn, dt: T.DataType) -> SparkColumn:
    if isinstance(dt, T.MapType):
        key, item = dt.keyType, dt.valueType
        return F.transform(
            F.map_entries(value),
            lambda e: F.struct(
                _maybe(e["key"], key).alias("key"), _maybe(e["value"], item).alias("value")
            ),
        )
    if isinstance(dt, T.ArrayType):
        element = dt.elementType
        return F.transform(value, lambda x: _to_carried(x, element))
    if isinstance(dt, T.StructType):
        fields = [_maybe(value[f.name], f.dataType).alias(f.name) for f in dt.fields]
        return F.when(value.isNull(), F.lit(None)).otherwise(F.struct(*fields))
    if isinstance(dt, T.DateType):
        return F.unix_date(value)
    if isinstance(dt, T.TimestampType):
        return F.unix_micros(value)
    epoch = F.lit("1970-01-01 00:00:00").cast("timestamp_ntz")
    return F.timestamp_diff("MICROSECOND", epoch, value)


def _maybe(value: SparkColumn, dt: T.DataType) -> SparkColumn:
    return _to_carried(value, dt) if carried_form(dt) is not None else value


def _from_carried(value: Any, dt: T.DataType) -> Any:
    if value is None:
        return None
    if isinstance(dt, T.MapType):
        return {_from_carried(k, dt.keyType): _from_carried(v, dt.valueType) for k, v in value}
    if isinstance(dt, T.ArrayType):
        return [_from_carried(v, dt.elementType) for v in value]
    if isinstance(dt, T.StructType):
        return {f.name: _from_carried(v, f.dataType) for f, v in zip(dt.fields, value, strict=True)}
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
