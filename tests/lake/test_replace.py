"""A table replaced inside one transaction is one snapshot: no moment without the table."""

from __future__ import annotations

from dbt.adapters.ducklake.lake import ColumnSpec, Lake
from tests import duck
from tests.conftest import Catalog
from tests.lakefiles import write_data_file


def test_drop_and_create_same_name_in_one_snapshot(catalog: Catalog) -> None:
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    with lake.transaction(commit_message="v1") as tx:
        t = tx.create_table("main", "t", [ColumnSpec("a", "int32")])
        tx.add_data_files(t, [write_data_file(t, [(i,) for i in range(20)])])
    v1 = lake.latest_snapshot()
    old_id = lake.catalog().table("main", "t").table_id

    with lake.transaction(commit_message="v2") as tx:
        tx.insert_inlined(tx.table("main", "t"), [(99,)])  # moot: the table is replaced
        tx.drop_table("main", "t")
        t = tx.create_table("main", "t", [ColumnSpec("b", "varchar"), ColumnSpec("c", "int64")])
        tx.insert_inlined(t, [("x", 1), ("y", 2)])
    v2 = lake.latest_snapshot()
    assert v2.snapshot_id == v1.snapshot_id + 1
    new_id = lake.catalog().table("main", "t").table_id
    assert new_id != old_id
    assert [str(c) for c in v2.changes] == [
        f"dropped_table:{old_id}",
        'created_table:"main"."t"',
        f"inlined_insert:{new_id}",
    ]

    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    assert sorted(con.execute("SELECT * FROM lake.main.t").fetchall()) == [("x", 1), ("y", 2)]
    old = con.execute(f"SELECT count(*) FROM lake.main.t AT (VERSION => {v1.snapshot_id})")
    assert old.fetchone() == (20,)
    con.close()
