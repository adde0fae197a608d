"""Stage catalog and data changes; commit them as exactly one DuckLake snapshot.

Staging validates against the snapshot the transaction started from (plus what it has
staged), so bad input fails before anything is written. Committing freezes the staged
drafts into an immutable CommitPlan (plan.py) that commit.py writes in one metadata
transaction, retrying the same plan with fresh ids when another writer got there first
(files already written are reused, never rewritten).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from types import TracebackType
from typing import Any

from .commit import commit_plan
from .data_edits import DataEdits
from .drafts import (
    ColumnDraft,
    StagedSchema,
    StagedTable,
    StagedView,
    drafts_from_spec,
    new_uuid,
    object_path,
)
from .errors import (
    CatalogExistsError,
    CatalogNotFoundError,
    CommitMessageRequiredError,
    InvalidChangeError,
    LakeError,
)
from .models import Snapshot
from .names import check_name
from .options import check_option_value
from .plan import (
    CatalogOp,
    CommentOnSchema,
    CommentOnView,
    CommitPlan,
    CreateSchema,
    DataOp,
    DropSchema,
    DropTable,
    DropView,
    SetOption,
)
from .reader import CatalogReader
from .store import Store
from .table_edits import TableEdits
from .types import ColumnSpec


class Transaction(TableEdits, DataEdits):
    """Use as a context manager: commits on normal exit, discards on an exception."""

    def __init__(
        self,
        lake: Store,
        *,
        author: str | None,
        commit_message: str | None,
        extra_info: Any,
    ):
        self.lake = lake
        self.author = author
        self.commit_message = commit_message
        self.extra_info = extra_info
        self.base = lake.latest_snapshot()
        self.catalog = CatalogReader(lake, self.base)
        self._schemas: dict[str, StagedSchema] | None = None
        self._dropped_schemas: list[StagedSchema] = []
        self._tables: dict[tuple[str, str], StagedTable] = {}
        self._table_order: list[StagedTable] = []
        self._views: dict[tuple[str, str], StagedView] = {}
        self._view_order: list[StagedView] = []
        self._created_schemas: list[StagedSchema] = []
        self.data_ops: list[DataOp] = []
        self.option_ops: list[SetOption] = []
        self.committed: Snapshot | None = None
        self._closed = False

    @property
    def stamp_snapshot_id(self) -> int:
        """Snapshot id to write into `_ducklake_internal_snapshot_id` of new rows.

        Like DuckDB, files are stamped with base + 1 when written and are not rewritten
        if a retry commits under a later id. A staging copy stamps the real catalog's
        base + 1: its publish snapshot is that id or later, never earlier.
        """
        if self.lake.staged_from is not None:
            return self.lake.staged_from + 1
        return self.base.snapshot_id + 1

    # -- context manager -------------------------------------------------------------
    def __enter__(self) -> Transaction:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None and not self._closed:
            self.commit()
        self._closed = True

    # -- schemas ---------------------------------------------------------------------
    def _schema_map(self) -> dict[str, StagedSchema]:
        if self._schemas is None:
            self._schemas = {
                s.name: StagedSchema(
                    s.name,
                    s.schema_id,
                    s.schema_uuid,
                    s.path,
                    s.path_is_relative,
                    comment=s.comment,
                )
                for s in self.catalog.schemas()
            }
        return self._schemas

    def schema(self, name: str) -> StagedSchema:
        found = self._schema_map().get(name)
        if found is None:
            raise CatalogNotFoundError(f"schema {name!r} does not exist")
        return found

    def has_schema(self, name: str) -> bool:
        return name in self._schema_map()

    def create_schema(self, name: str, *, if_not_exists: bool = False) -> StagedSchema:
        check_name("schema", name)
        if name in self._schema_map():
            if if_not_exists:
                return self._schema_map()[name]
            raise CatalogExistsError(f"schema {name!r} already exists")
        sid_uuid = new_uuid()
        staged = StagedSchema(name, None, sid_uuid, object_path(name, sid_uuid), created=True)
        self._schema_map()[name] = staged
        self._created_schemas.append(staged)
        return staged

    def drop_schema(self, name: str, *, cascade: bool = False, if_exists: bool = False) -> None:
        if name not in self._schema_map():
            if if_exists:
                return
            raise CatalogNotFoundError(f"schema {name!r} does not exist")
        tables = [t for t in self.catalog.tables(name)] + [
            t for t in self._table_order if t.schema.name == name and t.created
        ]
        live_tables = [t.name for t in tables if not self._is_dropped_table(name, t.name)]
        live_views = [
            v.name for v in self.catalog.views(name) if not self._is_dropped_view(name, v.name)
        ]
        live_views += [
            v.name
            for v in self._view_order
            if v.schema.name == name and v.created and not v.dropped
        ]
        if live_tables or live_views:
            if not cascade:
                raise InvalidChangeError(
                    f"cannot drop schema {name!r}: it still contains "
                    f"{', '.join(sorted(set(live_tables + live_views)))} (use cascade)"
                )
            for tname in sorted(set(live_tables)):
                self.drop_table(name, tname)
            for vname in sorted(set(live_views)):
                self.drop_view(name, vname)
        staged = self._schema_map().pop(name)
        if staged.created:
            self._created_schemas.remove(staged)
        else:
            staged.dropped = True
            self._dropped_schemas.append(staged)

    def comment_on_schema(self, name: str, comment: str | None) -> None:
        staged = self.schema(name)
        staged.comment, staged.comment_changed = comment, True

    def _is_dropped_table(self, schema: str, name: str) -> bool:
        staged = self._tables.get((schema, name))
        return staged is not None and staged.dropped

    def _is_dropped_view(self, schema: str, name: str) -> bool:
        staged = self._views.get((schema, name))
        return staged is not None and staged.dropped

    # -- tables ----------------------------------------------------------------------
    def table(self, schema: str, name: str) -> StagedTable:
        """The table as staged so far (loaded from the base snapshot on first use)."""
        staged = self._tables.get((schema, name))
        if staged is not None:
            if staged.dropped:
                raise CatalogNotFoundError(f"table {schema}.{name} was dropped in this transaction")
            return staged
        staged_schema = self.schema(schema)
        info = self.catalog.find_table(schema, name)
        if info is None or staged_schema.created:
            raise CatalogNotFoundError(f"table {schema}.{name} does not exist")
        columns = self.catalog.columns(info.table_id)
        drafts = [ColumnDraft.from_column(c) for c in columns]
        max_column_id = self.catalog.max_column_id(info.table_id)
        staged = StagedTable(
            schema=staged_schema,
            name=name,
            table_id=info.table_id,
            uuid=info.table_uuid,
            path=info.path,
            root=self.catalog.table_root(info),
            columns=drafts,
            next_column_id=max_column_id + 1,
            base_name=name,
            base_columns={
                d.column_id: ColumnDraft.from_column(d.to_column())
                for c in drafts
                for d in c.walk()
            },
            base_partition=self.catalog.partition_spec(info.table_id),
            base_sort=self.catalog.sort_spec(info.table_id),
            comment=info.comment,
        )
        self._remember(staged)
        return staged

    def has_changed(self, schema: str, name: str) -> bool:
        """Whether this transaction changed the table or view (scans read the base snapshot,
        so a later statement of the same transaction would not see the change)."""
        for t in self._table_order:
            named = t.schema.name == schema and name in (t.base_name, t.name)
            if named and (_table_changed(t) or self._has_data(t)):
                return True
        view = self._views.get((schema, name))
        return view is not None and (view.created or view.dropped)

    def has_new_rows_or_identity(self, schema: str, name: str) -> bool:
        """Whether the table was created, dropped, renamed or had rows changed here: a
        later statement reading it from the base snapshot would then miss the change
        (column ADD/DROP alone do not count: readers conform to the new columns)."""
        for t in self._table_order:
            if t.schema.name != schema or name not in (t.base_name, t.name):
                continue
            moved = t.created or t.dropped or t.name != t.base_name
            if moved or self._has_data(t):
                return True
        return False

    def has_table(self, schema: str, name: str) -> bool:
        try:
            self.table(schema, name)
            return True
        except CatalogNotFoundError:
            return False

    def _remember(self, staged: StagedTable) -> None:
        self._tables[(staged.schema.name, staged.name)] = staged
        self._table_order.append(staged)

    def _check_entry_free(self, schema: str, name: str) -> None:
        if self.has_table(schema, name):
            raise CatalogExistsError(f"table {schema}.{name} already exists")
        if self.has_view(schema, name):
            raise CatalogExistsError(f"{schema}.{name} already exists as a view")

    def create_table(
        self,
        schema: str,
        name: str,
        columns: Sequence[ColumnSpec],
        *,
        partition_by: Sequence[tuple[str, str]] | None = None,
        sort_by: Sequence[tuple[str, str, str]] | None = None,
        comment: str | None = None,
    ) -> StagedTable:
        check_name("table", name)
        staged_schema = self.schema(schema)
        self._check_entry_free(schema, name)
        if not columns:
            raise InvalidChangeError(f"table {schema}.{name} needs at least one column")
        _check_unique([c.name for c in columns], f"table {schema}.{name}")
        drafts, next_id = [], 1
        for spec in columns:
            drafts.append(drafts_from_spec(spec, next_id, None))
            next_id += spec.count()
        tid_uuid = new_uuid()
        path = object_path(name, tid_uuid)
        staged = StagedTable(
            schema=staged_schema,
            name=name,
            table_id=None,
            uuid=tid_uuid,
            path=path,
            root=staged_schema.directory(self.lake.data_path) + path,
            columns=drafts,
            next_column_id=next_id,
            created=True,
            comment=comment,
        )
        # a table of the same name dropped earlier in this transaction stays in
        # `_table_order` (before this one), so the commit ends it before creating this
        old = self._tables.get((schema, name))
        if old is not None and old.dropped:
            del self._tables[(schema, name)]
        self._remember(staged)
        if partition_by:
            self.set_partitioned_by(staged, partition_by)
        if sort_by:
            self.set_sorted_by(staged, sort_by)
        return staged

    def all_tables(self) -> list[StagedTable]:
        """Every table this transaction touched, in staging order (so a dropped table
        comes before the table that replaces its name)."""
        return list(self._table_order)

    def drop_table(self, schema: str, name: str, *, if_exists: bool = False) -> None:
        if not self.has_table(schema, name):
            if if_exists:
                return
            raise CatalogNotFoundError(f"table {schema}.{name} does not exist")
        staged = self.table(schema, name)
        # data staged for a table that goes away is moot
        self.data_ops = [op for op in self.data_ops if op.table_uuid != staged.uuid]
        if staged.created:
            del self._tables[(schema, name)]
            self._table_order.remove(staged)
            return
        staged.dropped = True

    def rename_table(self, schema: str, name: str, new_name: str) -> StagedTable:
        check_name("table", new_name)
        staged = self.table(schema, name)
        self._check_entry_free(schema, new_name)
        del self._tables[(schema, name)]
        staged.name = new_name
        self._tables[(schema, new_name)] = staged
        return staged

    def comment_on_table(self, table: StagedTable, comment: str | None) -> None:
        table.comment, table.comment_changed = comment, True

    # -- views -----------------------------------------------------------------------
    def has_view(self, schema: str, name: str) -> bool:
        staged = self._views.get((schema, name))
        if staged is not None:
            return not staged.dropped
        if not self.has_schema(schema) or self.schema(schema).created:
            return False
        return any(v.name == name for v in self.catalog.views(schema))

    def create_view(
        self,
        schema: str,
        name: str,
        sql: str,
        *,
        dialect: str = "duckdb",
        column_aliases: Sequence[str] | None = None,
        or_replace: bool = False,
        comment: str | None = None,
        spark_sql: str | None = None,
    ) -> StagedView:
        """`sql` in `dialect` is what DuckDB reads; `spark_sql`, when given, is kept in a
        `spark_sql` tag so this engine runs the text the view was written in."""
        check_name("view", name)
        staged_schema = self.schema(schema)
        if or_replace and self.has_view(schema, name):
            self.drop_view(schema, name)
        self._check_entry_free(schema, name)
        aliases = ",".join(column_aliases) if column_aliases else ""
        staged = StagedView(
            staged_schema,
            name,
            None,
            new_uuid(),
            dialect,
            sql,
            aliases,
            created=True,
            comment=comment,
            comment_changed=comment is not None,
            spark_sql=spark_sql,
        )
        old = self._views.get((schema, name))
        if old is not None and old.dropped:
            self._views[(schema, f"\0dropped\0{name}")] = old
        self._views[(schema, name)] = staged
        self._view_order.append(staged)
        return staged

    def _view(self, schema: str, name: str) -> StagedView:
        staged = self._views.get((schema, name))
        if staged is not None and not staged.dropped:
            return staged
        for v in self.catalog.views(schema) if self.has_schema(schema) else []:
            if v.name == name and staged is None:
                sv = StagedView(
                    self.schema(schema),
                    name,
                    v.view_id,
                    v.view_uuid,
                    v.dialect,
                    v.sql,
                    v.column_aliases,
                    comment=v.comment,
                )
                self._views[(schema, name)] = sv
                self._view_order.append(sv)
                return sv
        raise CatalogNotFoundError(f"view {schema}.{name} does not exist")

    def drop_view(self, schema: str, name: str, *, if_exists: bool = False) -> None:
        if not self.has_view(schema, name):
            if if_exists:
                return
            raise CatalogNotFoundError(f"view {schema}.{name} does not exist")
        staged = self._view(schema, name)
        if staged.created:
            del self._views[(schema, name)]
            self._view_order.remove(staged)
        else:
            staged.dropped = True

    def comment_on_view(self, schema: str, name: str, comment: str | None) -> None:
        staged = self._view(schema, name)
        staged.comment, staged.comment_changed = comment, True

    # -- options ---------------------------------------------------------------------
    def set_option(
        self,
        key: str,
        value: Any,
        *,
        schema: str | None = None,
        table: StagedTable | None = None,
    ) -> None:
        text = _option_text(value)
        try:
            check_option_value(key, text)
        except ValueError as exc:
            raise InvalidChangeError(str(exc)) from None
        scoped_schema = self.schema(schema).ref() if schema and table is None else None
        table_uuid = table.uuid if table is not None else None
        self.option_ops.append(SetOption(key, text, scoped_schema, table_uuid))

    # -- commit ----------------------------------------------------------------------
    def _name_of(self, entry_id: int) -> str:
        """`schema.name` of a table or view this transaction touches (ids are what
        snapshot changes record; errors show names)."""
        for t in self._table_order:
            if t.table_id == entry_id:
                return t.qualified_name
        return self.catalog.entry_name(entry_id)

    def is_empty(self) -> bool:
        return not (self.catalog_changed() or self.data_ops or self.option_ops)

    def catalog_changed(self) -> bool:
        return bool(
            self._created_schemas
            or self._dropped_schemas
            or any(s.comment_changed for s in self._schema_map().values())
            or any(_table_changed(t) for t in self._table_order)
            or any(v.created or v.dropped or v.comment_changed for v in self._view_order)
        )

    def plan(self) -> CommitPlan:
        """The staged changes, frozen: what the commit writes, in the order it writes it."""
        extra = self.extra_info
        extra_text = extra if extra is None or isinstance(extra, str) else json.dumps(extra)
        return CommitPlan(
            base=self.base,
            author=self.author,
            commit_message=self.commit_message,
            extra_info=extra_text,
            catalog_ops=tuple(self._catalog_ops()),
            tables=tuple(t.ref() for t in self._table_order if not t.dropped),
            data_ops=tuple(self.data_ops),
            option_ops=tuple(self.option_ops),
        )

    def _catalog_ops(self) -> Iterable[CatalogOp]:
        for s in self._created_schemas:
            yield CreateSchema(s.ref(), s.comment if s.comment_changed else None)
        for t in self._table_order:
            if t.created:
                yield t.creation()
            elif t.dropped:
                assert t.table_id is not None
                yield DropTable(t.table_id, t.qualified_name)
            elif (alteration := t.alteration()) is not None:
                yield alteration
        for v in self._view_order:
            if v.created:
                yield v.creation()
            elif v.dropped and v.view_id is not None:
                yield DropView(v.view_id, f"{v.schema.name}.{v.name}")
            elif v.comment_changed and v.view_id is not None:
                yield CommentOnView(v.view_id, v.comment)
        for s in self._dropped_schemas:
            assert s.schema_id is not None
            yield DropSchema(s.schema_id, s.name)
        for s in self._schema_map().values():
            if s.comment_changed and not s.created and s.schema_id is not None:
                yield CommentOnSchema(s.schema_id, s.comment)

    def commit(self) -> Snapshot | None:
        """Write everything as one snapshot; None when there was nothing to commit."""
        if self._closed:
            raise LakeError("transaction already committed or discarded")
        self._closed = True
        if self.is_empty():
            return None
        plan = self.plan()
        if plan.new_snapshot and not plan.commit_message:
            required = self.lake.option("require_commit_message", default="false")
            if str(required).lower() == "true":
                raise CommitMessageRequiredError(
                    "this DuckLake requires a commit message (option require_commit_message); "
                    "set commit_message on the transaction"
                )
        self.committed = commit_plan(self.lake, plan, self._name_of)
        return self.committed


def _table_altered(t: StagedTable) -> bool:
    return (
        t.columns_changed
        or t.partition_changed
        or t.sort_changed
        or t.comment_changed
        or bool(t.column_comments_changed)
    )


def _table_changed(t: StagedTable) -> bool:
    return t.created or t.dropped or t.name != t.base_name or _table_altered(t)


def _check_unique(names: list[str], where: str) -> None:
    seen: set[str] = set()
    for n in names:
        if n.casefold() in seen:
            raise CatalogExistsError(f"duplicate column name {n!r} in {where}")
        seen.add(n.casefold())


def _option_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)
