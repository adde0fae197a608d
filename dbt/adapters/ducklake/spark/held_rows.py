"""A small result the driver's JVM holds, brought to Python as one Arrow stream.

The driver MERGE (driver_merge) asks Spark for its source's keys, conditions and values,
which Spark computes into a `LocalRelation` without a job. Collected the usual way, every
row is pickled in the JVM and unpickled into a `Row` here: ~40 ms for the 10,000 upserts
of a change-feed model's build. The adapter's `ducklake.jvm.HeldRows` writes them to a
local Arrow file instead, read here in a few milliseconds. Only for columns whose Arrow
values are the Python values `collect_rows` gives (integers, floats, booleans, text of
the binary collation); anything else, or a session without the adapter's classes, is
collected as before (`collect.at_most`).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from typing import Any, Literal

import pyarrow as pa
from py4j.protocol import Py4JError
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T

from .collect import at_most
from .compat import builds_from_arrow
from .encrypted import has_engine_classes
from .types import binary_text

__all__ = ["held_columns", "held_here", "held_rows"]

_PLAIN = (
    T.LongType,
    T.IntegerType,
    T.ShortType,
    T.ByteType,
    T.BooleanType,
    T.DoubleType,
    T.FloatType,
)
# rows; None: more than the limit; False: not held (collected otherwise)
Held = list[tuple[Any, ...]] | Literal[False] | None
_NOT_HERE, _TOO_MANY = -1, -2  # HeldRows.write's answers besides a row count


def held_rows(spark: SparkSession, df: DataFrame, limit: int) -> list[tuple[Any, ...]] | None:
    """`at_most(df, limit)`: `df`'s rows as Python values, None when more than `limit`."""
    plain = builds_from_arrow(spark) and _plain(df.schema.fields)  # the classes need Spark 4
    if not (plain and has_engine_classes(spark) and held_here(df)):
        return at_most(df, limit)
    rows = _through_file(
        spark, lambda jvm, path: jvm.ducklake.jvm.HeldRows.write(df._jdf, path, limit)
    )
    return at_most(df, limit) if rows is False else rows


def held_columns(spark: SparkSession, df: DataFrame, columns: Sequence[int], limit: int) -> Held:
    """The values of `df`'s columns at positions `columns`, when its analyzed plan reads
    a relation the driver holds as it is (no query of them is optimized: the adapter's
    `HeldRows.writeColumns`); None when more than `limit` rows; False when not so."""
    fields = df.schema.fields
    if not (builds_from_arrow(spark) and has_engine_classes(spark)):
        return False
    if not columns or not _plain([fields[c] for c in columns]):
        return False
    at = ",".join(str(c) for c in columns)
    return _through_file(
        spark, lambda jvm, path: jvm.ducklake.jvm.HeldRows.writeColumns(df._jdf, at, path, limit)
    )


def _through_file(spark: SparkSession, write: Callable[[Any, str], Any]) -> Held:
    """The rows `write(jvm, path)` leaves in an Arrow file; None when it found too many,
    False when it wrote none (or the adapter's jar lacks the method)."""
    handle, path = tempfile.mkstemp(prefix="ducklake-held-", suffix=".arrow")
    os.close(handle)
    try:
        try:
            written = int(write(spark._jvm, path))
        except (Py4JError, TypeError):  # an older jar: no such class
            written = _NOT_HERE
        if written == _NOT_HERE:
            return False
        if written == _TOO_MANY:
            return None
        with pa.memory_map(path) as source:
            table = pa.ipc.open_stream(source).read_all()
        return list(zip(*(column.to_pylist() for column in table.columns), strict=True))
    finally:
        os.unlink(path)


def _plain(fields: Sequence[T.StructField]) -> bool:
    for f in fields:
        kind = f.dataType
        if not (binary_text(kind) or isinstance(kind, _PLAIN)):
            return False
    return bool(fields)


def held_here(df: DataFrame, at_most_bytes: int | None = None) -> bool:
    """Whether Spark holds `df`'s rows on the driver once its plan is optimized (a
    `LocalRelation`: collecting it runs no job), of at most `at_most_bytes`."""
    plan = df._jdf.queryExecution().optimizedPlan()
    if plan.getClass().getSimpleName() != "LocalRelation":
        return False
    return at_most_bytes is None or int(str(plan.stats().sizeInBytes())) <= at_most_bytes
