"""Data changes a transaction stages: files, delete files and inlined rows.

Each becomes one typed operation of the commit plan, in staging order; tables are
named by uuid, so a rename staged later in the transaction does not lose them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from .drafts import StagedTable
from .errors import InvalidChangeError
from .models import DataFile
from .plan import (
    AddDataFiles,
    AddDeleteFiles,
    DataFileSpec,
    DataOp,
    DeleteFileSpec,
    DeleteInlinedPositions,
    DeleteInlinedRows,
    EndDataFiles,
    Flush,
    InsertInlined,
    MergeAdjacentFiles,
    RewriteDeletedFiles,
)


class DataEdits:
    """Mixed into Transaction: `data_ops` is the plan's data part, in staging order."""

    data_ops: list[DataOp]

    def _data(self, table: StagedTable, op: DataOp) -> None:
        if table.dropped:
            raise InvalidChangeError(
                f"table {table.qualified_name} was dropped in this transaction"
            )
        self.data_ops.append(op)

    def _has_data(self, table: StagedTable) -> bool:
        return any(op.table_uuid == table.uuid for op in self.data_ops)

    def add_data_files(self, table: StagedTable, files: Iterable[DataFileSpec]) -> None:
        specs = tuple(files)
        if specs:
            self._data(table, AddDataFiles(table.uuid, specs))

    def add_delete_files(self, table: StagedTable, files: Iterable[DeleteFileSpec]) -> None:
        specs = tuple(files)
        if table.created and specs:
            raise InvalidChangeError(f"table {table.qualified_name} has no files to delete from")
        if specs:
            self._data(table, AddDeleteFiles(table.uuid, specs))

    def end_data_files(self, table: StagedTable, data_file_ids: Iterable[int]) -> None:
        ids = tuple(sorted(set(data_file_ids)))
        if ids:
            self._data(table, EndDataFiles(table.uuid, ids))

    def merge_adjacent_files(
        self, table: StagedTable, replaced: Sequence[DataFile], files: Iterable[DataFileSpec]
    ) -> None:
        """Merged files that stand in for `replaced` at every snapshot."""
        self._data(table, MergeAdjacentFiles(table.uuid, tuple(replaced), tuple(files)))

    def rewrite_deleted_files(
        self, table: StagedTable, replaced: Sequence[DataFile], files: Iterable[DataFileSpec]
    ) -> None:
        """Files that hold `replaced`'s live rows from this snapshot on."""
        self._data(table, RewriteDeletedFiles(table.uuid, tuple(replaced), tuple(files)))

    def flush_inlined(self, table: StagedTable, flush: Flush) -> None:
        """Move inlined rows and inlined deletions into files."""
        self._data(table, flush.frozen(table.uuid))

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
            ids = tuple(row_ids) if row_ids is not None else None
            self._data(table, InsertInlined(table.uuid, tuple(tuple(r) for r in rows), ids))

    def delete_inlined_rows(self, table: StagedTable, row_ids: Iterable[int]) -> None:
        ids = tuple(sorted(set(row_ids)))
        if ids:
            self._data(table, DeleteInlinedRows(table.uuid, ids))

    def delete_inlined_positions(
        self, table: StagedTable, data_file_id: int, positions: Iterable[int]
    ) -> None:
        pos = tuple(sorted(set(positions)))
        if pos:
            self._data(table, DeleteInlinedPositions(table.uuid, data_file_id, pos))
