"""Turn a user's `metadata` string into a SQLAlchemy engine for the catalog database.

Accepted forms (the profile's `metadata`, README): a SQLAlchemy URL (`sqlite:///x.sqlite`,
`postgresql+psycopg://u@h/db`), DuckLake's attach form (`sqlite:x.sqlite`,
`postgres:dbname=x host=y`, optionally prefixed with `ducklake:`), or a plain file path
(SQLite).
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass
from typing import Any, Literal

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Engine

from .errors import MetadataConfigError
from .secrets import mask_shapes

Backend = Literal["sqlite", "postgres"]

SQLITE_BUSY_TIMEOUT_MS = 30_000

ACCEPTED_FORMS = (
    "sqlite:///path.sqlite, postgresql+psycopg://user@host/db, "
    "sqlite:path.sqlite, postgres:dbname=db host=h, or a plain SQLite file path"
)

_URL_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.\-]*)://")
_ATTACH_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9_]*):(?!//)")


@dataclass(frozen=True)
class MetadataLocation:
    """Where the catalog lives, normalised from any accepted spelling."""

    backend: Backend
    url: str  # SQLAlchemy URL, or "" when `conninfo` is used
    conninfo: str = ""  # libpq connection string for DuckLake's `postgres:` form
    sqlite_path: str = ""

    def describe(self) -> str:
        if self.backend == "sqlite":
            return f"SQLite file {self.sqlite_path}"
        return f"PostgreSQL ({mask_shapes(self.conninfo) or _hide_password(self.url)})"

    def duckdb_attach(self) -> str:
        """The string DuckDB's extension attaches: `ducklake:<this>`."""
        if self.backend == "sqlite":
            return f"sqlite:{self.sqlite_path}"
        if self.conninfo:
            return f"postgres:{self.conninfo}"
        u = sa.engine.make_url(self.url)
        parts = [f"dbname={u.database}"] if u.database else []
        parts += [f"host={u.host}"] if u.host else []
        parts += [f"port={u.port}"] if u.port else []
        parts += [f"user={u.username}"] if u.username else []
        parts += [f"password={u.password}"] if u.password else []
        return "postgres:" + " ".join(parts)


def _hide_password(url: str) -> str:
    try:
        return sa.engine.make_url(url).render_as_string(hide_password=True)
    except Exception:
        return mask_shapes(url)


def parse_metadata(metadata: str) -> MetadataLocation:
    """Normalise a metadata string; unknown schemes get an error listing accepted forms."""
    raw = (metadata or "").strip()
    shown = mask_shapes(raw)  # what errors quote
    if not raw:
        raise MetadataConfigError(f"metadata is empty; expected one of: {ACCEPTED_FORMS}")
    if raw.startswith("ducklake:"):
        raw = raw[len("ducklake:") :]

    url_match = _URL_SCHEME.match(raw)
    if url_match:
        scheme = url_match.group(1).lower()
        driver = scheme.split("+", 1)[0]
        if driver == "sqlite":
            path = sa.engine.make_url(raw).database or ""
            if not path or path == ":memory:":
                raise MetadataConfigError(
                    f"metadata {shown!r}: an in-memory SQLite catalog cannot be shared; "
                    "give a file path"
                )
            return sqlite_location(path)
        if driver in ("postgresql", "postgres"):
            rest = raw[url_match.end() :]
            return MetadataLocation("postgres", url=f"postgresql+psycopg://{rest}")
        raise MetadataConfigError(
            f"metadata {shown!r}: unsupported scheme {scheme!r}; expected one of: {ACCEPTED_FORMS}"
        )

    attach_match = _ATTACH_SCHEME.match(raw)
    if attach_match and not _looks_like_windows_drive(raw):
        scheme = attach_match.group(1).lower()
        rest = raw[attach_match.end() :]
        if scheme == "sqlite":
            if not rest:
                raise MetadataConfigError(f"metadata {shown!r}: sqlite: needs a file path")
            return sqlite_location(rest)
        if scheme in ("postgres", "postgresql"):
            return MetadataLocation("postgres", url="", conninfo=rest.strip())
        raise MetadataConfigError(
            f"metadata {shown!r}: unsupported catalog type {scheme!r}; expected one of: "
            f"{ACCEPTED_FORMS}"
        )
    return sqlite_location(raw)


def _looks_like_windows_drive(raw: str) -> bool:
    return len(raw) > 2 and raw[1] == ":" and raw[2] in "\\/"


def sqlite_location(path: str) -> MetadataLocation:
    """The location of a SQLite catalog file (a staging copy's, say), already parsed."""
    abspath = os.path.abspath(os.path.expanduser(path))
    return MetadataLocation("sqlite", url=f"sqlite:///{abspath}", sqlite_path=abspath)


def create_metadata_engine(loc: MetadataLocation) -> Engine:
    """An engine whose transactions are safe for several writing processes.

    SQLite: WAL journal (readers never block the writer), a busy timeout, and
    `BEGIN IMMEDIATE` so a committing writer takes the write lock before it reads the
    latest snapshot. PostgreSQL: psycopg 3 at READ COMMITTED; concurrent commits collide
    on the snapshot primary key and are retried by the transaction layer.
    """
    if loc.backend == "sqlite":
        directory = os.path.dirname(loc.sqlite_path)
        if directory and not os.path.isdir(directory):
            raise MetadataConfigError(
                f"metadata SQLite file {loc.sqlite_path}: directory {directory} does not exist"
            )
        # sqlite3's `timeout` is SQLite's busy timeout; isolation_level=None hands
        # transaction control to the `begin` hook below. Connections are pooled (see
        # `_closed_beside_duckdb` for the one exception): in WAL mode other processes,
        # DuckDB's too, see each commit while ours stay open, and a new connection costs
        # a file open, a parse of the catalog's schema and, when the last one closes, a
        # checkpoint of the WAL (bench/commit_latency.py: a commit's median 5.0-5.4 ms
        # with a connection per use, 1.9-2.5 ms pooled).
        # No cap on connections in use (as before pooling): threads never wait for one.
        engine = sa.create_engine(
            loc.url,
            connect_args={"timeout": SQLITE_BUSY_TIMEOUT_MS / 1000, "isolation_level": None},
            max_overflow=-1,
        )
        event.listen(engine, "begin", _sqlite_begin_immediate)
        event.listen(engine, "checkin", _closed_beside_duckdb)
        return engine
    if loc.conninfo:
        import psycopg

        conninfo = loc.conninfo

        def creator() -> Any:
            return psycopg.connect(conninfo)

        return sa.create_engine("postgresql+psycopg://", creator=creator, pool_pre_ping=True)
    return sa.create_engine(loc.url, pool_pre_ping=True)


def ensure_wal(engine: Engine) -> None:
    """WAL is a property of the database file: set once, readers never block the writer."""
    raw = engine.raw_connection()  # autocommit: the pragma cannot run inside BEGIN
    try:
        cursor = raw.cursor()
        if str(cursor.execute("PRAGMA journal_mode").fetchone()[0]).lower() != "wal":
            cursor.execute("PRAGMA journal_mode = WAL")
        cursor.close()
    finally:
        raw.close()


WRITE_OPTION = "ducklake_write"


def _closed_beside_duckdb(dbapi_connection: Any, record: Any) -> None:
    """A SQLite connection going back to the pool is closed instead while DuckDB is
    loaded in this process. DuckDB links its own copy of SQLite, and two copies in one
    process do not share their locks or their view of the WAL (sqlite.org/howtocorrupt
    .html, 2.2.1): with one of ours left open, each side read a stale catalog after the
    other committed (measured: the latest snapshot stuck at 1). A dbt process never
    loads DuckDB; a Python session that uses both (this repository's tests) gets a new
    connection for every use, as before connections were pooled."""
    if dbapi_connection is not None and "duckdb" in sys.modules:
        record.invalidate()


def _sqlite_begin_immediate(conn: Any) -> None:
    # Writers take the lock up front; readers get a plain (deferred) WAL read snapshot.
    immediate = conn.get_execution_options().get(WRITE_OPTION, False)
    conn.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")


def check_reachable(engine: Engine, loc: MetadataLocation) -> None:
    """Fail early with the location named when the catalog database cannot be reached."""
    # SQLite opens any file lazily: reading its schema tells a database from other bytes
    probe = "SELECT count(*) FROM sqlite_master" if loc.backend == "sqlite" else "SELECT 1"
    try:
        with engine.connect() as conn:
            conn.exec_driver_sql(probe)
    except Exception as exc:  # driver errors differ per backend; all mean "unreachable"
        first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        raise MetadataConfigError(
            f"cannot reach the DuckLake metadata database ({loc.describe()}): {first_line}"
        ) from exc
