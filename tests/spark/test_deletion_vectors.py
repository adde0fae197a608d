"""Deletion vectors (Iceberg V3 `puffin` delete files), as DuckDB 1.5.5 writes them with
`write_deletion_vectors`, read here exactly as DuckDB reads them: every table at every
snapshot, the change feed, and DELETE/UPDATE/MERGE, flush, compaction, expire and
cleanup on top of them, whose result DuckDB reads back identically."""

from __future__ import annotations

import os
import tempfile
from collections import Counter
from functools import reduce
from pathlib import Path
from typing import Any

import duckdb
import pytest
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark import kept_rows
from dbt.adapters.ducklake.spark.changes import table_changes
from dbt.adapters.ducklake.spark.compat import CLIENT_IS_SPARK_4
from dbt.adapters.ducklake.spark.scan import (
    ANTI_JOIN,
    IN_SCAN_JVM,
    IN_SCAN_READER,
    ScanMetrics,
    scan_table,
)
from dbt.adapters.ducklake.spark.sql import LakeSQL
from tests import duck
from tests.conftest import Catalog
from tests.spark.every_snapshot import assert_same_in_duckdb, duckdb_rows, our_rows, snapshots

TABLES = ("t", "big")


def _duckdb(catalog: Catalog, options: str = "DATA_INLINING_ROW_LIMIT 0") -> Any:
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach, data_path=catalog.data_path, options=options)
    con.execute("USE lake")
    return con


def _build_with_vectors(con: duckdb.DuckDBPyConnection) -> None:
    """Two data files of `t` with one, two and three DELETEs on the first and an UPDATE;
    `big` has deletes dense enough for bitset containers, in two containers."""
    con.execute("CALL ducklake_set_option('lake', 'write_deletion_vectors', true)")
    con.execute("CREATE TABLE t AS SELECT range AS id, range * 2 AS v FROM range(1000)")
    con.execute("INSERT INTO t SELECT range, range * 2 FROM range(1000, 1500)")
    con.execute("DELETE FROM t WHERE id % 10 = 3")
    con.execute("DELETE FROM t WHERE id BETWEEN 100 AND 120")
    con.execute("DELETE FROM t WHERE id IN (999, 1400)")
    con.execute("UPDATE t SET v = -1 WHERE id % 100 = 7")
    con.execute("CREATE TABLE big AS SELECT range AS id FROM range(70000)")
    con.execute("DELETE FROM big WHERE id % 3 = 0 OR id BETWEEN 30000 AND 40000")


def _assert_same_everywhere(spark: Any, catalog: Catalog, con: duckdb.DuckDBPyConnection) -> int:
    """Every table at every snapshot reads the same here and in DuckDB; returns how many
    snapshots of `t` had deleted rows."""
    with tempfile.TemporaryDirectory(prefix="dv-scans-") as out:
        counts = {
            table: assert_same_in_duckdb(spark, catalog.metadata, con, table, Path(out))
            for table in TABLES
        }
    return sum(1 for n in counts["t"].values() if 0 < n < 1500)


def _vector_files(con: duckdb.DuckDBPyConnection) -> list[tuple[Any, ...]]:
    return con.execute(
        "SELECT format, delete_count FROM __ducklake_metadata_lake.ducklake_delete_file "
        "WHERE end_snapshot IS NULL ORDER BY delete_file_id"
    ).fetchall()


def test_duckdb_vectors_read_identically_at_every_snapshot(spark, catalog: Catalog) -> None:
    con = _duckdb(catalog)
    _build_with_vectors(con)
    formats = {f for f, _ in _vector_files(con)}
    assert formats == {"puffin"}, formats
    metrics = ScanMetrics()
    scan_table(spark, Lake.open(catalog.metadata), "main", "t", metrics=metrics)
    # decoded in the scan's own tasks (by the reader on Spark 4, a JVM filter on 3.5)
    assert metrics.deletes_applied == [IN_SCAN_READER if CLIENT_IS_SPARK_4 else IN_SCAN_JVM]
    assert _assert_same_everywhere(spark, catalog, con) > 0
    # DuckDB's quirk, read the same here: each later vector of a file removed the earlier
    # one's catalog row, so the three DELETEs' snapshots (3-5) read all 1,500 rows and
    # only the UPDATE's snapshot (6), whose vectors hold every delete, reads 1,329
    counts = [sum(duckdb_rows(con, "t", at).values()) for at in range(1, 7)]
    assert counts == [1000, 1500, 1500, 1500, 1500, 1329]

    # the change feed of each snapshot, DuckDB's quirk included: a second vector of a file
    # replaces the first's catalog row, so the later snapshot reports both deletes
    _assert_same_feed(spark, catalog, con)
    con.close()


def test_duckdb_vectors_read_identically_without_the_jvm_filter(
    spark, sqlite_catalog: Catalog, monkeypatch
) -> None:
    """Where the adapter's JVM classes cannot run (Spark Connect, no jar), deletes are
    an anti-join on positions the Python tasks decode: the same rows at every snapshot,
    partial delete files and cumulative vectors included."""
    monkeypatch.setattr(kept_rows, "IN_SCAN", False)
    con = _duckdb(sqlite_catalog)
    _build_with_vectors(con)
    metrics = ScanMetrics()
    scan_table(spark, Lake.open(sqlite_catalog.metadata), "main", "t", metrics=metrics)
    assert metrics.deletes_applied == [ANTI_JOIN]
    assert _assert_same_everywhere(spark, sqlite_catalog, con) > 0
    con.close()


def _assert_same_feed(spark: Any, catalog: Catalog, con: duckdb.DuckDBPyConnection) -> None:
    """`table_changes` of every single snapshot equals DuckDB's (ours: one Spark job per
    table, the windows tagged and unioned)."""
    lake = Lake.open(catalog.metadata)
    for table in TABLES:
        theirs: dict[int, Counter[Any]] = {}
        frames = []
        for first in snapshots(con)[1:]:
            try:
                theirs[first] = Counter(
                    con.execute(
                        "SELECT * FROM ducklake_table_changes('lake', 'main', ?, ?, ?)",
                        [table, first, first],
                    ).fetchall()
                )
            except duckdb.Error:
                continue  # the table did not exist yet
            feed = table_changes(spark, lake, "main", table, first, first)
            frames.append(feed.select(F.lit(first).alias("__window"), "*"))
        ours: dict[int, Counter[Any]] = {first: Counter() for first in theirs}
        for r in reduce(DataFrame.unionByName, frames).collect():
            ours[r[0]][tuple(r)[1:]] += 1
        for first, rows in theirs.items():
            assert ours[first] == rows, (table, first, ours[first] - rows, rows - ours[first])
    lake.close()


# CI reads DuckDB's vectors on both catalogs; the writes over them and our own vectors
# run on PostgreSQL under `./dev test --full` (their catalog rows are the same code)
SQLITE_IN_CI = pytest.mark.parametrize(
    "catalog",
    ["sqlite", pytest.param("postgres", marks=[pytest.mark.postgres, pytest.mark.full])],
    indirect=True,
)


@SQLITE_IN_CI
def test_writes_on_top_of_vectors_read_identically_in_duckdb(spark, catalog: Catalog) -> None:
    con = _duckdb(catalog)
    _build_with_vectors(con)
    con.execute("USE memory")
    con.execute("DETACH lake")

    lake = Lake.open(catalog.metadata)
    sql = LakeSQL(spark, lake)
    # `t` keeps the lake's write_deletion_vectors; `big` turns it off: its vector is
    # merged into a Parquet delete file with per-row snapshots
    sql.execute(
        "CALL ducklake_set_option('lake', 'write_deletion_vectors', false, table_name => 'big')"
    )
    sql.execute("DELETE FROM main.t WHERE id % 10 = 5")  # a file with a vector gets more
    sql.execute("UPDATE main.t SET v = 7 WHERE id BETWEEN 1390 AND 1410")
    sql.execute(
        "MERGE INTO main.t AS t USING (SELECT id, id AS v FROM range(990, 1010)) AS s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)"
    )
    sql.execute("DELETE FROM main.big WHERE id BETWEEN 60000 AND 60100")  # not inlined
    lake.close()

    con = _duckdb(catalog, "")
    formats = con.execute(
        "SELECT DISTINCT t.table_name, d.format "
        "FROM __ducklake_metadata_lake.ducklake_delete_file d "
        "JOIN __ducklake_metadata_lake.ducklake_table t USING (table_id) "
        "WHERE d.end_snapshot IS NULL ORDER BY 1"
    ).fetchall()
    assert formats == [("big", "parquet"), ("t", "puffin")], formats

    # flush (a DuckDB-written vector next to inlined deletes), compaction, expiry, cleanup
    con.execute("CALL ducklake_set_option('lake', 'data_inlining_row_limit', 10)")
    con.execute("DELETE FROM t WHERE id = 1499")  # inlined next to the file's delete file
    con.execute("USE memory")
    con.execute("DETACH lake")
    lake = Lake.open(catalog.metadata)
    sql = LakeSQL(spark, lake)
    for call in (
        "CALL ducklake_flush_inlined_data('lake')",
        "CALL ducklake_rewrite_data_files('lake', 't', delete_threshold => 0.0)",
        "CALL ducklake_merge_adjacent_files('lake', 'big')",
    ):
        sql.execute(call).collect()
    lake.close()
    con = _duckdb(catalog, "")
    _assert_same_everywhere(spark, catalog, con)  # the DML's snapshots and the maintenance's
    current = {t: duckdb_rows(con, t, None) for t in TABLES}
    con.execute("CALL ducklake_expire_snapshots('lake', older_than => now())")
    con.execute("USE memory")
    con.execute("DETACH lake")
    lake = Lake.open(catalog.metadata)
    LakeSQL(spark, lake).execute(
        "CALL ducklake_cleanup_old_files('lake', cleanup_all => true)"
    ).collect()
    for table in TABLES:
        assert our_rows(spark, lake, table, None) == current[table], table
    lake.close()
    con = _duckdb(catalog, "")
    for table in TABLES:
        assert duckdb_rows(con, table, None) == current[table]
    con.close()


@pytest.mark.parametrize("in_scan", [True, False], ids=["jvm-filter", "anti-join"])
def test_a_corrupt_vector_fails_naming_the_file(
    spark, sqlite_catalog: Catalog, in_scan: bool, monkeypatch
) -> None:
    monkeypatch.setattr(kept_rows, "IN_SCAN", in_scan)
    con = _duckdb(sqlite_catalog)
    _build_with_vectors(con)
    path = con.execute(
        "SELECT path FROM __ducklake_metadata_lake.ducklake_delete_file "
        "WHERE end_snapshot IS NULL AND table_id = (SELECT table_id FROM "
        "__ducklake_metadata_lake.ducklake_table WHERE table_name = 'big' AND end_snapshot IS NULL)"
    ).fetchone()
    con.close()
    assert path is not None
    found = [
        os.path.join(d, n)
        for d, _, names in os.walk(sqlite_catalog.data_path)
        for n in names
        if n == path[0]
    ]
    assert len(found) == 1
    vector = Path(found[0])
    data = bytearray(vector.read_bytes())
    data[40] ^= 0x10  # one bit inside a bitmap: the CRC no longer matches
    vector.write_bytes(bytes(data))
    lake = Lake.open(sqlite_catalog.metadata)
    with pytest.raises(
        Exception, match=rf"deletion vector .*{path[0]} is corrupt \(CRC mismatch\)"
    ):
        scan_table(spark, lake, "main", "big").count()
    lake.close()


@SQLITE_IN_CI
def test_our_vectors_read_identically_in_duckdb_with_time_travel(spark, catalog: Catalog) -> None:
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    sql = LakeSQL(spark, lake)
    sql.execute("CALL ducklake_set_option('lake', 'data_inlining_row_limit', 0)")
    sql.execute("CALL ducklake_set_option('lake', 'write_deletion_vectors', true)")
    sql.execute("CREATE TABLE main.t AS SELECT id, id * 2 AS v FROM range(0, 1000, 1, 1)")
    sql.execute("INSERT INTO main.t SELECT id, id * 2 FROM range(1000, 1500, 1, 1)")
    sql.execute("DELETE FROM main.t WHERE id % 10 = 3")
    sql.execute("DELETE FROM main.t WHERE id BETWEEN 100 AND 120")  # a second vector
    sql.execute("DELETE FROM main.t WHERE id IN (999, 1400)")  # a third
    sql.execute("UPDATE main.t SET v = -1 WHERE id % 100 = 7")
    sql.execute(
        "MERGE INTO main.t AS t USING (SELECT id, id AS v FROM range(1480, 1520)) AS s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)"
    )
    sql.execute("CREATE TABLE main.big AS SELECT id FROM range(0, 70000, 1, 1)")
    sql.execute("DELETE FROM main.big WHERE id % 3 = 0 OR id BETWEEN 30000 AND 40000")
    lake.close()

    con = _duckdb(catalog, "")
    live = _vector_files(con)
    assert live and {f for f, _ in live} == {"puffin"}, live
    assert _assert_same_everywhere(spark, catalog, con) > 0
    # the second and third vectors of a file ended the earlier ones: every delete of
    # the history is there for time travel, in DuckDB too
    ended = con.execute(
        "SELECT count(*) FROM __ducklake_metadata_lake.ducklake_delete_file "
        "WHERE format = 'puffin' AND end_snapshot IS NOT NULL"
    ).fetchone()
    assert ended is not None and ended[0] >= 2
    _assert_same_feed(spark, catalog, con)
    current = {t: duckdb_rows(con, t, None) for t in TABLES}
    con.close()

    # expiring every older snapshot drops the ended vectors, and cleanup their files
    lake = Lake.open(catalog.metadata)
    sql = LakeSQL(spark, lake)
    sql.execute("CALL ducklake_expire_snapshots('lake', older_than => now())").collect()
    sql.execute("CALL ducklake_cleanup_old_files('lake', cleanup_all => true)").collect()
    lake.close()
    con = _duckdb(catalog, "")
    assert {t: duckdb_rows(con, t, None) for t in TABLES} == current
    _assert_same_everywhere(spark, catalog, con)
    live = con.execute(
        "SELECT path FROM __ducklake_metadata_lake.ducklake_delete_file WHERE format = 'puffin'"
    ).fetchall()
    on_disk = {n for _, _, names in os.walk(catalog.data_path) for n in names if "puffin" in n}
    assert on_disk == {os.path.basename(p) for (p,) in live}
    con.close()
