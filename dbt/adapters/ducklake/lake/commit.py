"""Write a staged transaction as catalog rows of one new snapshot.

Runs inside one metadata transaction on the connection the caller holds. Ids come from
the latest snapshot's counters, so a retry after a collision simply runs this again.
Rows written are proportional to what the transaction changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from .changes import format_changes, qualified_name, quote_name
from .codec import encode_catalog_time
from .commit_data import DataWriter
from .maintenance import apply_compaction, apply_flush
from .models import SPARK_SQL_TAG, Snapshot
from .reader import snapshot_from_row, split_changes
from .staged import ColumnDraft, StagedSchema, StagedTable

if TYPE_CHECKING:
    from .lake import Lake
    from .transaction import Transaction

_RETRYABLE = ("primary key", "unique", "conflict", "concurrent", "database is locked")


def is_snapshot_collision(exc: DBAPIError) -> bool:
    """A concurrent writer took our snapshot id (or held the SQLite lock too long)."""
    return any(word in str(exc.orig).lower() for word in _RETRYABLE)


def snapshots_after(lake: Lake, conn: Connection, base_id: int) -> list[Snapshot]:
    rows = conn.execute(
        sa.text(lake._snapshot_query("s.snapshot_id > :base")), {"base": base_id}
    ).fetchall()
    return [snapshot_from_row(r) for r in rows]


def files_deleted_after(lake: Lake, conn: Connection, base_id: int) -> set[int]:
    rows = conn.execute(
        sa.text(
            f"""SELECT data_file_id FROM {lake.qualified("ducklake_delete_file")}
                WHERE begin_snapshot > :base
                UNION SELECT data_file_id FROM {lake.qualified("ducklake_data_file")}
                WHERE end_snapshot > :base"""
        ),
        {"base": base_id},
    ).fetchall()
    return {r[0] for r in rows}


class CommitContext(DataWriter):
    """One snapshot's catalog rows: the data ones (DataWriter) and schemas, tables, views."""

    # -- schemas -------------------------------------------------------------------
    def create_schema(self, s: StagedSchema) -> None:
        s.schema_id = self.catalog_id()
        self.run(
            f"INSERT INTO {self.t('ducklake_schema')} VALUES (:id, :uuid, :snap, NULL, :name, "
            ":path, :rel)",
            {
                "id": s.schema_id,
                "uuid": s.uuid,
                "snap": self.snapshot_id,
                "name": s.name,
                "path": s.path,
                "rel": self.b(s.path_is_relative),
            },
        )
        self.change("created_schema", quote_name(s.name))
        if s.comment_changed and s.comment is not None:
            self.set_tag(s.schema_id, s.comment)

    def drop_schema(self, s: StagedSchema) -> None:
        assert s.schema_id is not None
        self.end_rows("ducklake_schema", "schema_id = :id", id=s.schema_id)
        self.end_rows("ducklake_tag", "object_id = :id", id=s.schema_id)
        self.change("dropped_schema", s.schema_id)

    def set_tag(self, object_id: int, value: str | None, key: str = "comment") -> None:
        self.end_rows("ducklake_tag", 'object_id = :id AND "key" = :k', id=object_id, k=key)
        if value is not None:
            self.run(
                f"INSERT INTO {self.t('ducklake_tag')} VALUES (:id, :snap, NULL, :k, :v)",
                {"id": object_id, "snap": self.snapshot_id, "k": key, "v": value},
            )

    def set_column_tag(self, table_id: int, column_id: int, comment: str | None) -> None:
        self.end_rows(
            "ducklake_column_tag",
            "table_id = :tid AND column_id = :cid AND \"key\" = 'comment'",
            tid=table_id,
            cid=column_id,
        )
        if comment is not None:
            self.run(
                f"INSERT INTO {self.t('ducklake_column_tag')} VALUES (:tid, :cid, :snap, NULL, "
                "'comment', :v)",
                {"tid": table_id, "cid": column_id, "snap": self.snapshot_id, "v": comment},
            )

    # -- tables --------------------------------------------------------------------
    def insert_table_row(self, t: StagedTable) -> None:
        assert t.schema.schema_id is not None
        self.run(
            f"INSERT INTO {self.t('ducklake_table')} VALUES (:id, :uuid, :snap, NULL, :sid, "
            ":name, :path, :rel)",
            {
                "id": t.table_id,
                "uuid": t.uuid,
                "snap": self.snapshot_id,
                "sid": t.schema.schema_id,
                "name": t.name,
                "path": t.path,
                "rel": self.b(True),
            },
        )

    def insert_columns(self, table_id: int, drafts: Iterable[ColumnDraft]) -> None:
        self.run(
            f"INSERT INTO {self.t('ducklake_column')} VALUES (:id, :snap, NULL, :tid, :ord, "
            ":name, :type, :init, :dflt, :nulls, :parent, :dtype, :dialect)",
            [
                {
                    "id": d.column_id,
                    "snap": self.snapshot_id,
                    "tid": table_id,
                    "ord": d.order,
                    "name": d.name,
                    "type": d.type,
                    "init": d.initial_default,
                    "dflt": d.default_value,
                    "nulls": self.b(d.nullable),
                    "parent": d.parent_id,
                    "dtype": d.default_value_type,
                    "dialect": d.default_value_dialect,
                }
                for d in drafts
            ],
        )

    def version_table(self, table_id: int, inlined_layout_changed: bool, t: StagedTable) -> None:
        if table_id not in self.versioned_tables:
            self.versioned_tables.append(table_id)
        if inlined_layout_changed:
            self.create_inlined_table(t)

    def create_table(self, t: StagedTable) -> None:
        t.table_id = self.catalog_id()
        self.insert_table_row(t)
        self.insert_columns(t.table_id, (d for c in t.columns for d in c.walk()))
        for d in (d for c in t.columns for d in c.walk()):
            if d.comment is not None:
                self.set_column_tag(t.table_id, d.column_id, d.comment)
        if t.comment is not None:
            self.set_tag(t.table_id, t.comment)
        self.change("created_table", qualified_name(t.schema.name, t.name))
        if t.partition:
            self.write_partition(t)
        if t.sort:
            self.write_sort(t)
        self.version_table(t.table_id, True, t)

    def drop_table(self, t: StagedTable) -> None:
        tid = t.table_id
        for table in (
            "ducklake_table",
            "ducklake_partition_info",
            "ducklake_column",
            "ducklake_column_tag",
            "ducklake_data_file",
            "ducklake_delete_file",
            "ducklake_sort_info",
        ):
            self.end_rows(table, "table_id = :tid", tid=tid)
        self.end_rows("ducklake_tag", "object_id = :tid", tid=tid)
        self.change("dropped_table", tid)  # type: ignore[arg-type]

    def alter_table(self, t: StagedTable) -> None:
        tid = t.table_id
        assert tid is not None
        layout_changed = False
        if t.name != t.base_name:
            self.end_rows("ducklake_table", "table_id = :tid", tid=tid)
            self.insert_table_row(t)
            self.change("created_table", qualified_name(t.schema.name, t.name))
            self.version_table(tid, False, t)
            layout_changed = True
            t.base_name = t.name
        if t.columns_changed:
            current, base = t.flat_columns(), t.base_columns
            changed = [
                cid
                for cid in sorted(set(current) | set(base))
                if cid not in current
                or cid not in base
                or current[cid].row_fields() != base[cid].row_fields()
            ]
            for cid in changed:
                if cid in base:
                    self.end_rows(
                        "ducklake_column", "table_id = :tid AND column_id = :cid", tid=tid, cid=cid
                    )
            self.insert_columns(tid, (current[c] for c in changed if c in current))
            structural = any(
                c not in current
                or c not in base
                or (current[c].name, current[c].type) != (base[c].name, base[c].type)
                for c in changed
            )
            layout_changed = layout_changed or structural
            self.change("altered_table", tid)
            self.version_table(tid, False, t)
        if t.partition_changed:
            self.end_rows("ducklake_partition_info", "table_id = :tid", tid=tid)
            self.write_partition(t)
            self.change("altered_table", tid)
            self.version_table(tid, False, t)
            layout_changed = True
        if t.sort_changed:
            self.end_rows("ducklake_sort_info", "table_id = :tid", tid=tid)
            if t.sort:
                self.write_sort(t)
            self.change("altered_table", tid)
        if t.comment_changed:
            self.set_tag(tid, t.comment)
            self.change("altered_table", tid)
        if t.column_comments_changed:
            flat = t.flat_columns()
            for cid in sorted(t.column_comments_changed):
                self.set_column_tag(tid, cid, flat[cid].comment if cid in flat else None)
            self.change("altered_table", tid)
        if layout_changed:
            self.create_inlined_table(t)

    def write_partition(self, t: StagedTable) -> None:
        pid = self.catalog_id()
        self.run(
            f"INSERT INTO {self.t('ducklake_partition_info')} VALUES (:pid, :tid, :snap, NULL)",
            {"pid": pid, "tid": t.table_id, "snap": self.snapshot_id},
        )
        self.run(
            f"INSERT INTO {self.t('ducklake_partition_column')} VALUES (:pid, :tid, :i, :cid, :tr)",
            [
                {"pid": pid, "tid": t.table_id, "i": i, "cid": cid, "tr": tr}
                for i, (cid, tr) in enumerate(t.partition or [])
            ],
        )

    def write_sort(self, t: StagedTable) -> None:
        sid = self.catalog_id()
        self.run(
            f"INSERT INTO {self.t('ducklake_sort_info')} VALUES (:sid, :tid, :snap, NULL)",
            {"sid": sid, "tid": t.table_id, "snap": self.snapshot_id},
        )
        self.run(
            f"INSERT INTO {self.t('ducklake_sort_expression')} VALUES (:sid, :tid, :i, :e, "
            "'duckdb', :d, :n)",
            [
                {"sid": sid, "tid": t.table_id, "i": i, "e": e, "d": d, "n": n}
                for i, (e, d, n) in enumerate(t.sort or [])
            ],
        )


def apply_commit(
    tx: Transaction, conn: Connection, latest: Snapshot, new_snapshot: bool, extra_info: str | None
) -> Snapshot | None:
    ctx = CommitContext(tx, conn, latest)
    if new_snapshot:
        if tx.catalog_changed():
            ctx.schema_version += 1
        # first statement: a concurrent writer that took this id makes us fail fast
        ctx.run(
            f"INSERT INTO {ctx.t('ducklake_snapshot')} VALUES (:id, :t, :v, :c, :f)",
            {
                "id": ctx.snapshot_id,
                "t": encode_catalog_time(ctx.backend, ctx.now),
                "v": ctx.schema_version,
                "c": ctx.next_catalog_id,
                "f": ctx.next_file_id,
            },
        )
    for s in tx._created_schemas:
        ctx.create_schema(s)
    for t in tx.all_tables():
        if t.created:
            ctx.create_table(t)
        elif t.dropped:
            ctx.drop_table(t)
        else:
            ctx.alter_table(t)
    for v in tx._view_order:
        if v.created:
            assert v.schema.schema_id is not None
            v.view_id = ctx.catalog_id()
            ctx.run(
                f"INSERT INTO {ctx.t('ducklake_view')} VALUES (:id, :uuid, :snap, NULL, :sid, "
                ":name, :dialect, :sql, :aliases)",
                {
                    "id": v.view_id,
                    "uuid": v.uuid,
                    "snap": ctx.snapshot_id,
                    "sid": v.schema.schema_id,
                    "name": v.name,
                    "dialect": v.dialect,
                    "sql": v.sql,
                    "aliases": v.column_aliases,
                },
            )
            if v.comment is not None:
                ctx.set_tag(v.view_id, v.comment)
            if v.spark_sql is not None:
                ctx.set_tag(v.view_id, v.spark_sql, key=SPARK_SQL_TAG)
            ctx.change("created_view", qualified_name(v.schema.name, v.name))
        elif v.dropped:
            ctx.end_rows("ducklake_view", "view_id = :id", id=v.view_id)
            ctx.end_rows("ducklake_tag", "object_id = :id", id=v.view_id)
            ctx.change("dropped_view", v.view_id)  # type: ignore[arg-type]
        elif v.comment_changed:
            assert v.view_id is not None
            ctx.set_tag(v.view_id, v.comment)
            ctx.change("altered_view", v.view_id)
    for s in tx._dropped_schemas:
        ctx.drop_schema(s)
    for s in tx._schema_map().values():
        if s.comment_changed and not s.created and s.schema_id is not None:
            ctx.set_tag(s.schema_id, s.comment)
    for op in tx.data_ops:
        if op.kind == "files":
            ctx.add_files(op.table, op.payload)
        elif op.kind == "deletes":
            ctx.add_deletes(op.table, op.payload)
        elif op.kind == "end_files":
            ctx.end_files(op.table, op.payload)
        elif op.kind == "inline_insert":
            ctx.inline_insert(op.table, *op.payload)
        elif op.kind == "inline_delete_rows":
            ctx.inline_delete_rows(op.table, op.payload)
        elif op.kind == "inline_delete_pos":
            ctx.inline_delete_positions(op.table, *op.payload)
        elif op.kind == "compact":
            apply_compaction(ctx, op.table, *op.payload)
        elif op.kind == "flush":
            apply_flush(ctx, op.table, op.payload)
    for opt in tx.option_ops:
        scope, scope_id = None, None
        if opt.table is not None:
            scope, scope_id = "table", opt.table.table_id
        elif opt.schema is not None:
            scope, scope_id = "schema", opt.schema.schema_id
        where = "scope IS NULL" if scope is None else "scope = :scope AND scope_id = :sid"
        ctx.run(
            f'DELETE FROM {ctx.t("ducklake_metadata")} WHERE "key" = :k AND {where}',
            {"k": opt.key, "scope": scope, "sid": scope_id},
        )
        ctx.run(
            f"INSERT INTO {ctx.t('ducklake_metadata')} VALUES (:k, :v, :scope, :sid)",
            {"k": opt.key, "v": opt.value, "scope": scope, "sid": scope_id},
        )
    if not new_snapshot:
        return None
    # DuckDB signals a data change with a file id even when all rows were inlined
    ctx.next_file_id += len(ctx.inline_only_tables - ctx.file_tables)
    ctx.flush_stats()
    ctx.run(
        f"INSERT INTO {ctx.t('ducklake_schema_versions')} VALUES (:snap, :v, :tid)",
        [
            {"snap": ctx.snapshot_id, "v": ctx.schema_version, "tid": tid}
            for tid in ctx.versioned_tables
        ],
    )
    ctx.run(
        f"UPDATE {ctx.t('ducklake_snapshot')} SET schema_version = :v, next_catalog_id = :c, "
        "next_file_id = :f WHERE snapshot_id = :id",
        {
            "id": ctx.snapshot_id,
            "v": ctx.schema_version,
            "c": ctx.next_catalog_id,
            "f": ctx.next_file_id,
        },
    )
    changes_made = format_changes(ctx.changes)
    ctx.run(
        f"INSERT INTO {ctx.t('ducklake_snapshot_changes')} VALUES (:id, :ch, :a, :m, :x)",
        {
            "id": ctx.snapshot_id,
            "ch": changes_made,
            "a": tx.author,
            "m": tx.commit_message,
            "x": extra_info,
        },
    )
    return Snapshot(
        ctx.snapshot_id,
        ctx.now,
        ctx.schema_version,
        ctx.next_catalog_id,
        ctx.next_file_id,
        split_changes(changes_made),  # as stored: deduplicated, in DuckDB's order
        tx.author,
        tx.commit_message,
        extra_info,
    )
