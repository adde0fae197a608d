"""A catalog created by lake/ is the catalog DuckDB's extension creates."""

from __future__ import annotations

import os
import sqlite3

import psycopg
import pytest

from dbt.adapters.ducklake.lake import Lake, MetadataConfigError, parse_type
from tests import duck
from tests.conftest import Catalog


def _physical_schema(cat: Catalog) -> dict[str, list[tuple[str, str, bool]]]:
    """table -> [(column, type, not_null)] as the backend reports them."""
    if cat.backend == "sqlite":
        con = sqlite3.connect(cat.duckdb_attach.removeprefix("sqlite:"))
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        out = {
            t: [(r[1], r[2].upper(), bool(r[3])) for r in con.execute(f"PRAGMA table_info({t})")]
            for t in tables
        }
        con.close()
        return out
    dbname = cat.duckdb_attach.split("dbname=")[1].split()[0]
    with psycopg.connect(f"host=127.0.0.1 dbname={dbname}") as con:
        rows = con.execute(
            """SELECT table_name, column_name, data_type, is_nullable
               FROM information_schema.columns
               WHERE table_schema = 'public' ORDER BY table_name, ordinal_position"""
        ).fetchall()
    out: dict[str, list[tuple[str, str, bool]]] = {}
    for t, c, typ, nullable in rows:
        out.setdefault(t, []).append((c, typ.upper(), nullable == "NO"))
    return out


def _primary_keys(cat: Catalog) -> set[tuple[str, str]]:
    if cat.backend == "sqlite":
        con = sqlite3.connect(cat.duckdb_attach.removeprefix("sqlite:"))
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
        keys = {(t, r[1]) for t in tables for r in con.execute(f"PRAGMA table_info({t})") if r[5]}
        con.close()
        return keys
    dbname = cat.duckdb_attach.split("dbname=")[1].split()[0]
    with psycopg.connect(f"host=127.0.0.1 dbname={dbname}") as con:
        rows = con.execute(
            """SELECT tc.table_name, kcu.column_name FROM information_schema.table_constraints tc
               JOIN information_schema.key_column_usage kcu
                 ON kcu.constraint_name = tc.constraint_name
               WHERE tc.constraint_type = 'PRIMARY KEY'"""
        ).fetchall()
    return {(t, c) for t, c in rows}


def _duckdb_created(cat: Catalog, tmp_path) -> Catalog:
    """A twin catalog on the same backend, created by DuckDB itself."""
    if cat.backend == "sqlite":
        path = str(tmp_path / "duck.sqlite")
        twin = Catalog("sqlite", f"sqlite:///{path}", f"sqlite:{path}", cat.data_path)
    else:
        dbname = cat.duckdb_attach.split("dbname=")[1].split()[0] + "_duck"
        with psycopg.connect("host=127.0.0.1 dbname=test", autocommit=True) as con:
            con.execute(f"DROP DATABASE IF EXISTS {dbname}")
            con.execute(f"CREATE DATABASE {dbname}")
        twin = Catalog("postgres", "", f"postgres:dbname={dbname} host=127.0.0.1", cat.data_path)
    con = duck.connect()
    duck.attach(con, twin.duckdb_attach, data_path=str(tmp_path / "duckdata"))
    con.close()
    return twin


def test_created_catalog_matches_duckdb(catalog: Catalog, tmp_path) -> None:
    Lake.open(catalog.metadata, data_path=catalog.data_path).close()
    twin = _duckdb_created(catalog, tmp_path)
    try:
        ours, theirs = _physical_schema(catalog), _physical_schema(twin)
        assert len(ours) == 28
        assert ours == theirs
        assert _primary_keys(catalog) == _primary_keys(twin)
    finally:
        if catalog.backend == "postgres":
            dbname = twin.duckdb_attach.split("dbname=")[1].split()[0]
            with psycopg.connect("host=127.0.0.1 dbname=test", autocommit=True) as con:
                con.execute(f"DROP DATABASE IF EXISTS {dbname} WITH (FORCE)")


def test_initial_rows_match_duckdb(catalog: Catalog) -> None:
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    (snap,) = lake.snapshots()
    assert (snap.snapshot_id, snap.schema_version, snap.next_catalog_id, snap.next_file_id) == (
        0,
        0,
        1,
        0,
    )
    assert [str(c) for c in snap.changes] == ['created_schema:"main"']
    opts = {k: v for k, v, scope, _ in lake.options() if scope is None}
    assert opts["version"] == "1.0"
    assert opts["encrypted"] == "false"
    assert opts["data_path"] == os.path.abspath(catalog.data_path) + "/"
    (main,) = lake.catalog().schemas()
    assert (main.schema_id, main.name, main.path, main.path_is_relative) == (
        0,
        "main",
        "main/",
        True,
    )
    # DuckDB attaches it as an existing lake and writes to it
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    con.execute("CREATE TABLE lake.main.x AS SELECT 1 AS a")
    assert con.execute("SELECT * FROM lake.main.x").fetchall() == [(1,)]
    con.close()
    assert [t.name for t in lake.catalog().tables()] == ["x"]


def test_open_existing_keeps_catalog_and_data_path(catalog: Catalog, tmp_path) -> None:
    Lake.open(catalog.metadata, data_path=catalog.data_path).close()
    again = Lake.open(catalog.metadata)
    assert again.data_path == os.path.abspath(catalog.data_path) + "/"
    assert len(again.snapshots()) == 1


def test_encrypted_creates_an_encrypted_lake_and_refuses_a_plain_one(catalog: Catalog) -> None:
    """`encrypted` (the profile field) is DuckDB's ATTACH ... (ENCRYPTED): a new lake is
    created encrypted, which DuckDB follows; an existing plain lake is refused by name,
    as DuckDB refuses it."""
    Lake.open(catalog.metadata, data_path=catalog.data_path, encrypted=True).close()
    lake = Lake.open(catalog.metadata, encrypted=True)  # the same lake opens again
    assert lake.option("encrypted") == "true"
    lake.close()
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    value = "SELECT value FROM __ducklake_metadata_lake.ducklake_metadata WHERE key = 'encrypted'"
    assert con.execute(value).fetchall() == [("true",)]
    con.close()


def test_encrypted_refuses_a_lake_created_plain(sqlite_catalog: Catalog) -> None:
    Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path).close()
    with pytest.raises(
        MetadataConfigError, match=r"encrypted: true, but the lake in .* unencrypted"
    ):
        Lake.open(sqlite_catalog.metadata, encrypted=True)


def test_sqlite_uses_wal_and_busy_timeout(sqlite_catalog: Catalog) -> None:
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    with lake.engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA journal_mode").scalar() == "wal"
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 10_000


@pytest.mark.parametrize("form", ["attach", "plain", "url", "ducklake-prefix"])
def test_metadata_string_forms_open_the_same_lake(tmp_path, form: str) -> None:
    path = str(tmp_path / "m.sqlite")
    Lake.open(f"sqlite:///{path}", data_path=str(tmp_path / "d")).close()
    spelled = {
        "attach": f"sqlite:{path}",
        "plain": path,
        "url": f"sqlite:///{path}",
        "ducklake-prefix": f"ducklake:sqlite:{path}",
    }[form]
    lake = Lake.open(spelled)
    assert lake.backend == "sqlite" and len(lake.snapshots()) == 1


def test_postgres_attach_form_and_metadata_schema(pg_catalog: Catalog) -> None:
    conninfo = pg_catalog.duckdb_attach.removeprefix("postgres:")
    lake = Lake.open(
        f"postgres:{conninfo}", data_path=pg_catalog.data_path, metadata_schema="lake_meta"
    )
    with lake.transaction(commit_message="t") as tx:
        tx.create_table("main", "t", [parse_type("INTEGER", "a")])
    con = duck.connect()
    duck.attach(con, pg_catalog.duckdb_attach, options="METADATA_SCHEMA 'lake_meta'")
    con.execute("INSERT INTO lake.main.t VALUES (42)")
    assert con.execute("SELECT a FROM lake.main.t").fetchall() == [(42,)]
    con.close()
    assert [t.name for t in lake.catalog().tables()] == ["t"]
