"""Comparing a lake as DuckDB reads it and as this engine reads it: every table at every
snapshot, the same multiset of rows (EXCEPT ALL both ways)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import reduce
from typing import Any

import duckdb
import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dbt.adapters.ducklake.lake import CatalogNotFoundError, Lake
from dbt.adapters.ducklake.spark.scan import scan_table
from tests.canon import canon
from tests.spark.test_roundtrip import _plain

MISSING: Counter[Any] = Counter({"missing": 1})


def snapshots(con: duckdb.DuckDBPyConnection) -> list[int]:
    rows = con.execute("SELECT snapshot_id FROM ducklake_snapshots('lake') ORDER BY 1").fetchall()
    return [r[0] for r in rows]


def duckdb_rows(con: duckdb.DuckDBPyConnection, table: str, at: int | None) -> Counter[Any]:
    """DuckDB's rows of `table` (in the connection's current lake) at `at` or latest."""
    version = f" AT (VERSION => {at})" if at is not None else ""
    try:
        return Counter(canon(r) for r in con.execute(f"SELECT * FROM {table}{version}").fetchall())
    except duckdb.CatalogException:
        return MISSING


def our_rows(spark: Any, lake: Lake, table: str, at: int | None) -> Counter[Any]:
    return Counter(_canon(r) for r in scan_table(spark, lake, "main", table, at=at).collect())


def _canon(values: Any) -> Any:
    """A Spark row (structs as Rows) in DuckDB's canonical form (structs as dicts)."""
    return canon(tuple(_plain(v) for v in values))


def assert_same_everywhere(
    spark: Any, metadata: str, con: duckdb.DuckDBPyConnection, tables: Sequence[str]
) -> dict[tuple[str, int | None], int]:
    """Asserts every table of schema main reads the same here and in DuckDB at every
    snapshot and the latest; returns each (table, snapshot)'s row count. Our side is one
    Spark job per table and column list: the scans at every snapshot, tagged and
    unioned."""
    lake = Lake.open(metadata)
    counts: dict[tuple[str, int | None], int] = {}
    try:
        for table in tables:
            theirs = {at: duckdb_rows(con, table, at) for at in [*snapshots(con), None]}
            frames: dict[tuple[str, ...], list[DataFrame]] = {}  # by columns (they evolve)
            for at, rows in theirs.items():
                if rows == MISSING:
                    with pytest.raises(CatalogNotFoundError):
                        scan_table(spark, lake, "main", table, at=at)
                    continue
                scan = scan_table(spark, lake, "main", table, at=at)
                tagged = scan.select(F.lit(-1 if at is None else at).alias("__at"), "*")
                frames.setdefault(tuple(scan.columns), []).append(tagged)
            ours: dict[int | None, Counter[Any]] = {at: Counter() for at in theirs}
            for same in frames.values():
                for r in reduce(DataFrame.unionByName, same).collect():
                    ours[None if r[0] == -1 else r[0]][_canon(r[1:])] += 1
            for at, rows in theirs.items():
                if rows != MISSING:
                    assert ours[at] == rows, (table, at, ours[at] - rows, rows - ours[at])
                    counts[(table, at)] = sum(rows.values())
    finally:
        lake.close()
    return counts
