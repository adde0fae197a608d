"""A commit's inlined-data tables: one per table and schema version, as DuckDB makes them.

A publish applies several plans as one snapshot, so under one schema version: when a
later plan changes a table's columns after an earlier one inlined rows into it (a node's
rows, then its post-hook's ALTER), the rows move into the new layout by column id, as
DuckDB's transaction-local rows do: kept columns keep their values (renamed or not),
dropped ones go, added ones read NULL.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import sqlalchemy as sa

from . import metadata_ddl as ddl
from .errors import InvalidChangeError
from .models import Column
from .types import NESTED_TYPES

_SYSTEM_COLUMNS = ("row_id", "begin_snapshot", "end_snapshot")


def can_inline(backend: str, columns: Sequence[Column]) -> bool:
    """Whether rows of these columns can be kept in an inlined-data table."""
    for c in columns:
        if c.name in _SYSTEM_COLUMNS or c.name.startswith("_ducklake_internal"):
            return False
        if backend == "postgres" and len(c.name.encode()) > 63:
            return False
        if any(d.type in ("variant", "geometry") for d in c.walk()):
            return False
    return True


def relayout(
    conn: Any,
    schema: str | None,
    name: str,
    layouts: tuple[Sequence[Column], Sequence[Column]],
    table: str,
    create: Callable[[], None],
) -> list[int] | None:
    """Replace the inlined table `name`, made earlier in this snapshot for the first of
    `layouts`, by one for the second (`create` makes it), carrying its rows. Returns
    None when there were no rows, else the ids of the added columns (NULL in them)."""
    earlier, columns = layouts
    source = ddl.qualified(schema, name)
    if conn.execute(sa.text(f"SELECT 1 FROM {source} LIMIT 1")).first() is None:
        conn.exec_driver_sql(f"DROP TABLE {source}")
        create()
        return None
    before = {c.column_id: c for c in earlier}
    kept = [(before[c.column_id].name, c) for c in columns if c.column_id in before]
    added = [c for c in columns if c.column_id not in before]
    refused = [c.name for old, c in kept if before[c.column_id].type != c.type]
    refused += [c.name for c in added if c.initial_default is not None]
    if refused:
        raise InvalidChangeError(
            f"table {table}: rows inlined earlier in this snapshot cannot take the new "
            f"layout of {', '.join(refused)} (a changed type or a default); publish the "
            "two changes separately"
        )
    carried = ddl.qualified(schema, f"{name}_carried")
    conn.exec_driver_sql(f"ALTER TABLE {source} RENAME TO {ddl.quote(name + '_carried')}")
    create()
    system = ["row_id", "begin_snapshot", "end_snapshot"]
    into = ", ".join(system + [ddl.quote(c.name) for _, c in kept])
    picked = ", ".join(system + [ddl.quote(old) for old, _ in kept])
    conn.exec_driver_sql(f"INSERT INTO {source} ({into}) SELECT {picked} FROM {carried}")
    conn.exec_driver_sql(f"DROP TABLE {carried}")
    return [c.column_id for c in added]


def leaf_values(columns: list[Column], rows: Sequence[tuple[Any, ...]]) -> dict[int, list[Any]]:
    """Per leaf column id, every value it holds across rows (NULL parents give NULLs)."""
    out: dict[int, list[Any]] = {}

    def visit(col: Column, value: Any) -> None:
        if col.type not in NESTED_TYPES:
            out.setdefault(col.column_id, []).append(value)
            return
        out.setdefault(col.column_id, [])
        if col.type == "list":
            (child,) = col.children
            items = value if value is not None else [None]
            for item in items:
                visit(child, item)
            if value is not None and not value:
                out.setdefault(child.column_id, [])
        elif col.type == "struct":
            for child in col.children:
                visit(child, None if value is None else value.get(child.name))
        else:
            key_col, value_col = col.children
            pairs: Iterator[tuple[Any, Any]] = iter(
                (value.items() if isinstance(value, dict) else value)
                if value is not None
                else [(None, None)]
            )
            for k, v in pairs:
                visit(key_col, k)
                visit(value_col, v)

    for row in rows:
        for col, value in zip(columns, row, strict=True):
            visit(col, value)
    return out
