"""A commit that collides part-way re-applies its whole plan: nothing it staged is lost.

The collision is the metadata database's own unique-key error, raised for the statement
that follows the commit's first table row (the rename), as a DuckDB writer taking our
snapshot id would make it fail.
"""

from __future__ import annotations

import re
import sqlite3
from typing import Any

import psycopg
import pytest
from sqlalchemy import event
from sqlalchemy import exc as sa_exc

from dbt.adapters.ducklake.lake import ColumnSpec, Lake
from tests import duck
from tests.conftest import Catalog

TABLE_ROW = re.compile(r'INSERT INTO ("?\w+"?\.)?"?ducklake_table"? ', re.IGNORECASE)


class CollideOnce:
    """Fails the first write statement after the commit wrote its first table row."""

    def __init__(self, backend: str):
        self.backend = backend
        self.table_row_written = False
        self.fired = 0
        self.statements_before: list[str] = []

    def __call__(self, conn: Any, cursor: Any, statement: str, *args: Any) -> None:
        text = " ".join(statement.split())
        write = text.split(" ", 1)[0].upper() in ("INSERT", "UPDATE", "DELETE")
        if self.fired or not write:
            return
        if self.table_row_written:
            self.fired += 1
            message = "UNIQUE constraint failed: ducklake_snapshot.snapshot_id"
            orig: Exception = (
                sqlite3.IntegrityError(message)
                if self.backend == "sqlite"
                else psycopg.errors.UniqueViolation(f"duplicate key value violates {message}")
            )
            # as SQLAlchemy hands a real collision over (2.1 wraps an event's DBAPI
            # error itself, 2.0 does not)
            raise sa_exc.IntegrityError(statement, None, orig)
        self.statements_before.append(text)
        if TABLE_ROW.match(text):
            self.table_row_written = True


def test_retry_after_a_collision_keeps_rename_alter_and_append(catalog: Catalog) -> None:
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    with lake.transaction() as tx:
        tx.create_table("main", "orders", [ColumnSpec("id", "int64")])
    with lake.transaction() as tx:
        tx.insert_inlined(tx.table("main", "orders"), [(1,), (2,)])
    base = lake.latest_snapshot().snapshot_id

    collide = CollideOnce(catalog.backend)
    event.listen(lake.engine, "before_cursor_execute", collide)
    try:
        with lake.transaction(commit_message="rename, alter, append") as tx:
            table = tx.rename_table("main", "orders", "orders_v2")
            tx.add_column(table, ColumnSpec("status", "varchar"))
            tx.insert_inlined(table, [(3, "new")])
    finally:
        event.remove(lake.engine, "before_cursor_execute", collide)

    assert collide.fired == 1, "the collision was never injected"
    assert any("ducklake_snapshot" in s for s in collide.statements_before)
    snap = lake.latest_snapshot()
    assert snap.snapshot_id == base + 1 and snap.commit_message == "rename, alter, append"
    cat = lake.catalog()
    assert [t.name for t in cat.tables("main")] == ["orders_v2"]
    info = cat.table("main", "orders_v2")
    columns = cat.columns(info.table_id)
    assert [c.name for c in columns] == ["id", "status"]
    id_, status = (c.column_id for c in columns)
    inlined = cat.inlined_rows(info.table_id)
    assert sorted((r.values[id_], r.values.get(status)) for r in inlined) == [
        (1, None),
        (2, None),
        (3, "new"),
    ]

    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    assert con.execute("SELECT * FROM lake.main.orders_v2 ORDER BY id").fetchall() == [
        (1, None),
        (2, None),
        (3, "new"),
    ]
    changes = con.execute(
        "SELECT changes FROM lake.snapshots() WHERE snapshot_id = ?", [snap.snapshot_id]
    ).fetchone()
    assert changes is not None and "orders_v2" in str(changes[0])
    with pytest.raises(Exception, match="orders"):
        con.execute("SELECT * FROM lake.main.orders")
