"""Maintenance on lakes we write, judged by DuckDB: merging small files keeps every
snapshot's rows (here and in DuckDB), rewriting drops deleted rows, expiring and
cleaning up delete exactly the files no remaining snapshot reads, orphan deletion only
touches untracked old files, and checkpoint does all of it."""

from __future__ import annotations

import glob
import os
import time
from datetime import datetime, timedelta, timezone

import pyarrow.parquet as pq
import pytest

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.lake.errors import InvalidChangeError
from dbt.adapters.ducklake.spark import maintenance as mt
from dbt.adapters.ducklake.spark.engine import CommitInfo
from dbt.adapters.ducklake.spark.sql import LakeSQL
from tests import duck
from tests.conftest import Catalog
from tests.sizes import size

META = "__ducklake_metadata_lake"


def _lake(spark, catalog: Catalog) -> tuple[Lake, LakeSQL]:
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    with lake.transaction() as tx:
        tx.set_option("data_inlining_row_limit", "0")  # every append writes a file
    return lake, LakeSQL(spark, lake)


def _duck(catalog: Catalog):
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    con.execute("USE lake")
    return con


def _history(con, table: str, versions: range) -> dict[int, list[tuple]]:
    return {
        v: sorted(con.execute(f"SELECT * FROM {table} AT (VERSION => {v})").fetchall())
        for v in versions
    }


def _ours(sql: LakeSQL, table: str, version: int) -> list[tuple]:
    return sorted(
        tuple(r) for r in sql.execute(f"SELECT * FROM {table} VERSION AS OF {version}").collect()
    )


def _our_feed(sql: LakeSQL, table: str, first: int, last: int) -> list[tuple]:
    """Our `table_changes` of the window, sorted as DuckDB's rows are compared."""
    query = f"SELECT * FROM table_changes('{table}', {first}, {last})"
    return sorted(tuple(r) for r in sql.query(query).collect())


def _changes(con) -> list[str]:
    rows = con.execute(
        f"SELECT changes_made FROM {META}.ducklake_snapshot_changes ORDER BY snapshot_id"
    ).fetchall()
    return [r[0] for r in rows]


def _live_files(con, table: str) -> list[tuple]:
    return con.execute(
        f"""SELECT f.data_file_id, v.partition_value, f.path, f.record_count
            FROM {META}.ducklake_data_file f
            JOIN {META}.ducklake_table t ON t.table_id = f.table_id AND t.end_snapshot IS NULL
            LEFT JOIN {META}.ducklake_file_partition_value v ON v.data_file_id = f.data_file_id
            WHERE t.table_name = '{table}' AND f.end_snapshot IS NULL"""
    ).fetchall()


# appends before the merge: 8 in CI, 20 under ./dev test --full
APPENDS = size("DUCKLAKE_MAINTENANCE_APPENDS", 8, 20)


def test_merge_after_many_appends_keeps_every_snapshot(spark, catalog: Catalog) -> None:
    lake, sql = _lake(spark, catalog)
    sql.execute(
        "CREATE TABLE ev PARTITIONED BY (region) SORTED BY (id DESC) AS "
        "SELECT CAST(id AS INT) AS id, CAST(id % 2 AS INT) AS region, concat('v', id) AS v "
        "FROM range(0, 10)"
    )
    for i in range(APPENDS):
        lo = 100 + 5 * i
        sql.execute(
            f"INSERT INTO ev SELECT CAST(id AS INT), CAST(id % 2 AS INT), concat('v', id) "
            f"FROM range({lo}, {lo + 5})"
        )
    sql.execute("DELETE FROM ev WHERE id = 3")  # that file has deletes: left alone
    con = _duck(catalog)
    last = con.execute("SELECT max(snapshot_id) FROM snapshots()").fetchone()[0]
    versions = range(2, last + 1)
    before = _history(con, "ev", versions)
    feed_before = sorted(con.execute("FROM table_changes('ev', 4, 9)").fetchall())
    assert len(_live_files(con, "ev")) == 2 * (APPENDS + 1)  # one file per region each
    con.close()

    rows = mt.merge_adjacent_files(spark, lake, CommitInfo(author="ci", message="compact ev"))

    assert sorted((r.files_processed, r.files_created) for r in rows) == [
        (APPENDS, 1),
        (APPENDS + 1, 1),
    ]
    con = _duck(catalog)
    files = _live_files(con, "ev")
    per_partition: dict[str, int] = {}
    for _fid, region, _path, _count in files:
        per_partition[region] = per_partition.get(region, 0) + 1
    assert per_partition == {"0": 1, "1": 2}  # region 1 keeps the file with a delete
    assert _history(con, "ev", versions) == before
    assert sorted(con.execute("FROM table_changes('ev', 4, 9)").fetchall()) == feed_before
    # ours reads the merged files' rows of the window (per-row snapshot ids) as DuckDB does
    assert _our_feed(sql, "ev", 4, 9) == feed_before
    for v in (4, 6, 9):
        assert _our_feed(sql, "ev", v, v) == sorted(
            con.execute(f"FROM table_changes('ev', {v}, {v})").fetchall()
        )
    for v in versions:
        assert _ours(sql, "ev", v) == before[v]
    snap = con.execute(
        "SELECT snapshot_id, author, commit_message FROM snapshots() "
        "ORDER BY snapshot_id DESC LIMIT 1"
    ).fetchone()
    assert snap == (last + 1, "ci", "compact ev")
    assert _changes(con)[-1] == "merge_adjacent:1"
    # the merged files are sorted by the table's sort key and keep per-row lineage
    for _fid, _region, path, count in files:
        if count > 10:
            table = pq.read_table(os.path.join(lake.data_path, "main", "ev", path))
            ids = table.column("id").to_pylist()
            assert ids == sorted(ids, reverse=True)
            assert "_ducklake_internal_snapshot_id" in table.column_names
    # the replaced files wait for cleanup
    scheduled = con.execute(f"SELECT count(*) FROM {META}.ducklake_files_scheduled_for_deletion")
    assert scheduled.fetchone()[0] == 2 * APPENDS + 1
    # a second call finds nothing left to merge and writes no snapshot
    assert mt.merge_adjacent_files(spark, lake) == []
    assert lake.latest_snapshot().snapshot_id == last + 1


def test_merge_respects_auto_compact_and_size_limits(spark, sqlite_catalog: Catalog) -> None:
    lake, sql = _lake(spark, sqlite_catalog)
    for name in ("a", "b"):
        sql.execute(f"CREATE TABLE {name} AS SELECT CAST(id AS INT) AS id FROM range(0, 3)")
        for i in range(3):
            sql.execute(f"INSERT INTO {name} SELECT CAST(id AS INT) FROM range({i}, {i + 2})")
    with lake.transaction() as tx:
        tx.set_option("auto_compact", "false", table=tx.table("main", "b"))
        tx.set_option("target_file_size", "1000", table=tx.table("main", "a"))
    cat = lake.catalog()
    files_a = cat.data_files(cat.table("main", "a"))
    files_b = cat.data_files(cat.table("main", "b"))
    assert mt.merge_adjacent_files(spark, lake, min_file_size=10**9) == []
    # a's small target packs its files in several groups; only one of them is merged
    rows = mt.merge_adjacent_files(spark, lake, max_compacted_files=1)
    assert [r.table_name for r in rows] == ["a"]
    assert 2 <= rows[0].files_processed < len(files_a)
    cat = lake.catalog()
    assert len(cat.data_files(cat.table("main", "a"))) == len(files_a) - rows[0].files_processed + 1
    # naming the table compacts it even with auto_compact off
    rows = mt.merge_adjacent_files(spark, lake, table="b")
    assert [(r.table_name, r.files_processed) for r in rows] == [("b", len(files_b))]


def test_rewrite_drops_deleted_rows_and_keeps_history(spark, catalog: Catalog) -> None:
    lake, sql = _lake(spark, catalog)
    sql.execute(
        "CREATE TABLE t AS SELECT CAST(id AS INT) AS id, id * 2 AS x FROM range(0, 100, 1, 1)"
    )
    sql.execute("INSERT INTO t SELECT CAST(id AS INT), id * 2 FROM range(100, 200, 1, 1)")
    sql.execute("DELETE FROM t WHERE id < 60")  # 60% of the first file
    sql.execute("DELETE FROM t WHERE id BETWEEN 100 AND 109")  # 10% of the second
    con = _duck(catalog)
    last = con.execute("SELECT max(snapshot_id) FROM snapshots()").fetchone()[0]
    before = _history(con, "t", range(2, last + 1))
    con.close()

    rows = mt.rewrite_data_files(spark, lake, table="t", delete_threshold=0.5)

    assert [(r.files_processed, r.files_created) for r in rows] == [(1, 1)]
    con = _duck(catalog)
    assert _history(con, "t", range(2, last + 1)) == before
    assert sorted(con.execute("SELECT * FROM t").fetchall()) == before[last]
    files = _live_files(con, "t")
    assert sorted(f[3] for f in files) == [40, 100]  # the rewritten file holds live rows only
    # rows keep their ids
    ids = con.execute("SELECT rowid, id FROM t WHERE id >= 60 AND id < 100 ORDER BY id").fetchall()
    assert ids == [(i, i) for i in range(60, 100)]
    assert _changes(con)[-1] == "rewrite_delete:1"
    for v in range(2, last + 2):
        assert _ours(sql, "t", v) == sorted(
            con.execute(f"SELECT * FROM t AT (VERSION => {v})").fetchall()
        )


def _data_files_on_disk(lake: Lake) -> set[str]:
    return {
        os.path.normpath(p)
        for p in glob.glob(os.path.join(lake.data_path, "**", "*.parquet"), recursive=True)
    }


def test_expire_and_cleanup_delete_only_files_of_expired_snapshots(spark, catalog: Catalog) -> None:
    lake, sql = _lake(spark, catalog)

    def step(statement: str) -> int:
        sql.execute(statement)
        return lake.latest_snapshot().snapshot_id

    s_keep = step("CREATE TABLE keep AS SELECT CAST(id AS INT) AS id FROM range(0, 5, 1, 1)")
    s_gone = step("CREATE TABLE gone AS SELECT CAST(id AS INT) AS id FROM range(0, 5, 1, 1)")
    s_more = step("INSERT INTO keep SELECT CAST(id AS INT) FROM range(5, 10)")
    s_del = step("DELETE FROM keep WHERE id < 5")  # ends keep's first file
    s_drop = step("DROP TABLE gone")
    s_last = step("INSERT INTO keep SELECT CAST(id AS INT) FROM range(10, 12)")
    on_disk = _data_files_on_disk(lake)
    con = _duck(catalog)
    live_before = sorted(con.execute("SELECT * FROM keep").fetchall())
    con.close()

    dry = mt.expire_snapshots(lake, versions=[s_keep, s_gone], dry_run=True)
    assert [s.snapshot_id for s in dry] == [s_keep, s_gone]
    assert [s.snapshot_id for s in lake.snapshots()][-6:] == [
        s_keep,
        s_gone,
        s_more,
        s_del,
        s_drop,
        s_last,
    ]
    # the latest snapshot never expires
    expired = mt.expire_snapshots(lake, versions=[s_keep, s_gone, s_more, s_del, s_last])
    assert [s.snapshot_id for s in expired] == [s_keep, s_gone, s_more, s_del]

    con = _duck(catalog)
    scheduled = [
        r[0]
        for r in con.execute(
            f"SELECT path FROM {META}.ducklake_files_scheduled_for_deletion"
        ).fetchall()
    ]
    # keep's first file (ended at 5) and gone's file (dropped at 6): no snapshot reads them
    assert sorted(p.split("/")[1] for p in scheduled) == ["gone", "keep"]
    remaining = [
        r[0] for r in con.execute("SELECT snapshot_id FROM snapshots() ORDER BY 1").fetchall()
    ]
    assert remaining[-2:] == [s_drop, s_last] and s_keep not in remaining
    assert sorted(con.execute("SELECT * FROM keep").fetchall()) == live_before
    con.close()

    assert mt.cleanup_old_files(spark, lake, cleanup_all=True, dry_run=True)
    assert _data_files_on_disk(lake) == on_disk
    removed = mt.cleanup_old_files(spark, lake, cleanup_all=True)
    assert len(removed) == 2
    assert _data_files_on_disk(lake) == on_disk - {os.path.normpath(p) for p in removed}
    con = _duck(catalog)
    assert (
        con.execute(
            f"SELECT count(*) FROM {META}.ducklake_files_scheduled_for_deletion"
        ).fetchone()[0]
        == 0
    )
    assert sorted(con.execute("SELECT * FROM keep").fetchall()) == live_before
    assert sorted(con.execute(f"SELECT * FROM keep AT (VERSION => {s_drop})").fetchall()) == [
        (i,) for i in range(5, 10)
    ]
    assert sorted(r[0] for r in sql.execute("SELECT id FROM keep").collect()) == [
        r[0] for r in live_before
    ]


def test_orphans_only_untracked_files_older_than_the_threshold(
    spark, sqlite_catalog: Catalog
) -> None:
    lake, sql = _lake(spark, sqlite_catalog)
    sql.execute("CREATE TABLE t AS SELECT CAST(id AS INT) AS id FROM range(0, 5)")
    tracked = _data_files_on_disk(lake)
    table_dir = os.path.join(lake.data_path, "main", "t")
    old, new = os.path.join(table_dir, "old-orphan.parquet"), os.path.join(table_dir, "new.parquet")
    for path in (old, new):
        with open(path, "wb") as f:
            f.write(b"not tracked")
    two_days_ago = time.time() - 2 * 86400
    os.utime(old, (two_days_ago, two_days_ago))
    os.utime(next(iter(tracked)), (two_days_ago, two_days_ago))  # old but tracked: kept

    cutoff = datetime.now(timezone.utc) - timedelta(days=1)
    assert mt.delete_orphaned_files(spark, lake, older_than=cutoff, dry_run=True) == [old]
    assert os.path.exists(old)
    assert mt.delete_orphaned_files(spark, lake, older_than=cutoff) == [old]
    assert not os.path.exists(old) and os.path.exists(new)
    assert tracked <= _data_files_on_disk(lake)
    assert mt.delete_orphaned_files(spark, lake, cleanup_all=True) == [new]
    assert _data_files_on_disk(lake) == tracked
    con = _duck(sqlite_catalog)
    assert sorted(con.execute("SELECT * FROM t").fetchall()) == [(i,) for i in range(5)]


def test_checkpoint_runs_everything_with_the_lake_options(spark, catalog: Catalog) -> None:
    lake, sql = _lake(spark, catalog)
    sql.execute("CREATE TABLE t AS SELECT CAST(id AS INT) AS id FROM range(0, 10)")
    for i in range(4):
        sql.execute(f"INSERT INTO t SELECT CAST(id AS INT) FROM range({10 + i * 3}, {13 + i * 3})")
    sql.execute("DELETE FROM t WHERE id < 9")
    stray = os.path.join(lake.data_path, "main", "t", "stray.parquet")
    with open(stray, "wb") as f:
        f.write(b"x")
    with lake.transaction() as tx:
        tx.set_option("expire_older_than", "1 second")
        tx.set_option("delete_older_than", "1 hour")
        tx.set_option("rewrite_delete_threshold", "0.5")
    con = _duck(catalog)
    live = sorted(con.execute("SELECT * FROM t").fetchall())
    con.close()
    two_hours_ago = time.time() - 7200
    os.utime(stray, (two_hours_ago, two_hours_ago))
    time.sleep(1.2)

    mt.checkpoint(spark, lake, CommitInfo(message="checkpoint"))

    con = _duck(catalog)
    assert sorted(con.execute("SELECT * FROM t").fetchall()) == live
    assert len(_live_files(con, "t")) == 2  # 4 appends merged; the first file rewritten
    changes = _changes(con)
    assert changes[-2:] == ["merge_adjacent:1", "rewrite_delete:1"]
    assert len(changes) == 3  # every snapshot older than a second expired
    assert not os.path.exists(stray)
    first = _scheduled(lake, con)
    assert len(first) >= 4 and all(os.path.exists(p) for p in first)  # younger than an hour
    con.close()

    with lake.transaction() as tx:
        tx.set_option("delete_older_than", "1 second")
    time.sleep(1.2)
    mt.checkpoint(spark, lake, CommitInfo(message="checkpoint"))

    con = _duck(catalog)
    assert sorted(con.execute("SELECT * FROM t").fetchall()) == live
    assert len(_changes(con)) <= 2  # the previous latest, and a merge of what is left
    assert not any(os.path.exists(p) for p in first)
    referenced = {
        os.path.normpath(os.path.join(lake.data_path, "main", "t", r[0]))
        for r in con.execute(
            f"SELECT path FROM {META}.ducklake_data_file UNION ALL "
            f"SELECT path FROM {META}.ducklake_delete_file"
        ).fetchall()
    }
    # what is left on disk: files the catalog reads, or scheduled by this checkpoint
    assert _data_files_on_disk(lake) == referenced | set(_scheduled(lake, con))


def _scheduled(lake: Lake, con) -> list[str]:
    rows = con.execute(f"SELECT path FROM {META}.ducklake_files_scheduled_for_deletion")
    return [os.path.normpath(os.path.join(lake.data_path, r[0])) for r in rows.fetchall()]


@pytest.mark.parametrize("bad", [{"delete_threshold": 1.5}, {"max_file_size": 0}])
def test_invalid_parameters_fail_before_any_work(spark, sqlite_catalog: Catalog, bad) -> None:
    lake, sql = _lake(spark, sqlite_catalog)
    sql.execute("CREATE TABLE t AS SELECT CAST(id AS INT) AS id FROM range(0, 3)")
    sql.execute("INSERT INTO t SELECT CAST(id AS INT) FROM range(3, 6)")
    latest = lake.latest_snapshot().snapshot_id
    fn = mt.rewrite_data_files if "delete_threshold" in bad else mt.merge_adjacent_files
    with pytest.raises(InvalidChangeError, match=r"between 0 and 1|greater than 0"):
        fn(spark, lake, **bad)
    assert lake.latest_snapshot().snapshot_id == latest


def test_flush_inlined_data_keeps_every_snapshot(spark, catalog: Catalog) -> None:
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)  # inlining: 10 rows
    sql = LakeSQL(spark, lake)
    sql.execute(
        "CREATE TABLE t AS SELECT CAST(id AS INT) AS id, 'file' AS v FROM range(0, 20, 1, 1)"
    )
    first = lake.latest_snapshot().snapshot_id
    sql.execute("INSERT INTO t VALUES (100, 'a'), (101, 'b')")  # inlined
    sql.execute("INSERT INTO t VALUES (102, 'c')")
    sql.execute("DELETE FROM t WHERE id = 101")  # an inlined row ends
    sql.execute("DELETE FROM t WHERE id = 3")  # an inlined deletion of a file row
    sql.execute("UPDATE t SET v = 'upd' WHERE id = 102")
    con = _duck(catalog)
    last = con.execute("SELECT max(snapshot_id) FROM snapshots()").fetchone()[0]
    versions = range(first, last + 1)
    before = _history(con, "t", versions)
    feed = sorted(con.execute(f"FROM table_changes('t', {first + 1}, {last})").fetchall())
    con.close()

    result = sql.execute("CALL ducklake_flush_inlined_data('lake')")

    assert [tuple(r) for r in result.collect()] == [("main", "t", 4)]
    con = _duck(catalog)
    assert _history(con, "t", versions) == before
    assert sorted(con.execute(f"FROM table_changes('t', {first + 1}, {last})").fetchall()) == feed
    assert _our_feed(sql, "t", first + 1, last) == feed
    for v in range(first + 1, last + 1):  # the flushed file holds rows of each snapshot
        theirs = sorted(con.execute(f"FROM table_changes('t', {v}, {v})").fetchall())
        assert _our_feed(sql, "t", v, v) == theirs, v
    for v in versions:
        assert _ours(sql, "t", v) == before[v]
    assert _changes(con)[-1] == "deleted_from_table:1,inline_flush:1"
    inlined = con.execute(f"SELECT table_name FROM {META}.ducklake_inlined_data_tables").fetchall()
    for (name,) in inlined:
        assert con.execute(f"SELECT count(*) FROM {META}.{name}").fetchone()[0] == 0
    assert con.execute(f"SELECT count(*) FROM {META}.ducklake_inlined_delete_1").fetchone()[0] == 0
    # DuckDB's flush of the same lake would find nothing left
    assert con.execute("CALL ducklake_flush_inlined_data('lake')").fetchall() == []
    assert mt.flush_inlined_data(spark, lake) == []


def test_call_statements_in_lake_sql(spark, sqlite_catalog: Catalog) -> None:
    lake, sql = _lake(spark, sqlite_catalog)
    sql.execute("CREATE SCHEMA shop")
    sql.execute("CREATE TABLE shop.ev AS SELECT CAST(id AS INT) AS id FROM range(0, 4)")
    sql.execute("INSERT INTO shop.ev SELECT CAST(id AS INT) FROM range(4, 8)")
    sql.execute("CALL lake.set_option('auto_compact', false, schema => 'shop')")
    assert lake.option("auto_compact", schema_id=lake.catalog().schema("shop").schema_id) == "false"
    assert sql.execute("CALL ducklake_merge_adjacent_files('lake')").collect() == []
    rows = sql.execute(
        "CALL ducklake_merge_adjacent_files('lake', 'ev', schema => 'shop', "
        "max_file_size => 1000000)"
    ).collect()
    assert [(r.schema_name, r.table_name, r.files_created) for r in rows] == [("shop", "ev", 1)]
    latest = lake.latest_snapshot().snapshot_id
    expired = sql.execute(
        f"CALL ducklake_expire_snapshots('lake', versions => [1, {latest}], dry_run => true)"
    ).collect()
    assert [r.snapshot_id for r in expired] == [1]
    old = sql.execute(
        "CALL ducklake_cleanup_old_files('lake', older_than => now() - INTERVAL '1 week', "
        "dry_run => true)"
    ).collect()
    assert old == []
    soon = sql.execute(
        "CALL ducklake_cleanup_old_files('lake', cleanup_all => true, dry_run => true)"
    )
    assert len(soon.collect()) >= 2
    sql.execute("CHECKPOINT")  # no options set: flush, merge and rewrite find nothing to do
    assert lake.latest_snapshot().snapshot_id == latest
    for bad, message in [
        ("CALL ducklake_vacuum('lake')", "unknown function"),
        (
            "CALL ducklake_rewrite_data_files('lake', threshold => 0.5)",
            "unknown argument threshold",
        ),
        ("CALL ducklake_merge_adjacent_files()", "first argument names the catalog"),
        ("CALL lake.set_option('colour', 'red')", "unknown option 'colour'"),
    ]:
        with pytest.raises(Exception, match=message):
            sql.execute(bad)
    with pytest.raises(Exception, match="inside BEGIN"):
        sql.execute("BEGIN; CALL ducklake_merge_adjacent_files('lake'); COMMIT")
