"""Staging copies (staging_copy.py) that dead builds left behind, swept once old enough.

A build killed before it dropped its copy (SIGKILL, a lost machine) leaves the copy —
SQLite: `<catalog>.stage-<tag>` files beside the catalog; PostgreSQL: a schema
`ducklake_stage_<tag>` — and the Parquet files it wrote, which the real catalog never
knew. A copy is stale once its last activity is older than the orphan age
`delete_orphaned_files` uses (`older_than`, else the lake's `delete_older_than` option,
else nothing is ever old enough): SQLite, the newest modification time of its files
(every commit into the copy writes them); PostgreSQL, the later of the creation time the
copy records in its schema comment and its newest snapshot. A live build's copy is
younger than that, so it is never swept, and the files it registered are kept as if
the real catalog knew them.
"""

from __future__ import annotations

import contextlib
import glob
import json
import logging
import os
import sqlite3
import urllib.parse
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any

import sqlalchemy as sa

from .codec import decode_catalog_time, iso_datetime
from .files import normalize_path
from .maintenance import known_files, orphan_age
from .store import Store

log = logging.getLogger("dbt.adapters.ducklake.lake")

SQLITE_MARK = ".stage-"  # <catalog file>.stage-<tag>
SCHEMA_PREFIX = "ducklake_stage_"
SQLITE_SUFFIXES = ("", "-wal", "-shm", "-journal")


@dataclass(frozen=True)
class StageCopy:
    """A staging copy of a catalog: SQLite, its file's path; PostgreSQL, its schema."""

    name: str
    last_active: datetime


@dataclass
class StageSweep:
    """What a sweep found: stale copies dropped (or, dry run, to drop), the files of
    stale copies it removed, and the files live copies registered (to keep)."""

    dropped: list[str] = field(default_factory=list)
    removed_files: list[str] = field(default_factory=list)
    live_files: set[str] = field(default_factory=set)


def stage_comment(source_schema: str) -> str:
    """The schema comment of a PostgreSQL copy: when it was made, and of what."""
    created = datetime.now(timezone.utc).isoformat()
    return json.dumps({"dbt-ducklake stage": {"of": source_schema, "created": created}})


def sweep_stages(
    real: Store,
    *,
    older_than: datetime | None = None,
    cleanup_all: bool = False,
    dry_run: bool = False,
    remove_files: bool = False,
) -> StageSweep:
    """Drop the stale staging copies of `real` (see the module's docstring); with
    `remove_files`, first delete the files they registered that neither `real` nor a
    live copy knows. Live copies' files are returned, for `find_orphans` to keep."""
    sweep = StageSweep()
    if real.staged_from is not None:
        # a copy (a node's copy made inside an atomic build) does not know what the real
        # catalog published since it was made: only the real catalog sweeps
        return sweep
    cutoff = orphan_age(real, older_than, cleanup_all)
    if cutoff is None:
        return sweep
    copies = list_stages(real)
    stale = [c for c in copies if cleanup_all or c.last_active < cutoff]
    for copy in copies:
        if copy not in stale:
            sweep.live_files |= _registered(real, copy)
    if not stale:
        return sweep
    if remove_files and not dry_run:
        sweep.removed_files = _remove_files(real, stale, sweep.live_files)
    for copy in stale:
        if not dry_run:
            drop_copy(real, copy.name)
        sweep.dropped.append(copy.name)
    log.info(
        "%s %d staging copie(s) left by dead builds (idle since before %s): %s%s",
        "would drop" if dry_run else "dropped",
        len(stale),
        cutoff.isoformat(timespec="seconds") if not cleanup_all else "now",
        ", ".join(sweep.dropped),
        f"; removed the {len(sweep.removed_files)} file(s) they wrote" if remove_files else "",
    )
    return sweep


def list_stages(real: Store) -> list[StageCopy]:
    """Every staging copy of `real` that exists now, with its last activity."""
    if real.backend == "sqlite":
        return _sqlite_stages(real.location.sqlite_path)
    return _postgres_stages(real)


def drop_copy(real: Store, name: str) -> None:
    """Remove a copy by name (SQLite: its files; PostgreSQL: its schema)."""
    if real.backend == "sqlite":
        for suffix in SQLITE_SUFFIXES:
            with contextlib.suppress(FileNotFoundError):
                os.remove(name + suffix)
        return
    with real.engine.begin() as conn:
        conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{name}" CASCADE')


def _sqlite_stages(catalog: str) -> list[StageCopy]:
    latest: dict[str, float] = {}
    for path in glob.glob(glob.escape(catalog + SQLITE_MARK) + "*"):
        base = path
        for suffix in SQLITE_SUFFIXES[1:]:
            if path.endswith(suffix):
                base = path[: -len(suffix)]
        with contextlib.suppress(FileNotFoundError):  # dropped meanwhile
            latest[base] = max(latest.get(base, 0.0), os.stat(path).st_mtime)
    return [
        StageCopy(b, datetime.fromtimestamp(t, timezone.utc)) for b, t in sorted(latest.items())
    ]


def _postgres_stages(real: Store) -> list[StageCopy]:
    with real.connect() as conn:
        stored = _data_path(conn, real.qualified("ducklake_metadata"))
        rows = conn.execute(
            sa.text(
                "SELECT nspname, obj_description(oid, 'pg_namespace') AS comment "
                "FROM pg_namespace WHERE nspname LIKE :p ORDER BY nspname"
            ),
            {"p": SCHEMA_PREFIX.replace("_", "\\_") + "%"},
        ).fetchall()
    copies = []
    for row in rows:
        if row.nspname == real.metadata_schema:
            continue
        copy = _postgres_copy(real, row.nspname, row.comment, stored)
        if copy is not None:
            copies.append(copy)
    return copies


def _postgres_copy(real: Store, schema: str, comment: Any, stored: Any) -> StageCopy | None:
    """The copy in `schema` if it is one of `real`'s (the same stored data path)."""
    created = _created(comment)
    try:
        with real.connect() as conn:
            if _data_path(conn, f'"{schema}"."ducklake_metadata"') != stored:
                return None  # another lake's copy, in the same database
            newest = conn.execute(
                sa.text(f'SELECT max(snapshot_time) FROM "{schema}"."ducklake_snapshot"')
            ).scalar()
    except sa.exc.DBAPIError:  # not a catalog (no such table): not ours to judge
        return None
    times = [t for t in (created, decode_catalog_time(newest) if newest else None) if t]
    if not times:
        return None
    return StageCopy(schema, max(times))


def _data_path(conn: Any, metadata_table: str) -> Any:
    return conn.execute(
        sa.text(
            f'SELECT "value" FROM {metadata_table} WHERE "key" = \'data_path\' AND scope IS NULL'
        )
    ).scalar()


def _created(comment: Any) -> datetime | None:
    try:
        info = json.loads(comment or "")["dbt-ducklake stage"]
        return iso_datetime(info["created"])
    except (ValueError, KeyError, TypeError):
        return None


def _registered(real: Store, copy: StageCopy) -> set[str]:
    """Every file the copy knows (its data, delete and scheduled files), as `real`
    would name them; nothing when the copy cannot be read (a half-made SQLite copy)."""
    if real.backend == "sqlite":
        store = Store(real.location, _existing_sqlite(copy.name), None, real.data_path, "")
    else:
        store = Store(real.location, real.engine, copy.name, real.data_path, "")
    try:
        with store.connect() as conn:
            return known_files(store, conn)
    except sa.exc.DBAPIError as exc:
        log.info(
            "staging copy %s is unreadable (%s); its files are left to their age",
            copy.name,
            type(exc.orig).__name__,
        )
        return set()
    finally:
        if real.backend == "sqlite":
            store.engine.dispose()


def _existing_sqlite(path: str) -> sa.Engine:
    """An engine on the SQLite file at `path` that never creates it (a copy another
    sweep dropped meanwhile stays dropped)."""
    uri = f"file:{urllib.parse.quote(path)}?mode=rw"
    return sa.create_engine(
        "sqlite://",
        creator=lambda: sqlite3.connect(uri, uri=True, timeout=5),
        poolclass=sa.pool.NullPool,
    )


def _remove_files(real: Store, stale: list[StageCopy], live: set[str]) -> list[str]:
    """Delete what stale copies registered that nobody else knows; the paths deleted."""
    with real.connect() as conn:
        keep = known_files(real, conn) | live
    doomed: set[str] = set()
    for copy in stale:
        doomed |= _registered(real, copy) - keep
    removed = []
    for path in sorted(doomed):
        try:
            real.files.delete(path)
            removed.append(path)
        except OSError as exc:  # storage refusing: left to delete_orphaned_files
            log.info("could not remove %s (%s)", normalize_path(path), type(exc).__name__)
    return removed
