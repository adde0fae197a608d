"""Stage catalog and data changes; commit them as exactly one DuckLake snapshot.

Staging validates against the snapshot the transaction started from (plus what it has
staged), so bad input fails before anything is written. Commit writes everything in one
metadata transaction; if another writer committed meanwhile, the spec's logical
conflict rules decide between a clear CommitConflictError and a retry with fresh ids
(files already written are reused, never rewritten).
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any

from sqlalchemy.exc import DBAPIError

from .changes import ChangeSet, Intent, check_conflicts, qualified_name
from .errors import (
    CatalogExistsError,
    CatalogNotFoundError,
    CommitMessageRequiredError,
    InvalidChangeError,
    LakeError,
)
from .models import Change, Snapshot
from .names import ACCEPTED_NAMES, name_problem
from .options import check_option_value
from .reader import CatalogReader
from .staged import (
    ColumnDraft,
    DataFileSpec,
    DeleteFileSpec,
    StagedSchema,
    StagedTable,
    StagedView,
    check_transform,
    drafts_from_spec,
    new_uuid,
    object_path,
)
from .types import ColumnSpec, check_promotion

if TYPE_CHECKING:
    from .lake import Lake

log = logging.getLogger("dbt.adapters.ducklake.lake")

MAX_RETRIES = 10
RETRY_WAIT_S = 0.1
RETRY_BACKOFF = 1.5


@dataclass
class DataOp:
    """One data change, applied in staging order at commit."""

    kind: (
        str  # files | deletes | end_files | inline_insert | inline_delete_rows | inline_delete_pos
    )
    table: StagedTable
    payload: Any


@dataclass
class OptionOp:
    key: str
    value: str
    schema: StagedSchema | None
    table: StagedTable | None


class Transaction:
    """Use as a context manager: commits on normal exit, discards on an exception."""

    def __init__(
        self,
        lake: Lake,
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
        self.option_ops: list[OptionOp] = []
        self.committed: Snapshot | None = None
        self._closed = False

    @property
    def stamp_snapshot_id(self) -> int:
        """Snapshot id to write into `_ducklake_internal_snapshot_id` of new rows.

        Like DuckDB, files are stamped with base + 1 when written and are not rewritten
        if a retry commits under a later id.
        """
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
        _check_name("schema", name)
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
            if named and (_table_changed(t) or any(op.table is t for op in self.data_ops)):
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
            if moved or any(op.table is t for op in self.data_ops):
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
        _check_name("table", name)
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
        self.data_ops = [op for op in self.data_ops if op.table is not staged]
        if staged.created:
            del self._tables[(schema, name)]
            self._table_order.remove(staged)
            return
        staged.dropped = True

    def rename_table(self, schema: str, name: str, new_name: str) -> StagedTable:
        _check_name("table", new_name)
        staged = self.table(schema, name)
        self._check_entry_free(schema, new_name)
        del self._tables[(schema, name)]
        staged.name = new_name
        self._tables[(schema, new_name)] = staged
        return staged

    def comment_on_table(self, table: StagedTable, comment: str | None) -> None:
        table.comment, table.comment_changed = comment, True

    # -- columns ---------------------------------------------------------------------
    def add_column(
        self, table: StagedTable, column: ColumnSpec, parent: tuple[str, ...] = ()
    ) -> ColumnDraft:
        if parent:
            holder = table.find(parent)
            if holder.type != "struct":
                raise InvalidChangeError(
                    f"cannot add field {column.name!r} to {'.'.join(parent)!r} of "
                    f"{table.qualified_name}: it is a {holder.type}, not a struct"
                )
            siblings, parent_id = holder.children, holder.column_id
        else:
            siblings, parent_id = table.columns, None
        if any(c.name == column.name for c in siblings):
            raise CatalogExistsError(
                f"column {'.'.join((*parent, column.name))!r} already exists in "
                f"{table.qualified_name}"
            )
        if not column.nullable and column.default is None and not table.created:
            raise InvalidChangeError(
                f"cannot add NOT NULL column {column.name!r} to {table.qualified_name} "
                "without a default"
            )
        draft = drafts_from_spec(column, table.next_column_id, parent_id)
        table.next_column_id += column.count()
        siblings.append(draft)
        return draft

    def drop_column(self, table: StagedTable, path: str | tuple[str, ...]) -> None:
        draft = table.find(path)
        siblings = table.siblings(path)
        if len(siblings) == 1:
            raise InvalidChangeError(
                f"cannot drop {draft.name!r}: it is the only column of its parent in "
                f"{table.qualified_name}"
            )
        partitioned = {cid for cid, _ in (table.partition or [])}
        if table.partition is None and table.base_partition:
            partitioned = {f.column_id for f in table.base_partition.fields}
        if any(d.column_id in partitioned for d in draft.walk()):
            raise InvalidChangeError(
                f"cannot drop column {draft.name!r} of {table.qualified_name}: the table is "
                "partitioned by it"
            )
        siblings.remove(draft)

    def rename_column(self, table: StagedTable, path: str | tuple[str, ...], new_name: str) -> None:
        draft = table.find(path)
        if any(c.name == new_name for c in table.siblings(path) if c is not draft):
            raise CatalogExistsError(
                f"column {new_name!r} already exists in {table.qualified_name}"
            )
        _check_name("column", new_name)
        draft.name = new_name

    def alter_column_type(
        self, table: StagedTable, path: str | tuple[str, ...], new_type: str
    ) -> None:
        draft = table.find(path)
        name = ".".join((path,) if isinstance(path, str) else path)
        check_promotion(f"{table.qualified_name}.{name}", draft.type, new_type)
        draft.type = new_type

    def set_nullable(self, table: StagedTable, path: str | tuple[str, ...], nullable: bool) -> None:
        draft = table.find(path)
        if not nullable and not table.created:
            stats = self.catalog.table_stats(table.table_id or -1)[1].get(draft.column_id)
            if stats is not None and stats.contains_null:
                raise InvalidChangeError(
                    f"cannot SET NOT NULL on {table.qualified_name}.{draft.name}: the column "
                    "has NULL values"
                )
        draft.nullable = nullable

    def set_default(
        self, table: StagedTable, path: str | tuple[str, ...], default: str | None
    ) -> None:
        draft = table.find(path)
        draft.default_value = default if default is not None else "NULL"

    def comment_on_column(
        self, table: StagedTable, path: str | tuple[str, ...], comment: str | None
    ) -> None:
        draft = table.find(path)
        draft.comment = comment
        table.column_comments_changed.add(draft.column_id)

    # -- layout ----------------------------------------------------------------------
    def set_partitioned_by(
        self, table: StagedTable, fields: Sequence[tuple[str | tuple[str, ...], str]]
    ) -> None:
        resolved = []
        for path, transform in fields:
            draft = _layout_column(table, path, "PARTITIONED BY")
            if draft.type in ("list", "struct", "map"):
                raise InvalidChangeError(
                    f"cannot partition {table.qualified_name} by nested column {draft.name!r}"
                )
            resolved.append((draft.column_id, check_transform(transform)))
        table.partition, table.partition_changed = resolved, True

    def reset_partitioned_by(self, table: StagedTable) -> None:
        table.partition, table.partition_changed = [], True

    def set_sorted_by(self, table: StagedTable, fields: Sequence[tuple[str, str, str]]) -> None:
        resolved = []
        for expression, direction, null_order in fields:
            d, n = direction.upper(), null_order.upper().replace(" ", "_")
            if d not in ("ASC", "DESC"):
                raise InvalidChangeError(f"sort direction {direction!r}: accepted ASC, DESC")
            if n not in ("NULLS_FIRST", "NULLS_LAST"):
                raise InvalidChangeError(
                    f"null order {null_order!r}: accepted NULLS_FIRST, NULLS_LAST"
                )
            _layout_column(table, expression, "SORTED BY")
            resolved.append((expression, d, n))
        table.sort, table.sort_changed = resolved, True

    def reset_sorted_by(self, table: StagedTable) -> None:
        table.sort, table.sort_changed = [], True

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
        _check_name("view", name)
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
        scoped_schema = self.schema(schema) if schema and table is None else None
        self.option_ops.append(OptionOp(key, text, scoped_schema, table))

    # -- data ------------------------------------------------------------------------
    def _data(self, kind: str, table: StagedTable, payload: Any) -> None:
        if table.dropped:
            raise InvalidChangeError(
                f"table {table.qualified_name} was dropped in this transaction"
            )
        self.data_ops.append(DataOp(kind, table, payload))

    def add_data_files(self, table: StagedTable, files: Iterable[DataFileSpec]) -> None:
        files = list(files)
        if files:
            self._data("files", table, files)

    def add_delete_files(self, table: StagedTable, files: Iterable[DeleteFileSpec]) -> None:
        files = list(files)
        if table.created and files:
            raise InvalidChangeError(f"table {table.qualified_name} has no files to delete from")
        if files:
            self._data("deletes", table, files)

    def end_data_files(self, table: StagedTable, data_file_ids: Iterable[int]) -> None:
        ids = sorted(set(data_file_ids))
        if ids:
            self._data("end_files", table, ids)

    def compact_files(
        self, table: StagedTable, kind: str, replaced: Sequence[Any], files: Iterable[DataFileSpec]
    ) -> None:
        """Replace data files by compacted ones (`merge_adjacent` or `rewrite_delete`)."""
        self._data("compact", table, (kind, list(replaced), list(files)))

    def flush_inlined(self, table: StagedTable, flush: Any) -> None:
        """Move inlined rows and inlined deletions into files (a `lake.maintenance.Flush`)."""
        self._data("flush", table, flush)

    def insert_inlined(
        self,
        table: StagedTable,
        rows: Sequence[Sequence[Any]],
        row_ids: Sequence[int] | None = None,
    ) -> None:
        """Rows in top-level column order, as Python values; stored in the catalog.

        `row_ids` keeps the ids rows already had (an UPDATE moves rows, it does not
        create them); otherwise new ids are assigned at commit.
        """
        if row_ids is not None and len(row_ids) != len(rows):
            raise InvalidChangeError("insert_inlined: one row id per row")
        width = len(table.columns)
        for row in rows:
            if len(row) != width:
                raise InvalidChangeError(
                    f"inlined row for {table.qualified_name} has {len(row)} values, the "
                    f"table has {width} columns"
                )
        if rows:
            ids = list(row_ids) if row_ids is not None else None
            self._data("inline_insert", table, ([tuple(r) for r in rows], ids))

    def delete_inlined_rows(self, table: StagedTable, row_ids: Iterable[int]) -> None:
        ids = sorted(set(row_ids))
        if ids:
            self._data("inline_delete_rows", table, ids)

    def delete_inlined_positions(
        self, table: StagedTable, data_file_id: int, positions: Iterable[int]
    ) -> None:
        pos = sorted(set(positions))
        if pos:
            self._data("inline_delete_pos", table, (data_file_id, pos))

    # -- commit ----------------------------------------------------------------------
    def _name_of(self, entry_id: int) -> str:
        """`schema.name` of a table or view this transaction touches (ids are what
        snapshot changes record; errors show names)."""
        for t in self._table_order:
            if t.table_id == entry_id:
                return t.qualified_name
        try:
            info = self.catalog.table_by_id(entry_id)
            return f"{info.schema_name}.{info.name}"
        except CatalogNotFoundError:
            pass
        views = [v for v in self.catalog.views() if v.view_id == entry_id]
        return f"{views[0].schema_name}.{views[0].name}" if views else f"entry id {entry_id}"

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

    def intent(self) -> Intent:
        cs = ChangeSet()
        intent = Intent(cs)
        for s in self._created_schemas:
            cs.add(Change("created_schema", f'"{s.name}"'.replace('""', '"')))
            cs.created_schemas.add(s.name.casefold())
        for s in self._dropped_schemas:
            assert s.schema_id is not None
            cs.dropped_schemas.add(s.schema_id)
            intent.dropped_schema_names[s.schema_id] = s.name
        for t in self._table_order:
            if t.created:
                cs.add(Change("created_table", qualified_name(t.schema.name, t.name)))
                if t.schema.schema_id is not None:
                    intent.target_schema_ids[t.schema.name.casefold()] = t.schema.schema_id
                continue
            assert t.table_id is not None
            if t.dropped:
                cs.dropped_tables.add(t.table_id)
                continue
            if t.name != t.base_name:
                cs.add(Change("created_table", qualified_name(t.schema.name, t.name)))
            if _table_altered(t):
                cs.altered_tables.add(t.table_id)
        for v in self._view_order:
            if v.created:
                cs.add(Change("created_view", qualified_name(v.schema.name, v.name)))
                if v.schema.schema_id is not None:
                    intent.target_schema_ids[v.schema.name.casefold()] = v.schema.schema_id
            elif v.dropped and v.view_id is not None:
                cs.dropped_views.add(v.view_id)
            elif v.comment_changed and v.view_id is not None:
                cs.altered_views.add(v.view_id)
        for op in self.data_ops:
            tid = op.table.table_id
            if tid is None:
                continue
            if op.kind == "files":
                cs.inserted.add(tid)
            elif op.kind == "inline_insert":
                cs.inlined_inserted.add(tid)
            elif op.kind == "compact":
                cs.compacted.add(tid)
            elif op.kind == "flush":
                cs.flushed.add(tid)
            elif op.kind in ("deletes", "end_files"):
                cs.deleted.add(tid)
                ids = (
                    {f.data_file_id for f in op.payload}
                    if op.kind == "deletes"
                    else set(op.payload)
                )
                intent.deleted_files.setdefault(tid, set()).update(ids)
            else:
                cs.inlined_deleted.add(tid)
        return intent

    def _deleted_files_probe(self, conn: Any) -> Any:
        return _probe(self.lake, conn, self.base.snapshot_id)

    def commit(self) -> Snapshot | None:
        """Write everything as one snapshot; None when there was nothing to commit."""
        from .commit import apply_commit, is_snapshot_collision, snapshots_after

        if self._closed:
            raise LakeError("transaction already committed or discarded")
        self._closed = True
        if self.is_empty():
            return None
        snapshot_changes = self.catalog_changed() or bool(self.data_ops)
        if snapshot_changes and not self.commit_message:
            required = self.lake.option("require_commit_message", default="false")
            if str(required).lower() == "true":
                raise CommitMessageRequiredError(
                    "this DuckLake requires a commit message (option require_commit_message); "
                    "set commit_message on the transaction"
                )
        intent = self.intent()
        extra = self.extra_info
        extra_text = extra if extra is None or isinstance(extra, str) else json.dumps(extra)
        attempt = 0
        while True:
            try:
                with self.lake.write_connection() as conn:
                    latest = self.lake.latest_snapshot(conn)
                    if latest.snapshot_id != self.base.snapshot_id:
                        others = snapshots_after(self.lake, conn, self.base.snapshot_id)
                        check_conflicts(
                            intent, others, self._deleted_files_probe(conn), self._name_of
                        )
                    self.committed = apply_commit(self, conn, latest, snapshot_changes, extra_text)
                return self.committed
            except DBAPIError as exc:
                if not is_snapshot_collision(exc) or attempt + 1 >= MAX_RETRIES:
                    raise
                wait = RETRY_WAIT_S * random.uniform(0.5, 1.0) * RETRY_BACKOFF**attempt
                attempt += 1
                log.debug("DuckLake commit collided (attempt %s); retrying in %.2fs", attempt, wait)
                time.sleep(wait)


def _probe(lake: Lake, conn: Any, base_id: int) -> Any:
    from .commit import files_deleted_after

    return lambda: files_deleted_after(lake, conn, base_id)


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


def _check_name(kind: str, name: str) -> None:
    if not name or not name.strip():
        raise InvalidChangeError(f"{kind} name must not be empty")
    if kind == "column":  # column names live inside files, never in paths
        return
    problem = name_problem(name)
    if problem is not None:
        raise InvalidChangeError(
            f"{kind} name {name[:60]!r}{'…' if len(name) > 60 else ''} is not accepted: "
            f"{problem}; accepted: {ACCEPTED_NAMES}"
        )


def _layout_column(table: StagedTable, path: str | tuple[str, ...], clause: str) -> ColumnDraft:
    """The column a layout key names; the error says which clause and what exists."""
    try:
        return table.find(path)
    except CatalogNotFoundError as exc:
        columns = ", ".join(c.name for c in table.columns)
        raise CatalogNotFoundError(f"{clause}: {exc}; its columns: {columns}") from None


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
