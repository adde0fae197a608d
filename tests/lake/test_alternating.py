"""DuckDB and lake/ commit in turns on one lake; each sees the other's changes, and each
side's conflict detection works on what the other wrote."""

from __future__ import annotations

import pytest

from dbt.adapters.ducklake.lake import ColumnSpec, CommitConflictError, Lake
from tests import duck
from tests.canon import canon_rows
from tests.conftest import Catalog
from tests.lakefiles import read_rows, write_data_file


def _open(catalog: Catalog):
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    con.execute("USE lake")
    return lake, con


def test_alternating_commits_see_each_other(catalog: Catalog) -> None:
    lake, con = _open(catalog)
    with lake.transaction(commit_message="ours: create") as tx:
        tx.create_table("main", "t", [ColumnSpec("id", "int32"), ColumnSpec("v", "varchar")])
    con.execute("INSERT INTO t VALUES (1, 'duck')")
    with lake.transaction(commit_message="ours: insert") as tx:
        t = tx.table("main", "t")
        tx.insert_inlined(t, [(2, "ours-inlined")])
        tx.add_data_files(t, [write_data_file(t, [(i, f"ours-{i}") for i in range(10, 30)])])
    con.execute("ALTER TABLE t ADD COLUMN w DOUBLE")
    con.execute("INSERT INTO t VALUES (3, 'duck2', 0.5)")
    with lake.transaction(commit_message="ours: evolve + insert") as tx:
        t = tx.table("main", "t")
        assert [c.name for c in t.columns] == ["id", "v", "w"]
        tx.rename_column(t, "v", "label")
    with lake.transaction(commit_message="ours: insert after rename") as tx:
        t = tx.table("main", "t")
        tx.insert_inlined(t, [(4, "ours-after", 1.5)])
    con.execute("DELETE FROM t WHERE id IN (10, 11, 12)")
    con.execute("UPDATE t SET w = 9 WHERE id = 2")
    with lake.transaction(commit_message="ours: delete inlined") as tx:
        t = tx.table("main", "t")
        dead = [r.row_id for r in lake.catalog().inlined_rows(t.table_id or 0) if r.values[1] == 4]
        tx.delete_inlined_rows(t, dead)

    expected = con.execute("SELECT * FROM t").fetchall()
    assert len(expected) == 1 + 1 + 20 + 1 - 3
    assert canon_rows(read_rows(lake.catalog(), "main", "t")) == canon_rows(expected)
    # every snapshot agrees, whoever wrote it
    for snap in lake.snapshots()[1:]:
        rows = con.execute(f"SELECT * FROM t AT (VERSION => {snap.snapshot_id})").fetchall()
        assert canon_rows(read_rows(lake.catalog(snap.snapshot_id), "main", "t")) == canon_rows(
            rows
        ), snap.snapshot_id
    messages = [s.commit_message for s in lake.snapshots() if s.commit_message]
    assert messages[0] == "ours: create" and messages[-1] == "ours: delete inlined"
    con.close()


@pytest.mark.parametrize(
    ("duck_stmt", "ours", "expected"),
    [
        ("INSERT INTO t VALUES (9)", "drop", "dropped"),
        ("INSERT INTO t VALUES (9)", "alter", "altered"),
        ("DELETE FROM t WHERE id < 40", "alter", "altered"),
        ("ALTER TABLE t ADD COLUMN z INTEGER", "alter", "altered"),
        ("DROP TABLE t", "drop", "dropped"),
        ("CREATE TABLE other (a INTEGER)", "create_other", "created by another transaction"),
    ],
)
def test_duckdb_detects_conflicts_with_our_commits(
    catalog: Catalog, duck_stmt: str, ours: str, expected: str
) -> None:
    lake, con = _open(catalog)
    with lake.transaction() as tx:
        t = tx.create_table("main", "t", [ColumnSpec("id", "int32")])
        tx.add_data_files(t, [write_data_file(t, [(i,) for i in range(50)])])
    before = con.execute("SELECT count(*) FROM t").fetchone()
    con.execute("BEGIN")
    con.execute(duck_stmt)
    with lake.transaction(commit_message="ours") as tx:
        if ours == "drop":
            tx.drop_table("main", "t")
        elif ours == "alter":
            tx.add_column(tx.table("main", "t"), ColumnSpec("extra", "varchar"))
        else:
            tx.create_table("main", "other", [ColumnSpec("b", "int64")])
    with pytest.raises(Exception, match=expected):
        con.execute("COMMIT")
    # DuckDB committed nothing: its change is absent, ours is present
    last = lake.latest_snapshot()
    assert last.commit_message == "ours"
    if ours != "drop":
        assert con.execute("SELECT count(*) FROM t").fetchone() == before
    con.close()


def test_duckdb_retries_past_our_non_conflicting_commit(catalog: Catalog) -> None:
    lake, con = _open(catalog)
    with lake.transaction() as tx:
        tx.create_table("main", "t", [ColumnSpec("id", "int32")])
    con.execute("BEGIN")
    con.execute("INSERT INTO t VALUES (1)")
    with lake.transaction(commit_message="ours") as tx:
        tx.insert_inlined(tx.table("main", "t"), [(2,)])
    con.execute("COMMIT")
    assert sorted(con.execute("SELECT id FROM t").fetchall()) == [(1,), (2,)]
    assert sorted(r[0] for r in read_rows(lake.catalog(), "main", "t")) == [1, 2]
    con.close()


@pytest.mark.parametrize(
    ("duck_stmt", "ours", "change"),
    [
        ("DROP TABLE t", "insert", "dropped_table"),
        ("ALTER TABLE t ADD COLUMN z INTEGER", "insert", "altered_table"),
        ("DROP TABLE t", "drop", "dropped_table"),
        ("CREATE TABLE n (a INTEGER)", "create_n", "created_table"),
        ("DELETE FROM t WHERE id = 3", "insert", "deleted_from_table"),
    ],
)
def test_we_detect_conflicts_with_duckdb_commits(
    catalog: Catalog, duck_stmt: str, ours: str, change: str
) -> None:
    lake, con = _open(catalog)
    with lake.transaction() as tx:
        t = tx.create_table("main", "t", [ColumnSpec("id", "int32")])
        tx.add_data_files(t, [write_data_file(t, [(i,) for i in range(50)])])
    con.execute("SET ducklake_default_data_inlining_row_limit = 0")
    tx = lake.transaction(commit_message="ours")
    if ours == "insert":
        t = tx.table("main", "t")
        tx.add_data_files(t, [write_data_file(t, [(100,)])])
    elif ours == "drop":
        tx.drop_table("main", "t")
    else:
        tx.create_table("main", "n", [ColumnSpec("b", "int64")])
    con.execute(duck_stmt)
    theirs = lake.latest_snapshot()
    with pytest.raises(CommitConflictError) as err:
        tx.commit()
    assert err.value.snapshot_id == theirs.snapshot_id
    assert err.value.change.startswith(change)
    assert f"snapshot {theirs.snapshot_id}" in str(err.value)
    assert lake.latest_snapshot().snapshot_id == theirs.snapshot_id  # we committed nothing
    con.close()
