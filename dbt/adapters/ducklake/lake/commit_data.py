"""The data half of a commit: data and delete files, inlined rows, table statistics.

Split from commit.py, which adds schemas, tables and views on top of DataWriter. Tables
are the plan's TableRefs; ids of tables and schemas this commit creates are assigned
here, on every attempt, and looked up by uuid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from . import metadata_ddl as ddl
from .codec import as_bool, encode_catalog_time, encode_inlined, stats_string
from .inlined_tables import can_inline, leaf_values, relayout
from .models import Change, Column, Snapshot
from .options import OptionRow, resolve_option
from .plan import CommitPlan, DataFileSpec, DeleteFileSpec, SchemaRef, TableRef
from .reader import CatalogReader
from .store import Store, visible
from .types import FLOAT_TYPES, NESTED_TYPES, merge_max, merge_min


@dataclass
class _Stats:
    exists: bool
    record_count: int = 0
    next_row_id: int = 0
    file_size_bytes: int = 0
    columns: dict[int, dict[str, Any]] = field(default_factory=dict)
    existing_columns: set[int] = field(default_factory=set)
    dirty: bool = False
    rows_before: int = 0  # the table's rows when this commit began


class DataWriter:
    """Catalog rows for data: files, deletes, inlined rows and the table stats they
    move. CommitContext adds the catalog objects (schemas, tables, views)."""

    def __init__(self, store: Store, conn: Connection, latest: Snapshot, plan: CommitPlan):
        self.lake = store
        self.backend = store.backend
        self.conn = conn
        self.latest = latest
        self.tables = {t.uuid: t for t in plan.tables}
        self.table_ids: dict[str, int] = {}  # uuid -> id of tables created here
        self.schema_ids: dict[str, int] = {}  # uuid -> id of schemas created here
        self.view_ids: dict[str, int] = {}  # uuid -> id of views created here
        self.file_ids: dict[str, int] = {}  # path -> id of data files added here
        self.snapshot_id = latest.snapshot_id + 1
        self.schema_version = latest.schema_version
        self.next_catalog_id = latest.next_catalog_id
        self.next_file_id = latest.next_file_id
        self.now = datetime.now(timezone.utc)
        self.changes: list[Change] = []
        self.versioned_tables: list[int] = []
        self.new_inlined: dict[int, tuple[str, tuple[Column, ...]]] = {}
        self.stats: dict[int, _Stats] = {}
        self.inline_only_tables: set[int] = set()
        self.file_tables: set[int] = set()
        self._options: list[OptionRow] = [
            (r[0], r[1], r[2], r[3])
            for r in conn.execute(
                sa.text(
                    f'SELECT "key", "value", "scope", scope_id FROM {self.t("ducklake_metadata")}'
                )
            ).fetchall()
        ]

    # -- helpers -------------------------------------------------------------------
    def tid(self, t: TableRef) -> int:
        return t.table_id if t.table_id is not None else self.table_ids[t.uuid]

    def sid(self, s: SchemaRef) -> int:
        return s.schema_id if s.schema_id is not None else self.schema_ids[s.uuid]

    def t(self, name: str) -> str:
        return self.lake.qualified(name)

    def b(self, value: bool | None) -> Any:
        if value is None:
            return None
        return bool(value) if self.backend == "postgres" else int(bool(value))

    def run(self, sql: str, params: dict[str, Any] | Sequence[dict[str, Any]] | None = None) -> Any:
        if isinstance(params, list) and not params:
            return None
        return self.conn.execute(sa.text(sql), params if params is not None else {})

    def catalog_id(self) -> int:
        value = self.next_catalog_id
        self.next_catalog_id += 1
        return value

    def file_id(self) -> int:
        value = self.next_file_id
        self.next_file_id += 1
        return value

    def change(self, kind: str, value: str | int) -> None:
        self.changes.append(Change(kind, str(value)))

    def option(self, key: str, schema_id: int | None, table_id: int | None) -> str | None:
        return resolve_option(self._options, key, schema_id=schema_id, table_id=table_id)

    def end_rows(self, table: str, where: str, **params: Any) -> None:
        self.run(
            f"UPDATE {self.t(table)} SET end_snapshot = :snap "
            f"WHERE {where} AND end_snapshot IS NULL",
            {"snap": self.snapshot_id, **params},
        )

    def create_inlined_table(self, t: TableRef) -> str | None:
        """DuckDB creates a new inlined-data table whenever a table's column set changes."""
        table_id = self.tid(t)
        limit = self.option("data_inlining_row_limit", self.sid(t.schema), table_id)
        if limit is not None and int(limit) == 0:
            return None
        if not can_inline(self.backend, t.columns):
            return None
        name = ddl.inlined_table_name(table_id, self.schema_version)

        def create() -> None:
            cols = [(c.name, c.type) for c in t.columns]
            schema = self.lake.metadata_schema
            self.conn.exec_driver_sql(
                ddl.create_inlined_data_table(self.backend, schema, name, cols)
            )
            self.run(
                f"INSERT INTO {self.t('ducklake_inlined_data_tables')} VALUES (:tid, :name, :v)",
                {"tid": table_id, "name": name, "v": self.schema_version},
            )

        earlier = self.new_inlined.get(table_id)
        self.new_inlined[table_id] = (name, tuple(t.columns))
        if earlier is None or earlier[0] != name:
            create()
            return name
        # a publish applies several plans in one snapshot, so under one version number
        self.run(
            f"DELETE FROM {self.t('ducklake_inlined_data_tables')} WHERE table_name = :n",
            {"n": name},
        )
        layouts = (earlier[1], t.columns)
        schema = self.lake.metadata_schema
        added = relayout(self.conn, schema, name, layouts, t.qualified_name, create)
        if added:  # the rows carried in read NULL there
            stats = self.table_stats(table_id)
            for cid in added:
                stats.columns[cid] = {"contains_null": True, "contains_nan": None}
                stats.columns[cid].update({"min": None, "max": None})
        return name

    def table_stats(self, table_id: int) -> _Stats:
        if table_id in self.stats:
            return self.stats[table_id]
        row = self.conn.execute(
            sa.text(
                f"SELECT record_count, next_row_id, file_size_bytes FROM "
                f"{self.t('ducklake_table_stats')} WHERE table_id = :tid"
            ),
            {"tid": table_id},
        ).first()
        stats = _Stats(exists=row is not None)
        if row is not None:
            stats.record_count, stats.next_row_id, stats.file_size_bytes = (
                int(row[0] or 0),
                int(row[1] or 0),
                int(row[2] or 0),
            )
            stats.rows_before = stats.record_count
        for r in self.conn.execute(
            sa.text(
                f"SELECT column_id, contains_null, contains_nan, min_value, max_value FROM "
                f"{self.t('ducklake_table_column_stats')} WHERE table_id = :tid"
            ),
            {"tid": table_id},
        ).fetchall():
            stats.columns[r.column_id] = {
                "contains_null": as_bool(r.contains_null),
                "contains_nan": as_bool(r.contains_nan),
                "min": r.min_value,
                "max": r.max_value,
            }
            stats.existing_columns.add(r.column_id)
        self.stats[table_id] = stats
        return stats

    def merge_column_stats(
        self,
        stats: _Stats,
        column: Column,
        has_null: bool,
        has_nan: bool | None,
        lo: str | None,
        hi: str | None,
    ) -> None:
        if column.column_id not in stats.columns and stats.rows_before > 0:
            # a column added after the table had rows: those rows read its initial
            # default (NULL unless given), which no file's stats describe; like DuckDB,
            # the table keeps no stats for it (contains_null = false would let a reader
            # answer count(column) with count(*))
            return
        entry = stats.columns.setdefault(
            column.column_id,
            {"contains_null": False, "contains_nan": None, "min": None, "max": None},
        )
        entry["contains_null"] = bool(entry["contains_null"]) or has_null
        if has_nan is not None:
            entry["contains_nan"] = bool(entry["contains_nan"]) or has_nan
        entry["min"] = merge_min(column.type, entry["min"], lo)
        entry["max"] = merge_max(column.type, entry["max"], hi)
        stats.dirty = True

    def flush_stats(self) -> None:
        for tid, s in self.stats.items():
            if not s.dirty:
                continue
            params = {
                "tid": tid,
                "rc": s.record_count,
                "nr": s.next_row_id,
                "fs": s.file_size_bytes,
            }
            if s.exists:
                self.run(
                    f"UPDATE {self.t('ducklake_table_stats')} SET record_count = :rc, "
                    "next_row_id = :nr, file_size_bytes = :fs WHERE table_id = :tid",
                    params,
                )
            else:
                self.run(
                    f"INSERT INTO {self.t('ducklake_table_stats')} VALUES (:tid, :rc, :nr, :fs)",
                    params,
                )
            rows = [
                {
                    "tid": tid,
                    "cid": cid,
                    "cn": self.b(e["contains_null"]),
                    "nan": self.b(e["contains_nan"]),
                    "lo": e["min"],
                    "hi": e["max"],
                }
                for cid, e in sorted(s.columns.items())
            ]
            self.run(
                f"UPDATE {self.t('ducklake_table_column_stats')} SET contains_null = :cn, "
                "contains_nan = :nan, min_value = :lo, max_value = :hi "
                "WHERE table_id = :tid AND column_id = :cid",
                [r for r in rows if r["cid"] in s.existing_columns],
            )
            self.run(
                f"INSERT INTO {self.t('ducklake_table_column_stats')} VALUES (:tid, :cid, "
                ":cn, :nan, :lo, :hi, NULL)",
                [r for r in rows if r["cid"] not in s.existing_columns],
            )

    # -- data ----------------------------------------------------------------------
    def add_files(
        self,
        t: TableRef,
        files: Sequence[DataFileSpec],
        *,
        change: str | None = "inserted_into_table",
        count: bool = True,
    ) -> list[int]:
        """Register written files; `count` adds their rows and bytes to the table stats
        (compaction moves rows that were counted already)."""
        table_id = self.tid(t)
        stats = self.table_stats(table_id)
        partitioned = any(f.partition_values is not None for f in files)
        partition_id = self.current_partition_id(t) if partitioned else None
        leaves = {c.column_id: c for top in t.columns for c in top.walk()}
        leaves = {cid: c for cid, c in leaves.items() if c.type not in NESTED_TYPES}
        file_rows: list[dict[str, Any]] = []
        stat_rows: list[dict[str, Any]] = []
        part_rows: list[dict[str, Any]] = []
        for f in files:
            fid = self.file_id()
            row_id_start = _row_id_start(stats, f)
            if count:
                stats.record_count += f.record_count
                stats.file_size_bytes += f.file_size_bytes
            stats.dirty = True
            file_rows.append(self._file_row(table_id, fid, f, row_id_start, partition_id))
            self.file_ids[f.path] = fid
            stat_rows += self._file_stat_rows(table_id, fid, f)
            for cid, cs in f.column_stats.items():
                if cid in leaves:
                    lo, hi = cs.min_value, cs.max_value
                    has_null = bool(cs.null_count)
                    self.merge_column_stats(stats, leaves[cid], has_null, cs.contains_nan, lo, hi)
            part_rows += [
                {"fid": fid, "tid": table_id, "i": i, "v": value}
                for i, value in enumerate(f.partition_values or ())
            ]
        self.run(
            f"INSERT INTO {self.t('ducklake_data_file')} VALUES (:id, :tid, :begin, NULL, NULL, "
            ":path, :rel, 'parquet', :rc, :size, :footer, :rid, :pid, :key, NULL, :pmax)",
            file_rows,
        )
        self.run(
            f"INSERT INTO {self.t('ducklake_file_column_stats')} VALUES (:fid, :tid, :cid, :size, "
            ":vc, :nc, :lo, :hi, :nan, NULL)",
            stat_rows,
        )
        self.run(
            f"INSERT INTO {self.t('ducklake_file_partition_value')} VALUES (:fid, :tid, :i, :v)",
            part_rows,
        )
        self.file_tables.add(table_id)
        if change is not None:
            self.change(change, table_id)
        return [r["id"] for r in file_rows]

    def _file_row(
        self,
        table_id: int,
        file_id: int,
        f: DataFileSpec,
        row_id_start: int | None,
        partition_id: int | None,
    ) -> dict[str, Any]:
        return {
            "id": file_id,
            "tid": table_id,
            "begin": f.begin_snapshot if f.begin_snapshot is not None else self.snapshot_id,
            "path": f.path,
            "rel": self.b(f.path_is_relative),
            "rc": f.record_count,
            "size": f.file_size_bytes,
            "footer": f.footer_size,
            "rid": row_id_start,
            "pid": partition_id if f.partition_values is not None else None,
            "pmax": f.partial_max,
            "key": f.encryption_key,
        }

    def _file_stat_rows(self, table_id: int, file_id: int, f: DataFileSpec) -> list[dict[str, Any]]:
        return [
            {
                "fid": file_id,
                "tid": table_id,
                "cid": cid,
                "size": cs.column_size_bytes,
                "vc": cs.value_count,
                "nc": cs.null_count,
                "lo": cs.min_value,
                "hi": cs.max_value,
                "nan": self.b(cs.contains_nan),
            }
            for cid, cs in sorted(f.column_stats.items())
        ]

    def current_partition_id(self, t: TableRef) -> int | None:
        row = self.conn.execute(
            sa.text(
                f"SELECT partition_id FROM {self.t('ducklake_partition_info')} pi "
                f"WHERE table_id = :tid AND {visible('pi')}"
            ),
            {"tid": self.tid(t), "snap": self.snapshot_id},
        ).first()
        return row[0] if row else None

    def add_deletes(self, t: TableRef, files: Sequence[DeleteFileSpec]) -> None:
        ids = [f.data_file_id for f in files]
        stmt = sa.text(
            f"SELECT delete_file_id, data_file_id, path, path_is_relative, begin_snapshot "
            f"FROM {self.t('ducklake_delete_file')} WHERE table_id = :tid "
            "AND end_snapshot IS NULL AND data_file_id IN :ids"
        ).bindparams(sa.bindparam("ids", expanding=True))
        existing = {
            r.data_file_id: r
            for r in self.conn.execute(stmt, {"tid": self.tid(t), "ids": ids}).fetchall()
        }
        rows = []
        for f in files:
            begin, partial_max = f.begin_snapshot, f.partial_max
            old = existing.get(f.data_file_id)
            if old is not None and f.format == "puffin":  # no per-row snapshots: end the old
                self.run(
                    f"UPDATE {self.t('ducklake_delete_file')} SET end_snapshot = :snap "
                    "WHERE delete_file_id = :id",
                    {"snap": self.snapshot_id, "id": old.delete_file_id},
                )
            elif old is not None:
                self.run(
                    f"DELETE FROM {self.t('ducklake_delete_file')} WHERE delete_file_id = :id",
                    {"id": old.delete_file_id},
                )
                self.schedule_deletion(
                    t, old.delete_file_id, old.path, as_bool(old.path_is_relative)
                )
                if begin is None:
                    begin = old.begin_snapshot
                if partial_max is None:
                    partial_max = self.snapshot_id
            rows.append(
                {
                    "id": self.file_id(),
                    "tid": self.tid(t),
                    "begin": begin if begin is not None else self.snapshot_id,
                    "fid": f.data_file_id,
                    "path": f.path,
                    "rel": self.b(f.path_is_relative),
                    "dc": f.delete_count,
                    "size": f.file_size_bytes,
                    "footer": f.footer_size,
                    "pmax": partial_max,
                    "format": f.format,
                    "key": f.encryption_key,
                }
            )
        self.run(
            f"INSERT INTO {self.t('ducklake_delete_file')} VALUES (:id, :tid, :begin, NULL, :fid, "
            ":path, :rel, :format, :dc, :size, :footer, :key, :pmax)",
            rows,
        )
        self.change("deleted_from_table", self.tid(t))

    def schedule_deletion(
        self, t: TableRef, file_id: int, path: str, relative: bool | None
    ) -> None:
        if relative and t.schema.path_is_relative:
            stored, rel = t.schema.path + t.path + path, True
        elif relative:
            stored, rel = t.root + path, False
        else:
            stored, rel = path, False
        self.run(
            f"INSERT INTO {self.t('ducklake_files_scheduled_for_deletion')} "
            "VALUES (:id, :p, :r, :t)",
            {
                "id": file_id,
                "p": stored,
                "r": self.b(rel),
                "t": encode_catalog_time(self.backend, self.now),
            },
        )

    def run_in(self, sql: str, ids: Sequence[int], **params: Any) -> None:
        """Run a statement with an expanding `:ids` list parameter."""
        stmt = sa.text(sql).bindparams(sa.bindparam("ids", expanding=True))
        self.conn.execute(stmt, {"ids": list(ids), **params})

    def end_files(
        self, t: TableRef, ids: Sequence[int], change: str | None = "deleted_from_table"
    ) -> None:
        for table in ("ducklake_data_file", "ducklake_delete_file"):
            self.run_in(
                f"UPDATE {self.t(table)} SET end_snapshot = :snap WHERE table_id = :tid "
                "AND end_snapshot IS NULL AND data_file_id IN :ids",
                ids,
                snap=self.snapshot_id,
                tid=self.tid(t),
            )
        if change is not None:
            self.change(change, self.tid(t))

    def inline_insert(
        self, t: TableRef, rows: Sequence[tuple[Any, ...]], row_ids: Sequence[int] | None
    ) -> None:
        made = self.new_inlined.get(self.tid(t))
        name = made[0] if made else self.latest_inlined_table(t)
        stats = self.table_stats(self.tid(t))
        columns = list(t.columns)
        params = []
        for i, row in enumerate(rows):
            if row_ids is None:
                record = {"row_id": stats.next_row_id, "snap": self.snapshot_id}
                stats.next_row_id += 1
            else:
                record = {"row_id": row_ids[i], "snap": self.snapshot_id}
            for i, (col, value) in enumerate(zip(columns, row, strict=True)):
                record[f"c{i}"] = encode_inlined(self.backend, col, value)
            params.append(record)
        stats.record_count += len(rows)
        stats.dirty = True
        placeholders = ", ".join(f":c{i}" for i in range(len(columns)))
        self.run(
            f"INSERT INTO {self.t(name)} VALUES (:row_id, :snap, NULL, {placeholders})", params
        )
        drafts = {d.column_id: d for c in t.columns for d in c.walk()}
        for cid, values in leaf_values(columns, rows).items():
            draft = drafts[cid]
            present = [v for v in values if v is not None]
            nan = [v for v in present if isinstance(v, float) and v != v]
            ordered = [
                stats_string(draft.type, v)
                for v in present
                if not (isinstance(v, float) and v != v)
            ]
            lo = hi = None
            for text in ordered:
                lo, hi = merge_min(draft.type, lo, text), merge_max(draft.type, hi, text)
            self.merge_column_stats(
                stats,
                draft,
                len(present) < len(values),
                bool(nan) if draft.type in FLOAT_TYPES else None,
                lo,
                hi,
            )
        self.inline_only_tables.add(self.tid(t))
        self.change("inlined_insert", self.tid(t))

    def latest_inlined_table(self, t: TableRef) -> str:
        """The newest inlined table when its layout is the table's; else create one."""
        # read on the commit's own connection: inside its write transaction
        reader = CatalogReader(self.lake, self.latest, connection=self.conn)
        existing = reader.inlined_tables(self.tid(t))
        layout = (tuple(c.column_id for c in t.columns), tuple(c.type for c in t.columns))
        if existing and (existing[-1].column_ids, existing[-1].column_types) == layout:
            return existing[-1].name
        self.schema_version += 1  # DuckDB bumps the version for a lazily created table
        name = self.create_inlined_table(t)
        if name is None:
            raise ValueError(f"table {t.qualified_name} cannot hold inlined rows")
        return name

    def inline_delete_rows(self, t: TableRef, row_ids: Sequence[int]) -> None:
        names = [
            r[0]
            for r in self.conn.execute(
                sa.text(
                    f"SELECT table_name FROM {self.t('ducklake_inlined_data_tables')} "
                    "WHERE table_id = :tid"
                ),
                {"tid": self.tid(t)},
            ).fetchall()
        ]
        for name in names:
            self.run_in(
                f"UPDATE {self.t(name)} SET end_snapshot = :snap WHERE "
                "end_snapshot IS NULL AND row_id IN :ids",
                row_ids,
                snap=self.snapshot_id,
            )
        self.change("inlined_delete", self.tid(t))

    def inline_delete_positions(
        self, t: TableRef, data_file_id: int, positions: Sequence[int]
    ) -> None:
        name = ddl.inlined_delete_table_name(self.tid(t))
        self.conn.exec_driver_sql(ddl.create_inlined_delete_table(self.lake.metadata_schema, name))
        self.run(
            f"INSERT INTO {self.t(name)} VALUES (:f, :r, :snap)",
            [{"f": data_file_id, "r": p, "snap": self.snapshot_id} for p in positions],
        )
        self.change("inlined_delete", self.tid(t))


def _row_id_start(stats: _Stats, f: DataFileSpec) -> int | None:
    """The first row id of a new file: the table's next ids, or the ids its rows keep
    (an UPDATE moves rows), or none when every row carries its id (compaction)."""
    if f.ids_in_file:
        return None
    if f.row_id_start is None:
        start = stats.next_row_id
        stats.next_row_id += f.record_count
        return start
    stats.next_row_id = max(stats.next_row_id, f.row_id_start + f.record_count)
    return f.row_id_start
