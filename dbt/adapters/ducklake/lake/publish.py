"""Write-audit-publish: the plans a build committed into its staging copy (staging_copy.py)
become one snapshot of the real catalog, or are dropped together with their files.

The plans are applied again, in their commit order, inside one write transaction of the
real catalog. Ids the build created in the copy (catalog ids and file ids at or above the
copy's counters) are looked up again by uuid or path as the publish creates them, so a
writer that committed meanwhile costs nothing but fresh ids; a true conflict (DuckLake's
rules, against the snapshots committed since the copy) publishes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from .codec import as_bool
from .commit import CommitContext, write_with_retries
from .conflicts import ChangeSet, Intent, check_conflicts, intent_of
from .errors import InvalidChangeError
from .maintenance import absolute_path, table_roots
from .models import Snapshot
from .plan import (
    AddDeleteFiles,
    AlterTable,
    CommentOnSchema,
    CommentOnView,
    CommitPlan,
    CreateTable,
    CreateView,
    DeleteInlinedPositions,
    DropSchema,
    DropTable,
    DropView,
    EndDataFiles,
    FlushInlined,
    MergeAdjacentFiles,
    RewriteDeletedFiles,
    SchemaRef,
    SetOption,
    TableRef,
)
from .reader import CatalogReader
from .store import Store


@dataclass(frozen=True)
class BuiltIds:
    """What the build created in the copy: ids from `catalog_from` / `file_from` on."""

    catalog_from: int
    file_from: int
    uuids: dict[int, str]  # schema, table and view ids -> uuid
    paths: dict[int, str]  # data file ids -> path

    def built(self, catalog_id: int | None) -> bool:
        return catalog_id is not None and catalog_id >= self.catalog_from


def built_ids(stage: Store, base: Snapshot) -> BuiltIds:
    """Read from the copy the objects and data files its build created."""
    q = stage.qualified
    uuids: dict[int, str] = {}
    with stage.connect() as conn:
        for table, key in (
            ("ducklake_schema", "schema_id"),
            ("ducklake_table", "table_id"),
            ("ducklake_view", "view_id"),
        ):
            for r in conn.execute(
                sa.text(f"SELECT {key}, {table[9:]}_uuid FROM {q(table)} WHERE {key} >= :c"),
                {"c": base.next_catalog_id},
            ).fetchall():
                uuids[int(r[0])] = str(r[1])
        paths = {
            int(r[0]): str(r[1])
            for r in conn.execute(
                sa.text(
                    f"SELECT data_file_id, path FROM {q('ducklake_data_file')} "
                    "WHERE data_file_id >= :f"
                ),
                {"f": base.next_file_id},
            ).fetchall()
        }
    return BuiltIds(base.next_catalog_id, base.next_file_id, uuids, paths)


def publish(
    real: Store,
    stage: Store,
    plans: Sequence[CommitPlan],
    *,
    author: str | None,
    message: str | None,
    extra_info: Any,
) -> Snapshot | None:
    """Write `plans` (committed into `stage` in this order) as one snapshot of `real`.
    `extra_info` may be a function of the published snapshot's id giving it."""
    if stage.staged_from is None:
        raise InvalidChangeError("publish: the catalog given as the stage is not a staging copy")
    _refuse_maintenance(plans)
    if not any(p.new_snapshot or p.option_ops for p in plans):
        return None
    base = stage.snapshot(stage.staged_from)
    built = built_ids(stage, base)
    # conflicts name tables and views that existed when the build began
    name_of = CatalogReader(real, base).entry_name
    intent = combined_intent(plans, built)
    resolve = extra_info if callable(extra_info) else None
    header = CommitPlan(base, author, message, None if resolve else extra_info, (), (), (), ())
    new_snapshot = any(p.new_snapshot for p in plans)

    def attempt(conn: Connection) -> Snapshot | None:
        latest = real.latest_snapshot(conn)
        if latest.snapshot_id != base.snapshot_id:
            others = real.snapshots_after(conn, base.snapshot_id)
            deleted = lambda: real.files_deleted_after(conn, base.snapshot_id)  # noqa: E731
            check_conflicts(intent, others, deleted, name_of)
        ctx = CommitContext(real, conn, latest, header)
        if new_snapshot:
            ctx.begin_snapshot(catalog_changed=any(p.catalog_ops for p in plans))
        for plan in plans:
            ctx.apply_ops(_Renumber(built, ctx).plan(plan))
        if not new_snapshot:
            return None
        if resolve is not None:
            return ctx.end_snapshot(replace(header, extra_info=resolve(ctx.snapshot_id)))
        return ctx.end_snapshot(header)

    return write_with_retries(real, attempt)


def _refuse_maintenance(plans: Sequence[CommitPlan]) -> None:
    for plan in plans:
        for op in plan.data_ops:
            if isinstance(op, MergeAdjacentFiles | RewriteDeletedFiles | FlushInlined):
                raise InvalidChangeError(
                    f"publish: table {plan.table(op.table_uuid).qualified_name}: maintenance "
                    "(compaction, flushing inlined data) cannot be staged; run it outside "
                    "an atomic build"
                )


def combined_intent(plans: Sequence[CommitPlan], built: BuiltIds) -> Intent:
    """Every plan's intent, without the objects and files the build itself created:
    nobody else can have touched those, and their copy ids mean nothing in the real
    catalog."""
    total = Intent(ChangeSet())
    for plan in plans:
        mine = intent_of(plan)
        for f in fields(ChangeSet):
            theirs = getattr(total.changes, f.name)
            if f.name in ("created_schemas", "created_entries"):  # by name
                theirs |= getattr(mine.changes, f.name)
            else:
                theirs |= {i for i in getattr(mine.changes, f.name) if not built.built(i)}
        for name, sid in mine.target_schema_ids.items():
            if not built.built(sid):
                total.target_schema_ids[name] = sid
        for sid, name in mine.dropped_schema_names.items():
            if not built.built(sid):
                total.dropped_schema_names[sid] = name
        for tid, files in mine.deleted_files.items():
            if not built.built(tid):
                old = {f for f in files if f < built.file_from}
                total.deleted_files.setdefault(tid, set()).update(old)
    return total


class _Renumber:
    """A plan from the copy with the build's own ids replaced by the publish's."""

    def __init__(self, built: BuiltIds, ctx: CommitContext):
        self.built = built
        self.ctx = ctx

    def catalog_id(self, object_id: int, known: dict[str, int]) -> int:
        if not self.built.built(object_id):
            return object_id
        return known[self.built.uuids[object_id]]

    def file_id(self, file_id: int) -> int:
        if file_id < self.built.file_from:
            return file_id
        return self.ctx.file_ids[self.built.paths[file_id]]

    def schema(self, s: SchemaRef) -> SchemaRef:
        # None: the commit looks the schema up by uuid among the ones it created
        return replace(s, schema_id=None) if self.built.built(s.schema_id) else s

    def table(self, t: TableRef) -> TableRef:
        table_id = None if self.built.built(t.table_id) else t.table_id
        return replace(t, schema=self.schema(t.schema), table_id=table_id)

    def plan(self, plan: CommitPlan) -> CommitPlan:
        return replace(
            plan,
            catalog_ops=tuple(self.catalog_op(op) for op in plan.catalog_ops),
            tables=tuple(self.table(t) for t in plan.tables),
            data_ops=tuple(self.data_op(op) for op in plan.data_ops),
            option_ops=tuple(self.option(op) for op in plan.option_ops),
        )

    def catalog_op(self, op: Any) -> Any:
        ctx = self.ctx
        match op:
            case CreateTable() | AlterTable():
                return replace(op, table=self.table(op.table))
            case CreateView():
                return replace(op, schema=self.schema(op.schema))
            case DropSchema() | CommentOnSchema():
                return replace(op, schema_id=self.catalog_id(op.schema_id, ctx.schema_ids))
            case DropTable():
                return replace(op, table_id=self.catalog_id(op.table_id, ctx.table_ids))
            case DropView() | CommentOnView():
                return replace(op, view_id=self.catalog_id(op.view_id, ctx.view_ids))
        return op

    def data_op(self, op: Any) -> Any:
        match op:
            case AddDeleteFiles():
                files = tuple(
                    replace(f, data_file_id=self.file_id(f.data_file_id)) for f in op.files
                )
                return replace(op, files=files)
            case EndDataFiles():
                return replace(op, data_file_ids=tuple(self.file_id(i) for i in op.data_file_ids))
            case DeleteInlinedPositions():
                return replace(op, data_file_id=self.file_id(op.data_file_id))
        return op

    def option(self, op: SetOption) -> SetOption:
        return replace(op, schema=self.schema(op.schema)) if op.schema is not None else op


def staged_plans(stage: Store) -> list[Any]:
    """The commits made in the copy, in the order they committed: what `publish` takes."""
    return [plan for _, plan in sorted(stage.commit_log or [], key=lambda e: e[0])]


def remove_staged_files(stage: Store) -> tuple[int, list[str]]:
    """Removes every file the copy's commits registered (nothing of them is published);
    returns how many were removed and the paths the storage refused (orphans, for
    `ducklake_delete_orphaned_files`)."""
    paths = staged_files(stage)
    left = []
    for path in paths:
        try:
            stage.files.delete(path)
        except Exception:  # a file the storage refuses to remove
            left.append(path)
    return len(paths) - len(left), left


def staged_files(stage: Store) -> list[str]:
    """Absolute paths of every data and delete file the build registered in the copy
    (files it replaced itself included): after a discard, nobody needs them."""
    if stage.staged_from is None:
        return []
    base = stage.snapshot(stage.staged_from)
    q = stage.qualified
    with stage.connect() as conn:
        roots = table_roots(stage, conn)
        rows = conn.execute(
            sa.text(
                f"SELECT table_id, path, path_is_relative FROM {q('ducklake_data_file')} "
                f"WHERE data_file_id >= :f UNION ALL "
                f"SELECT table_id, path, path_is_relative FROM {q('ducklake_delete_file')} "
                f"WHERE delete_file_id >= :f"
            ),
            {"f": base.next_file_id},
        ).fetchall()
        scheduled = conn.execute(
            sa.text(
                f"SELECT path, path_is_relative FROM "
                f"{q('ducklake_files_scheduled_for_deletion')} WHERE data_file_id >= :f"
            ),
            {"f": base.next_file_id},
        ).fetchall()
    paths = {_absolute(stage, roots, r.table_id, r.path, r.path_is_relative) for r in rows}
    paths |= {absolute_path(stage, r.path, r.path_is_relative) for r in scheduled}
    return sorted(paths)


def _absolute(
    stage: Store, roots: dict[int, tuple[str, bool]], table_id: int, path: str, relative: Any
) -> str:
    if not as_bool(relative):
        return path
    root, root_relative = roots.get(table_id, ("", True))
    return stage.data_path + root + path if root_relative else root + path
