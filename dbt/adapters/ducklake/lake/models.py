"""Immutable views of catalog rows as of one snapshot."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .types import duckdb_type

# tag key under which a view created by this project keeps its Spark SQL text
SPARK_SQL_TAG = "dbt_ducklake_spark_sql"


@dataclass(frozen=True)
class Change:
    """One `changes_made` entry, e.g. `inserted_into_table:3` or `created_table:"s"."t"`."""

    kind: str
    value: str

    def __str__(self) -> str:
        return f"{self.kind}:{self.value}"


@dataclass(frozen=True)
class Snapshot:
    snapshot_id: int
    snapshot_time: datetime
    schema_version: int
    next_catalog_id: int
    next_file_id: int
    changes: tuple[Change, ...] = ()
    author: str | None = None
    commit_message: str | None = None
    commit_extra_info: str | None = None

    @property
    def extra_info(self) -> Any:
        """commit_extra_info decoded as JSON when it is JSON, else the raw string."""
        return decoded_extra_info(self.commit_extra_info)


def decoded_extra_info(text: str | None) -> Any:
    """Commit extra info as JSON when it is JSON, else the raw string (any writer may
    put free text there)."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def extra_info_fields(text: str | None) -> dict[str, Any]:
    """The keys of a commit's extra info; none when it is not a JSON object."""
    value = decoded_extra_info(text)
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class SchemaInfo:
    schema_id: int
    schema_uuid: str
    name: str
    path: str
    path_is_relative: bool
    begin_snapshot: int
    comment: str | None = None


@dataclass(frozen=True)
class Column:
    column_id: int
    name: str
    type: str
    nullable: bool
    order: int
    parent_id: int | None
    initial_default: str | None
    default_value: str | None
    default_value_type: str | None
    default_value_dialect: str | None
    begin_snapshot: int
    children: tuple[Column, ...] = ()
    comment: str | None = None

    @property
    def duckdb_type(self) -> str:
        """The type as DuckDB spells it (`STRUCT(a INTEGER)`, `VARCHAR[]`, ...)."""
        return duckdb_type(self.type, [(c.name, c.duckdb_type) for c in self.children] or None)

    def walk(self) -> Iterator[Column]:
        """This column and its descendants, pre-order (the order ids are assigned in)."""
        yield self
        for child in self.children:
            yield from child.walk()


@dataclass(frozen=True)
class PartitionField:
    key_index: int
    column_id: int
    transform: str  # identity | year | month | day | hour | bucket(N)


@dataclass(frozen=True)
class PartitionSpec:
    partition_id: int
    fields: tuple[PartitionField, ...]


@dataclass(frozen=True)
class SortField:
    key_index: int
    expression: str
    dialect: str
    direction: str  # ASC | DESC
    null_order: str  # NULLS_FIRST | NULLS_LAST


@dataclass(frozen=True)
class SortSpec:
    sort_id: int
    fields: tuple[SortField, ...]


@dataclass(frozen=True)
class TableInfo:
    table_id: int
    table_uuid: str
    schema_id: int
    schema_name: str
    name: str
    path: str
    path_is_relative: bool
    begin_snapshot: int
    comment: str | None = None

    @property
    def qualified_name(self) -> str:
        return f"{self.schema_name}.{self.name}"


@dataclass(frozen=True)
class ViewInfo:
    view_id: int
    view_uuid: str
    schema_id: int
    schema_name: str
    name: str
    dialect: str
    sql: str
    column_aliases: str | None
    begin_snapshot: int
    comment: str | None = None
    spark_sql: str | None = None  # the Spark text a view created here was written in


@dataclass(frozen=True)
class DeleteFile:
    delete_file_id: int
    data_file_id: int
    path: str  # absolute, resolved against the table path when stored relative
    stored_path: str
    path_is_relative: bool
    format: str
    delete_count: int
    file_size_bytes: int
    footer_size: int | None
    begin_snapshot: int
    partial_max: int | None
    encryption_key: str | None = None


@dataclass(frozen=True)
class DataFile:
    data_file_id: int
    path: str  # absolute, resolved against the table path when stored relative
    stored_path: str
    path_is_relative: bool
    file_format: str
    record_count: int
    file_size_bytes: int
    footer_size: int | None
    row_id_start: int
    begin_snapshot: int
    partition_id: int | None
    partial_max: int | None
    mapping_id: int | None
    file_order: int | None = None
    encryption_key: str | None = None
    delete_file: DeleteFile | None = None
    partition_values: tuple[str | None, ...] = ()
    end_snapshot: int | None = None


@dataclass(frozen=True)
class ColumnStats:
    column_id: int
    value_count: int | None
    null_count: int | None
    min_value: str | None
    max_value: str | None
    contains_nan: bool | None
    column_size_bytes: int | None = None


@dataclass(frozen=True)
class TableStats:
    record_count: int
    next_row_id: int
    file_size_bytes: int


@dataclass(frozen=True)
class TableColumnStats:
    column_id: int
    contains_null: bool | None
    contains_nan: bool | None
    min_value: str | None
    max_value: str | None


@dataclass(frozen=True)
class InlinedDataTable:
    """One inlined-data table and how its physical columns map to column ids."""

    name: str
    schema_version: int
    first_snapshot: int  # first snapshot at that schema version: fixes the column layout
    column_ids: tuple[int, ...]  # physical column i (after the 3 system columns)
    column_types: tuple[str, ...]


@dataclass(frozen=True)
class NameMap:
    """One `map_by_name` entry: a Parquet field name that holds a column (field id)."""

    column_id: int  # id of this entry within its mapping
    source_name: str
    target_field_id: int
    parent_column: int | None  # entry id of the parent within the same mapping
    # the value comes from the file's Hive directory `source_name=value`, not from the
    # file (ducklake_add_data_files with hive_partitioning)
    is_partition: bool = False


@dataclass(frozen=True)
class InlinedRow:
    row_id: int
    begin_snapshot: int
    end_snapshot: int | None
    values: dict[int, Any]  # column_id -> decoded Python value


@dataclass(frozen=True)
class InlinedDelete:
    data_file_id: int
    position: int
    begin_snapshot: int


@dataclass
class TableState:
    """Everything a scan or a writer needs about one table at one snapshot."""

    table: TableInfo
    columns: tuple[Column, ...]
    data_files: tuple[DataFile, ...] = ()
    partition: PartitionSpec | None = None
    sort: SortSpec | None = None
    stats: TableStats | None = None
    column_stats: dict[int, TableColumnStats] = field(default_factory=dict)
    inlined_tables: tuple[InlinedDataTable, ...] = ()

    def all_columns(self) -> Iterator[Column]:
        for col in self.columns:
            yield from col.walk()

    def column(self, column_id: int) -> Column:
        for col in self.all_columns():
            if col.column_id == column_id:
                return col
        raise KeyError(column_id)
