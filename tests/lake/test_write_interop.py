"""Lakes built only through lake/ (files written with pyarrow) read correctly in DuckDB.

DuckDB must see the same schemas, tables, nested columns, views, comments,
partitioning, sort order, snapshot commit info, and the same rows at every snapshot.
"""

from __future__ import annotations

import glob
import json
import os
from datetime import datetime, timezone
from decimal import Decimal

import pyarrow.parquet as pq

from dbt.adapters.ducklake.lake import ColumnSpec, Lake, parse_type
from tests import duck
from tests.canon import canon_rows
from tests.conftest import Catalog
from tests.lakefiles import read_rows, write_data_file, write_delete_file

COLUMNS = [
    ColumnSpec("id", "int64", nullable=False),
    ColumnSpec("name", "varchar"),
    parse_type("VARCHAR[]", "tags"),
    parse_type("STRUCT(a INTEGER, b STRUCT(c DOUBLE, d VARCHAR))", "st"),
    parse_type("MAP(VARCHAR, INTEGER)", "m"),
    ColumnSpec("ts", "timestamptz"),
    ColumnSpec("dc", "decimal(10,2)"),
    ColumnSpec("cnt", "int32"),
]


def _row(i: int) -> tuple:
    return (
        i,
        f"n{i}" if i % 3 else None,
        [f"t{i}", "a, b", "it's"] if i % 2 else [],
        {"a": i, "b": {"c": i + 0.5, "d": f"d{i}"}} if i % 4 else None,
        {"k": i, "j": -i} if i % 2 else {},
        datetime(2024, 1, 1 + i % 27, 10, 0, tzinfo=timezone.utc),
        Decimal(f"{i}.25"),
        i * 10,
    )


def _build(lake: Lake) -> dict[str, int]:
    """A history of every kind of change; returns snapshot ids by step name."""
    steps: dict[str, int] = {}

    def commit(step: str, tx) -> None:
        snap = tx.commit()
        assert snap is not None
        steps[step] = snap.snapshot_id

    tx = lake.transaction(author="alice", commit_message="create", extra_info={"run": 1})
    tx.create_schema("s1")
    t = tx.create_table("s1", "t", COLUMNS)
    tx.comment_on_table(t, "orders table")
    tx.comment_on_column(t, "name", "customer name")
    tx.create_view("s1", "v", "SELECT id, name FROM s1.t WHERE id > 2", comment="big ids")
    commit("create", tx)

    tx = lake.transaction(commit_message="load")
    t = tx.table("s1", "t")
    tx.add_data_files(t, [write_data_file(t, [_row(i) for i in range(1, 13)])])
    tx.insert_inlined(t, [_row(100), _row(101)])
    commit("load", tx)

    file = lake.catalog().data_files(lake.catalog().table("s1", "t"))[0]
    tx = lake.transaction(commit_message="delete file")
    t = tx.table("s1", "t")
    tx.add_delete_files(t, [write_delete_file(t, file, [0, 1])])
    commit("delete", tx)

    # a second delete on the same data file: a partial delete file replaces the first
    tx = lake.transaction(commit_message="partial delete")
    t = tx.table("s1", "t")
    first = steps["delete"]
    tx.add_delete_files(
        t, [write_delete_file(t, file, [0, 1, 5], [first, first, tx.stamp_snapshot_id])]
    )
    commit("partial", tx)

    tx = lake.transaction(commit_message="inlined deletes")
    t = tx.table("s1", "t")
    tx.delete_inlined_positions(t, file.data_file_id, [7])
    row_ids = [r.row_id for r in lake.catalog().inlined_rows(t.table_id)]
    tx.delete_inlined_rows(t, row_ids[:1])
    commit("inline_delete", tx)

    tx = lake.transaction(commit_message="evolve")
    t = tx.table("s1", "t")
    tx.add_column(t, ColumnSpec("extra", "int64", default="7"))
    tx.rename_column(t, "name", "nm")
    tx.alter_column_type(t, "cnt", "int64")
    tx.add_column(t, ColumnSpec("e", "int32"), parent=("st",))
    tx.drop_column(t, ("st", "b", "c"))
    tx.drop_column(t, "dc")
    commit("evolve", tx)

    tx = lake.transaction(commit_message="load evolved")
    t = tx.table("s1", "t")
    rows = [
        (
            200 + i,
            f"x{i}",
            ["q"],
            {"a": i, "b": {"d": "z"}, "e": i},
            {"z": 1},
            datetime(2025, 3, 1, tzinfo=timezone.utc),
            2**40 + i,
            i,
        )
        for i in range(4)
    ]
    tx.add_data_files(t, [write_data_file(t, rows)])
    tx.insert_inlined(t, [(300, "inl", None, None, None, None, None, 5)])
    commit("load2", tx)

    tx = lake.transaction(commit_message="partitioned")
    p = tx.create_table(
        "s1",
        "p",
        [ColumnSpec("id", "int32"), ColumnSpec("ts", "timestamptz"), ColumnSpec("v", "varchar")],
        partition_by=[("ts", "year"), ("v", "identity")],
        sort_by=[("id", "DESC", "NULLS_FIRST")],
    )
    tx.add_data_files(
        p,
        [
            write_data_file(
                p,
                [(1, datetime(2024, 5, 1, tzinfo=timezone.utc), "a")],
                partition_values=("2024", "a"),
                subdir="year=2024/v=a/",
            ),
            write_data_file(
                p,
                [(2, datetime(2025, 5, 1, tzinfo=timezone.utc), "b")],
                partition_values=("2025", "b"),
                subdir="year=2025/v=b/",
            ),
        ],
    )
    commit("partitioned", tx)

    tx = lake.transaction(commit_message="rename")
    tx.rename_table("s1", "t", "t2")
    commit("rename", tx)
    return steps


def test_duckdb_reads_lake_written_by_lake_layer(catalog: Catalog) -> None:
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    steps = _build(lake)
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)

    # snapshots with commit info, in DuckDB's own view
    snaps = con.execute(
        "SELECT snapshot_id, author, commit_message, commit_extra_info FROM lake.snapshots() "
        "ORDER BY snapshot_id"
    ).fetchall()
    assert [s[0] for s in snaps] == list(range(len(steps) + 1))
    assert snaps[steps["create"]][1:3] == ("alice", "create")
    assert json.loads(snaps[steps["create"]][3]) == {"run": 1}
    assert snaps[steps["rename"]][2] == "rename"

    # rows identical at every snapshot where the table exists
    for step, snap in steps.items():
        name = "t2" if step == "rename" else "t"
        ours = read_rows(lake.catalog(snap), "s1", name)
        theirs = con.execute(f"SELECT * FROM lake.s1.{name} AT (VERSION => {snap})").fetchall()
        assert canon_rows(theirs) == canon_rows(ours), step
        # same columns and types
        described = con.execute(
            f'SELECT column_name, column_type, "null" FROM (DESCRIBE '
            f"SELECT * FROM lake.s1.{name} AT (VERSION => {snap}))"
        ).fetchall()
        cat = lake.catalog(snap)
        cols = cat.columns(cat.table("s1", name).table_id)
        assert [(c.name, c.duckdb_type) for c in cols] == [(d[0], d[1]) for d in described]

    # the evolved schema, comments and the view as DuckDB reports them
    extra = dict(con.execute("SELECT id, extra FROM lake.s1.t2 WHERE id IN (3, 300)").fetchall())
    assert extra == {3: 7, 300: 5}  # rows older than the column get its initial default
    comments = dict(
        con.execute(
            "SELECT table_name, comment FROM duckdb_tables() WHERE database_name = 'lake'"
        ).fetchall()
    )
    assert comments["t2"] == "orders table"
    col_comment = con.execute(
        "SELECT comment FROM duckdb_columns() WHERE database_name = 'lake' "
        "AND table_name = 't2' AND column_name = 'nm'"
    ).fetchall()
    assert col_comment == [("customer name",)]
    view_comment = con.execute(
        "SELECT comment FROM duckdb_views() WHERE database_name = 'lake' AND view_name = 'v'"
    ).fetchall()
    assert view_comment == [("big ids",)]
    assert con.execute(
        f"SELECT count(*) FROM lake.s1.v AT (VERSION => {steps['load']})"
    ).fetchone() == (12,)
    not_null = con.execute(
        "SELECT \"null\" FROM (DESCRIBE lake.s1.t2) WHERE column_name = 'id'"
    ).fetchone()
    assert not_null == ("NO",)

    # DuckDB honours the partition spec and sort order we wrote when it inserts
    con.execute("SET ducklake_default_data_inlining_row_limit = 0")
    con.execute(
        "INSERT INTO lake.s1.p SELECT i, TIMESTAMPTZ '2026-02-01 00:00:00+00', 'c' "
        "FROM range(10, 40) r(i)"
    )
    new_files = [
        f
        for f in glob.glob(lake.data_path + "s1/p/**/*.parquet", recursive=True)
        if "year=2026" in f
    ]
    assert len(new_files) == 1 and f"{os.sep}v=c{os.sep}" in new_files[0]
    ids = pq.read_table(new_files[0]).column("id").to_pylist()
    assert ids == sorted(ids, reverse=True)
    assert con.execute("SELECT count(*) FROM lake.s1.p").fetchone() == (32,)
    con.close()

    # and lake/ reads DuckDB's partitioned write back
    cat = lake.catalog()
    files = cat.data_files(cat.table("s1", "p"))
    assert sorted(f.partition_values for f in files) == [
        ("2024", "a"),
        ("2025", "b"),
        ("2026", "c"),
    ]
