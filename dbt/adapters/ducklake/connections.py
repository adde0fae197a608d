"""dbt connections: one shared SparkSession per process, and per dbt connection a lake
handle whose cursor runs statements through the engine's `LakeSQL`.

dbt's own BEGIN/COMMIT bookkeeping is not sent anywhere: every statement is its own
DuckLake snapshot, and materializations that need several statements in one snapshot
send an explicit `BEGIN; …; COMMIT` block the engine commits at once.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from dbt.adapters.contracts.connection import AdapterResponse, Connection, ConnectionState
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.sql import SQLConnectionManager
from dbt_common.exceptions import DbtDatabaseError, DbtRuntimeError
from py4j.protocol import Py4JJavaError
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import VariantVal

from .__version__ import version as adapter_version
from .atomic import publish_mode, staged_lake
from .credentials import DucklakeCredentials
from .lake import Infinite, Lake, LakeError, Snapshot, parse_metadata
from .spark.collect import collect_rows
from .spark.engine import CommitInfo
from .spark.errors import spark_error_text
from .spark.notices import take_notices
from .spark.session import cancel_jobs, get_session, label_jobs
from .spark.sql import LakeSQL
from .spark.storage import apply_s3, uses_s3
from .staged_node import StagedNode

logger = AdapterLogger("DuckLake")
_OPENING = threading.Lock()
_CANCEL_WINDOW_S = 120.0  # how long a cancelled statement's new jobs keep being stopped


class LakeCursor:
    """DB-API-like cursor over LakeSQL: queries stay DataFrames until dbt fetches."""

    def __init__(self, handle: LakeHandle):
        self.handle = handle
        self._df: DataFrame | None = None
        self.snapshot: Snapshot | None = None
        self.description: list[tuple[Any, ...]] | None = None
        self.rowcount = -1

    def execute(self, sql: str, bindings: Sequence[Any] | None = None) -> None:
        if bindings:
            raise DbtRuntimeError(
                "the ducklake adapter does not take query bindings; seeds load through "
                "Spark DataFrames"
            )
        if self.handle.cancelled.is_set():
            raise DbtRuntimeError(f"{self.handle.job_group}: cancelled; nothing was committed")
        label_jobs(self.handle.spark, self.handle.job_group, self.handle.job_group)
        self.handle.busy.set()
        try:
            result = self.handle.sql.execute(sql)
        finally:
            self.handle.busy.clear()
            self.handle.show_notices()
        self._df, self.snapshot, self.description = None, None, None
        if isinstance(result, DataFrame):
            self._df = result
            self.description = [
                (f.name, f.dataType.simpleString(), None, None, None, None, f.nullable)
                for f in result.schema.fields
            ]
        elif isinstance(result, Snapshot):
            self.snapshot = result

    def fetchall(self) -> list[tuple[Any, ...]]:
        # results dbt asks for (tests, dbt show, introspection) are meant to be small
        if self._df is None:
            return []
        return _shown(collect_rows(self._df))

    def fetchmany(self, size: int) -> list[tuple[Any, ...]]:
        if self._df is None:
            return []
        return _shown(collect_rows(self._df, size))

    def fetchone(self) -> tuple[Any, ...] | None:
        rows = self.fetchmany(1)
        return rows[0] if rows else None

    def close(self) -> None:
        self._df = None


def _shown(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Values agate cannot take as text: DuckDB's `infinity` dates as DuckDB prints them
    (Python's date has no such value), variants as JSON."""
    return [tuple(str(v) if isinstance(v, Infinite | VariantVal) else v for v in r) for r in rows]


class LakeHandle:
    """What a dbt connection holds: the lake, its SQL runner, and the commit info that
    every snapshot written through this connection carries."""

    def __init__(self, credentials: DucklakeCredentials):
        self.credentials = credentials
        self.job_group = "dbt"  # the dbt connection's name once it runs SQL
        self.busy = threading.Event()  # a statement is running
        self.cancelled = threading.Event()
        location = parse_metadata(credentials.metadata)
        if location.backend == "sqlite" and credentials.data_path:
            # the embedded default: a new project's lake folder is created on first use
            os.makedirs(os.path.dirname(os.path.abspath(location.sqlite_path)), exist_ok=True)

        def open_real() -> Lake:
            return Lake.open(
                credentials.metadata,
                data_path=credentials.data_path,
                metadata_schema=credentials.metadata_schema,
                files=credentials.file_io(),
                override_data_path=credentials.override_data_path,
                encrypted=credentials.encrypted,
            )

        with _OPENING:  # dbt threads open connections together; one creates the lake
            # the catalog first: a wrong URL fails in a second, before a JVM starts
            mode = publish_mode(credentials.publish)
            staged = staged_lake(mode, dbt_command(), open_real)
            lake = staged if staged is not None else open_real()
        if credentials.write_deletion_vectors is not None:
            lake.option_defaults["write_deletion_vectors"] = str(
                credentials.write_deletion_vectors
            ).lower()
        # a lake created elsewhere (DuckDB) may store a relative data path
        credentials.require_shared(lake.data_path, "the lake's stored data_path")
        self._lake = lake
        self._spark: SparkSession | None = None
        self._home: LakeSQL | None = None
        self._starting = threading.Lock()
        self.node: StagedNode | None = None  # a node building into a staging copy
        self.shown: set[tuple[str, str]] = set()  # (model, notice) already in the output

    @property
    def spark(self) -> SparkSession:
        """The SparkSession, started by the first statement that needs it: metadata-only
        work (run-operation ducklake_snapshots, listing relations) never waits for a JVM."""
        with self._starting:
            if self._spark is None:
                config = self.credentials.session_config(self._lake.data_path)
                spark = get_session(replace(config, console_log=_spark_console_log()))
                if uses_s3(self._lake.data_path):
                    apply_s3(spark, self._lake.files.s3)
                self._spark = spark
            return self._spark

    @property
    def home(self) -> LakeSQL:
        """Statements on the lake itself (not a node's staging copy)."""
        if self._home is None:
            self._home = LakeSQL(
                self.spark,
                self._lake,
                default_schema=self.credentials.schema,
                catalog_name=self.credentials.database,
                commit=CommitInfo(author=self.credentials.author),
            )
        return self._home

    @property
    def sql(self) -> LakeSQL:
        """Where statements go: the node's staging copy while one is open."""
        return self.node.sql if self.node is not None else self.home

    @property
    def lake(self) -> Lake:
        return self.node.sql.lake if self.node is not None else self._lake

    def stage_node(self) -> bool:
        """The node about to build has post-hooks inside its transaction: its statements
        commit into a staging copy until dbt's commit (`staged_node`). Not under
        `publish: atomic`, where the whole build is staged already."""
        self.discard_node()
        if self._lake.staged_from is not None:
            return False
        self.node = StagedNode(self.home)
        return True

    def defer_call(self, function: str, statement: str) -> bool:
        """A maintenance CALL from a staged node's hook runs after its publish."""
        if self.node is None:
            return False
        self.node.after_publish.append((function, statement))
        return True

    def publish_node(self) -> None:
        node, self.node = self.node, None
        if node is not None:
            node.publish(logger.info)

    def discard_node(self) -> None:
        node, self.node = self.node, None
        if node is not None:
            left = node.discard()
            if left:
                logger.info(
                    f"{len(left)} file(s) of the failed node could not be removed; "
                    "ducklake_delete_orphaned_files removes them"
                )

    def set_commit(self, message: str | None, extra_info: Any) -> None:
        self.sql.commit = CommitInfo(
            author=self.credentials.author, message=message, extra_info=extra_info
        )

    def ensure_commit_context(self, connection_name: str | None, target: str | None) -> None:
        """Snapshots written outside a node's build (hooks, run-operation, schema
        creation) still name the run: the command, the connection, the invocation id."""
        if self.sql.commit.message is not None:
            return
        command = dbt_command() or "command"
        name = connection_name or "?"
        self.set_commit(
            f"dbt {command} {name}",
            commit_extra_info(target, connection=name, command=command),
        )

    def show_notices(self) -> None:
        """What the statement's reads changed by a documented rule, once per model."""
        for text in take_notices():
            if (self.job_group, text) not in self.shown:
                self.shown.add((self.job_group, text))
                logger.warning(f"{self.job_group}: {text}")

    def cursor(self) -> LakeCursor:
        return LakeCursor(self)

    def cancel(self) -> None:
        """Stop the running statement's Spark jobs, including the ones it has yet to
        start: a cancel that lands while the driver plans (between jobs) would
        otherwise miss the write that follows. Later statements are refused."""
        self.cancelled.set()
        spark = self._spark
        if spark is not None:  # no session: no job to stop
            cancel_jobs(spark, self.job_group)

        def keep_cancelling() -> None:
            deadline = time.monotonic() + _CANCEL_WINDOW_S
            while self.busy.is_set() and time.monotonic() < deadline:
                time.sleep(0.2)
                if self._spark is not None:
                    cancel_jobs(self._spark, self.job_group)

        threading.Thread(target=keep_cancelling, name="ducklake-cancel", daemon=True).start()
        self.rollback()

    def rollback(self) -> None:
        if (self.node is not None or self._home is not None) and self.sql.in_transaction:
            self.sql.execute("ROLLBACK")
        self.discard_node()

    def close(self) -> None:
        self.rollback()


def dbt_command() -> str | None:
    """The dbt command this process runs (`build`, `run`, `seed`, …), which commit
    messages name; None outside a dbt invocation."""
    from dbt.flags import get_flags

    return getattr(get_flags(), "WHICH", None)


def commit_extra_info(target: str | None, **fields: Any) -> str:
    """The JSON extra info of a snapshot dbt writes: always the invocation id, the
    target and the versions; `fields` say which node or operation wrote it."""
    from dbt.version import __version__ as dbt_version
    from dbt_common.invocation import get_invocation_id

    extra = {
        "invocation_id": get_invocation_id(),
        "target": target,
        "dbt_version": dbt_version,
        "adapter_version": adapter_version,
        **fields,
    }
    return json.dumps(extra, sort_keys=True)


class DucklakeConnectionManager(SQLConnectionManager):
    TYPE = "ducklake"

    def add_query(self, sql: str, *args: Any, **kwargs: Any) -> tuple[Connection, Any]:
        connection = self.get_thread_connection()
        if isinstance(connection.handle, LakeHandle):
            target = getattr(self.profile, "target_name", None)
            connection.handle.ensure_commit_context(connection.name, target)
            connection.handle.job_group = connection.name or "dbt"
        return super().add_query(sql, *args, **kwargs)

    @classmethod
    def open(cls, connection: Connection) -> Connection:
        if connection.state == ConnectionState.OPEN:
            return connection
        credentials: DucklakeCredentials = connection.credentials
        secrets = credentials.secrets()
        shown = secrets.mask(credentials.metadata)
        start = time.perf_counter()
        try:
            connection.handle = LakeHandle(credentials)
        except Exception as exc:
            connection.handle = None
            connection.state = ConnectionState.FAIL
            # `from None`: dbt prints the cause chain, which would quote the secret again
            # lake errors name the catalog already; others get its (masked) location
            where = "" if isinstance(exc, LakeError) else f" at {shown!r}"
            raise DbtDatabaseError(
                secrets.mask(f"could not open the lake{where}: {_short(exc)}")
            ) from None
        connection.state = ConnectionState.OPEN
        logger.debug(f"lake {shown} opened in {time.perf_counter() - start:.2f}s")
        return connection

    @contextmanager
    def exception_handler(self, sql: str) -> Iterator[None]:
        try:
            yield
        except (DbtDatabaseError, DbtRuntimeError):
            raise
        except Exception as exc:
            logger.debug(f"error running:\n{sql}")
            secrets = self.profile.credentials.secrets()  # type: ignore[attr-defined]
            handle = self.get_thread_connection().handle
            written_as = handle.sql.written_as if isinstance(handle, LakeHandle) else {}
            raise DbtDatabaseError(secrets.mask(_short(exc, written_as))) from exc

    def cancel(self, connection: Connection) -> None:
        handle = connection.handle
        if isinstance(handle, LakeHandle):
            # dbt cancels on Ctrl-C: stop this connection's Spark jobs, drop its block
            handle.cancel()

    @classmethod
    def get_response(cls, cursor: Any) -> AdapterResponse:
        snapshot = getattr(cursor, "snapshot", None)
        if snapshot is not None and getattr(cursor.handle.lake, "staged_from", None) is not None:
            # a staging copy's snapshot: published at the node's commit or (publish:
            # atomic) at the end of the build
            return AdapterResponse(_message="OK (staged)", code="OK", rows_affected=-1)
        if snapshot is not None:
            return AdapterResponse(
                _message=f"OK (snapshot {snapshot.snapshot_id})", code="OK", rows_affected=-1
            )
        return AdapterResponse(_message="OK", code="OK")

    # dbt's transaction bookkeeping: nothing to send (see the module docstring)
    def add_begin_query(self, *args: Any, **kwargs: Any) -> None:
        pass

    def add_commit_query(self, *args: Any, **kwargs: Any) -> None:
        pass

    def begin(self) -> None:
        self.get_thread_connection().transaction_open = True

    def commit(self) -> None:
        """dbt's commit of a node: a node staged for its post-hooks publishes here."""
        connection = self.get_thread_connection()
        connection.transaction_open = False
        if isinstance(connection.handle, LakeHandle):
            connection.handle.publish_node()

    @classmethod
    def _rollback_handle(cls, connection: Connection) -> None:
        if isinstance(connection.handle, LakeHandle):
            connection.handle.rollback()

    @classmethod
    def data_type_code_to_name(cls, type_code: str | int) -> str:
        return str(type_code).upper()


def _spark_console_log() -> str | None:
    """Spark's console goes to `<log-path>/spark.log` unless dbt runs with --debug,
    so dbt's output holds dbt's lines only."""
    from dbt.flags import get_flags

    flags = get_flags()
    if getattr(flags, "DEBUG", False):
        return None
    return os.path.join(getattr(flags, "LOG_PATH", None) or "logs", "spark.log")


def _short(exc: Exception, written_as: dict[str, str] | None = None) -> str:
    """Spark's errors carry a plan or a JVM stack after the message; keep the message."""
    if isinstance(exc, PySparkException | Py4JJavaError):
        return spark_error_text(exc, written_as)
    text = str(exc)
    for marker in ("\nJVM stacktrace:", "\n\tat "):
        if marker in text:
            text = text.split(marker, 1)[0]
    return text.strip()
