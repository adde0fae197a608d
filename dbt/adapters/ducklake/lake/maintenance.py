"""Maintenance on the catalog: which files compaction may merge or rewrite, expiring
snapshots, and the files that may be deleted afterwards.

The rules follow DuckDB's extension (as the tests check against it): merged files replace their
inputs for every snapshot (the inputs' rows leave the catalog and their paths are
scheduled for deletion); rewritten files end their inputs; expiring removes snapshot rows
and whatever only those snapshots could see; nothing is deleted from storage before it
has been scheduled for deletion (or was never tracked at all).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

import sqlalchemy as sa

from . import metadata_ddl as ddl
from .codec import decode_catalog_time, encode_catalog_time
from .errors import InvalidChangeError
from .files import normalize_path
from .models import DataFile, Snapshot, TableInfo
from .options import INTERVAL_TEXT, parse_size, resolve_option
from .reader import CatalogReader
from .rows import live_at
from .store import Store, snapshot_from_row

DEFAULT_TARGET_FILE_SIZE = 512 * 1024 * 1024
# Spark writes into folders named so beside the table's files; a writer that died
# mid-write leaves one behind, with checksums and Spark's scratch files in it
STAGING_PREFIX = "ducklake-write-"
DEFAULT_DELETE_THRESHOLD = 0.95
_UNITS = {
    "microsecond": 1e-6,
    "millisecond": 1e-3,
    "second": 1,
    "minute": 60,
    "hour": 3600,
    "day": 86400,
    "week": 7 * 86400,
    "month": 30 * 86400,
    "year": 365 * 86400,
}


def parse_interval(text: str) -> timedelta:
    """'1 week', '3 days 2 hours', '30 minutes' (DuckDB's option values) as a timedelta."""
    low = text.strip().lower()
    parts = re.findall(r"(\d+(?:\.\d+)?)\s*([a-z]+)", low)
    # nothing but amounts and units: anything else is a typo (or worse), not ignored
    if not parts or INTERVAL_TEXT.fullmatch(low) is None:
        raise InvalidChangeError(f"cannot read {text!r} as an interval (say e.g. '7 days')")
    seconds = 0.0
    for amount, unit in parts:
        base = unit[:-1] if unit.endswith("s") and unit[:-1] in _UNITS else unit
        if base not in _UNITS:
            raise InvalidChangeError(
                f"unknown interval unit {unit!r} in {text!r}; use one of {', '.join(_UNITS)}"
            )
        seconds += float(amount) * _UNITS[base]
    return timedelta(seconds=seconds)


# -- choosing tables and files ------------------------------------------------------------


def tables_in_scope(
    lake: Store, cat: CatalogReader, schema: str | None, table: str | None
) -> list[TableInfo]:
    """The named table, or every table (of `schema`) whose `auto_compact` is not false."""
    if table is not None:
        return [cat.table(schema or "main", table)]
    options = lake.options()
    chosen = []
    for t in cat.tables(schema):
        flag = resolve_option(
            options, "auto_compact", schema_id=t.schema_id, table_id=t.table_id, default="true"
        )
        if str(flag).lower() != "false":
            chosen.append(t)
    return chosen


@dataclass(frozen=True)
class FileGroup:
    """Files that become one output file."""

    table: TableInfo
    files: tuple[DataFile, ...]

    @property
    def begin_snapshot(self) -> int:
        return min(f.begin_snapshot for f in self.files)

    @property
    def last_snapshot(self) -> int:
        return max(f.partial_max or f.begin_snapshot for f in self.files)


def _column_signature(rows: Sequence[Any], snap: int) -> frozenset[tuple[Any, ...]]:
    return frozenset((r.column_id, r.column_type, r.parent_column) for r in live_at(rows, snap))


def merge_groups(
    lake: Store,
    cat: CatalogReader,
    table: TableInfo,
    *,
    max_compacted_files: int | None,
    min_file_size: int | None,
    max_file_size: int | None,
) -> list[FileGroup]:
    """Adjacent live files without deletes, same partition, written under the current
    columns, packed in file order up to the target size; groups of one are left alone."""
    target = _target_file_size(lake, table)
    upper = max_file_size if max_file_size is not None else target
    if upper <= 0:
        raise InvalidChangeError("max_file_size must be greater than 0")
    with cat.session():
        files = cat.data_files(table)
        inline_deleted = {d.data_file_id for d in cat.inlined_deletes(table.table_id)}
        column_rows = cat._column_rows(table.table_id)
        spec = cat.partition_spec(table.table_id)
    current = _column_signature(column_rows, cat.snapshot_id)
    partition_id = spec.partition_id if spec is not None else None
    by_key: dict[tuple[Any, ...], list[DataFile]] = {}
    for f in files:
        if (
            f.delete_file is not None
            or f.data_file_id in inline_deleted
            or f.file_size_bytes >= upper
            or (min_file_size is not None and f.file_size_bytes < min_file_size)
            or f.partition_id != partition_id
            or _column_signature(column_rows, f.begin_snapshot) != current
        ):
            continue
        by_key.setdefault(f.partition_values, []).append(f)
    return _pack(table, by_key, target, max_compacted_files, singles=False)


def rewrite_groups(
    lake: Store, cat: CatalogReader, table: TableInfo, *, delete_threshold: float | None
) -> list[FileGroup]:
    """Live files whose deleted share reaches the threshold, packed per partition."""
    if delete_threshold is None:
        text = lake.option(
            "rewrite_delete_threshold", schema_id=table.schema_id, table_id=table.table_id
        )
        delete_threshold = float(text) if text is not None else DEFAULT_DELETE_THRESHOLD
    if not 0 <= delete_threshold <= 1:
        raise InvalidChangeError(
            f"delete_threshold must be between 0 and 1, got {delete_threshold}"
        )
    with cat.session():
        files = cat.data_files(table)
        inline_deleted: dict[int, int] = {}
        for d in cat.inlined_deletes(table.table_id):
            inline_deleted[d.data_file_id] = inline_deleted.get(d.data_file_id, 0) + 1
    by_key: dict[tuple[Any, ...], list[DataFile]] = {}
    for f in files:
        deleted = (f.delete_file.delete_count if f.delete_file else 0) + inline_deleted.get(
            f.data_file_id, 0
        )
        if deleted and f.record_count and deleted / f.record_count >= delete_threshold:
            by_key.setdefault(f.partition_values, []).append(f)
    return _pack(table, by_key, _target_file_size(lake, table), None, singles=True)


def _target_file_size(lake: Store, table: TableInfo) -> int:
    text = lake.option("target_file_size", schema_id=table.schema_id, table_id=table.table_id)
    return parse_size(text) if text else DEFAULT_TARGET_FILE_SIZE


def _pack(
    table: TableInfo,
    by_key: dict[tuple[Any, ...], list[DataFile]],
    target: int,
    max_groups: int | None,
    *,
    singles: bool,
) -> list[FileGroup]:
    groups: list[FileGroup] = []
    for files in by_key.values():
        current: list[DataFile] = []
        size = 0
        for f in files:
            current.append(f)
            size += f.file_size_bytes
            if size >= target:
                groups.append(FileGroup(table, tuple(current)))
                current, size = [], 0
        if current:
            groups.append(FileGroup(table, tuple(current)))
    groups = [g for g in groups if singles or len(g.files) > 1]
    return groups[:max_groups] if max_groups is not None else groups


# -- expiring snapshots -------------------------------------------------------------------


def _gone(snap: str, alias: str = "") -> str:
    """Rows that ended and that no remaining snapshot can see."""
    a = f"{alias}." if alias else ""
    return (
        f"{a}end_snapshot IS NOT NULL AND NOT EXISTS (SELECT 1 FROM {snap} s "
        f"WHERE s.snapshot_id >= {a}begin_snapshot AND s.snapshot_id < {a}end_snapshot)"
    )


def expire_snapshots(
    lake: Store,
    *,
    versions: Iterable[int] | None = None,
    older_than: datetime | None = None,
    dry_run: bool = False,
) -> list[Snapshot]:
    """Remove snapshots (never the latest) and every catalog row only they could see.

    Files nobody can read any more are scheduled for deletion; no new snapshot is
    written (as DuckDB). Without `versions` or `older_than` the `expire_older_than`
    option decides; without that too, nothing expires.
    """
    if versions is None and older_than is None:
        text = lake.option("expire_older_than")
        if text is None:
            return []
        older_than = datetime.now(timezone.utc) - parse_interval(text)
    with lake.write_connection() as conn:
        latest = lake.latest_snapshot(conn)
        rows = conn.execute(sa.text(lake.snapshot_query("1=1"))).fetchall()
        snaps = [snapshot_from_row(r) for r in rows if r.snapshot_id != latest.snapshot_id]
        wanted = set(versions) if versions is not None else None
        chosen = [
            s
            for s in snaps
            if (wanted is None or s.snapshot_id in wanted)
            and (older_than is None or s.snapshot_time < older_than)
        ]
        if dry_run or not chosen:
            return chosen
        _remove_snapshots(lake, conn, [s.snapshot_id for s in chosen])
    return chosen


def _remove_snapshots(lake: Store, conn: Any, ids: list[int]) -> None:
    q = lake.qualified
    run = _runner(conn)
    for table in ("ducklake_snapshot", "ducklake_snapshot_changes"):
        _delete_in(conn, f"DELETE FROM {q(table)} WHERE snapshot_id IN :ids", ids)
    snap = q("ducklake_snapshot")
    gone_tables = [
        r.table_id
        for r in run(
            f"""SELECT DISTINCT table_id FROM {q("ducklake_table")} t
                WHERE {_gone(snap, "t")} AND NOT EXISTS (
                    SELECT 1 FROM {q("ducklake_table")} t2 WHERE t2.table_id = t.table_id
                    AND NOT ({_gone(snap, "t2")}))"""
        )
    ]
    owner = f"table_id IN ({_ids(gone_tables)}) OR " if gone_tables else ""
    orphaned_deletes = (
        f"data_file_id NOT IN (SELECT data_file_id FROM {q('ducklake_data_file')}) OR "
    )
    _expire_files(lake, conn, "ducklake_data_file", "data_file_id", owner)
    _expire_files(lake, conn, "ducklake_delete_file", "delete_file_id", owner + orphaned_deletes)
    if gone_tables:
        _drop_table_rows(lake, conn, gone_tables)
    for target in ("ducklake_schema", "ducklake_view", "ducklake_tag"):
        run(f"DELETE FROM {q(target)} WHERE {_gone(snap)}")


def _delete_in(conn: Any, sql: str, ids: Sequence[int]) -> None:
    conn.execute(sa.text(sql).bindparams(sa.bindparam("ids", expanding=True)), {"ids": ids})


def _expire_files(lake: Store, conn: Any, kind: str, id_col: str, also: str) -> None:
    """Schedule the files of `kind` no snapshot sees any more (or that `also` selects)
    for deletion, and remove their rows."""
    q = lake.qualified
    run = _runner(conn)
    doomed = run(
        f"""SELECT {id_col} AS id, table_id, path, path_is_relative FROM {q(kind)} f
            WHERE {also}({_gone(q("ducklake_snapshot"), "f")})"""
    )
    if not doomed:
        return
    roots = table_roots(lake, conn)
    now = encode_catalog_time(lake.backend, datetime.now(timezone.utc))
    for r in doomed:
        run(
            f"INSERT INTO {q('ducklake_files_scheduled_for_deletion')} VALUES (:id, :p, :rel, :t)",
            {
                **_stored_path(lake, roots, r.table_id, r.path, r.path_is_relative),
                "id": r.id,
                "t": now,
            },
        )
    doomed_ids = [r.id for r in doomed]
    if kind == "ducklake_data_file":
        for target in (kind, "ducklake_file_column_stats", "ducklake_file_partition_value"):
            _delete_in(conn, f"DELETE FROM {q(target)} WHERE data_file_id IN :ids", doomed_ids)
    else:
        _delete_in(conn, f"DELETE FROM {q(kind)} WHERE {id_col} IN :ids", doomed_ids)


def _drop_table_rows(lake: Store, conn: Any, gone_tables: list[int]) -> None:
    """Every catalog row and inlined table of tables no snapshot sees any more."""
    q = lake.qualified
    run = _runner(conn)
    listed = _ids(gone_tables)
    for target in (
        "ducklake_table",
        "ducklake_table_stats",
        "ducklake_table_column_stats",
        "ducklake_partition_info",
        "ducklake_partition_column",
        "ducklake_column",
        "ducklake_column_tag",
        "ducklake_sort_info",
        "ducklake_sort_expression",
        "ducklake_schema_versions",
        "ducklake_column_mapping",
    ):
        if lake.has_table(target, conn):
            run(f"DELETE FROM {q(target)} WHERE table_id IN ({listed})")
    inlined = run(
        f"SELECT table_name FROM {q('ducklake_inlined_data_tables')} WHERE table_id IN ({listed})"
    )
    run(f"DELETE FROM {q('ducklake_inlined_data_tables')} WHERE table_id IN ({listed})")
    names = [r.table_name for r in inlined]
    names += [ddl.inlined_delete_table_name(t) for t in gone_tables]
    for name in names:
        run(f"DROP TABLE IF EXISTS {q(name)}")


def _ids(ids: Iterable[int]) -> str:
    return ", ".join(str(int(i)) for i in ids)


def _runner(conn: Any) -> Callable[..., Sequence[Any]]:
    def run(sql: str, params: dict[str, Any] | None = None) -> Sequence[Any]:
        result = conn.execute(sa.text(sql), params or {})
        return result.fetchall() if result.returns_rows else []

    return run


# -- paths --------------------------------------------------------------------------------


def table_roots(lake: Store, conn: Any) -> dict[int, tuple[str, bool]]:
    """table id -> (directory relative to the data path or absolute, is_relative)."""
    q = lake.qualified
    schemas: dict[int, tuple[str, bool]] = {}
    for r in conn.execute(
        sa.text(f"SELECT schema_id, path, path_is_relative FROM {q('ducklake_schema')}")
    ).fetchall():
        schemas[r.schema_id] = (r.path or "", bool(_as_bool(r.path_is_relative)))
    roots: dict[int, tuple[str, bool]] = {}
    for r in conn.execute(
        sa.text(f"SELECT table_id, schema_id, path, path_is_relative FROM {q('ducklake_table')}")
    ).fetchall():
        if not _as_bool(r.path_is_relative):
            roots[r.table_id] = (r.path or "", False)
            continue
        spath, srel = schemas.get(r.schema_id, ("", True))
        roots[r.table_id] = (spath + (r.path or ""), srel)
    return roots


def _stored_path(
    lake: Store, roots: dict[int, tuple[str, bool]], table_id: int, path: str, relative: Any
) -> dict[str, Any]:
    """How ducklake_files_scheduled_for_deletion stores a file: relative to the data path."""
    if not _as_bool(relative):
        return {"p": path, "rel": _bool(lake, False)}
    root, root_rel = roots.get(table_id, ("", True))
    return {"p": root + path, "rel": _bool(lake, root_rel)}


def absolute_path(lake: Store, path: str, relative: Any) -> str:
    return lake.data_path + path if _as_bool(relative) else path


def _as_bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.lower() in ("1", "t", "true")
    return bool(value)


def _bool(lake: Store, value: bool) -> Any:
    return value if lake.backend == "postgres" else int(value)


# -- files to delete ----------------------------------------------------------------------


@dataclass(frozen=True)
class ScheduledFile:
    data_file_id: int
    path: str  # absolute
    scheduled: datetime


def cleanup_candidates(
    lake: Store, *, older_than: datetime | None, cleanup_all: bool
) -> list[ScheduledFile]:
    """Files scheduled for deletion before `older_than` (or all): DuckDB's defaults apply
    the `delete_older_than` option when neither is given; without it nothing is chosen."""
    if not cleanup_all and older_than is None:
        text = lake.option("delete_older_than")
        if text is None:
            return []
        older_than = datetime.now(timezone.utc) - parse_interval(text)
    with lake.connect() as conn:
        rows = conn.execute(
            sa.text(
                "SELECT data_file_id, path, path_is_relative, schedule_start "
                f"FROM {lake.qualified('ducklake_files_scheduled_for_deletion')}"
            )
        ).fetchall()
    chosen = []
    for r in rows:
        when = decode_catalog_time(r.schedule_start)
        if cleanup_all or (older_than is not None and when < older_than):
            chosen.append(
                ScheduledFile(r.data_file_id, absolute_path(lake, r.path, r.path_is_relative), when)
            )
    return chosen


def forget_scheduled(lake: Store, files: Sequence[ScheduledFile]) -> None:
    """Drop the schedule rows of files that are gone from storage."""
    if not files:
        return
    with lake.write_connection() as conn:
        conn.execute(
            sa.text(
                f"DELETE FROM {lake.qualified('ducklake_files_scheduled_for_deletion')} "
                "WHERE data_file_id IN :ids"
            ).bindparams(sa.bindparam("ids", expanding=True)),
            {"ids": [f.data_file_id for f in files]},
        )


@dataclass(frozen=True)
class Orphans:
    files: list[str]
    # staging folders of writers that died (their files are all in `files`); removed
    # after the files, whose deletion would make the folders look fresh
    staging: list[str]


def find_orphans(
    lake: Store,
    *,
    older_than: datetime | None,
    cleanup_all: bool,
    keep: Iterable[str] = (),
) -> Orphans:
    """Files under the data path the catalog does not know (not as data, delete or
    scheduled file), last modified before `older_than` (or any age with cleanup_all):
    Parquet files, and anything inside a writer's staging folder. One listing. Paths in
    `keep` (files a live build's staging copy registered) stay whatever their age."""
    older_than = orphan_age(lake, older_than, cleanup_all)
    if older_than is None:
        return Orphans([], [])
    with lake.connect() as conn:
        known = known_files(lake, conn)
    known.update(normalize_path(p) for p in keep)
    return _unknown_files(lake, known, older_than)


def known_files(lake: Store, conn: Any) -> set[str]:
    """Absolute, normalised paths of every data, delete and scheduled file `lake` knows."""
    q = lake.qualified
    known: set[str] = set()
    roots = table_roots(lake, conn)
    for kind in ("ducklake_data_file", "ducklake_delete_file"):
        for r in conn.execute(
            sa.text(f"SELECT table_id, path, path_is_relative FROM {q(kind)}")
        ).fetchall():
            stored = _stored_path(lake, roots, r.table_id, r.path, r.path_is_relative)
            known.add(normalize_path(absolute_path(lake, stored["p"], stored["rel"])))
    for r in conn.execute(
        sa.text(f"SELECT path, path_is_relative FROM {q('ducklake_files_scheduled_for_deletion')}")
    ).fetchall():
        known.add(normalize_path(absolute_path(lake, r.path, r.path_is_relative)))
    return known


def _unknown_files(lake: Store, known: set[str], older_than: datetime) -> Orphans:
    """One listing of the data path: Parquet files and staging folder contents the
    catalog does not know, older than `older_than`, and the dead staging folders."""
    found: list[str] = []
    staging: set[str] = set()
    holding: set[str] = set()  # staging folders with at least one file
    kept: set[str] = set()  # staging folders with a file that stays (a live writer's)
    ages: dict[str, datetime] = {}  # directories, by path
    now = datetime.now(timezone.utc)
    for entry in lake.files.walk(lake.data_path):
        folder = _staging_folder(lake, entry.path)
        if entry.is_dir:
            ages[normalize_path(entry.path)] = entry.modified or now
            continue
        if folder is not None:
            staging.add(folder)
        elif not entry.path.endswith(".parquet"):
            continue
        path = normalize_path(entry.path)
        if path not in known and (entry.modified or now) < older_than:
            found.append(path)
        elif folder is not None:
            kept.add(folder)
        if folder is not None:
            holding.add(folder)
    staging |= {d for d in ages if _staging_folder(lake, d + "/x") == d}
    # a folder whose files all go is dead; an empty one counts by its own age
    dead = [f for f in staging - kept if f in holding or ages.get(f, now) < older_than]
    return Orphans(sorted(found), sorted(dead))


def remove_folders(lake: Store, folders: Sequence[str]) -> None:
    for folder in folders:
        lake.files.delete_dir(folder)


def orphan_age(lake: Store, older_than: datetime | None, cleanup_all: bool) -> datetime | None:
    """The age limit for orphans (and staging copies left by dead builds): given, the
    lake's `delete_older_than`, or none at all (nothing is old enough)."""
    if cleanup_all:
        return datetime.max.replace(tzinfo=timezone.utc)
    if older_than is None:
        text = lake.option("delete_older_than")
        if text is None:
            return None
        return datetime.now(timezone.utc) - parse_interval(text)
    return older_than


def _staging_folder(lake: Store, path: str) -> str | None:
    """The outermost staging folder the file or directory `path` lies in, if any."""
    root = normalize_path(lake.data_path).rstrip("/") + "/"
    path = normalize_path(path)
    if not path.startswith(root):
        return None
    parts = path[len(root) :].split("/")
    for depth, part in enumerate(parts[:-1]):
        if part.startswith(STAGING_PREFIX):
            return root + "/".join(parts[: depth + 1])
    return None
