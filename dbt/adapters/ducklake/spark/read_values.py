"""DuckDB's stored values as the Spark values a scan returns, at any depth.

DuckDB stores some types in a form Spark's Parquet reader takes only as something else:
UUID as 16 bytes, TIME and TIMESTAMP_NS as INT64, HUGEINT as DOUBLE, UBIGINT as INT64
(which files written before a promotion from a smaller unsigned type hold as INT32). The
scan reads that form (`types.PHYSICAL_READ`) and converts it here, inside structs, lists
and maps as at the top level, so a nested UUID reads as a top-level one does.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import time as dt_time
from decimal import Decimal
from typing import Any

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from ..lake import Column
from .carried import carried_columns, carried_form, carried_value, from_carried
from .compat import ntz_from_micros
from .local_rows import local_frame
from .notices import notice
from .types import PHYSICAL_READ


def needs_conversion(col: Column) -> bool:
    """Whether `col`'s stored values need converting to its Spark type, at any depth."""
    return (
        col.type in PHYSICAL_READ
        or col.type == "variant"
        or any(needs_conversion(c) for c in col.children)
    )


def logical_column(col: Column) -> SparkColumn:
    """The top-level column `col` as read, converted to its mapped Spark type."""
    value = F.col(f"`{col.name}`")
    return (converted(value, col) if needs_conversion(col) else value).alias(col.name)


def converted(value: SparkColumn, col: Column) -> SparkColumn:
    """`value`, the stored form of `col`, as its Spark type (`col` needs conversion)."""
    if col.type == "list":
        (child,) = col.children
        return F.transform(value, lambda item: converted(item, child))
    if col.type == "map":
        key, item = col.children
        if needs_conversion(key):
            value = F.transform_keys(value, lambda k, _v: converted(k, key))
        if needs_conversion(item):
            value = F.transform_values(value, lambda _k, v: converted(v, item))
        return value
    if col.type == "struct":
        fields = [
            (converted(value[c.name], c) if needs_conversion(c) else value[c.name]).alias(c.name)
            for c in col.children
        ]
        return F.when(value.isNull(), F.lit(None)).otherwise(F.struct(*fields))
    return _scalar(value, col)


def _scalar(c: SparkColumn, col: Column) -> SparkColumn:
    if col.type == "uuid":
        return _uuid_text(c)
    if col.type == "variant":
        # DuckDB reads a variant null as NULL; Spark's reader makes SQL NULLs variant nulls
        return F.when(F.is_variant_null(c), F.lit(None)).otherwise(c)
    if col.type in ("time", "timetz"):
        return _time_text(c)
    if col.type == "timestamp_ns":
        return ntz_from_micros(F.floor(c / 1000))
    if col.type in ("int128", "uint128"):
        return _wide_integer(c, col)
    if col.type == "uint64":
        # stored as the same 64 bits, signed: values from 2^63 up read negative
        unsigned = c.cast(T.DecimalType(20, 0))
        wrapped = (unsigned + F.lit(Decimal(2**64))).cast(T.DecimalType(20, 0))
        return F.when(c < 0, wrapped).otherwise(unsigned)
    raise AssertionError(col.type)


def _uuid_text(c: SparkColumn) -> SparkColumn:
    """16 UUID bytes -> 8-4-4-4-12 lower-case text, as DuckDB prints them."""
    h = F.lower(F.hex(c))
    parts = [
        F.substring(h, start, length)
        for start, length in ((1, 8), (9, 4), (13, 4), (17, 4), (21, 12))
    ]
    return F.when(c.isNull(), F.lit(None)).otherwise(F.concat_ws("-", *parts))


def _time_text(c: SparkColumn) -> SparkColumn:
    """Microseconds since midnight -> `HH:MM:SS[.ffffff]` (trailing zeros dropped)."""
    micros = c % F.lit(1_000_000)
    text = F.format_string(
        "%02d:%02d:%02d",
        (c / 3_600_000_000).cast("int"),
        (c / 60_000_000 % 60).cast("int"),
        (c / 1_000_000 % 60).cast("int"),
    )
    frac = F.rtrim(F.regexp_replace(F.format_string(".%06d", micros), "0+$", ""))
    return F.when(c.isNull(), None).otherwise(
        F.concat(text, F.when(micros == 0, F.lit("")).otherwise(frac))
    )


def _wide_integer(c: SparkColumn, col: Column) -> SparkColumn:
    """DuckDB keeps HUGEINT as DOUBLE and reads back that double's exact integer value.

    Spark's DOUBLE -> DECIMAL cast goes through the double's shortest decimal text
    (2^60 + 1 stored as 1152921504606846976 would read 1152921504606846980), so the
    magnitude is split exactly into three parts below 2^63 (scaling by a power of two
    and taking the floor are exact in binary), each cast to DECIMAL losslessly."""
    kind = "HUGEINT" if col.type == "int128" else "UHUGEINT"
    too_big = F.raise_error(
        F.concat(
            F.lit(f"column {col.name!r}: {kind} value "),
            c.cast("string"),
            F.lit(" does not fit Spark's DECIMAL(38, 0) (at most 38 digits)"),
        )
    )
    magnitude = F.abs(c)
    top = F.floor(magnitude / F.lit(2.0**120))
    rest = magnitude - top * F.lit(2.0**120)
    middle = F.floor(rest / F.lit(2.0**60))
    low = F.floor(rest - middle * F.lit(2.0**60))
    exact = (
        top.cast(T.DecimalType(3, 0)) * F.lit(Decimal(2**120))
        + middle.cast(T.DecimalType(19, 0)) * F.lit(Decimal(2**60))
        + low.cast(T.DecimalType(19, 0))
    ).cast(T.DecimalType(38, 0))
    signed = F.when(c < 0, -exact).otherwise(exact)
    return F.when(magnitude >= F.lit(1e38), too_big).otherwise(signed)


def say_what_changes(columns: Sequence[Column], table: str) -> None:
    """A notice for the dbt output for each column a read keeps less of than DuckDB."""
    for col in columns:
        _say_what_changes(col, table, col.name)


def _say_what_changes(col: Column, table: str, where: str) -> None:
    if col.type == "timestamp_ns":
        notice(
            f"{table}.{where} is TIMESTAMP_NS: Spark reads it as TIMESTAMP_NTZ in "
            "microseconds, dropping the last three digits of each value's nanoseconds"
        )
    if col.type == "variant":
        notice(
            f"{table}.{where} is VARIANT: Spark writes the integers inside a variant at "
            "their narrowest width, so a copy of DuckDB's INTEGER 42 holds a TINYINT 42 "
            "(equal as a value and as JSON; DuckDB's variant_typeof differs)"
        )
    for child in col.children:
        _say_what_changes(child, table, f"{where}.{child.name}")


def inlined_frame(
    spark: SparkSession, rows: Sequence[Sequence[Any]], schema: T.StructType
) -> DataFrame:
    """Rows the driver holds (Python values of `schema`'s types, as `spark_rows` gives
    them) as a DataFrame of `schema`, maps in their order and infinities kept."""
    carried = carried_columns(rows, schema)
    if not carried:
        return local_frame(spark, rows, schema)
    fields = list(schema.fields)
    for i in carried:
        f = fields[i]
        fields[i] = T.StructField(f.name, carried_form(f.dataType) or f.dataType, f.nullable)
    moved = [
        tuple(
            carried_value(v, schema.fields[i].dataType) if i in carried else v
            for i, v in enumerate(r)
        )
        for r in rows
    ]
    frame = local_frame(spark, moved, T.StructType(fields))
    return frame.select(
        *[
            from_carried(F.col(f"`{f.name}`"), f.dataType).alias(f.name)
            if i in carried
            else F.col(f"`{f.name}`")
            for i, f in enumerate(schema.fields)
        ]
    )


_AS_TEXT = ("uuid", "time", "timetz", "interval")
_AS_DECIMAL = ("uint64", "int128", "uint128")


def spark_rows(rows: list[tuple[Any, ...]], columns: Sequence[Column]) -> list[tuple[Any, ...]]:
    """Inlined values as the Python values of the Spark types `types.spark_type` maps to."""
    return [
        tuple(_spark_value(c, v) for c, v in zip(columns, r, strict=False)) + r[len(columns) :]
        for r in rows
    ]


def time_text(value: dt_time) -> str:
    """A time as DuckDB prints it: fractional seconds without trailing zeros."""
    text = value.replace(tzinfo=None).isoformat()
    return text.rstrip("0").rstrip(".") if "." in text else text


def _spark_value(col: Column, value: Any) -> Any:
    if value is None:
        return None
    if col.type == "list":
        return [_spark_value(col.children[0], v) for v in value]
    if col.type == "struct":
        return {c.name: _spark_value(c, value.get(c.name)) for c in col.children}
    if col.type == "map":
        key, item = col.children
        return {_spark_value(key, k): _spark_value(item, v) for k, v in value.items()}
    if col.type in ("time", "timetz") and isinstance(value, dt_time):
        return time_text(value)
    if col.type in _AS_TEXT:
        return str(value)
    if col.type in _AS_DECIMAL:
        return Decimal(value)
    return value
