"""dbt's connection protocol for `type: ducklake`: opening a connection builds its
environment (environment.py: the lake, Spark, storage), statements go to that
environment's cursor, and errors reach dbt with their message, secrets masked.

dbt's own BEGIN/COMMIT bookkeeping is not sent anywhere: every statement is its own
DuckLake snapshot, and materializations that need several statements in one snapshot
send an explicit `BEGIN; …; COMMIT` block the engine commits at once.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dbt.adapters.contracts.connection import AdapterResponse, Connection, ConnectionState
from dbt.adapters.events.logging import AdapterLogger
from dbt.adapters.sql import SQLConnectionManager
from dbt_common.exceptions import DbtDatabaseError, DbtRuntimeError

from .credentials import DucklakeCredentials
from .environment import LakeHandle
from .lake import LakeError
from .prestart import prestart_spark

logger = AdapterLogger("DuckLake")


class DucklakeConnectionManager(SQLConnectionManager):
    TYPE = "ducklake"

    def __init__(self, profile: Any, mp_context: Any) -> None:
        super().__init__(profile, mp_context)
        # dbt builds this when it loads the adapter, before it parses the project
        if isinstance(profile.credentials, DucklakeCredentials):
            prestart_spark(profile.credentials)

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
            written_as = handle.written_as if isinstance(handle, LakeHandle) else {}
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


def _short(exc: Exception, written_as: dict[str, str] | None = None) -> str:
    """Spark's errors carry a plan or a JVM stack after the message; keep the message."""
    from py4j.protocol import Py4JJavaError  # loaded here: metadata-only commands skip it
    from pyspark.errors import PySparkException

    from .spark.errors import spark_error_text

    if isinstance(exc, PySparkException | Py4JJavaError):
        return spark_error_text(exc, written_as)
    text = str(exc)
    for marker in ("\nJVM stacktrace:", "\n\tat "):
        if marker in text:
            text = text.split(marker, 1)[0]
    return text.strip()
