"""The bottom of lake/: the metadata database, its names, options and snapshot queries.

Everything above (readers, transactions, commits, maintenance) reaches the catalog
through a Store; nothing here knows about them, so lake/ has no import cycle.
"""

from __future__ import annotations

import os
import threading
import uuid
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from . import metadata_ddl as ddl
from .changes_made import split_changes
from .codec import decode_catalog_time, encode_catalog_time
from .connect import (
    WRITE_OPTION,
    MetadataLocation,
    check_reachable,
    create_metadata_engine,
    ensure_wal,
    parse_metadata,
)
from .errors import CatalogNotFoundError, FormatVersionError, MetadataConfigError
from .files import FileIO
from .models import Snapshot
from .options import OptionRow, resolve_option

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self is Python 3.11+

CREATED_BY = "dbt-ducklake"
# schema rows kept per catalog (a few per table and version; `Store.schema_rows`), and
# catalogs kept: dropped together beyond these
_SCHEMA_ROWS_KEPT = 4096
_CATALOGS_KEPT = 64
_SCHEMA_ROWS: dict[tuple[Any, ...], dict[tuple[Any, ...], Sequence[Any]]] = {}


def normalize_data_path(data_path: str) -> str:
    """Absolute for local paths, untouched for URLs; always ends in `/` (as DuckDB writes)."""
    path = data_path.strip()
    if "://" not in path:
        path = os.path.abspath(os.path.expanduser(path))
    return path if path.endswith("/") else path + "/"


def _same_path(given: str, stored: str) -> bool:
    """Whether a profile's data_path names the stored one (a relative one from the
    current folder, a symlinked folder or a missing trailing slash included)."""
    mine = normalize_data_path(given)
    if "://" in mine or "://" in stored:
        return mine == stored
    return os.path.realpath(mine) == os.path.realpath(stored)


def _refuse_a_file(data_path: str, lake: str) -> None:
    """A data_path naming a regular file would fail only at the first write."""
    local = data_path.rstrip("/")
    if "://" not in local and os.path.exists(local) and not os.path.isdir(local):
        raise MetadataConfigError(
            f"data_path {data_path!r} of {lake} is a file, not a folder: the lake's "
            "Parquet files go in a folder there"
        )


class Store:
    """A DuckLake catalog's metadata database, data path and options."""

    def __init__(
        self,
        location: MetadataLocation,
        engine: Engine,
        metadata_schema: str | None,
        data_path: str,
        version: str,
    ):
        self.location = location
        self.backend = location.backend
        self.engine = engine
        self.metadata_schema = metadata_schema
        self.data_path = data_path
        self.version = version
        # how the data path's files are reached (local disk, S3)
        self.files = FileIO()
        # options this writer takes when the catalog sets none at any scope (profile
        # fields such as write_deletion_vectors)
        self.option_defaults: dict[str, str] = {}
        self._existing_tables: set[str] = set()
        self._shared_read = threading.local()  # see `reading`
        self._schema_rows: dict[tuple[Any, ...], Sequence[Any]] = {}  # see `schema_rows`
        # a staging copy of another catalog (write-audit-publish, publish.py): the real
        # catalog's snapshot it was copied at, and every plan committed here, in order
        self.staged_from: int | None = None
        self.commit_log: list[tuple[float, Any]] | None = None

    # -- opening ---------------------------------------------------------------------
    @classmethod
    def open(
        cls,
        metadata: str | MetadataLocation,
        *,
        data_path: str | None = None,
        metadata_schema: str | None = None,
        create: bool = True,
        files: FileIO | None = None,
        override_data_path: bool = False,
        encrypted: bool = False,
    ) -> Self:
        """Open the lake at `metadata`, creating it (snapshot 0) when it does not exist.

        A `data_path` other than the one the lake stores is refused unless
        `override_data_path` (DuckDB's OVERRIDE_DATA_PATH): files written under it would
        be recorded relative to a folder they are not in, and nobody could read them.
        `encrypted` (DuckDB's ENCRYPTED) creates an encrypted lake, and refuses an
        existing lake that is not: its files cannot be encrypted afterwards."""
        # a caller that parsed the profile's string (the adapter) passes the result
        location = metadata if isinstance(metadata, MetadataLocation) else parse_metadata(metadata)
        if metadata_schema and location.backend == "sqlite" and metadata_schema != "main":
            raise MetadataConfigError(
                f"metadata_schema {metadata_schema!r}: SQLite catalogs keep their tables in "
                "'main'; metadata_schema is for PostgreSQL"
            )
        schema = metadata_schema if location.backend == "postgres" else None
        engine = create_metadata_engine(location)
        check_reachable(engine, location)
        lake = cls(location, engine, schema, "", "")
        if files is not None:
            lake.files = files
        if not lake.has_table("ducklake_metadata"):
            if not create:
                raise CatalogNotFoundError(f"no DuckLake catalog in {location.describe()}")
            if not data_path:
                raise MetadataConfigError(
                    f"{location.describe()} holds no DuckLake yet: data_path is required to "
                    "create one"
                )
            new_path = normalize_data_path(data_path)
            _refuse_a_file(new_path, location.describe())
            lake._create(new_path, encrypted)
        if location.backend == "sqlite":
            # only once the file is known to be a lake: a user's other database is
            # never switched to WAL by a wrong `metadata`
            ensure_wal(engine)
        lake._load_metadata(data_path, override_data_path)
        if encrypted and (lake.option("encrypted") or "false").lower() != "true":
            raise MetadataConfigError(
                f"encrypted: true, but the lake in {location.describe()} was created "
                "unencrypted, and its files cannot be encrypted afterwards (DuckDB's "
                "ATTACH ... (ENCRYPTED) refuses it too): remove `encrypted` from the "
                "profile, or create a new lake with it"
            )
        return lake

    def _create(self, data_path: str, encrypted: bool = False) -> None:
        now = datetime.now(timezone.utc)
        with self.write_connection() as conn:
            if self.has_table("ducklake_metadata", conn, refresh=True):
                return  # another process created it first
            for stmt in ddl.create_statements(self.backend, self.metadata_schema):
                conn.exec_driver_sql(stmt)
            q = self.qualified
            conn.execute(
                sa.text(f'INSERT INTO {q("ducklake_metadata")} ("key", "value") VALUES (:k, :v)'),
                [
                    {"k": "version", "v": ddl.FORMAT_VERSION},
                    {"k": "created_by", "v": CREATED_BY},
                    {"k": "data_path", "v": data_path},
                    {"k": "encrypted", "v": "true" if encrypted else "false"},
                ],
            )
            conn.execute(
                sa.text(f"INSERT INTO {q('ducklake_snapshot')} VALUES (0, :t, 0, 1, 0)"),
                {"t": encode_catalog_time(self.backend, now)},
            )
            conn.execute(
                sa.text(
                    f"INSERT INTO {q('ducklake_snapshot_changes')} VALUES "
                    "(0, 'created_schema:\"main\"', NULL, NULL, NULL)"
                )
            )
            conn.execute(
                sa.text(
                    f"INSERT INTO {q('ducklake_schema')} VALUES "
                    "(0, :u, 0, NULL, 'main', 'main/', :rel)"
                ),
                {"u": str(uuid.uuid4()), "rel": True if self.backend == "postgres" else 1},
            )
        self._existing_tables.clear()

    def _load_metadata(self, data_path: str | None, override: bool) -> None:
        with self.connect() as conn:
            rows = conn.execute(
                sa.text(
                    f'SELECT "key", "value" FROM {self.qualified("ducklake_metadata")} '
                    "WHERE scope IS NULL"
                )
            ).fetchall()
            first = conn.execute(
                sa.text(
                    f"SELECT snapshot_id, snapshot_time FROM {self.qualified('ducklake_snapshot')}"
                    " ORDER BY snapshot_id LIMIT 1"
                )
            ).one_or_none()
        # the Stores a process opens on one catalog (dbt: one per model) share its schema
        # rows; a catalog made again at the same place starts with another first snapshot
        catalog = (self.location, self.metadata_schema, None if first is None else tuple(first))
        if catalog not in _SCHEMA_ROWS and len(_SCHEMA_ROWS) >= _CATALOGS_KEPT:
            _SCHEMA_ROWS.clear()
        self._schema_rows = _SCHEMA_ROWS.setdefault(catalog, {})
        global_opts = {r[0]: r[1] for r in rows}
        version = global_opts.get("version")
        if version != ddl.FORMAT_VERSION:
            raise FormatVersionError(
                f"{self.location.describe()} holds a DuckLake in format version {version!r}; "
                f"dbt-ducklake reads and writes format {ddl.FORMAT_VERSION} only "
                "(migrate it by attaching it once with DuckDB's ducklake extension v1.5)"
            )
        self.version = version
        stored = global_opts.get("data_path")
        if not stored:
            raise MetadataConfigError(f"{self.location.describe()}: the lake stores no data_path")
        stored = stored if stored.endswith("/") else stored + "/"
        self.data_path = stored
        if data_path and not _same_path(data_path, stored) and not override:
            raise MetadataConfigError(
                f"data_path {normalize_data_path(data_path)!r} differs from the data path "
                f"{self.location.describe()} stores, {stored!r}: files written there "
                "would be recorded under the stored path and read by no one. Use the "
                "stored path (or leave data_path out), or set override_data_path: true "
                "(DuckDB's OVERRIDE_DATA_PATH) if the lake's files were moved there"
            )
        if data_path:
            self.data_path = normalize_data_path(data_path)
        _refuse_a_file(self.data_path, self.location.describe())

    # -- plumbing ------------------------------------------------------------------
    def qualified(self, table: str) -> str:
        return ddl.qualified(self.metadata_schema, table)

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        """A read transaction (a consistent view of the catalog on both backends), or
        the one `reading` holds open."""
        shared = getattr(self._shared_read, "conn", None)
        if shared is not None:
            yield shared
            return
        with self.engine.connect() as conn, conn.begin():
            yield conn

    def schema_rows(
        self, key: tuple[Any, ...], fetch: Callable[[], Sequence[Any]]
    ) -> Sequence[Any]:
        """Catalog rows of the schema itself (schemas, tables, views, columns, comments,
        partition and sort specs) under `key`, which starts with a `schema_version`:
        DuckLake bumps it with every change to those rows (DuckDB's extension caches its
        catalog by it too), so they are the same at every snapshot of one version. A
        small statement then asks the database for the latest snapshot, not its tables.
        Stores of one catalog in a process share them (`_load_metadata`)."""
        rows = self._schema_rows.get(key)
        if rows is None:
            rows = tuple(fetch())
            if len(self._schema_rows) >= _SCHEMA_ROWS_KEPT:
                self._schema_rows.clear()
            self._schema_rows[key] = rows
        return rows

    def own_schema_rows(self) -> None:
        """Keep this Store's schema rows to itself: a staging copy is made again at the
        same place, with the same first snapshot, for every build, but its versions
        after the copy are its own."""
        self._schema_rows = {}

    @contextmanager
    def reading(self) -> Iterator[None]:
        """Reads in this thread share one read transaction until the block ends: a small
        statement that asks the catalog a dozen questions pays for one connection.
        Commit after the block, never inside it: a SQLite catalog without WAL lets no
        writer finish while a read transaction is open."""
        if getattr(self._shared_read, "conn", None) is not None:
            yield
            return
        with self.engine.connect() as conn, conn.begin():
            self._shared_read.conn = conn
            try:
                yield
            finally:
                self._shared_read.conn = None

    @contextmanager
    def write_connection(self) -> Iterator[Connection]:
        """A write transaction that other dbt-ducklake writers wait for.

        SQLite: `BEGIN IMMEDIATE` holds the write lock from the start. PostgreSQL: a
        transaction-scoped advisory lock per catalog, so our writers queue instead of
        starving each other on snapshot-id collisions; DuckDB writers (which do not
        take it) still collide on the primary key and are retried.
        """
        with self.engine.connect() as conn:
            conn = conn.execution_options(**{WRITE_OPTION: True})
            with conn.begin():
                if self.backend == "postgres":
                    conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": self._lock_key})
                yield conn

    @property
    def _lock_key(self) -> int:
        digest = zlib.crc32(f"dbt-ducklake:{self.metadata_schema or ''}".encode())
        return digest - (1 << 31)

    def has_table(self, name: str, conn: Connection | None = None, refresh: bool = False) -> bool:
        if name in self._existing_tables and not refresh:
            return True
        if conn is None:
            with self.engine.connect() as c:
                found = sa.inspect(c).has_table(name, schema=self.metadata_schema)
        else:
            found = sa.inspect(conn).has_table(name, schema=self.metadata_schema)
        if found:
            self._existing_tables.add(name)
        return found

    def close(self) -> None:
        self.engine.dispose()

    # -- snapshots -----------------------------------------------------------------
    def snapshot_query(self, where: str) -> str:
        return f"""SELECT s.snapshot_id, s.snapshot_time, s.schema_version, s.next_catalog_id,
                          s.next_file_id, c.changes_made, c.author, c.commit_message,
                          c.commit_extra_info
                   FROM {self.qualified("ducklake_snapshot")} s
                   LEFT JOIN {self.qualified("ducklake_snapshot_changes")} c
                        ON c.snapshot_id = s.snapshot_id
                   WHERE {where} ORDER BY s.snapshot_id"""

    def latest_snapshot(self, conn: Connection | None = None) -> Snapshot:
        sql = self.snapshot_query(
            f"s.snapshot_id = (SELECT MAX(snapshot_id) FROM {self.qualified('ducklake_snapshot')})"
        )
        if conn is not None:
            return snapshot_from_row(conn.execute(sa.text(sql)).one())
        with self.connect() as c:
            return snapshot_from_row(c.execute(sa.text(sql)).one())

    def snapshot(self, at: int | datetime | None = None) -> Snapshot:
        """The snapshot with this id, the last one at or before this time, or the latest."""
        if at is None:
            return self.latest_snapshot()
        with self.connect() as conn:
            if isinstance(at, datetime):
                ts = at if at.tzinfo else at.replace(tzinfo=timezone.utc)
                rows = conn.execute(
                    sa.text(self.snapshot_query("1=1")),
                ).fetchall()
                candidates = [snapshot_from_row(r) for r in rows]
                before = [s for s in candidates if s.snapshot_time <= ts]
                if not before:
                    raise CatalogNotFoundError(f"no snapshot at or before {ts.isoformat()}")
                return before[-1]
            row = conn.execute(
                sa.text(self.snapshot_query("s.snapshot_id = :sid")), {"sid": int(at)}
            ).one_or_none()
        if row is None:
            raise CatalogNotFoundError(f"snapshot {at} does not exist")
        return snapshot_from_row(row)

    def snapshots(self, since: int | None = None) -> list[Snapshot]:
        """All snapshots (or those after `since`) with their changes and commit info."""
        where = "1=1" if since is None else "s.snapshot_id > :since"
        with self.connect() as conn:
            rows = conn.execute(sa.text(self.snapshot_query(where)), {"since": since}).fetchall()
        return [snapshot_from_row(r) for r in rows]

    def kept_snapshot_ids(self, first: int, last: int) -> list[int]:
        """The ids in [first, last] that still exist (expiry removes snapshots): ids
        only, so the cost is the range's, not its snapshots' changes."""
        with self.connect() as conn:
            rows = conn.execute(
                sa.text(
                    f"""SELECT snapshot_id FROM {self.qualified("ducklake_snapshot")}
                        WHERE snapshot_id BETWEEN :first AND :last ORDER BY snapshot_id"""
                ),
                {"first": first, "last": last},
            ).fetchall()
        return [int(r[0]) for r in rows]

    def snapshots_touching(
        self, table_ids: Iterable[int], names: Iterable[str] = ()
    ) -> list[Snapshot]:
        """Snapshots whose changes name one of these table ids or `"schema"."table"`
        names; the catalog filters them, so the cost follows the table's history."""
        ids = sorted({int(i) for i in table_ids})
        quoted = sorted({n.lower() for n in names})
        if not ids and not quoted:
            return []
        params: dict[str, Any] = {}
        terms = []
        for n, tid in enumerate(ids):
            params[f"id{n}"] = f"%:{tid}%"
            terms.append(f"c.changes_made LIKE :id{n}")
        for n, name in enumerate(quoted):
            params[f"name{n}"] = f"%{name}%"
            terms.append(f"LOWER(c.changes_made) LIKE :name{n}")
        with self.connect() as conn:
            rows = conn.execute(sa.text(self.snapshot_query(" OR ".join(terms))), params)
            found = [snapshot_from_row(r) for r in rows.fetchall()]
        wanted = {str(i) for i in ids} | set(quoted)
        return [s for s in found if any(c.value.lower() in wanted for c in s.changes)]

    # -- options -------------------------------------------------------------------
    def options(self) -> list[OptionRow]:
        with self.connect() as conn:
            rows = conn.execute(
                sa.text(
                    f'SELECT "key", "value", "scope", scope_id '
                    f"FROM {self.qualified('ducklake_metadata')}"
                )
            ).fetchall()
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    def option(
        self,
        key: str,
        *,
        schema_id: int | None = None,
        table_id: int | None = None,
        default: str | None = None,
    ) -> str | None:
        """Resolve an option with DuckLake's precedence: table > schema > global > default."""
        return resolve_option(
            self.options(), key, schema_id=schema_id, table_id=table_id, default=default
        )

    def snapshots_after(self, conn: Connection, base_id: int) -> list[Snapshot]:
        """Snapshots committed after `base_id`, read in the caller's write transaction."""
        rows = conn.execute(
            sa.text(self.snapshot_query("s.snapshot_id > :base")), {"base": base_id}
        ).fetchall()
        return [snapshot_from_row(r) for r in rows]

    def files_deleted_after(self, conn: Connection, base_id: int) -> set[int]:
        """Data files that got a delete file or were ended after `base_id`."""
        rows = conn.execute(
            sa.text(
                f"""SELECT data_file_id FROM {self.qualified("ducklake_delete_file")}
                    WHERE begin_snapshot > :base
                    UNION SELECT data_file_id FROM {self.qualified("ducklake_data_file")}
                    WHERE end_snapshot > :base"""
            ),
            {"base": base_id},
        ).fetchall()
        return {r[0] for r in rows}


def visible(alias: str) -> str:
    """Row validity at snapshot `:snap` (begin inclusive, end exclusive)."""
    return (
        f"{alias}.begin_snapshot <= :snap AND "
        f"({alias}.end_snapshot IS NULL OR {alias}.end_snapshot > :snap)"
    )


def snapshot_from_row(row: Any) -> Snapshot:
    return Snapshot(
        snapshot_id=row.snapshot_id,
        snapshot_time=decode_catalog_time(row.snapshot_time),
        schema_version=row.schema_version,
        next_catalog_id=row.next_catalog_id,
        next_file_id=row.next_file_id,
        changes=split_changes(row.changes_made),
        author=row.author,
        commit_message=row.commit_message,
        commit_extra_info=row.commit_extra_info,
    )
