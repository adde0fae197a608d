"""Files written before a type promotion, on Spark 3.5.

DuckLake widens a column's type in place (`ALTER ... SET DATA TYPE BIGINT` over an
INTEGER column): files written before keep their narrower Parquet type. Spark 4's
readers widen as they read; Spark 3.5's refuse such a file under the wider type. There
the files are grouped by the types they were written with (the column versions live at
each file's first snapshot), each group read with its own types and cast to today's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from ..lake import CatalogReader, Column, DataFile
from .compat import reader_widens
from .types import spark_type

Era = tuple[tuple[int, str], ...]  # (column id, stored type) where it differs from today's


def by_stored_types(
    spark: SparkSession, cat: CatalogReader, columns: Sequence[Column], files: Sequence[DataFile]
) -> list[tuple[list[Column], list[DataFile]]] | None:
    """`files` grouped by the column types they were written with, each group with its
    columns as written; None when one read with today's types serves them all."""
    if not files or reader_widens(spark):
        return None
    oldest = min(f.begin_snapshot for f in files)
    if not any(c.begin_snapshot > oldest for top in columns for c in top.walk()):
        return None  # no column version began after the oldest file
    written = cat.column_types_at(files[0].data_file_id, {f.begin_snapshot for f in files})
    today = {c.column_id: c for top in columns for c in top.walk()}
    groups: dict[Era, list[DataFile]] = {}
    for f in files:
        era = tuple(
            sorted(
                (cid, stored)
                for cid, stored in written[f.begin_snapshot].items()
                if cid in today and _reads_differently(today[cid], stored)
            )
        )
        groups.setdefault(era, []).append(f)
    if list(groups) == [()]:
        return None
    return [([_as_written(c, dict(era)) for c in columns], group) for era, group in groups.items()]


def as_today(part: DataFrame, columns: Sequence[Column]) -> DataFrame:
    """A group's rows with each column cast to today's type (other columns as they are)."""
    types = {c.name: spark_type(c) for c in columns}
    return part.select(
        *[
            F.col(_quoted(name)).cast(types[name]).alias(name) if name in types else _quoted(name)
            for name in part.columns
        ]
    )


def _reads_differently(col: Column, stored: str) -> bool:
    if stored == col.type or col.children:
        return False
    probe = dataclasses.replace(col, type=stored)
    return spark_type(probe, reading=True) != spark_type(col, reading=True)


def _as_written(col: Column, era: Mapping[int, str]) -> Column:
    children = tuple(_as_written(c, era) for c in col.children)
    return dataclasses.replace(col, type=era.get(col.column_id, col.type), children=children)


def _quoted(name: str) -> str:
    return "`" + name.replace("`", "``") + "`"
