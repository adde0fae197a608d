"""Test-side Parquet I/O for lakes: write data/delete files with field ids, and read a
table back from the catalog alone (a small reference reader used to check `lake/`).

The engine's real scans and writes are Spark's; this module only exists so metadata
tests can use real Parquet files.
"""

from __future__ import annotations

import math
import os
import uuid
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from dbt.adapters.ducklake.lake import Column, DataFileSpec, DeleteFileSpec, FileColumnStats
from dbt.adapters.ducklake.lake.codec import stats_string
from dbt.adapters.ducklake.lake.drafts import StagedTable
from dbt.adapters.ducklake.lake.models import DataFile
from dbt.adapters.ducklake.lake.reader import CatalogReader
from dbt.adapters.ducklake.lake.rows import decode_default
from dbt.adapters.ducklake.lake.types import FLOAT_TYPES, is_decimal
from dbt.adapters.ducklake.spark.arrow import _fid, arrow_field

FILE_PATH_FIELD_ID = 2147483646
POS_FIELD_ID = 2147483645
SNAPSHOT_FIELD_ID = 2147483539
ROW_ID_FIELD_ID = 2147483540


def _leaves(col: Column, value: Any, out: dict[int, list[Any]]) -> None:
    if col.type == "list":
        (child,) = col.children
        for item in value if value is not None else [None]:
            _leaves(child, item, out)
    elif col.type == "struct":
        for c in col.children:
            _leaves(c, None if value is None else value.get(c.name), out)
    elif col.type == "map":
        k, v = col.children
        items = list(value.items()) if isinstance(value, dict) else (value or [(None, None)])
        for key, val in items:
            _leaves(k, key, out)
            _leaves(v, val, out)
    else:
        out.setdefault(col.column_id, []).append(value)


def write_data_file(
    table: StagedTable,
    rows: Sequence[Sequence[Any]],
    *,
    partition_values: tuple[str | None, ...] | None = None,
    subdir: str = "",
) -> DataFileSpec:
    """Write rows (top-level column order) as a DuckLake data file; return its spec."""
    columns = table.column_list()
    schema = pa.schema([arrow_field(c) for c in columns])
    data = {c.name: [r[i] for r in rows] for i, c in enumerate(columns)}
    for c in columns:
        if c.type == "map":
            data[c.name] = [list(v.items()) if isinstance(v, dict) else v for v in data[c.name]]
    arrow_table = pa.table(data, schema=schema)
    name = f"{subdir}ducklake-{uuid.uuid4()}.parquet"
    path = table.root + name
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(arrow_table, path)
    meta = pq.read_metadata(path)
    values: dict[int, list[Any]] = {}
    for row in rows:
        for col, value in zip(columns, row, strict=True):
            _leaves(col, value, values)
    leaf_types = {d.column_id: d.type for c in columns for d in c.walk()}
    stats = {}
    for cid, vals in values.items():
        present = [v for v in vals if v is not None]
        nan = [v for v in present if isinstance(v, float) and math.isnan(v)]
        ordered = [v for v in present if not (isinstance(v, float) and math.isnan(v))]
        lo = hi = None
        if ordered:
            lo = stats_string(leaf_types[cid], min(ordered))
            hi = stats_string(leaf_types[cid], max(ordered))
        stats[cid] = FileColumnStats(
            value_count=len(vals),
            null_count=len(vals) - len(present),
            min_value=lo,
            max_value=hi,
            contains_nan=bool(nan) if leaf_types[cid] in FLOAT_TYPES else None,
        )
    return DataFileSpec(
        path=name,
        record_count=len(rows),
        file_size_bytes=os.path.getsize(path),
        footer_size=meta.serialized_size,
        column_stats=stats,
        partition_values=partition_values,
    )


def write_delete_file(
    table: StagedTable,
    data_file: DataFile,
    positions: Sequence[int],
    snapshot_ids: Sequence[int] | None = None,
) -> DeleteFileSpec:
    """A positional delete file; with `snapshot_ids` a partial one (per-position snapshot)."""
    fields = [
        pa.field("file_path", pa.string(), metadata=_fid(FILE_PATH_FIELD_ID)),
        pa.field("pos", pa.int64(), metadata=_fid(POS_FIELD_ID)),
    ]
    data: dict[str, list[Any]] = {
        "file_path": [data_file.path] * len(positions),
        "pos": list(positions),
    }
    if snapshot_ids is not None:
        fields.append(
            pa.field("_ducklake_internal_snapshot_id", pa.int64(), metadata=_fid(SNAPSHOT_FIELD_ID))
        )
        data["_ducklake_internal_snapshot_id"] = list(snapshot_ids)
    order = sorted(range(len(positions)), key=lambda i: positions[i])
    data = {k: [v[i] for i in order] for k, v in data.items()}
    name = f"ducklake-{uuid.uuid4()}-delete.parquet"
    path = table.root + name
    pq.write_table(pa.table(data, schema=pa.schema(fields)), path)
    spec = DeleteFileSpec(
        data_file_id=data_file.data_file_id,
        path=name,
        delete_count=len(positions),
        file_size_bytes=os.path.getsize(path),
        footer_size=pq.read_metadata(path).serialized_size,
    )
    if snapshot_ids is not None:
        return DeleteFileSpec(
            **{
                **spec.__dict__,
                "begin_snapshot": min(snapshot_ids),
                "partial_max": max(snapshot_ids),
            }
        )
    return spec


# ---------------------------------------------------------------------------------------
# Reference reader


def _field_ids(schema: pa.Schema) -> dict[int, str]:
    out = {}
    for f in schema:
        if f.metadata and b"PARQUET:field_id" in f.metadata:
            out[int(f.metadata[b"PARQUET:field_id"])] = f.name
    return out


def _project(col: Column, value: Any, arrow_fields: dict[int, Any] | None) -> Any:
    """Re-key a nested value read from a file (old names) onto the current column tree."""
    if value is None:
        return None
    if col.type == "struct":
        assert isinstance(value, dict)
        out = {}
        for child in col.children:
            src = arrow_fields.get(child.column_id) if arrow_fields else None
            if src is None:
                out[child.name] = decode_default(child)
            else:
                out[child.name] = _project(child, value.get(src[0]), src[1])
        return out
    if col.type == "list":
        (child,) = col.children
        sub = next(iter(arrow_fields.values()))[1] if arrow_fields else None
        return [_project(child, v, sub) for v in value]
    if col.type == "map":
        return {k: v for k, v in value}
    if isinstance(value, float) and col.type not in FLOAT_TYPES:
        return value
    if is_decimal(col.type) and not isinstance(value, Decimal):
        return Decimal(str(value))
    return value


def _arrow_children(field: pa.Field) -> dict[int, Any]:
    """field id -> (name, grandchildren) for the nested children of an arrow field."""
    t = field.type
    kids: list[pa.Field] = []
    if pa.types.is_struct(t):
        kids = list(t)
    elif pa.types.is_list(t) or pa.types.is_large_list(t):
        kids = [t.value_field]
    out = {}
    for k in kids:
        if k.metadata and b"PARQUET:field_id" in k.metadata:
            out[int(k.metadata[b"PARQUET:field_id"])] = (k.name, _arrow_children(k))
    return out


def read_rows(cat: CatalogReader, schema: str, name: str) -> list[tuple[Any, ...]]:
    """Rows of a table at the reader's snapshot, rebuilt from catalog + Parquet files."""
    state = cat.table_state(schema, name)
    snap = cat.snapshot_id
    columns = list(state.columns)
    inlined_deletes: dict[int, set[int]] = {}
    for d in cat.inlined_deletes(state.table.table_id):
        inlined_deletes.setdefault(d.data_file_id, set()).add(d.position)
    rows: list[tuple[Any, ...]] = []
    for f in state.data_files:
        table = pq.read_table(f.path)
        ids = _field_ids(table.schema)
        deleted = set(inlined_deletes.get(f.data_file_id, set()))
        if f.delete_file is not None:
            dt = pq.read_table(f.delete_file.path).to_pydict()
            snaps = dt.get("_ducklake_internal_snapshot_id")
            for i, pos in enumerate(dt["pos"]):
                if snaps is None or snaps[i] <= snap:
                    deleted.add(pos)
        row_snaps = None
        if SNAPSHOT_FIELD_ID in ids:
            row_snaps = table.column(ids[SNAPSHOT_FIELD_ID]).to_pylist()
        data = {}
        for col in columns:
            if col.column_id in ids:
                arrow_name = ids[col.column_id]
                field = table.schema.field(arrow_name)
                children = _arrow_children(field)
                data[col.column_id] = [
                    _project(col, v, children) for v in table.column(arrow_name).to_pylist()
                ]
            else:
                data[col.column_id] = [decode_default(col)] * table.num_rows
        for i in range(table.num_rows):
            if i in deleted or (row_snaps is not None and row_snaps[i] > snap):
                continue
            rows.append(tuple(data[c.column_id][i] for c in columns))
    for r in cat.inlined_rows(state.table.table_id):
        rows.append(
            tuple(
                r.values[c.column_id] if c.column_id in r.values else decode_default(c)
                for c in columns
            )
        )
    return rows
