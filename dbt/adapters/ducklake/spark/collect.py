"""A small result's rows as Python values, exactly: maps in their entry order (PySpark
hands a MAP over as a Java hash map, losing the order DuckDB keeps) and DuckDB's DATE and
TIMESTAMP `infinity` as `Infinite` (Python's date cannot hold it). Used where rows
reach the driver: inlining a small write, and results dbt fetches."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from .carried import carried_form, python_from_carried, to_carried
from .types import is_python_value, python_value


def collect_rows(df: DataFrame, limit: int | None = None) -> list[tuple[Any, ...]]:
    """`df`'s rows (at most `limit`) as Python values of its schema's types."""
    schema = df.schema
    carried = [carried_form(f.dataType) is not None for f in schema.fields]
    if any(carried):
        df = df.select(
            *[
                to_carried(F.col(f"`{f.name}`"), f.dataType).alias(f.name)
                if c
                else F.col(f"`{f.name}`")
                for f, c in zip(schema.fields, carried, strict=True)
            ]
        )
    rows = (df.limit(limit) if limit is not None else df).collect()
    if not any(carried) and all(is_python_value(f.dataType) for f in schema.fields):
        return [tuple(r) for r in rows]  # 10,000 rows of 9 columns: 2 ms, not 27
    return [
        tuple(
            python_from_carried(v, f.dataType) if c else python_value(v, f.dataType)
            for v, f, c in zip(r, schema.fields, carried, strict=True)
        )
        for r in rows
    ]


def at_most(df: DataFrame, limit: int) -> list[tuple[Any, ...]] | None:
    """`collect_rows(df)` when it has at most `limit` rows (limit + 1 reach the driver)
    and every value has a Python form; else None."""
    try:
        rows = collect_rows(df, limit + 1)
    except (OverflowError, ValueError):  # a value with no Python form
        return None
    return rows if len(rows) <= limit else None
