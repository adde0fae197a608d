"""Rows the driver already holds (inlined rows and deletes, file lists, catalog answers)
as a Spark `LocalRelation`.

`createDataFrame(list)` in classic PySpark parallelizes the rows as an RDD: every query
over it is a Spark job, and a broadcast of it another. From Arrow, Spark keeps small data
as a `LocalRelation`, which the optimizer folds filters and projections into and which
is collected or broadcast without a job (a 5-row UPDATE went from 5 jobs to 0). Flat
schemas of plain types go that way; anything else (nested types, intervals, Spark
Connect, where rows are local already) takes `createDataFrame(list)`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from .compat import builds_from_arrow

_ARROW_TYPES: dict[type[T.DataType], pa.DataType] = {
    T.BooleanType: pa.bool_(),
    T.ByteType: pa.int8(),
    T.ShortType: pa.int16(),
    T.IntegerType: pa.int32(),
    T.LongType: pa.int64(),
    T.FloatType: pa.float32(),
    T.DoubleType: pa.float64(),
    T.StringType: pa.string(),
    T.BinaryType: pa.binary(),
    T.DateType: pa.date32(),  # days since the epoch, Spark's internal value
    T.TimestampType: pa.timestamp("us", tz="UTC"),  # microseconds since the epoch
    T.TimestampNTZType: pa.timestamp("us"),
}


def local_frame(
    spark: SparkSession, rows: Sequence[Sequence[Any]], schema: T.StructType | str
) -> DataFrame:
    """`rows` (Python values of `schema`'s types, as `createDataFrame` takes them) as a
    DataFrame, a `LocalRelation` where the schema allows."""
    if not hasattr(spark, "_jsparkSession"):  # Spark Connect: a list is sent as one
        return spark.createDataFrame(list(rows), schema)
    struct = _parsed(schema) if isinstance(schema, str) else schema
    frame = arrow_frame(spark, rows, struct)
    return spark.createDataFrame(list(rows), struct) if frame is None else frame


def arrow_frame(
    spark: SparkSession, rows: Sequence[Sequence[Any]], schema: T.StructType
) -> DataFrame | None:
    """`rows` as a `LocalRelation` (classic PySpark, a flat schema of plain types, values
    that convert exactly); None otherwise."""
    if not builds_from_arrow(spark):
        return None
    table = arrow_table(rows, schema)
    return None if table is None else spark.createDataFrame(table, schema)


def arrow_table(rows: Sequence[Sequence[Any]], schema: T.StructType) -> pa.Table | None:
    """The rows as Arrow columns of Spark's internal values; None when a type has no
    flat Arrow form here or a value does not convert (the list path then decides)."""
    arrays = []
    for i, field in enumerate(schema.fields):
        arrow_type = arrow_type_of(field.dataType)
        if arrow_type is None:
            return None
        values = [r[i] for r in rows]
        try:
            if field.dataType.needConversion():
                values = [None if v is None else field.dataType.toInternal(v) for v in values]
            arrays.append(pa.array(values, type=arrow_type))
        except (pa.ArrowException, AttributeError, TypeError, ValueError, OverflowError):
            return None
    return pa.Table.from_arrays(arrays, names=[f.name for f in schema.fields])


def arrow_type_of(data_type: T.DataType) -> pa.DataType | None:
    if isinstance(data_type, T.DecimalType):
        return pa.decimal128(data_type.precision, data_type.scale)
    if isinstance(data_type, T.StringType) and data_type != T.StringType():
        return None  # a collated string: its collation would not survive Arrow
    return _ARROW_TYPES.get(type(data_type))


def _parsed(ddl: str) -> T.StructType:
    parsed = T._parse_datatype_string(ddl)
    assert isinstance(parsed, T.StructType)
    return parsed
