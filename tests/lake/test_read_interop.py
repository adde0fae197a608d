"""Lakes DuckDB writes are read by lake/ exactly as DuckDB reports them, at every snapshot.

Covers inlined inserts and deletes, delete files, partial delete files, flushed and
merged (partial) data files, updates, column add/drop/rename, type promotion, nested
fields, partitioning, sort order, views and comments.
"""

from __future__ import annotations

import os

import pytest

from dbt.adapters.ducklake.lake import Lake
from tests import duck
from tests.canon import canon_rows
from tests.conftest import Catalog
from tests.lakefiles import read_rows

HISTORY = [
    "CREATE SCHEMA s",
    "CREATE TABLE s.t (id INTEGER NOT NULL, name VARCHAR, tags VARCHAR[], "
    "st STRUCT(a INTEGER, b STRUCT(c DOUBLE, d VARCHAR)), m MAP(VARCHAR, INTEGER), "
    "ts TIMESTAMPTZ, amount DECIMAL(10,2), small SMALLINT, f REAL)",
    "INSERT INTO s.t VALUES (1, 'it''s', ['x', 'y, z', NULL], {'a': 1, 'b': {'c': 1.5, 'd': 'q'}}, "
    "MAP {'k': 1}, '2024-01-01 10:00:00+00', 1.25, 3, 'nan'), "
    "(2, NULL, [], NULL, MAP {}, NULL, NULL, NULL, 'inf')",
    "INSERT INTO s.t SELECT i, 'n' || i, ['a'], {'a': i, 'b': {'c': i / 2, 'd': 'd'}}, "
    "MAP {'x': i}, TIMESTAMPTZ '2024-02-01 00:00:00+00' + to_days(i), i / 4, i % 7, i "
    "FROM range(100, 160) r(i)",
    "DELETE FROM s.t WHERE id = 1",
    "DELETE FROM s.t WHERE id BETWEEN 100 AND 119",
    "DELETE FROM s.t WHERE id = 120",
    "DELETE FROM s.t WHERE id BETWEEN 130 AND 144",
    "UPDATE s.t SET name = 'upd' WHERE id = 147",
    "UPDATE s.t SET small = small + 1 WHERE id >= 145",
    "ALTER TABLE s.t ADD COLUMN extra BIGINT DEFAULT 7",
    "ALTER TABLE s.t ADD COLUMN st.e INTEGER",
    "ALTER TABLE s.t RENAME name TO nm",
    "ALTER TABLE s.t RENAME st.a TO aa",
    "ALTER TABLE s.t ALTER small SET TYPE BIGINT",
    "ALTER TABLE s.t ALTER f SET TYPE DOUBLE",
    "ALTER TABLE s.t ALTER id DROP NOT NULL",
    "ALTER TABLE s.t DROP COLUMN amount",
    "ALTER TABLE s.t DROP COLUMN st.b",
    "INSERT INTO s.t (id, nm, extra, small) VALUES (500, 'after', 1, 2), (501, 'after2', NULL, 3)",
    "INSERT INTO s.t (id, nm, st) SELECT i, 'bulk', {'aa': i, 'e': -i} FROM range(600, 640) r(i)",
    "DELETE FROM s.t WHERE id = 500",
    "CALL ducklake_flush_inlined_data('lake')",
    "COMMENT ON TABLE s.t IS 'main table'",
    "COMMENT ON COLUMN s.t.nm IS 'the name'",
    "CREATE VIEW s.v AS SELECT id, nm FROM s.t WHERE id > 140",
    "COMMENT ON VIEW s.v IS 'a view'",
    "CREATE TABLE s.p (id INTEGER, ts TIMESTAMPTZ, v VARCHAR)",
    "ALTER TABLE s.p SET PARTITIONED BY (year(ts), bucket(4, id), v)",
    "ALTER TABLE s.p SET SORTED BY (id DESC NULLS FIRST)",
    "INSERT INTO s.p SELECT i, TIMESTAMPTZ '2024-01-15 10:00:00+00' + to_days(i * 40), "
    "'v' || (i % 2) FROM range(0, 30) r(i)",
    "INSERT INTO s.p SELECT i, TIMESTAMPTZ '2024-01-15 10:00:00+00' + to_days(i * 40), "
    "'v' || (i % 2) FROM range(30, 60) r(i)",
    "CALL ducklake_merge_adjacent_files('lake', 'p', schema => 's')",
    "DELETE FROM s.p WHERE id % 5 = 0",
    "INSERT INTO s.t (id, nm, st, m) VALUES (700, 'late', {'aa': 1, 'e': 2}, MAP {'q': 1}), "
    "(701, 'late2', NULL, NULL)",
    "DELETE FROM s.t WHERE id = 701",
    "DELETE FROM s.t WHERE id = 146",
    "ALTER TABLE s.t ADD COLUMN late_col VARCHAR DEFAULT 'dflt'",
    "ALTER TABLE s.t RENAME TO t2",
    "INSERT INTO s.t2 (id, late_col) VALUES (800, NULL)",
]


def _run_history(con, lake: Lake) -> list[int]:
    snapshots = []
    for stmt in HISTORY:
        con.execute(stmt)
        snapshots.append(lake.latest_snapshot().snapshot_id)
    return snapshots


def _duck_columns(con, table: str, snap: int) -> list[tuple[str, str, bool]]:
    rows = con.execute(
        f'SELECT column_name, column_type, "null" FROM (DESCRIBE SELECT * FROM {table} '
        f"AT (VERSION => {snap}))"
    ).fetchall()
    return [(r[0], r[1], r[2] == "YES") for r in rows]


def _duck_files(con, table: str, snap: int) -> set[tuple[str, str | None]]:
    rows = con.execute(
        f"SELECT data_file, delete_file FROM ducklake_list_files('lake', '{table}', "
        f"schema => 's', snapshot_version => {snap})"
    ).fetchall()
    return {(os.path.normpath(d), os.path.normpath(x) if x else None) for d, x in rows}


def test_lake_layer_reads_duckdb_history_at_every_snapshot(catalog: Catalog) -> None:
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach, data_path=catalog.data_path)
    con.execute("USE lake")
    lake = Lake.open(catalog.metadata)
    snapshots = _run_history(con, lake)

    checked_inlined = checked_partial_delete = checked_partial_data = 0
    for snap in sorted(set(snapshots)):
        cat = lake.catalog(snap)
        for table in cat.tables("s"):
            qualified = f"lake.s.{table.name}"
            # columns: names, DuckDB types and nullability
            cols = cat.columns(table.table_id)
            assert [(c.name, c.duckdb_type, c.nullable) for c in cols] == _duck_columns(
                con, qualified, snap
            ), (snap, table.name)
            # files: every data file with its delete file
            files = cat.data_files(table)
            ours = {
                (
                    os.path.normpath(f.path),
                    os.path.normpath(f.delete_file.path) if f.delete_file else None,
                )
                for f in files
            }
            assert ours == _duck_files(con, table.name, snap), (snap, table.name)
            # rows: rebuilt from files, deletes and inlined rows
            expected = con.execute(f"SELECT * FROM {qualified} AT (VERSION => {snap})").fetchall()
            assert canon_rows(read_rows(cat, "s", table.name)) == canon_rows(expected), (
                snap,
                table.name,
            )
            checked_inlined += bool(cat.inlined_rows(table.table_id))
            checked_partial_delete += any(
                f.delete_file and f.delete_file.partial_max for f in files
            )
            checked_partial_data += any(f.partial_max for f in files)
    # the history really exercised the hard cases
    assert checked_inlined and checked_partial_delete and checked_partial_data

    latest = lake.catalog()
    t2 = latest.table("s", "t2")
    assert t2.comment == "main table"
    assert {c.name: c.comment for c in latest.columns(t2.table_id)}["nm"] == "the name"
    (view,) = latest.views("s")
    assert (view.name, view.dialect, view.comment) == ("v", "duckdb", "a view")
    assert "FROM s.t" in view.sql
    p = latest.table("s", "p")
    spec = latest.partition_spec(p.table_id)
    assert spec is not None
    by_id = {c.column_id: c.name for c in latest.columns(p.table_id)}
    assert [(by_id[f.column_id], f.transform) for f in spec.fields] == [
        ("ts", "year"),
        ("id", "bucket(4)"),
        ("v", "identity"),
    ]
    sort = latest.sort_spec(p.table_id)
    assert sort is not None
    assert [(f.expression, f.direction, f.null_order) for f in sort.fields] == [
        ("id", "DESC", "NULLS_FIRST"),
    ]
    files = latest.data_files(p)
    assert all(len(f.partition_values) == 3 for f in files)
    stats, column_stats = latest.table_stats(p.table_id)
    assert stats is not None and stats.record_count >= 60
    assert column_stats

    # snapshots list the changes DuckDB made, parseable
    kinds = {c.kind for s in lake.snapshots() for c in s.changes}
    assert {
        "inlined_insert",
        "inlined_delete",
        "inserted_into_table",
        "deleted_from_table",
        "altered_table",
        "created_view",
        "merge_adjacent",
        "inline_flush",
    } <= kinds
    con.close()


@pytest.mark.parametrize("when", ["timestamp"])
def test_snapshot_at_timestamp(sqlite_catalog: Catalog, when: str) -> None:
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach, data_path=sqlite_catalog.data_path)
    con.execute("CREATE TABLE lake.a (x INTEGER)")
    con.execute("INSERT INTO lake.a VALUES (1)")
    lake = Lake.open(sqlite_catalog.metadata)
    first = lake.latest_snapshot()
    con.execute("INSERT INTO lake.a VALUES (2)")
    second = lake.latest_snapshot()
    assert lake.snapshot(first.snapshot_time).snapshot_id == first.snapshot_id
    assert lake.snapshot(second.snapshot_time).snapshot_id == second.snapshot_id
    cat = lake.catalog(first.snapshot_time)
    assert sorted(r[0] for r in read_rows(cat, "main", "a")) == [1]
    con.close()
