"""A Store keeps the catalog's schema rows per `schema_version` (`Store.schema_rows`):
an open Lake sees every schema change DuckDB makes after it read the schema, older
snapshots still read as they were, and rows of one version are read from the database
once, however many snapshots of data changes follow; Lakes opened on one catalog in a
process share them."""

from __future__ import annotations

import os
import shutil

from sqlalchemy import event

from dbt.adapters.ducklake.lake import Lake
from tests import duck
from tests.conftest import Catalog


def _duckdb(catalog: Catalog, columns: str = "(a INTEGER)"):
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach, data_path=catalog.data_path)
    con.execute(f"CREATE TABLE lake.t {columns}")
    con.execute("INSERT INTO lake.t SELECT 1" + ", 2" * columns.count(","))
    return con


def test_an_open_lake_sees_duckdbs_later_schema_changes(catalog: Catalog) -> None:
    con = _duckdb(catalog)
    lake = Lake.open(catalog.metadata)
    first = lake.catalog()
    tid = first.table("main", "t").table_id
    assert [c.name for c in first.columns(tid)] == ["a"]
    assert first.partition_spec(tid) is None

    con.execute("ALTER TABLE lake.t ADD COLUMN b VARCHAR")
    con.execute("COMMENT ON COLUMN lake.t.a IS 'first'")
    con.execute("COMMENT ON TABLE lake.t IS 'the table'")
    con.execute("CREATE TABLE lake.u (x INTEGER)")
    con.execute("CREATE VIEW lake.v AS SELECT a FROM lake.t")
    con.execute("ALTER TABLE lake.t SET PARTITIONED BY (a)")
    con.execute("ALTER TABLE lake.t SET SORTED BY (a DESC)")

    now = lake.catalog()
    assert [(c.name, c.comment) for c in now.columns(tid)] == [("a", "first"), ("b", None)]
    assert {(t.name, t.comment) for t in now.tables("main")} == {("t", "the table"), ("u", None)}
    assert [v.name for v in now.views("main")] == ["v"]
    assert now.partition_spec(tid) is not None
    assert now.sort_spec(tid) is not None

    # the first snapshot still reads as it was; new column ids never reuse b's
    again = lake.catalog(first.snapshot_id)
    assert [(c.name, c.comment) for c in again.columns(tid)] == [("a", None)]
    assert [t.name for t in again.tables("main")] == ["t"]
    assert again.views("main") == []
    assert again.partition_spec(tid) is None
    assert again.max_column_id(tid) == 2


def test_schema_rows_of_a_version_are_read_once(sqlite_catalog: Catalog) -> None:
    con = _duckdb(sqlite_catalog)
    lake = Lake.open(sqlite_catalog.metadata)
    before = lake.catalog()
    tid = before.table("main", "t").table_id
    before.columns(tid)
    before.views()

    statements: list[str] = []
    event.listen(lake.engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    con.execute("INSERT INTO lake.t VALUES (2)")  # rows only: the same schema_version
    after = lake.catalog()
    assert after.snapshot_id > before.snapshot_id
    assert after.snapshot.schema_version == before.snapshot.schema_version
    assert [c.name for c in after.columns(tid)] == ["a"]
    assert [t.name for t in after.tables("main")] == ["t"]
    assert after.views() == []
    queries = [s for s in statements if s.strip().upper() != "BEGIN"]
    assert len(queries) == 1  # only the latest snapshot was asked for
    assert "ducklake_snapshot" in queries[0]

    con.execute("ALTER TABLE lake.t ADD COLUMN c DOUBLE")  # a new version: read again
    assert [c.name for c in lake.catalog().columns(tid)] == ["a", "c"]
    assert any("ducklake_column" in s for s in statements)


def test_lakes_opened_on_one_catalog_share_its_rows_and_a_new_catalog_does_not(
    sqlite_catalog: Catalog,
) -> None:
    con = _duckdb(sqlite_catalog)
    first = Lake.open(sqlite_catalog.metadata)
    tid = first.catalog().table("main", "t").table_id
    assert [c.name for c in first.catalog().columns(tid)] == ["a"]

    second = Lake.open(sqlite_catalog.metadata)  # as dbt opens one per model
    statements: list[str] = []
    event.listen(second.engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    assert [c.name for c in second.catalog().columns(tid)] == ["a"]
    assert not any("ducklake_column" in s for s in statements)

    # the catalog removed and made again at the same place, with other columns
    con.close()
    os.remove(sqlite_catalog.duckdb_attach.removeprefix("sqlite:"))
    shutil.rmtree(sqlite_catalog.data_path)
    con = _duckdb(sqlite_catalog, columns="(z VARCHAR, y DOUBLE)")
    again = Lake.open(sqlite_catalog.metadata)
    assert again.catalog().snapshot.schema_version == first.catalog().snapshot.schema_version
    assert [c.name for c in again.catalog().columns(tid)] == ["z", "y"]
