"""Catalog rows decoded into models: columns into trees, file rows into DataFiles, and
values written under an older column version re-shaped to the current one."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from .codec import as_bool, decode_scalar
from .models import Column, DataFile, DeleteFile

DELETE_COLUMNS = """del.delete_file_id, del.data_file_id AS del_data_file_id,
    del.path AS del_path, del.path_is_relative AS del_rel, del.format AS del_format,
    del.delete_count, del.file_size_bytes AS del_size, del.footer_size AS del_footer,
    del.begin_snapshot AS del_begin, del.partial_max AS del_partial_max,
    del.encryption_key AS del_key"""


def delete_file_from_row(r: Any, root: str) -> DeleteFile | None:
    """The delete file of a row selected with `DELETE_COLUMNS` (None when it has none)."""
    if r.delete_file_id is None:
        return None
    relative = bool(as_bool(r.del_rel))
    return DeleteFile(
        delete_file_id=r.delete_file_id,
        data_file_id=r.del_data_file_id,
        path=root + r.del_path if relative else r.del_path,
        stored_path=r.del_path,
        path_is_relative=relative,
        format=r.del_format,
        delete_count=r.delete_count,
        file_size_bytes=r.del_size,
        footer_size=r.del_footer,
        begin_snapshot=r.del_begin,
        partial_max=r.del_partial_max,
        encryption_key=r.del_key,
    )


def live_at(rows: Iterable[Any], snap: int) -> list[Any]:
    """The catalog rows (with begin/end snapshots) live at snapshot `snap`."""
    return [
        r
        for r in rows
        if r.begin_snapshot <= snap and (r.end_snapshot is None or r.end_snapshot > snap)
    ]


def build_column_tree(rows: Iterable[Any], comments: dict[int, str] | None = None) -> list[Column]:
    """Column rows of one table at one snapshot -> top-level columns with children."""
    comments = comments or {}
    rows = sorted(rows, key=lambda r: (r.column_order, r.column_id))
    children: dict[int | None, list[Any]] = defaultdict(list)
    for r in rows:
        children[r.parent_column].append(r)

    def make(r: Any) -> Column:
        return Column(
            column_id=r.column_id,
            name=r.column_name,
            type=r.column_type,
            nullable=bool(as_bool(r.nulls_allowed)),
            order=r.column_order,
            parent_id=r.parent_column,
            initial_default=r.initial_default,
            default_value=r.default_value,
            default_value_type=r.default_value_type,
            default_value_dialect=r.default_value_dialect,
            begin_snapshot=r.begin_snapshot,
            children=tuple(make(c) for c in children.get(r.column_id, [])),
            comment=comments.get(r.column_id),
        )

    return [make(r) for r in children.get(None, [])]


def data_file_from_row(r: Any, root: str, partition_values: tuple[str | None, ...]) -> DataFile:
    relative = bool(as_bool(r.path_is_relative))
    return DataFile(
        data_file_id=r.data_file_id,
        path=root + r.path if relative else r.path,
        stored_path=r.path,
        path_is_relative=relative,
        file_format=r.file_format,
        record_count=r.record_count,
        file_size_bytes=r.file_size_bytes,
        footer_size=r.footer_size,
        row_id_start=r.row_id_start,
        begin_snapshot=r.begin_snapshot,
        partition_id=r.partition_id,
        partial_max=r.partial_max,
        mapping_id=r.mapping_id,
        file_order=r.file_order,
        encryption_key=r.encryption_key,
        delete_file=delete_file_from_row(r, root),
        partition_values=partition_values,
        end_snapshot=r.end_snapshot,
    )


def decode_default(column: Column) -> Any:
    """The column's initial default as a Python value (None for NULL)."""
    if column.initial_default is None or column.initial_default == "NULL":
        return None
    return decode_scalar(column.type, column.initial_default)


def project(old: Column, new: Column, value: Any) -> Any:
    """Re-shape a value written under column `old` to the current column `new` (same id)."""
    if value is None:
        return None
    if new.type == "struct":
        old_children = {c.column_id: c for c in old.children}
        out = {}
        for child in new.children:
            src = old_children.get(child.column_id)
            out[child.name] = (
                project(src, child, value.get(src.name))
                if src is not None
                else decode_default(child)
            )
        return out
    if new.type == "list":
        return [project(old.children[0], new.children[0], v) for v in value]
    if new.type == "map":
        ok, ov = old.children
        nk, nv = new.children
        return {project(ok, nk, k): project(ov, nv, v) for k, v in value.items()}
    if new.type != old.type:
        return decode_scalar(new.type, value)
    return value
