"""DELETE and UPDATE as merge-on-read Spark plans, against a DuckDB twin: same contents
and row ids at every snapshot, DuckDB reads our lake identically, and only touched data
files get delete files (small deletes inlined, whole files ended, repeats partial)."""

from __future__ import annotations

import pytest

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.dml import delete_where, update_where
from dbt.adapters.ducklake.spark.engine import insert_into
from dbt.adapters.ducklake.spark.scan import scan_table
from tests import duck
from tests.canon import canon_rows
from tests.conftest import Catalog
from tests.spark.test_roundtrip import _spark_rows
from tests.spark.victims import WAYS, victims_staged_by

STEPS = [
    ("delete", "id IN (3, 4)", None),  # 2 rows: inlined deletes
    ("delete", "id BETWEEN 10 AND 39", None),  # a delete file
    ("delete", "id BETWEEN 40 AND 59", None),  # same data file again: a partial delete file
    ("update", "id IN (60, 61)", {"v": "upper(v)", "n": "n * 10"}),  # moved rows inlined
    ("update", "id >= 150", {"v": "concat(v, '!')"}),  # moved rows written as a file
    ("delete", "id >= 200", None),  # every row of the second file: the file is ended
    ("delete", "id = 60", None),  # an inlined (moved) row
]


def _duck_sql(kind: str, where: str, sets: dict | None) -> str:
    if kind == "delete":
        return f"DELETE FROM t WHERE {where}"
    assignments = ", ".join(
        f"{k} = {v.replace('concat(v, ', 'concat(v, ')}" for k, v in sets.items()
    )
    return f"UPDATE t SET {assignments} WHERE {where}"


@pytest.mark.parametrize("way", WAYS)
def test_delete_and_update_match_duckdb(spark, catalog: Catalog, tmp_path, way: str) -> None:
    with victims_staged_by(way):
        _delete_and_update_match_duckdb(spark, catalog, tmp_path)


def _delete_and_update_match_duckdb(spark, catalog: Catalog, tmp_path) -> None:
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach, alias="ours")
    duck.attach(con, f"sqlite:{tmp_path}/twin.sqlite", alias="twin", data_path=str(tmp_path / "tw"))
    con.execute("USE twin")
    con.execute("CREATE TABLE ours.main.t (id BIGINT, v VARCHAR, n INTEGER)")
    con.execute("CREATE TABLE t (id BIGINT, v VARCHAR, n INTEGER)")
    for lo, hi in ((0, 200), (200, 260)):  # two data files on each side
        con.execute(
            f"INSERT INTO t SELECT i, 'v' || i, (i % 7)::INTEGER FROM range({lo}, {hi}) r(i)"
        )
        insert_into(
            lake,
            "main",
            "t",
            spark.sql(
                f"SELECT id, concat('v', id), CAST(id % 7 AS INT) FROM range({lo}, {hi})"
            ).coalesce(1),
        )
    twin = Lake.open(f"sqlite:///{tmp_path}/twin.sqlite")
    pairs = [(twin.latest_snapshot().snapshot_id, lake.latest_snapshot().snapshot_id)]
    for kind, where, sets in STEPS:
        con.execute(_duck_sql(kind, where, sets))
        if kind == "delete":
            delete_where(spark, lake, "main", "t", where)
        else:
            update_where(spark, lake, "main", "t", sets, where)
        pairs.append((twin.latest_snapshot().snapshot_id, lake.latest_snapshot().snapshot_id))
        ours_kinds = {c.kind for c in lake.latest_snapshot().changes}
        their_kinds = {c.kind for c in twin.latest_snapshot().changes}
        assert ours_kinds == their_kinds, (kind, where, ours_kinds, their_kinds)

    for their_snap, our_snap in pairs:
        expected = canon_rows(
            con.execute(f"SELECT rowid, * FROM t AT (VERSION => {their_snap})").fetchall()
        )
        duck_on_ours = canon_rows(
            con.execute(f"SELECT rowid, * FROM ours.main.t AT (VERSION => {our_snap})").fetchall()
        )
        assert duck_on_ours == expected, our_snap
        scanned = scan_table(spark, lake, "main", "t", at=our_snap, lineage=True)
        ours = canon_rows((r[3], r[0], r[1], r[2]) for r in _spark_rows(scanned))
        assert ours == expected, our_snap

    # merge-on-read: the original data files were never rewritten, one was ended
    cat = lake.catalog()
    files = cat.data_files(cat.table("main", "t"))
    first = min(f.data_file_id for f in files)
    assert files[0].data_file_id == first and files[0].delete_file is not None
    assert files[0].delete_file.partial_max is not None  # the second delete made it partial
    assert len([f for f in files if f.row_id_start == 200]) == 0  # the ended file is gone
    con.close()
