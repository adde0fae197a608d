"""What one commit will write, as immutable typed operations.

A transaction stages mutable drafts; when it commits it freezes them into a CommitPlan.
The commit applies the plan inside one write transaction and never changes it, so a
retry after a snapshot-id collision applies the very same plan again from scratch.
Objects created by the commit have no ids in the plan (`None`): the commit assigns
them from the latest snapshot's counters on every attempt.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .models import Column, DataFile, Snapshot


@dataclass(frozen=True)
class FileColumnStats:
    """Footer statistics for one column of one data file (stats strings per the spec)."""

    value_count: int | None = None
    null_count: int | None = None
    min_value: str | None = None
    max_value: str | None = None
    contains_nan: bool | None = None
    column_size_bytes: int | None = None


@dataclass(frozen=True)
class DataFileSpec:
    """A written Parquet file to register. `path` is relative to the table root."""

    path: str
    record_count: int
    file_size_bytes: int
    footer_size: int | None = None
    column_stats: dict[int, FileColumnStats] = field(default_factory=dict)
    partition_values: tuple[str | None, ...] | None = None
    path_is_relative: bool = True
    row_id_start: int | None = None  # set when rows keep ids they already had
    ids_in_file: bool = False  # every row carries its id: no row_id_start (compaction)
    partial_max: int | None = None
    begin_snapshot: int | None = None
    encryption_key: str | None = None  # base64 AES key of a file in an encrypted lake


@dataclass(frozen=True)
class DeleteFileSpec:
    """A positional delete file for one data file.

    When the data file already has a live delete file, the new file must hold all of
    its positions too, with `_ducklake_internal_snapshot_id` per position (a partial
    delete file); the commit replaces the old one as DuckDB does.
    """

    data_file_id: int
    path: str
    delete_count: int
    file_size_bytes: int
    footer_size: int | None = None
    path_is_relative: bool = True
    # partial files: min / max `_ducklake_internal_snapshot_id` they hold (DuckDB stamps
    # new positions with `Transaction.stamp_snapshot_id`)
    begin_snapshot: int | None = None
    partial_max: int | None = None
    # puffin: a deletion vector, cumulative and without per-row snapshots; the live
    # delete file it replaces is ended (not removed), so time travel keeps its deletes
    format: str = "parquet"
    encryption_key: str | None = None  # base64 AES key of a file in an encrypted lake


@dataclass(frozen=True)
class SchemaRef:
    name: str
    uuid: str
    schema_id: int | None  # None: created by this commit
    path: str
    path_is_relative: bool = True


@dataclass(frozen=True)
class TableRef:
    """A table as the commit leaves it (name and columns after every staged change)."""

    schema: SchemaRef
    name: str
    uuid: str
    table_id: int | None  # None: created by this commit
    path: str
    root: str  # absolute directory of the table's files
    columns: tuple[Column, ...]

    @property
    def qualified_name(self) -> str:
        return f"{self.schema.name}.{self.name}"


# -- catalog operations ----------------------------------------------------------------
@dataclass(frozen=True)
class CreateSchema:
    schema: SchemaRef
    comment: str | None


@dataclass(frozen=True)
class DropSchema:
    schema_id: int
    name: str


@dataclass(frozen=True)
class CommentOnSchema:
    schema_id: int
    comment: str | None


@dataclass(frozen=True)
class CreateTable:
    table: TableRef
    partition: tuple[tuple[int, str], ...]  # (column id, transform)
    sort: tuple[tuple[str, str, str], ...]  # (expression, ASC|DESC, NULLS_*)
    comment: str | None


@dataclass(frozen=True)
class DropTable:
    table_id: int
    name: str


@dataclass(frozen=True)
class ColumnRows:
    """Column rows that change: `ended` rows get an end snapshot, `written` are inserted;
    `structural` when names, types or the set of columns change (not only defaults)."""

    ended: tuple[int, ...]
    written: tuple[Column, ...]
    structural: bool


@dataclass(frozen=True)
class NewComment:
    text: str | None


@dataclass(frozen=True)
class AlterTable:
    """Every change to one existing table; None (or empty) parts are unchanged."""

    table: TableRef
    renamed: bool = False
    columns: ColumnRows | None = None
    partition: tuple[tuple[int, str], ...] | None = None
    sort: tuple[tuple[str, str, str], ...] | None = None
    comment: NewComment | None = None
    column_comments: tuple[tuple[int, str | None], ...] = ()

    @property
    def altered(self) -> bool:
        """Whether DuckDB would record `altered_table` (a rename alone is not)."""
        return bool(
            self.columns
            or self.partition is not None
            or self.sort is not None
            or self.comment
            or self.column_comments
        )


@dataclass(frozen=True)
class CreateView:
    schema: SchemaRef
    name: str
    uuid: str
    dialect: str
    sql: str
    column_aliases: str | None
    comment: str | None
    spark_sql: str | None


@dataclass(frozen=True)
class DropView:
    view_id: int
    name: str


@dataclass(frozen=True)
class CommentOnView:
    view_id: int
    comment: str | None


CatalogOp = (
    CreateSchema
    | DropSchema
    | CommentOnSchema
    | CreateTable
    | DropTable
    | AlterTable
    | CreateView
    | DropView
    | CommentOnView
)


# -- data operations (the table is named by its uuid, stable across renames) ------------
@dataclass(frozen=True)
class AddDataFiles:
    table_uuid: str
    files: tuple[DataFileSpec, ...]


@dataclass(frozen=True)
class AddDeleteFiles:
    table_uuid: str
    files: tuple[DeleteFileSpec, ...]


@dataclass(frozen=True)
class EndDataFiles:
    table_uuid: str
    data_file_ids: tuple[int, ...]


@dataclass(frozen=True)
class InsertInlined:
    table_uuid: str
    rows: tuple[tuple[object, ...], ...]
    row_ids: tuple[int, ...] | None  # kept ids (an UPDATE moves rows); None: new ids


@dataclass(frozen=True)
class DeleteInlinedRows:
    table_uuid: str
    row_ids: tuple[int, ...]


@dataclass(frozen=True)
class DeleteInlinedPositions:
    table_uuid: str
    data_file_id: int
    positions: tuple[int, ...]


@dataclass(frozen=True)
class MergeAdjacentFiles:
    """The merged files stand in for `replaced` at every snapshot."""

    table_uuid: str
    replaced: tuple[DataFile, ...]
    files: tuple[DataFileSpec, ...]


@dataclass(frozen=True)
class RewriteDeletedFiles:
    """The new files hold `replaced`'s live rows from this snapshot on."""

    table_uuid: str
    replaced: tuple[DataFile, ...]
    files: tuple[DataFileSpec, ...]


@dataclass(frozen=True)
class FlushInlined:
    """Inlined data moved to files (see `Flush`)."""

    table_uuid: str
    files: tuple[DataFileSpec, ...]
    new_file_deletes: tuple[tuple[int, DeleteFileSpec], ...]
    file_deletes: tuple[DeleteFileSpec, ...]
    row_ids: tuple[int, ...]
    deleted_positions: tuple[tuple[int, int], ...]


DataOp = (
    AddDataFiles
    | AddDeleteFiles
    | EndDataFiles
    | InsertInlined
    | DeleteInlinedRows
    | DeleteInlinedPositions
    | MergeAdjacentFiles
    | RewriteDeletedFiles
    | FlushInlined
)


@dataclass(frozen=True)
class SetOption:
    key: str
    value: str
    schema: SchemaRef | None = None
    table_uuid: str | None = None


@dataclass
class Flush:
    """What a flush of inlined data builds before it is staged: the files (rows keep
    their ids and snapshots), delete files for rows of theirs that had ended
    (`new_file_deletes`: index into `files`), delete files replacing inlined deletions
    of older files, and the catalog rows to remove."""

    files: list[DataFileSpec] = field(default_factory=list)
    new_file_deletes: list[tuple[int, DeleteFileSpec]] = field(default_factory=list)
    file_deletes: list[DeleteFileSpec] = field(default_factory=list)
    row_ids: list[int] = field(default_factory=list)
    deleted_positions: list[tuple[int, int]] = field(default_factory=list)  # (file id, pos)

    def frozen(self, table_uuid: str) -> FlushInlined:
        return FlushInlined(
            table_uuid,
            tuple(self.files),
            tuple(self.new_file_deletes),
            tuple(self.file_deletes),
            tuple(self.row_ids),
            tuple(self.deleted_positions),
        )


@dataclass(frozen=True)
class CommitPlan:
    """Everything one commit writes, in the order it is written."""

    base: Snapshot
    author: str | None
    commit_message: str | None
    extra_info: str | None
    catalog_ops: tuple[CatalogOp, ...]
    tables: tuple[TableRef, ...]  # every table a data op or option names
    data_ops: tuple[DataOp, ...]
    option_ops: tuple[SetOption, ...]

    @property
    def new_snapshot(self) -> bool:
        """Options alone change no snapshot; catalog and data changes make one."""
        return bool(self.catalog_ops or self.data_ops)

    def table(self, table_uuid: str) -> TableRef:
        for t in self.tables:
            if t.uuid == table_uuid:
                return t
        raise KeyError(table_uuid)
