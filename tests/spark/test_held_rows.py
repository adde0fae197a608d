"""A small result the driver's JVM holds comes to Python through an Arrow file as the
very values collecting it gives (types too); anything else is collected as before."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from dbt.adapters.ducklake.spark import held_rows as held
from dbt.adapters.ducklake.spark.collect import collect_rows

SCHEMA = T.StructType(
    [
        T.StructField("l", T.LongType()),
        T.StructField("i", T.IntegerType()),
        T.StructField("s", T.ShortType()),
        T.StructField("b", T.ByteType()),
        T.StructField("t", T.BooleanType()),
        T.StructField("d", T.DoubleType()),
        T.StructField("f", T.FloatType()),
        T.StructField("v", T.StringType()),
    ]
)
ROWS = [
    (2**62, -(2**31), -(2**15), -128, True, float("nan"), 0.1, "é ✓ \x00 ''"),
    (None, None, None, None, None, None, None, None),
    (-1, 7, 3, 127, False, -0.0, float("-inf"), ""),
]


def _typed(rows: list) -> list[str]:
    """Rows with each value's type, NaN comparable."""
    return [repr([(type(v).__name__, v) for v in r]) for r in rows]


_ARROW = [pa.int64(), pa.int32(), pa.int16(), pa.int8(), pa.bool_()]
_ARROW += [pa.float64(), pa.float32(), pa.string()]


def _local(spark: SparkSession, rows: list, projection: str = "*"):
    """A query over rows Spark holds (a LocalRelation from Arrow, as the driver's feeds)."""
    raw = pa.table(
        [pa.array([r[i] for r in rows], t) for i, t in enumerate(_ARROW)], names=SCHEMA.names
    )
    spark.createDataFrame(raw, SCHEMA).createOrReplaceTempView("held_raw")
    return spark.sql(f"SELECT {projection} FROM held_raw")


def test_held_rows_come_as_collected(spark: SparkSession, monkeypatch) -> None:
    df = _local(spark, ROWS, "*, l + 1 AS l1, NOT t AS nt, upper(v) AS uv")
    expected = collect_rows(df)
    monkeypatch.setattr(held, "at_most", _not_called)  # the Arrow file, nothing else
    got = held.held_rows(spark, df, 10)
    assert got is not None and _typed(got) == _typed(expected)
    assert held.held_rows(spark, df, 2) is None  # more than the limit
    assert held.held_rows(spark, _local(spark, ROWS).where("l < -100"), 10) == []


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT id, cast(id AS string) AS v FROM range(3)",  # rows a job computes
        "SELECT l, current_date() AS day FROM held_raw",  # a type the file does not carry
        "SELECT l, collate(v, 'UTF8_LCASE') AS v FROM held_raw",  # text of another collation
    ],
)
def test_other_results_are_collected_as_before(spark: SparkSession, monkeypatch, sql) -> None:
    _local(spark, ROWS)
    df = spark.sql(sql)
    asked: list[int] = []

    def spy(frame, limit):
        asked.append(limit)
        return collect_rows(frame, limit + 1)

    monkeypatch.setattr(held, "at_most", spy)
    assert _typed(held.held_rows(spark, df, 10) or []) == _typed(collect_rows(df))
    assert asked == [10]


def _not_called(*_: object) -> None:
    raise AssertionError("collected through pickled rows")


def test_the_arrow_file_is_removed(spark: SparkSession, tmp_path, monkeypatch) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    assert held.held_rows(spark, _local(spark, ROWS), 10) is not None
    assert list(tmp_path.iterdir()) == []
