"""Objects a transaction stages: drafts of schemas, tables and views with their changes.

A transaction keeps the *state* it wants (column trees, partitioning, comments) next to
the state it started from; the commit writes the difference. Data changes (files,
deletes, inlined rows) are kept as an ordered list of operations.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from .errors import CatalogNotFoundError, InvalidChangeError
from .models import Column, PartitionSpec, SortSpec
from .plan import (
    AlterTable,
    ColumnRows,
    CreateTable,
    CreateView,
    NewComment,
    SchemaRef,
    TableRef,
)
from .types import ColumnSpec

_SAFE_PATH = re.compile(r"^[A-Za-z0-9_\-]+$")

PARTITION_TRANSFORMS = ("identity", "year", "month", "day", "hour", "bucket(N)")
_BUCKET = re.compile(r"^bucket\((\d+)\)$")


def object_path(name: str, object_uuid: str) -> str:
    """DuckDB's directory for a schema or table: its name, or its uuid for odd names."""
    return (name if _SAFE_PATH.match(name) else object_uuid) + "/"


def new_uuid() -> str:
    return str(uuid.uuid4())


# the column types the time transforms (year/month/day/hour) take: those DuckDB computes
# them for (it binds year(VARCHAR) nowhere, so a spec on a string locks its inserts and
# flushes out) and this engine computes alike; hour of a DATE is 0 in both
_TIME_PARTS = ("year", "month", "day", "hour")
_TIME_PART_TYPES = (
    "date",
    "timestamp",
    "timestamptz",
    "timestamp_s",
    "timestamp_ms",
    "timestamp_ns",
)


def check_transform(transform: str, column_type: str | None = None, where: str = "") -> str:
    """The transform in canonical form; refused when unknown or when it does not apply
    to `column_type` (`where` names the table and column)."""
    t = transform.strip().lower()
    if t in _TIME_PARTS and column_type is not None and column_type not in _TIME_PART_TYPES:
        raise InvalidChangeError(
            f"cannot partition {where} by {t}(): the column is {column_type.upper()}; "
            f"{t}() takes {', '.join(x.upper() for x in _TIME_PART_TYPES)} (cast the "
            "column in the model, or partition by the column itself or bucket(N, column))"
        )
    if t == "identity" or t in _TIME_PARTS:
        return t
    bucket = _BUCKET.match(t)
    if bucket is not None:
        # DuckDB refuses to open a lake holding bucket(0): one bad spec would lock
        # every DuckDB reader out of the whole catalog
        if not 1 <= int(bucket[1]) <= 2**31 - 1:
            raise InvalidChangeError(
                f"partition transform {transform!r}: the bucket count must be between 1 "
                f"and {2**31 - 1}"
            )
        return t
    raise InvalidChangeError(
        f"unknown partition transform {transform!r}; accepted: {', '.join(PARTITION_TRANSFORMS)}"
    )


@dataclass
class ColumnDraft:
    column_id: int
    name: str
    type: str
    nullable: bool = True
    initial_default: str | None = None
    default_value: str | None = "NULL"
    default_value_type: str | None = "literal"
    default_value_dialect: str | None = "duckdb"
    parent_id: int | None = None
    order: int = 0
    children: list[ColumnDraft] = field(default_factory=list)
    comment: str | None = None

    @classmethod
    def from_column(cls, c: Column) -> ColumnDraft:
        return cls(
            column_id=c.column_id,
            name=c.name,
            type=c.type,
            nullable=c.nullable,
            initial_default=c.initial_default,
            default_value=c.default_value,
            default_value_type=c.default_value_type,
            default_value_dialect=c.default_value_dialect,
            parent_id=c.parent_id,
            order=c.order,
            children=[cls.from_column(ch) for ch in c.children],
            comment=c.comment,
        )

    def walk(self) -> Iterator[ColumnDraft]:
        yield self
        for ch in self.children:
            yield from ch.walk()

    def row_fields(self) -> tuple[Any, ...]:
        """What a `ducklake_column` row stores; a change in any of these is a new version."""
        return (
            self.name,
            self.type,
            self.nullable,
            self.initial_default,
            self.default_value,
            self.default_value_type,
            self.default_value_dialect,
            self.parent_id,
            self.order,
        )

    def to_column(self, begin_snapshot: int = -1) -> Column:
        return Column(
            column_id=self.column_id,
            name=self.name,
            type=self.type,
            nullable=self.nullable,
            order=self.order,
            parent_id=self.parent_id,
            initial_default=self.initial_default,
            default_value=self.default_value,
            default_value_type=self.default_value_type,
            default_value_dialect=self.default_value_dialect,
            begin_snapshot=begin_snapshot,
            children=tuple(ch.to_column(begin_snapshot) for ch in self.children),
            comment=self.comment,
        )


def drafts_from_spec(spec: ColumnSpec, first_id: int, parent: int | None) -> ColumnDraft:
    """Assign ids pre-order from `first_id`, the way DuckDB numbers nested fields."""
    nested = spec.type in ("list", "struct", "map")
    draft = ColumnDraft(
        column_id=first_id,
        name=spec.name,
        type=spec.type,
        nullable=spec.nullable,
        initial_default=spec.default,
        default_value=spec.default if spec.default is not None else "NULL",
        default_value_type="" if nested else "literal",
        parent_id=parent,
        order=first_id,
    )
    next_id = first_id + 1
    for child in spec.children:
        child_draft = drafts_from_spec(child, next_id, first_id)
        draft.children.append(child_draft)
        next_id += child.count()
    return draft


@dataclass
class StagedSchema:
    name: str
    schema_id: int | None  # None until committed when created here
    uuid: str
    path: str
    path_is_relative: bool = True
    created: bool = False
    dropped: bool = False
    comment: str | None = None
    comment_changed: bool = False

    def directory(self, data_path: str) -> str:
        """Absolute directory of this schema's tables."""
        return data_path + self.path if self.path_is_relative else self.path

    def ref(self) -> SchemaRef:
        return SchemaRef(self.name, self.uuid, self.schema_id, self.path, self.path_is_relative)


@dataclass
class StagedTable:
    """A table as this transaction sees it; writers use `columns` and `root` for files."""

    schema: StagedSchema
    name: str
    table_id: int | None
    uuid: str
    path: str
    root: str  # absolute directory for this table's files
    columns: list[ColumnDraft]
    next_column_id: int
    created: bool = False
    dropped: bool = False
    base_name: str | None = None
    base_columns: dict[int, ColumnDraft] = field(default_factory=dict)
    base_partition: PartitionSpec | None = None
    partition: list[tuple[int, str]] | None = None
    partition_changed: bool = False
    base_sort: SortSpec | None = None
    sort: list[tuple[str, str, str]] | None = None  # (expression, ASC|DESC, NULLS_*)
    sort_changed: bool = False
    comment: str | None = None
    comment_changed: bool = False
    column_comments_changed: set[int] = field(default_factory=set)

    @property
    def qualified_name(self) -> str:
        return f"{self.schema.name}.{self.name}"

    def current_partition(self) -> list[tuple[int, str]]:
        """(column id, transform) in effect once this transaction commits."""
        if self.partition_changed or self.created:
            return list(self.partition or [])
        if self.base_partition is None:
            return []
        return [(f.column_id, f.transform) for f in self.base_partition.fields]

    def current_sort(self) -> list[tuple[str, str, str]]:
        """(expression, ASC|DESC, NULLS_FIRST|NULLS_LAST) in effect once this commits."""
        if self.sort_changed or self.created:
            return list(self.sort or [])
        if self.base_sort is None:
            return []
        return [(f.expression, f.direction, f.null_order) for f in self.base_sort.fields]

    def column_list(self) -> list[Column]:
        return [c.to_column() for c in self.columns]

    def flat_columns(self) -> dict[int, ColumnDraft]:
        return {d.column_id: d for c in self.columns for d in c.walk()}

    def find(self, path: str | tuple[str, ...]) -> ColumnDraft:
        names = (path,) if isinstance(path, str) else tuple(path)
        level = self.columns
        found: ColumnDraft | None = None
        for name in names:
            # DuckDB resolves column names case-insensitively (quoted or not)
            found = next((c for c in level if c.name == name), None) or next(
                (c for c in level if c.name.lower() == name.lower()), None
            )
            if found is None:
                raise CatalogNotFoundError(
                    f"column {'.'.join(names)!r} does not exist in table {self.qualified_name}"
                )
            level = found.children
        assert found is not None
        return found

    def siblings(self, path: str | tuple[str, ...]) -> list[ColumnDraft]:
        names = (path,) if isinstance(path, str) else tuple(path)
        if len(names) == 1:
            return self.columns
        return self.find(names[:-1]).children

    # -- freezing into a commit plan ------------------------------------------------
    def ref(self) -> TableRef:
        return TableRef(
            self.schema.ref(),
            self.name,
            self.uuid,
            self.table_id,
            self.path,
            self.root,
            tuple(c.to_column() for c in self.columns),
        )

    def creation(self) -> CreateTable:
        return CreateTable(
            self.ref(), tuple(self.partition or ()), tuple(self.sort or ()), self.comment
        )

    def alteration(self) -> AlterTable | None:
        """What changed since the base snapshot; None when nothing did."""
        change = AlterTable(
            self.ref(),
            renamed=self.name != self.base_name,
            columns=self.column_rows(),
            partition=tuple(self.partition or ()) if self.partition_changed else None,
            sort=tuple(self.sort or ()) if self.sort_changed else None,
            comment=NewComment(self.comment) if self.comment_changed else None,
            column_comments=self.column_comments(),
        )
        return change if change.renamed or change.altered else None

    def column_rows(self) -> ColumnRows | None:
        current, base = self.flat_columns(), self.base_columns
        changed = [
            cid
            for cid in sorted(set(current) | set(base))
            if cid not in current
            or cid not in base
            or current[cid].row_fields() != base[cid].row_fields()
        ]
        if not changed:
            return None
        structural = any(
            c not in current
            or c not in base
            or (current[c].name, current[c].type) != (base[c].name, base[c].type)
            for c in changed
        )
        return ColumnRows(
            tuple(c for c in changed if c in base),
            tuple(current[c].to_column() for c in changed if c in current),
            structural,
        )

    def column_comments(self) -> tuple[tuple[int, str | None], ...]:
        flat = self.flat_columns()
        return tuple(
            (cid, flat[cid].comment if cid in flat else None)
            for cid in sorted(self.column_comments_changed)
        )

    @property
    def columns_changed(self) -> bool:
        if self.created:
            return False
        current = {k: v.row_fields() for k, v in self.flat_columns().items()}
        base = {k: v.row_fields() for k, v in self.base_columns.items()}
        return current != base


@dataclass
class StagedView:
    schema: StagedSchema
    name: str
    view_id: int | None
    uuid: str
    dialect: str
    sql: str
    column_aliases: str | None
    created: bool = False
    dropped: bool = False
    comment: str | None = None
    comment_changed: bool = False
    spark_sql: str | None = None

    def creation(self) -> CreateView:
        return CreateView(
            self.schema.ref(),
            self.name,
            self.uuid,
            self.dialect,
            self.sql,
            self.column_aliases,
            self.comment,
            self.spark_sql,
        )
