"""Comparing a lake as DuckDB reads it and as this engine reads it: every table at every
snapshot, the same multiset of rows (EXCEPT ALL both ways)."""

from __future__ import annotations

import glob
from collections import Counter
from functools import reduce
from pathlib import Path
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


def assert_same_in_duckdb(
    spark: Any,
    metadata: str,
    con: duckdb.DuckDBPyConnection,
    table: str,
    out: Path,
    schema: str = "main",
) -> dict[int, int]:
    """`table` at every snapshot reads the same rows here as in DuckDB: our scans are
    written to plain Parquet (one Spark job per schema the table had: the scans of each
    are unioned, tagged by snapshot), and DuckDB takes EXCEPT ALL both ways per snapshot
    (exact, nested values included, and fast on 100k+ rows). Returns the row count per
    snapshot. `table` is in `schema` of the connection's current lake."""
    lake = Lake.open(metadata)
    name, table = table, f"{schema}.{table}"
    scans: dict[str, list[tuple[int, Any]]] = {}  # schema -> (snapshot, scan)
    for (at,) in con.execute("SELECT snapshot_id FROM ducklake_snapshots('lake')").fetchall():
        try:
            con.execute(f"SELECT 1 FROM {table} AT (VERSION => {at}) LIMIT 0")
        except duckdb.CatalogException:  # the table did not exist (yet): nor here
            with pytest.raises(CatalogNotFoundError):
                scan_table(spark, lake, schema, name, at=at)
            continue
        scan = scan_table(spark, lake, schema, name, at=at)
        scans.setdefault(scan.schema.json(), []).append((at, scan))
    lake.close()
    written: dict[int, str] = {}  # snapshot -> the folder of our rows
    for n, tagged in enumerate(scans.values()):
        folder = str(out / f"{name}-{n}")
        frames = [df.withColumn(_AT, F.lit(at)) for at, df in tagged]
        reduce(DataFrame.union, frames).write.partitionBy(_AT).parquet(folder)
        written.update({at: folder for at, _ in tagged})
    counts = {}
    for at, folder in sorted(written.items()):
        theirs = f"(FROM {table} AT (VERSION => {at}))"
        files = glob.glob(f"{folder}/{_AT}={at}/*.parquet")  # none: we read no rows
        mine = f"(FROM read_parquet({files!r}, hive_partitioning = false))" if files else None
        n = con.execute(f"SELECT count(*) FROM {theirs}").fetchone()[0]
        if mine is None:
            assert n == 0, (table, at, "we read no rows; DuckDB reads", n)
        else:
            missing, extra = con.execute(
                f"SELECT (SELECT count(*) FROM ({theirs} EXCEPT ALL {mine})), "
                f"(SELECT count(*) FROM ({mine} EXCEPT ALL {theirs}))"
            ).fetchone()
            assert (missing, extra) == (0, 0), (table, at, missing, extra)
        counts[at] = n
    return counts


_AT = "__snapshot"
