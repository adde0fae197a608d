"""Apply a CommitPlan as the catalog rows of one new snapshot, retrying on collisions.

Each attempt runs inside one metadata write transaction. Ids come from the latest
snapshot's counters, so an attempt that collides with another writer is rolled back
and the same, unchanged plan is applied again. Rows written are proportional to what
the plan changes.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Iterable

from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, OperationalError
from typing_extensions import assert_never  # typing.assert_never is Python 3.11+

from .changes_made import format_changes, qualified_name, quote_name, split_changes
from .codec import encode_catalog_time
from .commit_data import DataWriter
from .commit_maintenance import flush_inlined, merge_adjacent, rewrite_deleted
from .conflicts import check_conflicts, intent_of
from .errors import CatalogNotFoundError, CatalogUnreachableError
from .models import SPARK_SQL_TAG, Column, Snapshot
from .plan import (
    AddDataFiles,
    AddDeleteFiles,
    AlterTable,
    CatalogOp,
    CommentOnSchema,
    CommentOnView,
    CommitPlan,
    CreateSchema,
    CreateTable,
    CreateView,
    DataOp,
    DeleteInlinedPositions,
    DeleteInlinedRows,
    DropSchema,
    DropTable,
    DropView,
    EndDataFiles,
    FlushInlined,
    InsertInlined,
    MergeAdjacentFiles,
    RewriteDeletedFiles,
    SetOption,
    TableRef,
)
from .store import Store

log = logging.getLogger("dbt.adapters.ducklake.lake")

MAX_RETRIES = 10
RETRY_WAIT_S = 0.1
RETRY_BACKOFF = 1.5
_RETRYABLE = ("primary key", "unique", "conflict", "concurrent", "database is locked")


def is_snapshot_collision(exc: DBAPIError) -> bool:
    """A concurrent writer took our snapshot id (or held the SQLite lock too long)."""
    return any(word in str(exc.orig).lower() for word in _RETRYABLE)


def commit_plan(store: Store, plan: CommitPlan, name_of: Callable[[int], str]) -> Snapshot | None:
    """Write `plan` as one snapshot (None when it changes options only).

    When other writers committed after the plan's base snapshot, the spec's conflict
    rules decide between CommitConflictError and going ahead with fresh ids; a snapshot
    id taken under our feet is retried with backoff. `name_of` names tables in errors.
    """
    intent = intent_of(plan)
    base_id = plan.base.snapshot_id

    def attempt(conn: Connection) -> Snapshot | None:
        latest = store.latest_snapshot(conn)
        if latest.snapshot_id != base_id:
            others = store.snapshots_after(conn, base_id)
            deleted = lambda: store.files_deleted_after(conn, base_id)  # noqa: E731
            check_conflicts(intent, others, deleted, name_of)
        return apply_plan(store, conn, latest, plan)

    snapshot = write_with_retries(store, attempt)
    if store.commit_log is not None:  # a staging copy remembers what to publish, in order
        # (options alone make no snapshot: they follow the snapshot they were based on)
        order = snapshot.snapshot_id if snapshot else plan.base.snapshot_id + 0.5
        store.commit_log.append((order, plan))
    return snapshot


def write_with_retries(
    store: Store, attempt: Callable[[Connection], Snapshot | None]
) -> Snapshot | None:
    """Run `attempt` in a write transaction until no other writer takes our snapshot id.

    A PostgreSQL catalog whose connection is lost (server restarted, backend
    terminated) is waited for, up to LOST_CATALOG_WAIT_S: an attempt cut before its
    COMMIT was sent rolled back, so it runs again; one cut during its COMMIT is looked
    up, and run again only if its snapshot is not there."""
    tries = 0
    lost_since: float | None = None
    while True:
        written: Snapshot | None = None
        committing = False
        try:
            with store.write_connection() as conn:
                written = attempt(conn)
                committing = True  # leaving the block sends the COMMIT
            return written
        except DBAPIError as exc:
            if catalog_lost(store, exc):
                lost_since = lost_since if lost_since is not None else time.monotonic()
                if committing and _landed(store, written, lost_since, exc):
                    return written
                _wait_for_catalog(store, lost_since, exc)
                continue
            if not is_snapshot_collision(exc) or tries + 1 >= MAX_RETRIES:
                raise
            wait = RETRY_WAIT_S * random.uniform(0.5, 1.0) * RETRY_BACKOFF**tries
            tries += 1
            log.debug("DuckLake commit collided (attempt %s); retrying in %.2fs", tries, wait)
            time.sleep(wait)


LOST_CATALOG_WAIT_S = 30.0  # how long a commit waits for a lost catalog to come back
_LOST_SQLSTATES = ("57P01", "57P02", "57P03")  # terminated, crash shutdown, starting up


def catalog_lost(store: Store, exc: DBAPIError) -> bool:
    """The PostgreSQL catalog's connection broke or the server refuses connections for
    now (not an error of the statement)."""
    if store.backend != "postgres":
        return False  # a SQLite file does not go away between statements
    if exc.connection_invalidated:
        return True
    sqlstate = getattr(exc.orig, "sqlstate", None)
    if sqlstate:
        return str(sqlstate).startswith("08") or sqlstate in _LOST_SQLSTATES
    return isinstance(exc, OperationalError)  # a failed connect carries no SQLSTATE


def _wait_for_catalog(store: Store, lost_since: float, exc: DBAPIError) -> None:
    waited = time.monotonic() - lost_since
    if waited >= LOST_CATALOG_WAIT_S:
        raise CatalogUnreachableError(
            f"lost the connection to the DuckLake catalog ({store.location.describe()}) "
            f"and it did not come back within {waited:.0f}s: {_first_line(exc)}; nothing "
            "of this commit was written"
        ) from exc
    log.debug("DuckLake catalog connection lost (%s); retrying the commit", _first_line(exc))
    time.sleep(min(0.5, 0.05 * 2 ** min(int(waited), 4)))


def _landed(store: Store, written: Snapshot | None, lost_since: float, exc: DBAPIError) -> bool:
    """Whether the snapshot whose COMMIT was cut is in the catalog (once it answers)."""
    if written is None:  # options alone: no snapshot to look for
        raise CatalogUnreachableError(
            f"lost the connection to the DuckLake catalog ({store.location.describe()}) "
            f"while committing an option change: {_first_line(exc)}; it may or may not "
            "be set"
        ) from exc
    while True:
        try:
            found = store.snapshot(written.snapshot_id)
        except CatalogNotFoundError:
            return False
        except DBAPIError as again:
            if not catalog_lost(store, again):
                raise
            _wait_for_catalog(store, lost_since, again)
            continue
        return (found.snapshot_time, found.author, found.commit_extra_info) == (
            written.snapshot_time,
            written.author,
            written.commit_extra_info,
        )


def _first_line(exc: DBAPIError) -> str:
    text = str(exc.orig).strip() or type(exc.orig).__name__
    return text.splitlines()[0]


def apply_plan(
    store: Store, conn: Connection, latest: Snapshot, plan: CommitPlan
) -> Snapshot | None:
    ctx = CommitContext(store, conn, latest, plan)
    if plan.new_snapshot:
        ctx.begin_snapshot(catalog_changed=bool(plan.catalog_ops))
    ctx.apply_ops(plan)
    if not plan.new_snapshot:
        return None
    return ctx.end_snapshot(plan)


class CommitContext(DataWriter):
    """One snapshot's catalog rows: the data ones (DataWriter) and schemas, tables, views."""

    # -- the snapshot row ----------------------------------------------------------
    def begin_snapshot(self, catalog_changed: bool) -> None:
        if catalog_changed:
            self.schema_version += 1
        # first statement: a concurrent writer that took this id makes us fail fast
        self.run(
            f"INSERT INTO {self.t('ducklake_snapshot')} VALUES (:id, :t, :v, :c, :f)",
            self._counters(),
        )

    def _counters(self) -> dict[str, object]:
        return {
            "id": self.snapshot_id,
            "t": encode_catalog_time(self.backend, self.now),
            "v": self.schema_version,
            "c": self.next_catalog_id,
            "f": self.next_file_id,
        }

    def end_snapshot(self, plan: CommitPlan) -> Snapshot:
        # DuckDB signals a data change with a file id even when all rows were inlined
        self.next_file_id += len(self.inline_only_tables - self.file_tables)
        self.flush_stats()
        self.run(
            f"INSERT INTO {self.t('ducklake_schema_versions')} VALUES (:snap, :v, :tid)",
            [
                {"snap": self.snapshot_id, "v": self.schema_version, "tid": tid}
                for tid in self.versioned_tables
            ],
        )
        self.run(
            f"UPDATE {self.t('ducklake_snapshot')} SET schema_version = :v, "
            "next_catalog_id = :c, next_file_id = :f WHERE snapshot_id = :id",
            self._counters(),
        )
        changes_made = format_changes(self.changes)
        self.run(
            f"INSERT INTO {self.t('ducklake_snapshot_changes')} VALUES (:id, :ch, :a, :m, :x)",
            {
                "id": self.snapshot_id,
                "ch": changes_made,
                "a": plan.author,
                "m": plan.commit_message,
                "x": plan.extra_info,
            },
        )
        return Snapshot(
            self.snapshot_id,
            self.now,
            self.schema_version,
            self.next_catalog_id,
            self.next_file_id,
            split_changes(changes_made),  # as stored: deduplicated, in DuckDB's order
            plan.author,
            plan.commit_message,
            plan.extra_info,
        )

    # -- dispatch ------------------------------------------------------------------
    def apply_ops(self, plan: CommitPlan) -> None:
        """Write one plan's rows into this snapshot (a publish writes several)."""
        self.tables = {t.uuid: t for t in plan.tables}
        for op in plan.catalog_ops:
            self.apply_catalog(op)
        for data_op in plan.data_ops:
            self.apply_data(data_op)
        for option in plan.option_ops:
            self.set_option(option)

    def apply_catalog(self, op: CatalogOp) -> None:
        match op:
            case CreateSchema():
                self.create_schema(op)
            case DropSchema():
                self.drop_schema(op)
            case CommentOnSchema():
                self.set_tag(op.schema_id, op.comment)
            case CreateTable():
                self.create_table(op)
            case DropTable():
                self.drop_table(op)
            case AlterTable():
                self.alter_table(op)
            case CreateView():
                self.create_view(op)
            case DropView():
                self.end_rows("ducklake_view", "view_id = :id", id=op.view_id)
                self.end_rows("ducklake_tag", "object_id = :id", id=op.view_id)
                self.change("dropped_view", op.view_id)
            case CommentOnView():
                self.set_tag(op.view_id, op.comment)
                self.change("altered_view", op.view_id)
            case _:
                assert_never(op)

    def apply_data(self, op: DataOp) -> None:
        t = self.tables[op.table_uuid]
        match op:
            case AddDataFiles():
                self.add_files(t, op.files)
            case AddDeleteFiles():
                self.add_deletes(t, op.files)
            case EndDataFiles():
                self.end_files(t, op.data_file_ids)
            case InsertInlined():
                self.inline_insert(t, op.rows, op.row_ids)
            case DeleteInlinedRows():
                self.inline_delete_rows(t, op.row_ids)
            case DeleteInlinedPositions():
                self.inline_delete_positions(t, op.data_file_id, op.positions)
            case MergeAdjacentFiles():
                merge_adjacent(self, t, op)
            case RewriteDeletedFiles():
                rewrite_deleted(self, t, op)
            case FlushInlined():
                flush_inlined(self, t, op)
            case _:
                assert_never(op)

    # -- schemas -------------------------------------------------------------------
    def create_schema(self, op: CreateSchema) -> None:
        s = op.schema
        schema_id = self.schema_ids[s.uuid] = self.catalog_id()
        self.run(
            f"INSERT INTO {self.t('ducklake_schema')} VALUES (:id, :uuid, :snap, NULL, :name, "
            ":path, :rel)",
            {
                "id": schema_id,
                "uuid": s.uuid,
                "snap": self.snapshot_id,
                "name": s.name,
                "path": s.path,
                "rel": self.b(s.path_is_relative),
            },
        )
        self.change("created_schema", quote_name(s.name))
        if op.comment is not None:
            self.set_tag(schema_id, op.comment)

    def drop_schema(self, op: DropSchema) -> None:
        self.end_rows("ducklake_schema", "schema_id = :id", id=op.schema_id)
        self.end_rows("ducklake_tag", "object_id = :id", id=op.schema_id)
        self.change("dropped_schema", op.schema_id)

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
    def insert_table_row(self, t: TableRef) -> None:
        self.run(
            f"INSERT INTO {self.t('ducklake_table')} VALUES (:id, :uuid, :snap, NULL, :sid, "
            ":name, :path, :rel)",
            {
                "id": self.tid(t),
                "uuid": t.uuid,
                "snap": self.snapshot_id,
                "sid": self.sid(t.schema),
                "name": t.name,
                "path": t.path,
                "rel": self.b(True),
            },
        )

    def insert_columns(self, table_id: int, columns: Iterable[Column]) -> None:
        self.run(
            f"INSERT INTO {self.t('ducklake_column')} VALUES (:id, :snap, NULL, :tid, :ord, "
            ":name, :type, :init, :dflt, :nulls, :parent, :dtype, :dialect)",
            [
                {
                    "id": c.column_id,
                    "snap": self.snapshot_id,
                    "tid": table_id,
                    "ord": c.order,
                    "name": c.name,
                    "type": c.type,
                    "init": c.initial_default,
                    "dflt": c.default_value,
                    "nulls": self.b(c.nullable),
                    "parent": c.parent_id,
                    "dtype": c.default_value_type,
                    "dialect": c.default_value_dialect,
                }
                for c in columns
            ],
        )

    def version_table(self, table_id: int) -> None:
        if table_id not in self.versioned_tables:
            self.versioned_tables.append(table_id)

    def create_table(self, op: CreateTable) -> None:
        t = op.table
        table_id = self.table_ids[t.uuid] = self.catalog_id()
        self.insert_table_row(t)
        flat = [c for top in t.columns for c in top.walk()]
        self.insert_columns(table_id, flat)
        for c in flat:
            if c.comment is not None:
                self.set_column_tag(table_id, c.column_id, c.comment)
        if op.comment is not None:
            self.set_tag(table_id, op.comment)
        self.change("created_table", qualified_name(t.schema.name, t.name))
        if op.partition:
            self.write_partition(table_id, op.partition)
        if op.sort:
            self.write_sort(table_id, op.sort)
        self.version_table(table_id)
        self.create_inlined_table(t)

    def drop_table(self, op: DropTable) -> None:
        for table in (
            "ducklake_table",
            "ducklake_partition_info",
            "ducklake_column",
            "ducklake_column_tag",
            "ducklake_data_file",
            "ducklake_delete_file",
            "ducklake_sort_info",
        ):
            self.end_rows(table, "table_id = :tid", tid=op.table_id)
        self.end_rows("ducklake_tag", "object_id = :tid", tid=op.table_id)
        self.change("dropped_table", op.table_id)

    def alter_table(self, op: AlterTable) -> None:
        """A new inlined-data table follows any change of the table's layout, as in DuckDB."""
        t, tid = op.table, self.tid(op.table)
        if op.renamed:
            self.end_rows("ducklake_table", "table_id = :tid", tid=tid)
            self.insert_table_row(t)
            self.change("created_table", qualified_name(t.schema.name, t.name))
            self.version_table(tid)
        if op.columns is not None:
            for cid in op.columns.ended:
                self.end_rows(
                    "ducklake_column", "table_id = :tid AND column_id = :cid", tid=tid, cid=cid
                )
            self.insert_columns(tid, op.columns.written)
            self.version_table(tid)
        if op.partition is not None:
            self.end_rows("ducklake_partition_info", "table_id = :tid", tid=tid)
            self.write_partition(tid, op.partition)
            self.version_table(tid)
        if op.sort is not None:
            self.end_rows("ducklake_sort_info", "table_id = :tid", tid=tid)
            self.write_sort(tid, op.sort)
        if op.comment is not None:
            self.set_tag(tid, op.comment.text)
        for cid, comment in op.column_comments:
            self.set_column_tag(tid, cid, comment)
        if op.altered:
            self.change("altered_table", tid)
        structural = op.columns is not None and op.columns.structural
        if op.renamed or structural or op.partition is not None:
            self.create_inlined_table(t)

    def write_partition(self, table_id: int, fields: tuple[tuple[int, str], ...]) -> None:
        pid = self.catalog_id()
        self.run(
            f"INSERT INTO {self.t('ducklake_partition_info')} VALUES (:pid, :tid, :snap, NULL)",
            {"pid": pid, "tid": table_id, "snap": self.snapshot_id},
        )
        self.run(
            f"INSERT INTO {self.t('ducklake_partition_column')} VALUES (:pid, :tid, :i, :cid, :tr)",
            [
                {"pid": pid, "tid": table_id, "i": i, "cid": cid, "tr": tr}
                for i, (cid, tr) in enumerate(fields)
            ],
        )

    def write_sort(self, table_id: int, fields: tuple[tuple[str, str, str], ...]) -> None:
        if not fields:
            return
        sid = self.catalog_id()
        self.run(
            f"INSERT INTO {self.t('ducklake_sort_info')} VALUES (:sid, :tid, :snap, NULL)",
            {"sid": sid, "tid": table_id, "snap": self.snapshot_id},
        )
        self.run(
            f"INSERT INTO {self.t('ducklake_sort_expression')} VALUES (:sid, :tid, :i, :e, "
            "'duckdb', :d, :n)",
            [
                {"sid": sid, "tid": table_id, "i": i, "e": e, "d": d, "n": n}
                for i, (e, d, n) in enumerate(fields)
            ],
        )

    # -- views and options ---------------------------------------------------------
    def create_view(self, op: CreateView) -> None:
        view_id = self.view_ids[op.uuid] = self.catalog_id()
        self.run(
            f"INSERT INTO {self.t('ducklake_view')} VALUES (:id, :uuid, :snap, NULL, :sid, "
            ":name, :dialect, :sql, :aliases)",
            {
                "id": view_id,
                "uuid": op.uuid,
                "snap": self.snapshot_id,
                "sid": self.sid(op.schema),
                "name": op.name,
                "dialect": op.dialect,
                "sql": op.sql,
                "aliases": op.column_aliases,
            },
        )
        if op.comment is not None:
            self.set_tag(view_id, op.comment)
        if op.spark_sql is not None:
            self.set_tag(view_id, op.spark_sql, key=SPARK_SQL_TAG)
        self.change("created_view", qualified_name(op.schema.name, op.name))

    def set_option(self, op: SetOption) -> None:
        scope: str | None = None
        scope_id: int | None = None
        if op.table_uuid is not None:
            scope, scope_id = "table", self.tid(self.tables[op.table_uuid])
        elif op.schema is not None:
            scope, scope_id = "schema", self.sid(op.schema)
        where = "scope IS NULL" if scope is None else "scope = :scope AND scope_id = :sid"
        self.run(
            f'DELETE FROM {self.t("ducklake_metadata")} WHERE "key" = :k AND {where}',
            {"k": op.key, "scope": scope, "sid": scope_id},
        )
        self.run(
            f"INSERT INTO {self.t('ducklake_metadata')} VALUES (:k, :v, :scope, :sid)",
            {"k": op.key, "v": op.value, "scope": scope, "sid": scope_id},
        )
