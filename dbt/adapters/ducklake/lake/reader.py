"""Read the catalog as of one snapshot.

Every method issues a fixed number of queries, whatever the number of files or rows:
a table's full state (columns, files with their delete files and partition values,
partition and sort specs, stats, inlined-data layout) is a constant handful of queries.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from . import metadata_ddl as ddl
from .codec import as_bool, decode_inlined
from .errors import CatalogNotFoundError
from .models import (
    SPARK_SQL_TAG,
    Column,
    ColumnStats,
    DataFile,
    DeleteFile,
    InlinedDataTable,
    InlinedDelete,
    InlinedRow,
    NameMap,
    PartitionField,
    PartitionSpec,
    SchemaInfo,
    Snapshot,
    SortField,
    SortSpec,
    TableColumnStats,
    TableInfo,
    TableState,
    TableStats,
    ViewInfo,
)
from .rows import (
    DELETE_COLUMNS,
    build_column_tree,
    data_file_from_row,
    decode_default,
    delete_file_from_row,
    live_at,
    project,
)
from .store import Store, visible


class CatalogReader:
    """The catalog at snapshot `snapshot_id` of `lake`."""

    def __init__(self, lake: Store, snapshot: Snapshot, connection: Connection | None = None):
        """`connection`: read on it (a commit reads inside its own write transaction)."""
        self.lake = lake
        self.snapshot = snapshot
        self.snapshot_id = snapshot.snapshot_id
        self._conn = connection

    @contextmanager
    def session(self) -> Iterator[CatalogReader]:
        """Run several reads on one connection and one read transaction."""
        if self._conn is not None:
            yield self
            return
        with self.lake.connect() as conn:
            self._conn = conn
            try:
                yield self
            finally:
                self._conn = None

    # -- plumbing --------------------------------------------------------------------
    def _t(self, name: str) -> str:
        return self.lake.qualified(name)

    def _query(self, sql: str, **params: Any) -> Sequence[Any]:
        params.setdefault("snap", self.snapshot_id)
        if self._conn is not None:
            return self._conn.execute(sa.text(sql), params).fetchall()
        with self.lake.connect() as conn:
            return conn.execute(sa.text(sql), params).fetchall()

    def _schema_query(self, sql: str, **params: Any) -> Sequence[Any]:
        """`_query` of the schema's own rows: the same at every snapshot of a version."""
        key = (self.snapshot.schema_version, sql, *sorted(params.items()))
        return self.lake.schema_rows(key, lambda: self._query(sql, **params))

    # -- schemas, tables, views ------------------------------------------------------
    def schemas(self) -> list[SchemaInfo]:
        rows = self._schema_query(
            f"""SELECT s.schema_id, s.schema_uuid, s.schema_name, s.path, s.path_is_relative,
                       s.begin_snapshot, tg.value AS comment
                FROM {self._t("ducklake_schema")} s
                LEFT JOIN {self._t("ducklake_tag")} tg ON tg.object_id = s.schema_id
                     AND tg."key" = 'comment' AND {visible("tg")}
                WHERE {visible("s")} ORDER BY s.schema_id"""
        )
        return [
            SchemaInfo(
                r.schema_id,
                str(r.schema_uuid),
                r.schema_name,
                r.path or "",
                bool(as_bool(r.path_is_relative)),
                r.begin_snapshot,
                r.comment,
            )
            for r in rows
        ]

    def schema(self, name: str) -> SchemaInfo:
        for s in self.schemas():
            if s.name == name:
                return s
        raise CatalogNotFoundError(f"schema {name!r} does not exist at snapshot {self.snapshot_id}")

    def tables(self, schema: str | None = None) -> list[TableInfo]:
        where = " AND s.schema_name = :schema" if schema is not None else ""
        rows = self._schema_query(
            f"""SELECT t.table_id, t.table_uuid, t.schema_id, s.schema_name, t.table_name,
                       t.path, t.path_is_relative, t.begin_snapshot, tg.value AS comment
                FROM {self._t("ducklake_table")} t
                JOIN {self._t("ducklake_schema")} s ON s.schema_id = t.schema_id
                     AND {visible("s")}
                LEFT JOIN {self._t("ducklake_tag")} tg ON tg.object_id = t.table_id
                     AND tg."key" = 'comment' AND {visible("tg")}
                WHERE {visible("t")}{where} ORDER BY s.schema_name, t.table_name""",
            schema=schema,
        )
        return [
            TableInfo(
                r.table_id,
                str(r.table_uuid),
                r.schema_id,
                r.schema_name,
                r.table_name,
                r.path or "",
                bool(as_bool(r.path_is_relative)),
                r.begin_snapshot,
                r.comment,
            )
            for r in rows
        ]

    def table_ids_ever(self, schema: str, name: str) -> set[int]:
        """Ids of every table named schema.name in the lake's history (a replaced table
        gets a new id), up to this snapshot."""
        rows = self._query(
            f"""SELECT DISTINCT t.table_id FROM {self._t("ducklake_table")} t
                JOIN {self._t("ducklake_schema")} s ON s.schema_id = t.schema_id
                WHERE lower(t.table_name) = lower(:name) AND lower(s.schema_name) = lower(:schema)
                  AND t.begin_snapshot <= :snap""",
            name=name,
            schema=schema,
            snap=self.snapshot_id,
        )
        return {r.table_id for r in rows}

    def table(self, schema: str, name: str) -> TableInfo:
        for t in self.tables(schema):
            if t.name == name:
                return t
        raise CatalogNotFoundError(
            f"table {schema}.{name} does not exist at snapshot {self.snapshot_id}"
        )

    def find_table(self, schema: str, name: str) -> TableInfo | None:
        try:
            return self.table(schema, name)
        except CatalogNotFoundError:
            return None

    def entry_name(self, entry_id: int) -> str:
        """`schema.name` of a table or view id (what conflict errors show)."""
        names = {t.table_id: f"{t.schema_name}.{t.name}" for t in self.tables()}
        names.update({v.view_id: f"{v.schema_name}.{v.name}" for v in self.views()})
        return names.get(entry_id, f"entry id {entry_id}")

    def views(self, schema: str | None = None) -> list[ViewInfo]:
        where = " AND s.schema_name = :schema" if schema is not None else ""
        rows = self._schema_query(
            f"""SELECT v.view_id, v.view_uuid, v.schema_id, s.schema_name, v.view_name,
                       v.dialect, v."sql", v.column_aliases, v.begin_snapshot,
                       tg.value AS comment, sp.value AS spark_sql
                FROM {self._t("ducklake_view")} v
                JOIN {self._t("ducklake_schema")} s ON s.schema_id = v.schema_id
                     AND {visible("s")}
                LEFT JOIN {self._t("ducklake_tag")} tg ON tg.object_id = v.view_id
                     AND tg."key" = 'comment' AND {visible("tg")}
                LEFT JOIN {self._t("ducklake_tag")} sp ON sp.object_id = v.view_id
                     AND sp."key" = '{SPARK_SQL_TAG}' AND {visible("sp")}
                WHERE {visible("v")}{where} ORDER BY s.schema_name, v.view_name""",
            schema=schema,
        )
        return [
            ViewInfo(
                r.view_id,
                str(r.view_uuid),
                r.schema_id,
                r.schema_name,
                r.view_name,
                r.dialect,
                r.sql,
                r.column_aliases or None,
                r.begin_snapshot,
                r.comment,
                r.spark_sql,
            )
            for r in rows
        ]

    def view(self, schema: str, name: str) -> ViewInfo:
        for v in self.views(schema):
            if v.name == name:
                return v
        raise CatalogNotFoundError(
            f"view {schema}.{name} does not exist at snapshot {self.snapshot_id}"
        )

    # -- columns -----------------------------------------------------------------------
    def _column_rows(self, table_id: int, *, fresh: bool = False) -> Sequence[Any]:
        """Every version of every column of the table (small: one row per column change);
        `fresh`: as the database has them now, also columns of later versions."""
        return (self._query if fresh else self._schema_query)(
            f"""SELECT column_id, begin_snapshot, end_snapshot, column_order, column_name,
                       column_type, initial_default, default_value, nulls_allowed,
                       parent_column, default_value_type, default_value_dialect
                FROM {self._t("ducklake_column")} WHERE table_id = :tid""",
            tid=table_id,
        )

    def max_column_id(self, table_id: int) -> int:
        """Highest column id the table ever used: new columns must never reuse one."""
        return max((r.column_id for r in self._column_rows(table_id, fresh=True)), default=0)

    def column_types_at(self, data_file_id: int, snaps: Iterable[int]) -> dict[int, dict[int, str]]:
        """snapshot -> {column id: type} of the table of data file `data_file_id`: the
        types its files begun at those snapshots were written with."""
        rows = self._query(
            f"SELECT c.column_id, c.begin_snapshot, c.end_snapshot, c.column_type FROM "
            f"{self._t('ducklake_column')} c JOIN {self._t('ducklake_data_file')} d "
            "ON d.table_id = c.table_id WHERE d.data_file_id = :fid",
            fid=data_file_id,
        )
        at = {s: live_at(rows, s) for s in set(snaps)}
        return {s: {r.column_id: r.column_type for r in live} for s, live in at.items()}

    def columns(self, table_id: int) -> list[Column]:
        rows = live_at(self._column_rows(table_id), self.snapshot_id)
        return build_column_tree(rows, self._column_comments(table_id))

    def all_columns(self) -> dict[int, list[Column]]:
        """Columns of every table at this snapshot, by table id (2 queries in all)."""
        rows = self._query(
            f"""SELECT table_id, column_id, begin_snapshot, end_snapshot, column_order,
                       column_name, column_type, initial_default, default_value,
                       nulls_allowed, parent_column, default_value_type, default_value_dialect
                FROM {self._t("ducklake_column")} c WHERE {visible("c")}"""
        )
        tags = self._query(
            f"""SELECT ct.table_id, ct.column_id, ct.value FROM {self._t("ducklake_column_tag")} ct
                WHERE ct."key" = 'comment' AND {visible("ct")}"""
        )
        comments: dict[int, dict[int, str]] = defaultdict(dict)
        for t in tags:
            comments[t.table_id][t.column_id] = t.value
        by_table: dict[int, list[Any]] = defaultdict(list)
        for r in rows:
            by_table[r.table_id].append(r)
        return {tid: build_column_tree(rs, comments.get(tid)) for tid, rs in by_table.items()}

    def all_table_stats(self) -> dict[int, TableStats]:
        rows = self._query(
            f"""SELECT table_id, record_count, next_row_id, file_size_bytes
                FROM {self._t("ducklake_table_stats")}"""
        )
        return {
            r.table_id: TableStats(r.record_count, r.next_row_id, r.file_size_bytes) for r in rows
        }

    def _column_comments(self, table_id: int) -> dict[int, str]:
        rows = self._schema_query(
            f"""SELECT ct.column_id, ct.value FROM {self._t("ducklake_column_tag")} ct
                WHERE ct.table_id = :tid AND ct."key" = 'comment' AND {visible("ct")}""",
            tid=table_id,
        )
        return {r.column_id: r.value for r in rows}

    # -- files ---------------------------------------------------------------------------
    def table_root(self, table: TableInfo) -> str:
        """Absolute directory of a table's files (data path / schema path / table path)."""
        if not table.path_is_relative:
            return table.path
        schema_path = self._schema_path(table.schema_id)
        return schema_path + table.path

    def _schema_path(self, schema_id: int) -> str:
        rows = self._schema_query(
            f"""SELECT path, path_is_relative FROM {self._t("ducklake_schema")}
                WHERE schema_id = :sid""",
            sid=schema_id,
        )
        if not rows or rows[0].path is None:
            return self.lake.data_path
        path, relative = rows[0].path, as_bool(rows[0].path_is_relative)
        return self.lake.data_path + path if relative else path

    def data_files(self, table: TableInfo, only: Iterable[int] | None = None) -> list[DataFile]:
        """Live data files (all, or those with ids in `only`) with their live delete file
        and partition values (3 queries)."""
        chosen = ""
        if only is not None:
            ids = sorted({int(i) for i in only})
            if not ids:
                return []
            chosen = f"AND d.data_file_id IN ({', '.join(map(str, ids))})"
        rows = self._query(
            f"""SELECT d.*, {DELETE_COLUMNS}
                FROM {self._t("ducklake_data_file")} d
                LEFT JOIN {self._t("ducklake_delete_file")} del
                     ON del.data_file_id = d.data_file_id AND del.table_id = :tid
                     AND {visible("del")}
                WHERE d.table_id = :tid AND {visible("d")} {chosen}
                ORDER BY d.file_order, d.data_file_id""",
            tid=table.table_id,
        )
        values = self._partition_values(table.table_id, chosen)
        root = self.table_root(table)
        files = [data_file_from_row(r, root, values.get(r.data_file_id, ())) for r in rows]
        return files

    def changed_files(
        self, table: TableInfo, start: int
    ) -> tuple[list[DataFile], list[DeleteFile]]:
        """Data files that gained, lost or had rows deleted in snapshots start..this one,
        and every delete file of those data files up to this snapshot (2 queries).

        Files with per-row snapshot ids (`partial_max`) may hold rows of the window even
        when they began before it. Inlined deletes are read with `inlined_deletes`.
        """
        d_range = "(d.begin_snapshot >= :start OR d.partial_max >= :start)"
        ended = "(d.end_snapshot >= :start AND d.end_snapshot <= :snap)"
        touched = f"""EXISTS (SELECT 1 FROM {self._t("ducklake_delete_file")} x
                   WHERE x.data_file_id = d.data_file_id AND x.table_id = :tid
                   AND x.begin_snapshot <= :snap
                   AND COALESCE(x.partial_max, x.begin_snapshot) >= :start)"""
        inlined_delete = ddl.inlined_delete_table_name(table.table_id)
        if self.lake.has_table(inlined_delete):
            touched += f""" OR EXISTS (SELECT 1 FROM {self._t(inlined_delete)} y
                   WHERE y.file_id = d.data_file_id
                   AND y.begin_snapshot >= :start AND y.begin_snapshot <= :snap)"""
        rows = self._query(
            f"""SELECT d.*, {DELETE_COLUMNS}
                FROM {self._t("ducklake_data_file")} d
                LEFT JOIN {self._t("ducklake_delete_file")} del ON 1 = 0 -- listed below
                WHERE d.table_id = :tid AND d.begin_snapshot <= :snap
                  AND ({d_range} OR {ended} OR {touched})
                ORDER BY d.data_file_id""",
            tid=table.table_id,
            start=start,
        )
        root = self.table_root(table)
        files = [data_file_from_row(r, root, ()) for r in rows]
        if not files:
            return [], []
        ids = ", ".join(str(f.data_file_id) for f in files)
        deletes = self._query(
            f"""SELECT {DELETE_COLUMNS}
                FROM {self._t("ducklake_delete_file")} del
                WHERE del.table_id = :tid AND del.begin_snapshot <= :snap
                  AND del.data_file_id IN ({ids})
                ORDER BY del.delete_file_id""",
            tid=table.table_id,
        )
        found = [d for r in deletes if (d := delete_file_from_row(r, root)) is not None]
        return files, found

    def _partition_values(
        self, table_id: int, chosen: str = ""
    ) -> dict[int, tuple[str | None, ...]]:
        rows = self._query(
            f"""SELECT pv.data_file_id, pv.partition_key_index, pv.partition_value
                FROM {self._t("ducklake_file_partition_value")} pv
                JOIN {self._t("ducklake_data_file")} d ON d.data_file_id = pv.data_file_id
                WHERE pv.table_id = :tid AND {visible("d")} {chosen}
                ORDER BY pv.data_file_id, pv.partition_key_index""",
            tid=table_id,
        )
        grouped: dict[int, list[str | None]] = defaultdict(list)
        for r in rows:
            grouped[r.data_file_id].append(r.partition_value)
        return {k: tuple(v) for k, v in grouped.items()}

    def file_column_stats(self, table_id: int) -> dict[int, dict[int, ColumnStats]]:
        """Per live data file, per column: the footer stats registered with it."""
        rows = self._query(
            f"""SELECT fs.data_file_id, fs.column_id, fs.value_count, fs.null_count,
                       fs.min_value, fs.max_value, fs.contains_nan, fs.column_size_bytes
                FROM {self._t("ducklake_file_column_stats")} fs
                JOIN {self._t("ducklake_data_file")} d ON d.data_file_id = fs.data_file_id
                WHERE fs.table_id = :tid AND {visible("d")}""",
            tid=table_id,
        )
        out: dict[int, dict[int, ColumnStats]] = defaultdict(dict)
        # unpacked by position: a many-file table has tens of thousands of these rows
        for file_id, column_id, values, nulls, lo, hi, nan, size in rows:
            out[file_id][column_id] = ColumnStats(
                column_id, values, nulls, lo, hi, as_bool(nan), size
            )
        return dict(out)

    def name_mappings(self, mapping_ids: Iterable[int]) -> dict[int, list[NameMap]]:
        """Name mappings of files written without field ids (e.g. added by DuckDB)."""
        ids = sorted(set(mapping_ids))
        if not ids:
            return {}
        stmt = sa.text(
            f"""SELECT nm.mapping_id, nm.column_id, nm.source_name, nm.target_field_id,
                       nm.parent_column, nm.is_partition
                FROM {self._t("ducklake_name_mapping")} nm
                JOIN {self._t("ducklake_column_mapping")} cm ON cm.mapping_id = nm.mapping_id
                WHERE cm."type" = 'map_by_name' AND nm.mapping_id IN :ids"""
        ).bindparams(sa.bindparam("ids", expanding=True))
        if self._conn is not None:
            rows = self._conn.execute(stmt, {"ids": ids}).fetchall()
        else:
            with self.lake.connect() as conn:
                rows = conn.execute(stmt, {"ids": ids}).fetchall()
        out: dict[int, list[NameMap]] = defaultdict(list)
        for r in rows:
            hive = bool(as_bool(r.is_partition))
            entry = NameMap(r.column_id, r.source_name, r.target_field_id, r.parent_column, hive)
            out[r.mapping_id].append(entry)
        return dict(out)

    # -- layout --------------------------------------------------------------------------
    def partition_spec(self, table_id: int) -> PartitionSpec | None:
        rows = self._schema_query(
            f"""SELECT pi.partition_id, pc.partition_key_index, pc.column_id, pc."transform"
                FROM {self._t("ducklake_partition_info")} pi
                LEFT JOIN {self._t("ducklake_partition_column")} pc
                     ON pc.partition_id = pi.partition_id AND pc.table_id = pi.table_id
                WHERE pi.table_id = :tid AND {visible("pi")}
                ORDER BY pc.partition_key_index""",
            tid=table_id,
        )
        fields = tuple(
            PartitionField(r.partition_key_index, r.column_id, r.transform)
            for r in rows
            if r.column_id is not None
        )
        if not rows or not fields:
            return None
        return PartitionSpec(rows[0].partition_id, fields)

    def sort_spec(self, table_id: int) -> SortSpec | None:
        rows = self._schema_query(
            f"""SELECT si.sort_id, se.sort_key_index, se.expression, se.dialect,
                       se.sort_direction, se.null_order
                FROM {self._t("ducklake_sort_info")} si
                LEFT JOIN {self._t("ducklake_sort_expression")} se
                     ON se.sort_id = si.sort_id AND se.table_id = si.table_id
                WHERE si.table_id = :tid AND {visible("si")}
                ORDER BY se.sort_key_index""",
            tid=table_id,
        )
        fields = tuple(
            SortField(r.sort_key_index, r.expression, r.dialect, r.sort_direction, r.null_order)
            for r in rows
            if r.expression is not None
        )
        if not rows or not fields:
            return None
        return SortSpec(rows[0].sort_id, fields)

    # -- stats ---------------------------------------------------------------------------
    def table_stats(self, table_id: int) -> tuple[TableStats | None, dict[int, TableColumnStats]]:
        """Stats are not versioned in DuckLake: these are the latest values."""
        rows = self._query(
            f"""SELECT record_count, next_row_id, file_size_bytes
                FROM {self._t("ducklake_table_stats")} WHERE table_id = :tid""",
            tid=table_id,
        )
        stats = TableStats(*rows[0]) if rows else None
        col_rows = self._query(
            f"""SELECT column_id, contains_null, contains_nan, min_value, max_value
                FROM {self._t("ducklake_table_column_stats")} WHERE table_id = :tid""",
            tid=table_id,
        )
        col_stats = {
            r.column_id: TableColumnStats(
                r.column_id,
                as_bool(r.contains_null),
                as_bool(r.contains_nan),
                r.min_value,
                r.max_value,
            )
            for r in col_rows
        }
        return stats, col_stats

    # -- inlined data --------------------------------------------------------------------
    def inlined_tables(self, table_id: int) -> list[InlinedDataTable]:
        """Inlined-data tables of a table with the column ids their columns hold.

        A table created at schema version v has the table's top-level columns as of the
        first snapshot with schema version v, in column order.
        """
        rows = self._query(
            f"""SELECT it.table_name, it.schema_version,
                       (SELECT MIN(s.snapshot_id) FROM {self._t("ducklake_snapshot")} s
                        WHERE s.schema_version = it.schema_version) AS first_snapshot
                FROM {self._t("ducklake_inlined_data_tables")} it
                WHERE it.table_id = :tid ORDER BY it.schema_version""",
            tid=table_id,
        )
        if not rows:
            return []
        column_rows = self._column_rows(table_id)
        out = []
        for r in rows:
            at = r.first_snapshot if r.first_snapshot is not None else self.snapshot_id
            top = build_column_tree(live_at(column_rows, at))
            out.append(
                InlinedDataTable(
                    r.table_name,
                    r.schema_version,
                    at,
                    tuple(c.column_id for c in top),
                    tuple(c.type for c in top),
                )
            )
        return out

    def inlined_rows(self, table_id: int, *, include_ended: bool = False) -> list[InlinedRow]:
        """Inlined rows live at this snapshot (or every row begun by it), decoded.

        Each row was written under some older column layout; its values are mapped onto
        the table's columns at this snapshot by field id (renamed fields follow their
        id, added ones get their initial default, dropped ones disappear), like DuckDB.
        """
        out: list[InlinedRow] = []
        column_rows = self._column_rows(table_id)
        current = build_column_tree(live_at(column_rows, self.snapshot_id))
        for it in self.inlined_tables(table_id):
            cond = "begin_snapshot <= :snap"
            if not include_ended:
                cond += " AND (end_snapshot IS NULL OR end_snapshot > :snap)"
            rows = self._query(f"SELECT * FROM {self._t(it.name)} WHERE {cond} ORDER BY row_id")
            old = build_column_tree(live_at(column_rows, it.first_snapshot))
            old_by_id = {c.column_id: (i, c) for i, c in enumerate(old)}
            for r in rows:
                values = {}
                for col in current:
                    if col.column_id in old_by_id:
                        i, old_col = old_by_id[col.column_id]
                        values[col.column_id] = project(
                            old_col, col, decode_inlined(old_col, r[3 + i])
                        )
                    else:
                        values[col.column_id] = decode_default(col)
                out.append(InlinedRow(r[0], r[1], r[2], values))
        return out

    def inlined_deletes(self, table_id: int) -> list[InlinedDelete]:
        name = ddl.inlined_delete_table_name(table_id)
        if not self.lake.has_table(name):
            return []
        rows = self._query(
            f"""SELECT file_id, row_id, begin_snapshot FROM {self._t(name)}
                WHERE begin_snapshot <= :snap ORDER BY file_id, row_id"""
        )
        return [InlinedDelete(r.file_id, r.row_id, r.begin_snapshot) for r in rows]

    # -- all of it -----------------------------------------------------------------------
    def table_state(self, schema: str, name: str) -> TableState:
        with self.session():
            table = self.table(schema, name)
            stats, col_stats = self.table_stats(table.table_id)
            return TableState(
                table=table,
                columns=tuple(self.columns(table.table_id)),
                data_files=tuple(self.data_files(table)),
                partition=self.partition_spec(table.table_id),
                sort=self.sort_spec(table.table_id),
                stats=stats,
                column_stats=col_stats,
                inlined_tables=tuple(self.inlined_tables(table.table_id)),
            )
