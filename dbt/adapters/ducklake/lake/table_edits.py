"""Column and layout edits a transaction stages on a table's draft.

Each edit checks itself against the draft (names, types, partitioning) so that a bad
ALTER fails when it is staged, before anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence

from .drafts import ColumnDraft, StagedTable, check_transform, drafts_from_spec
from .errors import CatalogExistsError, CatalogNotFoundError, InvalidChangeError
from .names import check_name
from .reader import CatalogReader
from .types import ColumnSpec, check_promotion


class TableEdits:
    """Mixed into Transaction: `catalog` is the snapshot the transaction started from."""

    catalog: CatalogReader

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
        check_name("column", new_name)
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
            where = f"{table.qualified_name} column {draft.name!r}"
            resolved.append((draft.column_id, check_transform(transform, draft.type, where)))
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


def _layout_column(table: StagedTable, path: str | tuple[str, ...], clause: str) -> ColumnDraft:
    """The column a layout key names; the error says which clause and what exists."""
    try:
        return table.find(path)
    except CatalogNotFoundError as exc:
        columns = ", ".join(c.name for c in table.columns)
        raise CatalogNotFoundError(f"{clause}: {exc}; its columns: {columns}") from None
