"""Initial defaults of columns and nested fields added after a file was written: such a
file reads them as the default, as DuckDB reads it (top-level columns, and fields inside
structs, list elements and map keys or values)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import Column as SparkColumn
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from ..lake import Column, DataFile, decode_default
from .types import spark_schema


@dataclass(frozen=True)
class Default:
    """A column, or a field nested in one, with an initial default: `path` leads to it
    from the top-level column, a step per level: a struct field's name, or `[]` for a
    list's elements, `{k}` / `{v}` for a map's keys / values."""

    path: tuple[str, ...]
    column: Column


_ELEMENTS, _KEYS, _VALUES = "[]", "{k}", "{v}"


def column_defaults(columns: Sequence[Column]) -> dict[int, Default]:
    """Per column id, the columns and nested fields (through structs, lists and maps)
    that files written before them read as their initial default, as DuckDB does."""
    found: dict[int, Default] = {}

    def walk(col: Column, path: tuple[str, ...]) -> None:
        if decode_default(col) is not None:
            found[col.column_id] = Default(path, col)
        steps = {"list": [_ELEMENTS], "map": [_KEYS, _VALUES]}.get(col.type)
        for i, child in enumerate(col.children):
            walk(child, (*path, steps[i] if steps else child.name))

    for col in columns:
        walk(col, (col.name,))
    return found


def apply_defaults(
    data: DataFrame,
    files: Sequence[DataFile],
    file_stats: dict[int, Any],
    defaults: Mapping[int, Default],
) -> DataFrame:
    """Fill columns (and nested fields) added after a file was written with their
    initial default; a NULL struct, list or map stays NULL.

    A file holds exactly the columns it has stats for (DuckDB and this engine write
    stats for every leaf column); files without any stats are taken to hold them all.
    """
    for column_id, default in defaults.items():
        missing = [
            f.data_file_id
            for f in files
            if file_stats.get(f.data_file_id) and column_id not in file_stats[f.data_file_id]
        ]
        if not missing:
            continue
        col = default.column
        value = F.lit(decode_default(col)).cast(spark_schema([col])[0].dataType)
        older = F.col("__ducklake_fid").isin(missing)
        top, *inner = default.path
        data = data.withColumn(top, _filled(F.col(f"`{top}`"), inner, older, value))
    return data


def _filled(
    current: SparkColumn, path: Sequence[str], older: SparkColumn, value: SparkColumn
) -> SparkColumn:
    """`current` with the value at `path` (steps as in `Default`) set to `value` where
    `older` holds; every container on the way keeps its NULLs."""
    if not path:
        return F.when(older, value).otherwise(current)
    step, rest = path[0], path[1:]
    if step == _ELEMENTS:
        return F.transform(current, lambda e: _filled(e, rest, older, value))
    if step == _KEYS:
        return F.transform_keys(current, lambda k, _v: _filled(k, rest, older, value))
    if step == _VALUES:
        return F.transform_values(current, lambda _k, v: _filled(v, rest, older, value))
    return current.withField(
        f"`{step.replace('`', '``')}`", _filled(current.getField(step), rest, older, value)
    )
