"""Publishing a staging copy's plans as one snapshot (lake/staging_copy.py, lake/publish.py).

The build's later plans refer to what its earlier plans created (a schema, a table, a
view, a data file) by the copy's ids; a DuckDB writer that creates a table and writes
files meanwhile takes those ids in the real catalog. The publish must renumber, and
DuckDB must read exactly what the build made plus what the other writer made.
"""

from __future__ import annotations

import os

import pytest

from dbt.adapters.ducklake.lake import (
    ColumnSpec,
    CommitConflictError,
    Lake,
    drop_stage,
    open_stage,
    publish,
    staged_files,
)
from tests import duck
from tests.conftest import Catalog
from tests.lakefiles import write_data_file, write_delete_file


def _real_lake(catalog: Catalog) -> Lake:
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    with lake.transaction(commit_message="base") as tx:
        t = tx.create_table("main", "base", [ColumnSpec("id", "int64")])
        tx.add_data_files(t, [write_data_file(t, [(i,) for i in range(20)])])
    return lake


def _stage_the_build(stage: Lake) -> None:
    """Three commits, each building on what the one before created."""
    with stage.transaction() as tx:
        tx.create_schema("s2")
        t = tx.create_table("s2", "t", [ColumnSpec("id", "int64"), ColumnSpec("v", "varchar")])
        tx.add_data_files(t, [write_data_file(t, [(i, f"v{i}") for i in range(20)])])
        tx.create_view("s2", "vw", "SELECT id FROM s2.t")
        tx.create_view("s2", "keep", "SELECT count(*) AS n FROM s2.t")
    cat = stage.catalog()
    (built_file,) = cat.data_files(cat.table("s2", "t"))
    with stage.transaction() as tx:  # a delete on the file the build wrote; a new column
        t = tx.table("s2", "t")
        tx.add_delete_files(t, [write_delete_file(t, built_file, [0, 1])])
        tx.add_column(t, ColumnSpec("extra", "int64"))
    (old_file,) = cat.data_files(cat.table("main", "base"))
    with stage.transaction() as tx:  # a pre-existing file; the build's own view goes
        base = tx.table("main", "base")
        tx.add_delete_files(base, [write_delete_file(base, old_file, [5])])
        tx.drop_view("s2", "vw")
        tx.comment_on_schema("s2", "built")
        tx.insert_inlined(tx.table("s2", "t"), [(100, "inl", 7)])


def _other_writer(catalog: Catalog, *statements: str) -> None:
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    for sql in statements:
        con.execute(sql)
    con.close()


def test_publish_renumbers_what_the_build_created(catalog: Catalog) -> None:
    real = _real_lake(catalog)
    stage = open_stage(real, "renumber")
    base = real.latest_snapshot()
    _stage_the_build(stage)
    assert real.latest_snapshot() == base  # nothing visible yet
    # meanwhile: a table (catalog ids) and a Parquet file (file ids) in the real catalog
    _other_writer(
        catalog,
        "CREATE TABLE lake.main.other (x BIGINT)",
        "INSERT INTO lake.main.other SELECT range FROM range(100)",
    )
    plans = [p for _, p in sorted(stage.commit_log or [], key=lambda e: e[0])]
    assert len(plans) == 3
    snap = publish(real, stage, plans, author="a", message="dbt build x", extra_info="{}")
    drop_stage(stage)
    assert snap is not None and snap.snapshot_id == base.snapshot_id + 3
    assert [s.snapshot_id for s in real.snapshots()][-1] == snap.snapshot_id

    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    got = sorted(con.execute("SELECT id, v, extra FROM lake.s2.t").fetchall())
    assert got == [(i, f"v{i}", None) for i in range(2, 20)] + [(100, "inl", 7)]
    assert con.execute("SELECT count(*) FROM lake.main.base").fetchone() == (19,)
    assert con.execute("SELECT count(*) FROM lake.main.base WHERE id = 5").fetchone() == (0,)
    assert con.execute("SELECT sum(x) FROM lake.main.other").fetchone() == (4950,)
    assert con.execute("SELECT n FROM lake.s2.keep").fetchone() == (19,)
    views = con.execute(
        "SELECT view_name FROM duckdb_views() WHERE database_name = 'lake' AND schema_name = 's2'"
    ).fetchall()
    assert views == [("keep",)]
    changes = con.execute(
        f"SELECT changes FROM lake.snapshots() WHERE snapshot_id = {snap.snapshot_id}"
    ).fetchone()
    con.close()
    assert changes is not None and "schemas_created" in str(changes[0])
    (s2,) = [s for s in real.catalog().schemas() if s.name == "s2"]
    assert s2.comment == "built" and s2.schema_id >= base.next_catalog_id + 1
    real.close()


def test_a_true_conflict_publishes_nothing_and_discard_removes_the_files(
    catalog: Catalog,
) -> None:
    real = _real_lake(catalog)
    stage = open_stage(real, "conflict")
    _stage_the_build(stage)
    written = staged_files(stage)
    assert len(written) == 3 and all(os.path.exists(p) for p in written)
    # another writer deletes from the same data file the build deletes from
    _other_writer(catalog, "DELETE FROM lake.main.base WHERE id < 15")  # a delete file
    before = real.latest_snapshot()
    plans = [p for _, p in sorted(stage.commit_log or [], key=lambda e: e[0])]
    with pytest.raises(CommitConflictError, match=r"main\.base"):
        publish(real, stage, plans, author="a", message="m", extra_info=None)
    assert real.latest_snapshot() == before
    assert [s.name for s in real.catalog().schemas()] == ["main"]
    for path in written:
        os.remove(path)
    drop_stage(stage)
    if catalog.backend == "sqlite":
        assert not os.path.exists(stage.location.sqlite_path)
    real.close()
