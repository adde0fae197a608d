"""Write a staged transaction as catalog rows of one new snapshot.

Runs inside one metadata transaction on the connection the caller holds. Ids come from
the latest snapshot's counters, so a retry after a collision simply runs this again.
Rows written are proportional to what the transaction changes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError

from . import ddl
from .changes import format_changes, qualified_name, quote_name
from .codec import as_bool, encode_catalog_time, encode_inlined, stats_string
from .maintenance import apply_compaction, apply_flush
from .models import SPARK_SQL_TAG, Change, Column, Snapshot
from .options import OptionRow, resolve_option
from .reader import snapshot_from_row, split_changes, visible
from .staged import ColumnDraft, DataFileSpec, DeleteFileSpec, StagedSchema, StagedTable
from .types import FLOAT_TYPES, NESTED_TYPES, merge_max, merge_min

if TYPE_CHECKING:
    from .lake import Lake
    from .transaction import Transaction

_RETRYABLE = ("primary key", "unique", "conflict", "concurrent", "database is locked")
_SYSTEM_COLUMNS = {"row_id", "begin_snapshot", "end_snapshot"}


def is_snapshot_collision(exc: DBAPIError) -> bool:
    """A concurrent writer took our snapshot id (or held the SQLite lock too long)."""
    return any(word in str(exc.orig).lower() for word in _RETRYABLE)


def snapshots_after(lake: Lake, conn: Connection, base_id: int) -> list[Snapshot]:
    rows = conn.execute(
        sa.text(lake._snapshot_query("s.snapshot_id > :base")), {"base": base_id}
    ).fetchall()
    return [snapshot_from_row(r) for r in rows]


def files_deleted_after(lake: Lake, conn: Connection, base_id: int) -> set[int]:
    rows = conn.execute(
        sa.text(
            f"""SELECT data_file_id FROM {lake.qualified("ducklake_delete_file")}
                WHERE begin_snapshot > :base
                UNION SELECT data_file_id FROM {lake.qualified("ducklake_data_file")}
                WHERE end_snapshot > :base"""
        ),
        {"base": base_id},
    ).fetchall()
    return {r[0] for r in rows}


@dataclass
class _Stats:
    exists: bool
    record_count: int = 0
    next_row_id: int = 0
    file_size_bytes: int = 0
    columns: dict[int, dict[str, Any]] = field(default_factory=dict)
    existing_columns: set[int] = field(default_factory=set)
    dirty: bool = False


class CommitContext:
    def __init__(self, tx: Transaction, conn: Connection, latest: Snapshot):
        self.tx = tx
        self.lake = tx.lake
        self.backend = tx.lake.backend
        self.conn = conn
        self.snapshot_id = latest.snapshot_id + 1
        self.schema_version = latest.schema_version
        self.next_catalog_id = latest.next_catalog_id
        self.next_file_id = latest.next_file_id
        self.now = datetime.now(UTC)
        self.changes: list[Change] = []
        self.versioned_tables: list[int] = []
        self.new_inlined: dict[int, str] = {}
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

    # -- schemas -------------------------------------------------------------------
    def create_schema(self, s: StagedSchema) -> None:
        s.schema_id = self.catalog_id()
        self.run(
            f"INSERT INTO {self.t('ducklake_schema')} VALUES (:id, :uuid, :snap, NULL, :name, "
            ":path, :rel)",
            {
                "id": s.schema_id,
                "uuid": s.uuid,
                "snap": self.snapshot_id,
                "name": s.name,
                "path": s.path,
                "rel": self.b(s.path_is_relative),
            },
        )
        self.change("created_schema", quote_name(s.name))
        if s.comment_changed and s.comment is not None:
            self.set_tag(s.schema_id, s.comment)

    def drop_schema(self, s: StagedSchema) -> None:
        assert s.schema_id is not None
        self.end_rows("ducklake_schema", "schema_id = :id", id=s.schema_id)
        self.end_rows("ducklake_tag", "object_id = :id", id=s.schema_id)
        self.change("dropped_schema", s.schema_id)

    def set_tag(self, object_id: int, value: str | None, key: str = "comment") -> None:
        self.end_rows("ducklake_tag", 'object_id = :id AND "key" = :k', id=object_id, k=key)
        if value is not None:
            self.run(
                f"INSERT INTO {self.t('ducklake_tag')} VALUES (:id, :snap, NULL, :k, :v)",
                {"id": object_id, "snap": self.snapshot_id, "k": key, "v": value},
            )

    def set_column_tag(self, table_id: int, column_id: int, comment: str | None) -> None:
        self.end_rows(
            "ducklake_column_tag",
            "table_id = :tid AND column_id = :cid AND \"key\" = 'comment'",
            tid=table_id,
            cid=column_id,
        )
        if comment is not None:
            self.run(
                f"INSERT INTO {self.t('ducklake_column_tag')} VALUES (:tid, :cid, :snap, NULL, "
                "'comment', :v)",
                {"tid": table_id, "cid": column_id, "snap": self.snapshot_id, "v": comment},
            )

    # -- tables --------------------------------------------------------------------
    def insert_table_row(self, t: StagedTable) -> None:
        assert t.schema.schema_id is not None
        self.run(
            f"INSERT INTO {self.t('ducklake_table')} VALUES (:id, :uuid, :snap, NULL, :sid, "
            ":name, :path, :rel)",
            {
                "id": t.table_id,
                "uuid": t.uuid,
                "snap": self.snapshot_id,
                "sid": t.schema.schema_id,
                "name": t.name,
                "path": t.path,
                "rel": self.b(True),
            },
        )

    def insert_columns(self, table_id: int, drafts: Iterable[ColumnDraft]) -> None:
        self.run(
            f"INSERT INTO {self.t('ducklake_column')} VALUES (:id, :snap, NULL, :tid, :ord, "
            ":name, :type, :init, :dflt, :nulls, :parent, :dtype, :dialect)",
            [
                {
                    "id": d.column_id,
                    "snap": self.snapshot_id,
                    "tid": table_id,
                    "ord": d.order,
                    "name": d.name,
                    "type": d.type,
                    "init": d.initial_default,
                    "dflt": d.default_value,
                    "nulls": self.b(d.nullable),
                    "parent": d.parent_id,
                    "dtype": d.default_value_type,
                    "dialect": d.default_value_dialect,
                }
                for d in drafts
            ],
        )

    def version_table(self, table_id: int, inlined_layout_changed: bool, t: StagedTable) -> None:
        if table_id not in self.versioned_tables:
            self.versioned_tables.append(table_id)
        if inlined_layout_changed:
            self.create_inlined_table(t)

    def create_inlined_table(self, t: StagedTable) -> str | None:
        """DuckDB creates a new inlined-data table whenever a table's column set changes."""
        assert t.table_id is not None and t.schema.schema_id is not None
        limit = self.option("data_inlining_row_limit", t.schema.schema_id, t.table_id)
        if limit is not None and int(limit) == 0:
            return None
        if not _can_inline(self.backend, t.columns):
            return None
        name = ddl.inlined_table_name(t.table_id, self.schema_version)
        cols = [(c.name, c.type) for c in t.columns]
        self.conn.exec_driver_sql(
            ddl.create_inlined_data_table(self.backend, self.lake.metadata_schema, name, cols)
        )
        self.run(
            f"INSERT INTO {self.t('ducklake_inlined_data_tables')} VALUES (:tid, :name, :v)",
            {"tid": t.table_id, "name": name, "v": self.schema_version},
        )
        self.new_inlined[t.table_id] = name
        return name

    def create_table(self, t: StagedTable) -> None:
        t.table_id = self.catalog_id()
        self.insert_table_row(t)
        self.insert_columns(t.table_id, (d for c in t.columns for d in c.walk()))
        for d in (d for c in t.columns for d in c.walk()):
            if d.comment is not None:
                self.set_column_tag(t.table_id, d.column_id, d.comment)
        if t.comment is not None:
            self.set_tag(t.table_id, t.comment)
        self.change("created_table", qualified_name(t.schema.name, t.name))
        if t.partition:
            self.write_partition(t)
        if t.sort:
            self.write_sort(t)
        self.version_table(t.table_id, True, t)

    def drop_table(self, t: StagedTable) -> None:
        tid = t.table_id
        for table in (
            "ducklake_table",
            "ducklake_partition_info",
            "ducklake_column",
            "ducklake_column_tag",
            "ducklake_data_file",
            "ducklake_delete_file",
            "ducklake_sort_info",
        ):
            self.end_rows(table, "table_id = :tid", tid=tid)
        self.end_rows("ducklake_tag", "object_id = :tid", tid=tid)
        self.change("dropped_table", tid)  # type: ignore[arg-type]

    def alter_table(self, t: StagedTable) -> None:
        tid = t.table_id
        assert tid is not None
        layout_changed = False
        if t.name != t.base_name:
            self.end_rows("ducklake_table", "table_id = :tid", tid=tid)
            self.insert_table_row(t)
            self.change("created_table", qualified_name(t.schema.name, t.name))
            self.version_table(tid, False, t)
            layout_changed = True
            t.base_name = t.name
        if t.columns_changed:
            current, base = t.flat_columns(), t.base_columns
            changed = [
                cid
                for cid in sorted(set(current) | set(base))
                if cid not in current
                or cid not in base
                or current[cid].row_fields() != base[cid].row_fields()
            ]
            for cid in changed:
                if cid in base:
                    self.end_rows(
                        "ducklake_column", "table_id = :tid AND column_id = :cid", tid=tid, cid=cid
                    )
            self.insert_columns(tid, (current[c] for c in changed if c in current))
            structural = any(
                c not in current
                or c not in base
                or (current[c].name, current[c].type) != (base[c].name, base[c].type)
                for c in changed
            )
            layout_changed = layout_changed or structural
            self.change("altered_table", tid)
            self.version_table(tid, False, t)
        if t.partition_changed:
            self.end_rows("ducklake_partition_info", "table_id = :tid", tid=tid)
            self.write_partition(t)
            self.change("altered_table", tid)
            self.version_table(tid, False, t)
            layout_changed = True
        if t.sort_changed:
            self.end_rows("ducklake_sort_info", "table_id = :tid", tid=tid)
            if t.sort:
                self.write_sort(t)
            self.change("altered_table", tid)
        if t.comment_changed:
            self.set_tag(tid, t.comment)
            self.change("altered_table", tid)
        if t.column_comments_changed:
            flat = t.flat_columns()
            for cid in sorted(t.column_comments_changed):
                self.set_column_tag(tid, cid, flat[cid].comment if cid in flat else None)
            self.change("altered_table", tid)
        if layout_changed:
            self.create_inlined_table(t)

    def write_partition(self, t: StagedTable) -> None:
        pid = self.catalog_id()
        self.run(
            f"INSERT INTO {self.t('ducklake_partition_info')} VALUES (:pid, :tid, :snap, NULL)",
            {"pid": pid, "tid": t.table_id, "snap": self.snapshot_id},
        )
        self.run(
            f"INSERT INTO {self.t('ducklake_partition_column')} VALUES (:pid, :tid, :i, :cid, :tr)",
            [
                {"pid": pid, "tid": t.table_id, "i": i, "cid": cid, "tr": tr}
                for i, (cid, tr) in enumerate(t.partition or [])
            ],
        )

    def write_sort(self, t: StagedTable) -> None:
        sid = self.catalog_id()
        self.run(
            f"INSERT INTO {self.t('ducklake_sort_info')} VALUES (:sid, :tid, :snap, NULL)",
            {"sid": sid, "tid": t.table_id, "snap": self.snapshot_id},
        )
        self.run(
            f"INSERT INTO {self.t('ducklake_sort_expression')} VALUES (:sid, :tid, :i, :e, "
            "'duckdb', :d, :n)",
            [
                {"sid": sid, "tid": t.table_id, "i": i, "e": e, "d": d, "n": n}
                for i, (e, d, n) in enumerate(t.sort or [])
            ],
        )

    # -- stats ---------------------------------------------------------------------
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
        column: ColumnDraft,
        has_null: bool,
        has_nan: bool | None,
        lo: str | None,
        hi: str | None,
    ) -> None:
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
        t: StagedTable,
        files: list[DataFileSpec],
        *,
        change: str | None = "inserted_into_table",
        count: bool = True,
    ) -> list[int]:
        """Register written files; `count` adds their rows and bytes to the table stats
        (compaction moves rows that were counted already)."""
        assert t.table_id is not None
        stats = self.table_stats(t.table_id)
        partition_id = (
            self.current_partition_id(t)
            if any(f.partition_values is not None for f in files)
            else None
        )
        leaves = {d.column_id: d for c in t.columns for d in c.walk() if d.type not in NESTED_TYPES}
        file_rows, stat_rows, part_rows = [], [], []
        for f in files:
            fid = self.file_id()
            row_id_start: int | None
            if f.ids_in_file:
                row_id_start = None
            elif f.row_id_start is None:
                row_id_start = stats.next_row_id
                stats.next_row_id += f.record_count
            else:
                row_id_start = f.row_id_start
                stats.next_row_id = max(stats.next_row_id, f.row_id_start + f.record_count)
            if count:
                stats.record_count += f.record_count
                stats.file_size_bytes += f.file_size_bytes
            stats.dirty = True
            file_rows.append(
                {
                    "id": fid,
                    "tid": t.table_id,
                    "begin": f.begin_snapshot if f.begin_snapshot is not None else self.snapshot_id,
                    "path": f.path,
                    "rel": self.b(f.path_is_relative),
                    "rc": f.record_count,
                    "size": f.file_size_bytes,
                    "footer": f.footer_size,
                    "rid": row_id_start,
                    "pid": partition_id if f.partition_values is not None else None,
                    "pmax": f.partial_max,
                }
            )
            for cid, cs in sorted(f.column_stats.items()):
                stat_rows.append(
                    {
                        "fid": fid,
                        "tid": t.table_id,
                        "cid": cid,
                        "size": cs.column_size_bytes,
                        "vc": cs.value_count,
                        "nc": cs.null_count,
                        "lo": cs.min_value,
                        "hi": cs.max_value,
                        "nan": self.b(cs.contains_nan),
                    }
                )
                if cid in leaves:
                    self.merge_column_stats(
                        stats,
                        leaves[cid],
                        bool(cs.null_count),
                        cs.contains_nan,
                        cs.min_value,
                        cs.max_value,
                    )
            for i, value in enumerate(f.partition_values or ()):
                part_rows.append({"fid": fid, "tid": t.table_id, "i": i, "v": value})
        self.run(
            f"INSERT INTO {self.t('ducklake_data_file')} VALUES (:id, :tid, :begin, NULL, NULL, "
            ":path, :rel, 'parquet', :rc, :size, :footer, :rid, :pid, NULL, NULL, :pmax)",
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
        self.file_tables.add(t.table_id)
        if change is not None:
            self.change(change, t.table_id)
        return [r["id"] for r in file_rows]

    def current_partition_id(self, t: StagedTable) -> int | None:
        row = self.conn.execute(
            sa.text(
                f"SELECT partition_id FROM {self.t('ducklake_partition_info')} pi "
                f"WHERE table_id = :tid AND {visible('pi')}"
            ),
            {"tid": t.table_id, "snap": self.snapshot_id},
        ).first()
        return row[0] if row else None

    def add_deletes(self, t: StagedTable, files: list[DeleteFileSpec]) -> None:
        ids = [f.data_file_id for f in files]
        stmt = sa.text(
            f"SELECT delete_file_id, data_file_id, path, path_is_relative, begin_snapshot "
            f"FROM {self.t('ducklake_delete_file')} WHERE table_id = :tid "
            "AND end_snapshot IS NULL AND data_file_id IN :ids"
        ).bindparams(sa.bindparam("ids", expanding=True))
        existing = {
            r.data_file_id: r
            for r in self.conn.execute(stmt, {"tid": t.table_id, "ids": ids}).fetchall()
        }
        rows = []
        for f in files:
            begin, partial_max = f.begin_snapshot, f.partial_max
            old = existing.get(f.data_file_id)
            if old is not None:
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
                    "tid": t.table_id,
                    "begin": begin if begin is not None else self.snapshot_id,
                    "fid": f.data_file_id,
                    "path": f.path,
                    "rel": self.b(f.path_is_relative),
                    "dc": f.delete_count,
                    "size": f.file_size_bytes,
                    "footer": f.footer_size,
                    "pmax": partial_max,
                }
            )
        self.run(
            f"INSERT INTO {self.t('ducklake_delete_file')} VALUES (:id, :tid, :begin, NULL, :fid, "
            ":path, :rel, 'parquet', :dc, :size, :footer, NULL, :pmax)",
            rows,
        )
        self.change("deleted_from_table", t.table_id)  # type: ignore[arg-type]

    def schedule_deletion(
        self, t: StagedTable, file_id: int, path: str, relative: bool | None
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
        self, t: StagedTable, ids: list[int], change: str | None = "deleted_from_table"
    ) -> None:
        for table in ("ducklake_data_file", "ducklake_delete_file"):
            self.run_in(
                f"UPDATE {self.t(table)} SET end_snapshot = :snap WHERE table_id = :tid "
                "AND end_snapshot IS NULL AND data_file_id IN :ids",
                ids,
                snap=self.snapshot_id,
                tid=t.table_id,
            )
        if change is not None:
            self.change(change, t.table_id)  # type: ignore[arg-type]

    def inline_insert(
        self, t: StagedTable, rows: list[tuple[Any, ...]], row_ids: list[int] | None
    ) -> None:
        assert t.table_id is not None
        name = self.new_inlined.get(t.table_id) or self.latest_inlined_table(t)
        stats = self.table_stats(t.table_id)
        columns = [c.to_column() for c in t.columns]
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
        for cid, values in _leaf_values(columns, rows).items():
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
        self.inline_only_tables.add(t.table_id)
        self.change("inlined_insert", t.table_id)

    def latest_inlined_table(self, t: StagedTable) -> str:
        """The newest inlined table when its layout is the table's; else create one."""
        assert t.table_id is not None
        existing = self.lake.catalog(None).inlined_tables(t.table_id)
        layout = (tuple(c.column_id for c in t.columns), tuple(c.type for c in t.columns))
        if existing and (existing[-1].column_ids, existing[-1].column_types) == layout:
            return existing[-1].name
        self.schema_version += 1  # DuckDB bumps the version for a lazily created table
        name = self.create_inlined_table(t)
        if name is None:
            raise ValueError(f"table {t.qualified_name} cannot hold inlined rows")
        return name

    def inline_delete_rows(self, t: StagedTable, row_ids: list[int]) -> None:
        names = [
            r[0]
            for r in self.conn.execute(
                sa.text(
                    f"SELECT table_name FROM {self.t('ducklake_inlined_data_tables')} "
                    "WHERE table_id = :tid"
                ),
                {"tid": t.table_id},
            ).fetchall()
        ]
        for name in names:
            self.run_in(
                f"UPDATE {self.t(name)} SET end_snapshot = :snap WHERE "
                "end_snapshot IS NULL AND row_id IN :ids",
                row_ids,
                snap=self.snapshot_id,
            )
        self.change("inlined_delete", t.table_id)  # type: ignore[arg-type]

    def inline_delete_positions(
        self, t: StagedTable, data_file_id: int, positions: list[int]
    ) -> None:
        assert t.table_id is not None
        name = ddl.inlined_delete_table_name(t.table_id)
        self.conn.exec_driver_sql(ddl.create_inlined_delete_table(self.lake.metadata_schema, name))
        self.run(
            f"INSERT INTO {self.t(name)} VALUES (:f, :r, :snap)",
            [{"f": data_file_id, "r": p, "snap": self.snapshot_id} for p in positions],
        )
        self.change("inlined_delete", t.table_id)


def _leaf_values(columns: list[Column], rows: list[tuple[Any, ...]]) -> dict[int, list[Any]]:
    """Per leaf column id, every value it holds across rows (NULL parents give NULLs)."""
    out: dict[int, list[Any]] = {}

    def visit(col: Column, value: Any) -> None:
        if col.type not in NESTED_TYPES:
            out.setdefault(col.column_id, []).append(value)
            return
        out.setdefault(col.column_id, [])
        if col.type == "list":
            (child,) = col.children
            items = value if value is not None else [None]
            for item in items:
                visit(child, item)
            if value is not None and not value:
                out.setdefault(child.column_id, [])
        elif col.type == "struct":
            for child in col.children:
                visit(child, None if value is None else value.get(child.name))
        else:
            key_col, value_col = col.children
            pairs: Iterator[tuple[Any, Any]] = iter(
                (value.items() if isinstance(value, dict) else value)
                if value is not None
                else [(None, None)]
            )
            for k, v in pairs:
                visit(key_col, k)
                visit(value_col, v)

    for row in rows:
        for col, value in zip(columns, row, strict=True):
            visit(col, value)
    return out


def _can_inline(backend: str, columns: list[ColumnDraft]) -> bool:
    for c in columns:
        if c.name in _SYSTEM_COLUMNS or c.name.startswith("_ducklake_internal"):
            return False
        if backend == "postgres" and len(c.name.encode()) > 63:
            return False
        if any(d.type in ("variant", "geometry") for d in c.walk()):
            return False
    return True


def apply_commit(
    tx: Transaction, conn: Connection, latest: Snapshot, new_snapshot: bool, extra_info: str | None
) -> Snapshot | None:
    ctx = CommitContext(tx, conn, latest)
    if new_snapshot:
        if tx.catalog_changed():
            ctx.schema_version += 1
        # first statement: a concurrent writer that took this id makes us fail fast
        ctx.run(
            f"INSERT INTO {ctx.t('ducklake_snapshot')} VALUES (:id, :t, :v, :c, :f)",
            {
                "id": ctx.snapshot_id,
                "t": encode_catalog_time(ctx.backend, ctx.now),
                "v": ctx.schema_version,
                "c": ctx.next_catalog_id,
                "f": ctx.next_file_id,
            },
        )
    for s in tx._created_schemas:
        ctx.create_schema(s)
    for t in tx.all_tables():
        if t.created:
            ctx.create_table(t)
        elif t.dropped:
            ctx.drop_table(t)
        else:
            ctx.alter_table(t)
    for v in tx._view_order:
        if v.created:
            assert v.schema.schema_id is not None
            v.view_id = ctx.catalog_id()
            ctx.run(
                f"INSERT INTO {ctx.t('ducklake_view')} VALUES (:id, :uuid, :snap, NULL, :sid, "
                ":name, :dialect, :sql, :aliases)",
                {
                    "id": v.view_id,
                    "uuid": v.uuid,
                    "snap": ctx.snapshot_id,
                    "sid": v.schema.schema_id,
                    "name": v.name,
                    "dialect": v.dialect,
                    "sql": v.sql,
                    "aliases": v.column_aliases,
                },
            )
            if v.comment is not None:
                ctx.set_tag(v.view_id, v.comment)
            if v.spark_sql is not None:
                ctx.set_tag(v.view_id, v.spark_sql, key=SPARK_SQL_TAG)
            ctx.change("created_view", qualified_name(v.schema.name, v.name))
        elif v.dropped:
            ctx.end_rows("ducklake_view", "view_id = :id", id=v.view_id)
            ctx.end_rows("ducklake_tag", "object_id = :id", id=v.view_id)
            ctx.change("dropped_view", v.view_id)  # type: ignore[arg-type]
        elif v.comment_changed:
            assert v.view_id is not None
            ctx.set_tag(v.view_id, v.comment)
            ctx.change("altered_view", v.view_id)
    for s in tx._dropped_schemas:
        ctx.drop_schema(s)
    for s in tx._schema_map().values():
        if s.comment_changed and not s.created and s.schema_id is not None:
            ctx.set_tag(s.schema_id, s.comment)
    for op in tx.data_ops:
        if op.kind == "files":
            ctx.add_files(op.table, op.payload)
        elif op.kind == "deletes":
            ctx.add_deletes(op.table, op.payload)
        elif op.kind == "end_files":
            ctx.end_files(op.table, op.payload)
        elif op.kind == "inline_insert":
            ctx.inline_insert(op.table, *op.payload)
        elif op.kind == "inline_delete_rows":
            ctx.inline_delete_rows(op.table, op.payload)
        elif op.kind == "inline_delete_pos":
            ctx.inline_delete_positions(op.table, *op.payload)
        elif op.kind == "compact":
            apply_compaction(ctx, op.table, *op.payload)
        elif op.kind == "flush":
            apply_flush(ctx, op.table, op.payload)
    for opt in tx.option_ops:
        scope, scope_id = None, None
        if opt.table is not None:
            scope, scope_id = "table", opt.table.table_id
        elif opt.schema is not None:
            scope, scope_id = "schema", opt.schema.schema_id
        where = "scope IS NULL" if scope is None else "scope = :scope AND scope_id = :sid"
        ctx.run(
            f'DELETE FROM {ctx.t("ducklake_metadata")} WHERE "key" = :k AND {where}',
            {"k": opt.key, "scope": scope, "sid": scope_id},
        )
        ctx.run(
            f"INSERT INTO {ctx.t('ducklake_metadata')} VALUES (:k, :v, :scope, :sid)",
            {"k": opt.key, "v": opt.value, "scope": scope, "sid": scope_id},
        )
    if not new_snapshot:
        return None
    # DuckDB signals a data change with a file id even when all rows were inlined
    ctx.next_file_id += len(ctx.inline_only_tables - ctx.file_tables)
    ctx.flush_stats()
    ctx.run(
        f"INSERT INTO {ctx.t('ducklake_schema_versions')} VALUES (:snap, :v, :tid)",
        [
            {"snap": ctx.snapshot_id, "v": ctx.schema_version, "tid": tid}
            for tid in ctx.versioned_tables
        ],
    )
    ctx.run(
        f"UPDATE {ctx.t('ducklake_snapshot')} SET schema_version = :v, next_catalog_id = :c, "
        "next_file_id = :f WHERE snapshot_id = :id",
        {
            "id": ctx.snapshot_id,
            "v": ctx.schema_version,
            "c": ctx.next_catalog_id,
            "f": ctx.next_file_id,
        },
    )
    changes_made = format_changes(ctx.changes)
    ctx.run(
        f"INSERT INTO {ctx.t('ducklake_snapshot_changes')} VALUES (:id, :ch, :a, :m, :x)",
        {
            "id": ctx.snapshot_id,
            "ch": changes_made,
            "a": tx.author,
            "m": tx.commit_message,
            "x": extra_info,
        },
    )
    return Snapshot(
        ctx.snapshot_id,
        ctx.now,
        ctx.schema_version,
        ctx.next_catalog_id,
        ctx.next_file_id,
        split_changes(changes_made),  # as stored: deduplicated, in DuckDB's order
        tx.author,
        tx.commit_message,
        extra_info,
    )
