"""A staging copy of a catalog, where a write-audit-publish build commits its nodes.

The copy is a complete DuckLake catalog (SQLite: a file beside the real one; PostgreSQL:
a schema in the same database), so everything that reads or writes a lake works on it
unchanged, and nothing in it is visible to readers of the real catalog. Copying costs
time in proportion to the catalog's metadata rows, once per build.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sqlite3
import time

import sqlalchemy as sa

from .connect import sqlite_location
from .errors import MetadataConfigError
from .lake import Lake
from .stage_sweep import SCHEMA_PREFIX, SQLITE_MARK, stage_comment, sweep_stages
from .store import Store

log = logging.getLogger("dbt.adapters.ducklake.lake")

_TAG = re.compile(r"[^a-z0-9]")


def open_stage(real: Store, tag: str) -> Lake:
    """Copy `real`'s catalog and open the copy; `tag` (a build's id) names it. Copies
    dead builds left behind are swept first, once older than the orphan age."""
    start = time.perf_counter()
    _sweep(real)
    safe = _TAG.sub("", tag.lower())[:16] or "build"
    if real.backend == "sqlite":
        path = f"{real.location.sqlite_path}{SQLITE_MARK}{safe}"
        _copy_sqlite(real.location.sqlite_path, path)
        stage = Lake.open(sqlite_location(path), create=False, files=real.files)
    else:
        schema = f"{SCHEMA_PREFIX}{safe}"
        _copy_postgres(real, schema)
        stage = Lake.open(real.location, metadata_schema=schema, create=False, files=real.files)
    stage.own_schema_rows()
    stage.staged_from = stage.latest_snapshot().snapshot_id
    stage.option_defaults = dict(real.option_defaults)  # the profile's, as for the real
    stage.commit_log = []
    log.info(
        "staged the catalog at snapshot %s in %.2fs (%s)",
        stage.staged_from,
        time.perf_counter() - start,
        stage.location.describe() if real.backend == "sqlite" else f"schema {schema}",
    )
    return stage


def _sweep(real: Store) -> None:
    """Stale copies and the files they registered (stage_sweep.py); a sweep that fails
    never fails the build: the copies wait for the next one."""
    try:
        sweep_stages(real, remove_files=True)
    except Exception as exc:  # the build matters more than the leftovers
        log.warning("could not sweep stale staging copies: %s", type(exc).__name__)


def drop_stage(stage: Store) -> None:
    """Remove the copy (its rows only: files are the publish's or the discard's business)."""
    if stage.backend == "sqlite":
        stage.engine.dispose()
        for suffix in ("", "-wal", "-shm", "-journal"):
            with contextlib.suppress(FileNotFoundError):
                os.remove(stage.location.sqlite_path + suffix)
        return
    with stage.engine.begin() as conn:
        conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{stage.metadata_schema}" CASCADE')
    stage.engine.dispose()


def _copy_sqlite(source: str, target: str) -> None:
    """SQLite's online backup: one consistent copy even while other writers commit."""
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(target + suffix):
            os.remove(target + suffix)
    src = sqlite3.connect(source, timeout=30)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)
    finally:
        dst.close()
        src.close()


def _copy_postgres(real: Store, schema: str) -> None:
    """Every catalog table (inlined-data tables included) into `schema`, with its keys,
    read in one REPEATABLE READ transaction so the copy is one snapshot's state."""
    with real.engine.connect() as conn:
        conn = conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            source = (
                real.metadata_schema or conn.exec_driver_sql("SELECT current_schema()").scalar_one()
            )
            names = [
                r[0]
                for r in conn.execute(
                    sa.text(
                        "SELECT table_name FROM information_schema.tables "
                        "WHERE table_schema = :s AND table_name LIKE 'ducklake%'"
                    ),
                    {"s": source},
                ).fetchall()
            ]
            if "ducklake_snapshot" not in names:
                raise MetadataConfigError(f"no DuckLake catalog in schema {source!r} to stage")
            conn.exec_driver_sql(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
            # when it was made: how a sweep tells a dead build's copy from a live one's
            conn.execute(
                sa.text(f'COMMENT ON SCHEMA "{schema}" IS ' + _literal(stage_comment(source)))
            )
            for name in names:
                conn.exec_driver_sql(
                    f'CREATE TABLE "{schema}"."{name}" (LIKE "{source}"."{name}" INCLUDING ALL)'
                )
                conn.exec_driver_sql(
                    f'INSERT INTO "{schema}"."{name}" SELECT * FROM "{source}"."{name}"'
                )


def _literal(text: str) -> str:
    """A SQL string literal (COMMENT takes no bind parameters)."""
    return "'" + text.replace("'", "''") + "'"
