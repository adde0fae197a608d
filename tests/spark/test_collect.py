"""Collected rows are plain Python values of their schema's types: plain columns as
PySpark gives them, structs as dicts (also inside arrays), MAP entries in their order,
TIMESTAMP aware in UTC; `at_most` gives up past its limit."""

from __future__ import annotations

from datetime import datetime, timezone

from pyspark.sql import Row

from dbt.adapters.ducklake.spark.collect import at_most, collect_rows


def test_plain_columns_come_as_plain_tuples(spark) -> None:
    df = spark.sql(
        "select id, cast(id as int) as i, concat('v', id) as s, id % 2 = 0 as b, "
        "id / 4 as d from range(3)"
    )
    rows = collect_rows(df)
    assert rows == [(0, 0, "v0", True, 0.0), (1, 1, "v1", False, 0.25), (2, 2, "v2", True, 0.5)]
    assert all(type(r) is tuple for r in rows)  # not Rows (a Row is a tuple too)


def test_structs_come_as_dicts(spark) -> None:
    df = spark.sql(
        "select 1 as id, named_struct('a', 1, 'b', 'x') as st, array(named_struct('a', 2)) as arr"
    )
    ((id_, st, arr),) = collect_rows(df)
    assert id_ == 1
    assert st == {"a": 1, "b": "x"} and not isinstance(st, Row)
    assert arr == [{"a": 2}] and not isinstance(arr[0], Row)


def test_maps_keep_their_order_and_timestamps_are_utc(spark) -> None:
    df = spark.sql("select map('k2', 2, 'k1', 1) as m, timestamp'2024-01-02 03:04:05 UTC' as ts")
    ((m, ts),) = collect_rows(df)
    assert list(m.items()) == [("k2", 2), ("k1", 1)]
    assert ts == datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc)


def test_at_most_gives_up_past_its_limit(spark) -> None:
    df = spark.range(5)
    assert at_most(df, 5) == [(0,), (1,), (2,), (3,), (4,)]
    assert at_most(df, 4) is None
