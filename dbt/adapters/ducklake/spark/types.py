"""Spark <-> DuckLake types, with Parquet field ids carried in StructField metadata.

Write mapping (Spark -> DuckLake): boolean, tinyint int8, smallint int16, int int32,
bigint int64, float float32, double float64, decimal(p,s), string/char/varchar varchar,
binary blob, date, timestamp timestamptz, timestamp_ntz timestamp, array list,
struct struct, map map, variant variant (Spark 4). Spark types with no DuckLake
equivalent Spark can write (intervals, void, calendar interval) are refused with a
clear error. geometry reads as its WKB binary (and is written back as a blob).

Read mapping for DuckLake types Spark lacks: uint8 smallint, uint16 int, uint32 bigint,
uint64 decimal(20,0), int128/uint128 decimal(38,0) (DuckDB stores them as DOUBLE: the
double's exact value, as DuckDB reads it), uuid/json/time/timetz string, timestamp_s/_ms
timestamp_ntz, timestamp_ns timestamp_ntz truncated to microseconds (with a notice).
interval cannot be read yet (a clear error); the same rules hold inside structs, lists
and maps.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Any

from pyspark.sql import Row
from pyspark.sql import types as T

from ..lake import Column, ColumnSpec, decimal_params, is_decimal
from .compat import CLIENT_IS_SPARK_4
from .errors import UnsupportedTypeError

FIELD_ID = "parquet.field.id"
ROW_ID_FIELD_ID = 2147483540
SNAPSHOT_FIELD_ID = 2147483539
DELETE_FILE_PATH_FIELD_ID = 2147483646
DELETE_POS_FIELD_ID = 2147483645

_TO_SPARK: dict[str, T.DataType] = {
    "boolean": T.BooleanType(),
    "int8": T.ByteType(),
    "int16": T.ShortType(),
    "int32": T.IntegerType(),
    "int64": T.LongType(),
    "uint8": T.ShortType(),
    "uint16": T.IntegerType(),
    "uint32": T.LongType(),
    "uint64": T.DecimalType(20, 0),
    "int128": T.DecimalType(38, 0),
    "uint128": T.DecimalType(38, 0),
    "float32": T.FloatType(),
    "float64": T.DoubleType(),
    "varchar": T.StringType(),
    "json": T.StringType(),
    "uuid": T.StringType(),
    "blob": T.BinaryType(),
    "date": T.DateType(),
    "timestamp": T.TimestampNTZType(),
    "timestamp_s": T.TimestampNTZType(),
    "timestamp_ms": T.TimestampNTZType(),
    "timestamp_ns": T.TimestampNTZType(),
    "timestamptz": T.TimestampType(),
    "time": T.StringType(),
    "timetz": T.StringType(),
    "geometry": T.BinaryType(),  # well-known binary (WKB), as DuckDB stores it
}
# Spark 4 has a VARIANT type whose Parquet form (a Variant-annotated group of metadata
# and value binaries, shredded or not) is DuckDB's
if hasattr(T, "VariantType"):
    _TO_SPARK["variant"] = T.VariantType()

_FROM_SPARK: dict[type, str] = {
    T.BooleanType: "boolean",
    T.ByteType: "int8",
    T.ShortType: "int16",
    T.IntegerType: "int32",
    T.LongType: "int64",
    T.FloatType: "float32",
    T.DoubleType: "float64",
    T.StringType: "varchar",
    T.CharType: "varchar",
    T.VarcharType: "varchar",
    T.BinaryType: "blob",
    T.DateType: "date",
    T.TimestampType: "timestamptz",
    T.TimestampNTZType: "timestamp",
}
if hasattr(T, "VariantType"):
    _FROM_SPARK[T.VariantType] = "variant"


def spark_type(col: Column, *, reading: bool = False) -> T.DataType:
    """The Spark type a scan returns for a DuckLake column (children carry field ids);
    `reading`: the type its Parquet values are read as, at any depth (see read_values)."""
    if col.type == "list":
        (child,) = col.children
        return T.ArrayType(spark_type(child, reading=reading), containsNull=True)
    if col.type == "struct":
        return T.StructType([spark_field(c, reading=reading) for c in col.children])
    if col.type == "map":
        key, value = col.children
        return T.MapType(
            spark_type(key, reading=reading),
            spark_type(value, reading=reading),
            valueContainsNull=True,
        )
    if reading and col.type in PHYSICAL_READ:
        return PHYSICAL_READ[col.type]
    if is_decimal(col.type):
        p, s = decimal_params(col.type)
        return T.DecimalType(p, s)
    if col.type == "interval":
        raise UnsupportedTypeError(
            f"column {col.name!r}: DuckLake interval values cannot be read by Spark yet; "
            "cast the column to VARCHAR in DuckDB or leave it out of the scan"
        )
    if col.type == "uuid" and col.parent_id is not None and not CLIENT_IS_SPARK_4:
        raise UnsupportedTypeError(
            f"column {col.name!r}: a UUID inside a STRUCT, LIST or MAP needs Spark 4.0 or "
            "later (Spark 3.5 reads nested columns by rows, whose Parquet schema reader "
            "refuses DuckDB's UUID annotation); cast it to VARCHAR in DuckDB or use Spark 4"
        )
    if col.type == "geometry" and not CLIENT_IS_SPARK_4:
        raise UnsupportedTypeError(
            f"column {col.name!r}: DuckLake type geometry needs Spark 4.0 or later (the "
            "Parquet library of Spark 3.5 cannot read a file with DuckDB's GEOMETRY "
            "annotation, whichever columns are read); cast it to BLOB in DuckDB or use Spark 4"
        )
    if col.type == "variant" and "variant" not in _TO_SPARK:
        raise UnsupportedTypeError(
            f"column {col.name!r}: DuckLake type variant needs Spark 4.0 or later "
            "(Spark 3.5 has no VARIANT type); cast it to VARCHAR in DuckDB or leave it out"
        )
    if col.type not in _TO_SPARK:
        raise UnsupportedTypeError(
            f"column {col.name!r}: DuckLake type {col.type} cannot be read by Spark"
        )
    return _TO_SPARK[col.type]


# How DuckDB stores these physically; the scan converts them to the mapped Spark type.
PHYSICAL_READ: dict[str, T.DataType] = {
    "uuid": T.BinaryType(),  # FIXED_LEN_BYTE_ARRAY(16)
    "time": T.LongType(),  # INT64 TIME(MICROS); Spark cannot read TIME
    "timetz": T.LongType(),
    "timestamp_ns": T.LongType(),  # INT64 nanoseconds
    "int128": T.DoubleType(),  # DuckDB writes HUGEINT as DOUBLE
    "uint128": T.DoubleType(),
    # INT64 (UINT_64), or INT32 in files written before a promotion from a smaller
    # unsigned type: Spark reads both as BIGINT, never INT32 as DECIMAL(20, 0)
    "uint64": T.LongType(),
}


def spark_field(col: Column, *, reading: bool = False) -> T.StructField:
    return T.StructField(
        col.name, spark_type(col, reading=reading), True, {FIELD_ID: col.column_id}
    )


def spark_schema(columns: list[Column], *, reading: bool = False) -> T.StructType:
    """Scan output schema; `reading` gives the Parquet read schema (uuid as its 16 bytes)."""
    return T.StructType([spark_field(c, reading=reading) for c in columns])


def ducklake_spec(field: T.StructField, where: str = "") -> ColumnSpec:
    """A Spark field as a DuckLake column definition (ids are assigned by lake/)."""
    return _spec(field.name, field.dataType, field.nullable, where or field.name)


def _spec(name: str, dt: T.DataType, nullable: bool, where: str) -> ColumnSpec:
    if isinstance(dt, T.ArrayType):
        return ColumnSpec(
            name, "list", [_spec("element", dt.elementType, True, f"{where}[]")], nullable=nullable
        )
    if isinstance(dt, T.StructType):
        return ColumnSpec(
            name,
            "struct",
            [_spec(f.name, f.dataType, True, f"{where}.{f.name}") for f in dt.fields],
            nullable=nullable,
        )
    if isinstance(dt, T.MapType):
        return ColumnSpec(
            name,
            "map",
            [
                _spec("key", dt.keyType, False, f"{where}.key"),
                _spec("value", dt.valueType, True, f"{where}.value"),
            ],
            nullable=nullable,
        )
    if isinstance(dt, T.DecimalType):
        return ColumnSpec(name, f"decimal({dt.precision},{dt.scale})", nullable=nullable)
    for spark_cls, ducklake in _FROM_SPARK.items():
        if isinstance(dt, spark_cls):
            return ColumnSpec(name, ducklake, nullable=nullable)
    raise UnsupportedTypeError(
        f"column {where!r}: Spark type {dt.simpleString()} has no DuckLake equivalent that "
        "Parquet can carry; cast it (e.g. intervals to BIGINT or STRING) before writing"
    )


def with_field_ids(dt: T.DataType, col: Column) -> T.DataType:
    """`dt` (the data's Spark type) re-labelled with the field ids of DuckLake column `col`."""
    if isinstance(dt, T.StructType):
        by_name = {c.name: c for c in col.children}
        return T.StructType(
            [
                T.StructField(
                    f.name,
                    with_field_ids(f.dataType, by_name[f.name]),
                    f.nullable,
                    {FIELD_ID: by_name[f.name].column_id},
                )
                for f in dt.fields
            ]
        )
    if isinstance(dt, T.ArrayType):
        return T.ArrayType(with_field_ids(dt.elementType, col.children[0]), dt.containsNull)
    if isinstance(dt, T.MapType):
        key, value = col.children
        return T.MapType(
            with_field_ids(dt.keyType, key),
            with_field_ids(dt.valueType, value),
            dt.valueContainsNull,
        )
    return dt


def python_value(value: Any, data_type: T.DataType) -> Any:
    """A collected Spark value as plain Python, with TIMESTAMP values aware and in UTC.

    PySpark turns TIMESTAMP (with time zone) values into naive datetimes in the Python
    process's local zone, whatever Spark's session zone is; left alone they would be
    inlined or handed to dbt shifted by the machine's UTC offset. Structs become dicts.
    """
    if value is None:
        return None
    if isinstance(data_type, T.TimestampType) and isinstance(value, datetime):
        return value.astimezone(timezone.utc)
    if isinstance(data_type, T.StructType):
        return {
            f.name: python_value(v, f.dataType)
            for f, v in zip(data_type.fields, value, strict=True)
        }
    if isinstance(data_type, T.ArrayType):
        return [python_value(v, data_type.elementType) for v in value]
    if isinstance(data_type, T.MapType):
        return {
            python_value(k, data_type.keyType): python_value(v, data_type.valueType)
            for k, v in value.items()
        }
    return value


def is_python_value(data_type: T.DataType) -> bool:
    """Whether PySpark's collected values of `data_type` are already what
    `python_value` gives (nothing to convert per value)."""
    return not isinstance(data_type, T.TimestampType | T.StructType | T.ArrayType | T.MapType)


def python_rows(rows: Sequence[Row], schema: T.StructType) -> list[tuple[Any, ...]]:
    types = [f.dataType for f in schema.fields]
    return [tuple(python_value(v, t) for v, t in zip(r, types, strict=True)) for r in rows]


def binary_text(kind: T.DataType) -> bool:
    """Whether `kind` is text compared by its bytes (no collation such as UTF8_LCASE)."""
    return isinstance(kind, T.StringType) and (
        getattr(kind, "collation", "UTF8_BINARY") == "UTF8_BINARY"
    )


def keys_compare(target: T.DataType, source: T.DataType) -> bool:
    """Whether a source key compares and orders with a target key as the target's values
    do among themselves: integers with integers, else the same type (no casts between
    strings and numbers, which order and compare differently)."""
    if isinstance(target, T.IntegralType) and isinstance(source, T.IntegralType):
        return True
    return target == source
