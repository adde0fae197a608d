"""A lake whose data path is on S3 (moto's server, through Spark's S3A connector and
pyarrow's S3 filesystem): writes, merge-on-read DML, a partitioned and sorted table,
compaction, expire + cleanup and orphan deletion, each read identically by DuckDB's
httpfs; and the driver's file operations give on S3 what they give on a local disk."""

from __future__ import annotations

import functools
import os
import uuid
from datetime import datetime, timedelta, timezone
from typing import Any

import pyarrow as pa

from dbt.adapters.ducklake.lake import Column, FileIO, Lake
from dbt.adapters.ducklake.spark import changes
from dbt.adapters.ducklake.spark import maintenance as mt
from dbt.adapters.ducklake.spark.arrow import DeleteTarget, file_facts, write_delete_file
from dbt.adapters.ducklake.spark.compat import builds_from_arrow
from dbt.adapters.ducklake.spark.scan import IN_SCAN_READER, ScanMetrics, scan_table
from dbt.adapters.ducklake.spark.sql import LakeSQL
from dbt.adapters.ducklake.storage import apply_s3
from tests import duck
from tests.canon import canon_rows
from tests.conftest import Catalog, S3Server
from tests.spark.test_driver_changes import _Served
from tests.spark.test_roundtrip import _spark_rows

TABLES = ["main.t", "main.p"]


def _same_in_duckdb(sql: LakeSQL, con, tables: list[str]) -> None:
    for name in tables:
        ours = _spark_rows(sql.query(f"SELECT * FROM {name}"))
        theirs = con.execute(f"SELECT * FROM lake.{name}").fetchall()
        assert canon_rows(ours) == canon_rows(theirs), name
        assert ours, name


def _same_feed_in_duckdb(sql: LakeSQL, con, lake: Lake, monkeypatch) -> None:
    """t's change feed over its DML steps equals DuckDB's; these small windows are read
    by the driver from S3 (on Spark 4)."""
    served = _Served()
    last = lake.latest_snapshot().snapshot_id
    with monkeypatch.context() as patched:
        patched.setattr(changes, "feed_on_driver", served)
        for lo, hi in [(s, s) for s in range(last - 3, last + 1)] + [(last - 3, last)]:
            ours = _spark_rows(sql.query(f"SELECT * FROM table_changes('main.t', {lo}, {hi})"))
            theirs = con.execute(f"SELECT * FROM lake.table_changes('t', {lo}, {hi})").fetchall()
            assert canon_rows(ours) == canon_rows(theirs), (lo, hi)
    assert served.driver == (5 if builds_from_arrow(sql.spark) else 0)


def _live(lake: Lake) -> list[Any]:
    """The live data files of t and p, and their delete files."""
    cat = lake.catalog()
    files: list[Any] = []
    for name in ("t", "p"):
        for f in cat.table_state("main", name).data_files:
            files += [f] + ([f.delete_file] if f.delete_file is not None else [])
    return files


def _live_files(lake: Lake) -> set[str]:
    return {f.path for f in _live(lake)}


def _stored(lake: Lake) -> set[str]:
    return {e.path for e in lake.files.walk(lake.data_path) if not e.is_dir}


def test_lake_on_s3_reads_the_same_in_duckdb(
    spark, s3_server: S3Server, sqlite_catalog: Catalog, tmp_path, monkeypatch
) -> None:
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)  # nothing may land on the local disk (an s3:/ folder, say)
    data_path = f"s3://{s3_server.new_bucket()}/lake/"
    apply_s3(spark, s3_server.settings())
    lake = Lake.open(
        sqlite_catalog.metadata, data_path=data_path, files=FileIO(s3_server.settings())
    )
    assert lake.data_path == data_path  # the catalog keeps the URL, as DuckDB does
    with lake.transaction() as tx:
        tx.set_option("data_inlining_row_limit", "0")  # every write makes files
    sql = LakeSQL(spark, lake)
    sql.execute(
        "CREATE TABLE main.t AS SELECT id, CAST(id % 5 AS INT) AS k, "
        "CAST(id AS STRING) AS s, CAST(id AS DOUBLE) / 3 AS x FROM range(300)"
    )
    sql.execute("INSERT INTO main.t SELECT id, 9, 'new', 0.5 FROM range(300, 340)")
    sql.execute(
        "CREATE TABLE main.p PARTITIONED BY (k) SORTED BY (id DESC) AS "
        "SELECT id, CAST(id % 3 AS INT) AS k, array(id, id + 1) AS xs FROM range(90)"
    )
    sql.execute("DELETE FROM main.t WHERE id % 7 = 0")  # delete files, written by tasks
    sql.execute("UPDATE main.t SET s = 'u' WHERE id < 30")  # a partial delete file
    sql.execute(
        "MERGE INTO main.t USING (SELECT id, 'm' AS s FROM range(320, 360)) src "
        "ON t.id = src.id WHEN MATCHED THEN UPDATE SET s = src.s "
        "WHEN NOT MATCHED THEN INSERT (id, k, s, x) VALUES (src.id, 1, src.s, 1.0)"
    )
    sql.execute("DELETE FROM main.p WHERE id < 10")
    con = duck.connect_s3(s3_server.duckdb_secret())
    duck.attach(con, sqlite_catalog.duckdb_attach)
    _same_in_duckdb(sql, con, TABLES)
    _same_feed_in_duckdb(sql, con, lake, monkeypatch)
    metrics = ScanMetrics()  # the scans' tasks read the delete files from S3 themselves
    scan_table(spark, lake, "main", "t", metrics=metrics)
    assert metrics.deletes_applied == [IN_SCAN_READER]
    before = {n: canon_rows(_spark_rows(sql.query(f"SELECT * FROM {n}"))) for n in TABLES}

    # compaction: rewrite the deleted-from files, merge the rest
    assert mt.rewrite_data_files(spark, lake, delete_threshold=0.0)
    assert mt.merge_adjacent_files(spark, lake)
    con.execute("DETACH lake")
    duck.attach(con, sqlite_catalog.duckdb_attach)
    _same_in_duckdb(sql, con, TABLES)

    # expire every older snapshot, then delete exactly the files nobody reads any more
    latest = lake.latest_snapshot()
    assert mt.expire_snapshots(lake, older_than=latest.snapshot_time)
    removed = mt.cleanup_old_files(spark, lake, cleanup_all=True)
    assert removed and all(p.startswith(data_path) for p in removed)
    assert not any(lake.files.exists(p) for p in removed)

    # orphans: an untracked file and a dead writer's staging folder go, nothing else
    orphan = f"{data_path}main/t/ducklake-{uuid.uuid4()}.parquet"
    staged = f"{data_path}main/t/ducklake-write-{uuid.uuid4()}/part-00000.parquet"
    for path in (orphan, staged):
        lake.files.write_table(pa.table({"a": [1]}), path)
    # S3's LastModified is their age: fresh files stay unless everything goes
    hour_ago = datetime.now(timezone.utc) - timedelta(hours=1)
    assert mt.delete_orphaned_files(spark, lake, older_than=hour_ago) == []
    assert lake.files.exists(orphan) and lake.files.exists(staged)
    deleted = mt.delete_orphaned_files(spark, lake, cleanup_all=True)
    assert sorted(deleted) == sorted([orphan, staged])
    assert _stored(lake) == _live_files(lake)

    con.execute("DETACH lake")
    duck.attach(con, sqlite_catalog.duckdb_attach)
    _same_in_duckdb(sql, con, TABLES)
    assert {n: canon_rows(_spark_rows(sql.query(f"SELECT * FROM {n}"))) for n in TABLES} == before
    con.close()
    assert os.listdir(cwd) == []


def _named(renames: dict[str, str], path: str) -> str:
    for old, new in renames.items():
        path = path.replace(old, new)
    return path


def _column(column_id: int, name: str, type_: str) -> Column:
    return Column(
        column_id, name, type_, True, column_id, None, None, "NULL", "literal", "duckdb", 0
    )


def test_file_operations_on_s3_match_a_local_disk(spark, s3_server: S3Server, tmp_path) -> None:
    """The abstraction's operations (the ones footer stats, delete files, cleanup and
    orphan listing use) give the same answers for an S3 prefix and a local directory."""
    apply_s3(spark, s3_server.settings())
    s3 = FileIO(s3_server.settings())
    roots = {"local": str(tmp_path) + "/", "s3": f"s3://{s3_server.new_bucket()}/t/"}
    columns = [_column(1, "id", "int64"), _column(2, "x", "float64")]
    table = pa.table(
        {
            "id": pa.array([3, 1, 2], pa.int64()),
            "x": pa.array([0.5, float("nan"), -1.0]),
        }
    )
    seen = {}
    for kind, root in roots.items():
        files = s3 if kind == "s3" else FileIO()
        data = root + "sub/ducklake-a.parquet"
        files.write_table(table, data)
        facts = file_facts(files, data, columns, None, "sub/ducklake-a.parquet")
        target = DeleteTarget(root, files, data, None, None)
        first = write_delete_file(target, [2, 0], 5, "snappy")
        again = DeleteTarget(root, files, data, root + first["path"], 5)
        partial = write_delete_file(again, [1], 6, "snappy")
        before = files.modified(data)
        files.rename(data, root + "sub/ducklake-b.parquet")
        listing = sorted((e.path[len(root) :], e.is_dir) for e in files.walk(root) if not e.is_dir)
        names = sorted(files.list_names(root + "sub"))
        sizes = [files.size(root + f["path"]) == f["file_size"] for f in (first, partial)]
        removed = mt.remove_files(spark, files, [root + first["path"], root + "missing.parquet"])
        gone = not files.exists(root + first["path"])
        deleted_rows = files.read_table(root + partial["path"]).to_pylist()
        files.delete_dir(root + "sub")

        renames = {first["path"]: "D1", partial["path"]: "D2"}  # delete files' random names
        named = functools.partial(_named, renames)

        # a delete file holds the data file's full path: its size depends on the root
        facts_of = {"path", "file_size", "footer_size"}
        seen[kind] = {
            "facts": facts,
            "first": {k: v for k, v in first.items() if k not in facts_of},
            "partial": {k: v for k, v in partial.items() if k not in facts_of},
            "deleted rows": [{**r, "file_path": r["file_path"][len(root) :]} for r in deleted_rows],
            "modified": isinstance(before, datetime) and before.tzinfo is not None,
            "listing": sorted((named(p), d) for p, d in listing),
            "names": names,
            "removed": removed,
            "gone": gone,
            "sizes": sizes,
            "after delete_dir": sorted(named(e.path[len(root) :]) for e in files.walk(root)),
        }
    assert seen["s3"] == seen["local"]
    local = seen["local"]
    assert local["facts"]["record_count"] == 3 and local["partial"]["delete_count"] == 3
    assert local["listing"] == [
        ("D1", False),
        ("D2", False),
        ("sub/ducklake-b.parquet", False),
    ]
    assert local["removed"] == 2 and local["gone"] and local["sizes"] == [True, True]
    assert local["after delete_dir"] == ["D2"] and local["names"] == ["ducklake-b.parquet"]
    assert local["deleted rows"] == [
        {"file_path": "sub/ducklake-a.parquet", "pos": p, "_ducklake_internal_snapshot_id": s}
        for p, s in [(0, 5), (1, 6), (2, 5)]
    ]


def test_encrypted_lake_on_s3_reads_the_same_in_duckdb(
    spark, s3_server: S3Server, sqlite_catalog: Catalog
) -> None:
    """An encrypted lake on S3: sealed files are stored through the tasks' S3 client and
    read back through S3A's keyed reads; DuckDB (httpfs) reads every table the same."""
    data_path = f"s3://{s3_server.new_bucket()}/sealed/"
    apply_s3(spark, s3_server.settings())
    lake = Lake.open(
        sqlite_catalog.metadata,
        data_path=data_path,
        files=FileIO(s3_server.settings()),
        encrypted=True,
    )
    with lake.transaction() as tx:
        tx.set_option("data_inlining_row_limit", "0")
    sql = LakeSQL(spark, lake)
    sql.execute("CREATE TABLE main.t AS SELECT id, CAST(id AS STRING) AS s FROM range(300)")
    sql.execute(
        "CREATE TABLE main.p PARTITIONED BY (k) AS "
        "SELECT id, CAST(id % 3 AS INT) AS k, array(id, id + 1) AS xs FROM range(90)"
    )
    sql.execute("DELETE FROM main.t WHERE id % 7 = 0")
    sql.execute(
        "MERGE INTO main.t USING (SELECT id, 'm' AS s FROM range(280, 320)) src "
        "ON t.id = src.id WHEN MATCHED THEN UPDATE SET s = src.s "
        "WHEN NOT MATCHED THEN INSERT (id, s) VALUES (src.id, src.s)"
    )
    sql.execute("DELETE FROM main.t WHERE id % 7 = 1")  # over our encrypted delete files
    keys = [f.encryption_key for f in _live(lake)]
    assert keys and all(keys), keys
    for path in _stored(lake):
        data = lake.files.read_bytes(path)
        assert data[:4] == data[-4:] == b"PARE", path
    con = duck.connect_s3(s3_server.duckdb_secret())
    duck.attach(con, sqlite_catalog.duckdb_attach)
    _same_in_duckdb(sql, con, TABLES)
    con.close()
    lake.close()
