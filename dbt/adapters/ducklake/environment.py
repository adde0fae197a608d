"""The environment a dbt connection builds in: the lake (or its staging copy under
`publish: atomic`), the SparkSession started by the first statement that needs one,
object storage, and the commit info every snapshot carries. `connections.py` keeps to
dbt's connection protocol and hands statements to this module's cursor.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from dbt.adapters.events.logging import AdapterLogger
from dbt_common.exceptions import DbtRuntimeError

from .__version__ import version as adapter_version
from .atomic import publish_mode, staged_lake
from .credentials import DucklakeCredentials
from .lake import Infinite, Lake, LakeError, Snapshot
from .spark.commit_info import CommitInfo
from .spark.errors import CallError, LakeSQLError
from .spark.notices import take_notices
from .storage import apply_s3, uses_s3

# The Spark layer (pyspark, sqlglot, pyarrow) is imported by the methods that run
# statements: a command that only reads the catalog (run-operation ducklake_snapshots,
# ls, docs) never loads it.
if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from .spark.calls import CallRows
    from .spark.session_config import SessionConfig
    from .spark.sql import LakeSQL
    from .staged_node import StagedNode

logger = AdapterLogger("DuckLake")
OPENING = threading.Lock()
_CANCEL_WINDOW_S = 120.0  # how long a cancelled statement's new jobs keep being stopped


class LakeCursor:
    """DB-API-like cursor over LakeSQL: queries stay DataFrames until dbt fetches."""

    def __init__(self, handle: LakeHandle):
        self.handle = handle
        self._df: DataFrame | None = None
        self._rows: list[tuple[Any, ...]] | None = None  # answered without Spark
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
        self._df, self._rows, self.snapshot, self.description = None, None, None, None
        answered = self.handle.catalog_only(sql)
        if answered is not None:
            self._rows = answered.rows
            self.description = [(n, t, None, None, None, None, True) for n, t in answered.columns]
            return
        from pyspark.sql import DataFrame

        from .spark.session import label_jobs

        label_jobs(self.handle.spark, self.handle.job_group, self.handle.job_group)
        self.handle.busy.set()
        try:
            result = self.handle.sql.execute(sql)
        finally:
            self.handle.busy.clear()
            self.handle.show_notices()
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
        if self._rows is not None:
            return _shown(self._rows)
        if self._df is None:
            return []
        return _collected(self._df)

    def fetchmany(self, size: int) -> list[tuple[Any, ...]]:
        if self._rows is not None:
            return _shown(self._rows[:size])
        if self._df is None:
            return []
        return _collected(self._df, size)

    def fetchone(self) -> tuple[Any, ...] | None:
        rows = self.fetchmany(1)
        return rows[0] if rows else None

    def close(self) -> None:
        self._df = None


def _collected(df: DataFrame, limit: int | None = None) -> list[tuple[Any, ...]]:
    """A query's rows for dbt; Spark's variants shown as JSON."""
    from .spark.collect import collect_rows
    from .spark.compat import VARIANT_VALUES

    return _shown(collect_rows(df, limit), VARIANT_VALUES)


def _shown(rows: list[tuple[Any, ...]], also: tuple[type, ...] = ()) -> list[tuple[Any, ...]]:
    """Values agate cannot take as text, and `also`: DuckDB's `infinity` dates as DuckDB
    prints them (Python's date has no such value)."""
    as_text = (Infinite, *also)
    return [tuple(str(v) if isinstance(v, as_text) else v for v in r) for r in rows]


class LakeHandle:
    """What a dbt connection holds: the lake, its SQL runner, and the commit info that
    every snapshot written through this connection carries."""

    def __init__(self, credentials: DucklakeCredentials):
        self.credentials = credentials
        self.job_group = "dbt"  # the dbt connection's name once it runs SQL
        self.busy = threading.Event()  # a statement is running
        self.cancelled = threading.Event()

        def open_real() -> Lake:
            return open_lake(credentials)

        with OPENING:  # dbt threads open connections together; one creates the lake
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
        # what the home LakeSQL's snapshots carry; kept here until a statement needs it
        self._home_commit = CommitInfo(author=credentials.author)
        self._starting = threading.Lock()
        self.node: StagedNode | None = None  # a node building into a staging copy
        self.shown: set[tuple[str, str]] = set()  # (model, notice) already in the output

    @property
    def spark(self) -> SparkSession:
        """The SparkSession, started by the first statement that needs it: metadata-only
        work (run-operation ducklake_snapshots, listing relations) never waits for a JVM."""
        with self._starting:
            if self._spark is None:
                from .spark.warm import give_way

                give_way()  # a background warm-up stops: this statement needs Spark
                config = self.credentials.session_config(self._lake.data_path)
                spark = started_session(replace(config, console_log=spark_console_log()))
                if uses_s3(self._lake.data_path):
                    apply_s3(spark, self._lake.files.s3)
                self._spark = spark
            return self._spark

    def catalog_only(self, sql: str) -> CallRows | None:
        """The result of a statement that needs only the catalog (expiring snapshots),
        outside a BEGIN … COMMIT block: such a run-operation never starts a JVM."""
        if self._home is not None and self.sql.in_transaction:
            return None
        from .spark.calls import catalog_only_call

        try:
            return catalog_only_call(self.lake, sql)
        except (CallError, LakeError) as exc:
            raise LakeSQLError(str(exc)) from exc

    @property
    def home(self) -> LakeSQL:
        """Statements on the lake itself (not a node's staging copy)."""
        if self._home is None:
            from .spark.sql import LakeSQL

            self._home = LakeSQL(
                self.spark,
                self._lake,
                default_schema=self.credentials.schema,
                catalog_name=self.credentials.database,
                commit=self._home_commit,
            )
        return self._home

    @property
    def sql(self) -> LakeSQL:
        """Where statements go: the node's staging copy while one is open."""
        return self.node.sql if self.node is not None else self.home

    @property
    def lake(self) -> Lake:
        return self.node.sql.lake if self.node is not None else self._lake

    @property
    def atomic(self) -> bool:
        """Under `publish: atomic`: every statement goes to the build's staging copy."""
        return self._lake.staged_from is not None

    def stage_node(self) -> bool:
        """The node about to build has post-hooks inside its transaction: its statements
        commit into a staging copy until dbt's commit (`staged_node`). Not under
        `publish: atomic`, where the whole build is staged already."""
        self.discard_node()
        if self._lake.staged_from is not None:
            return False
        from .staged_node import StagedNode

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

    @property
    def written_as(self) -> dict[str, str]:
        """How the last statement's relations were named in Spark (for its errors)."""
        if self.node is None and self._home is None:
            return {}  # no statement reached Spark
        return self.sql.written_as

    @property
    def commit(self) -> CommitInfo:
        if self.node is not None:
            return self.node.sql.commit
        return self._home.commit if self._home is not None else self._home_commit

    def set_commit(self, message: str | None, extra_info: Any) -> None:
        """What the next snapshots carry; setting it starts no JVM."""
        info = CommitInfo(author=self.credentials.author, message=message, extra_info=extra_info)
        if self.node is not None:
            self.node.sql.commit = info
        elif self._home is not None:
            self._home.commit = info
        else:
            self._home_commit = info

    def ensure_commit_context(self, connection_name: str | None, target: str | None) -> None:
        """Snapshots written outside a node's build (hooks, run-operation, schema
        creation) still name the run: the command, the connection, the invocation id."""
        if self.commit.message is not None:
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
        from .spark.session import cancel_jobs

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
        """dbt closes a connection after each node and opens a new handle for the next:
        the catalog connections this one pooled are closed now, not when collected."""
        try:
            self.rollback()
        finally:
            self._lake.close()


def open_lake(credentials: DucklakeCredentials) -> Lake:
    """The profile's lake itself (not a staging copy)."""
    location = credentials.location()
    if location.backend == "sqlite" and credentials.data_path:
        # the embedded default: a new project's lake folder is created on first use
        os.makedirs(os.path.dirname(os.path.abspath(location.sqlite_path)), exist_ok=True)
    return Lake.open(
        location,
        data_path=credentials.data_path,
        metadata_schema=credentials.metadata_schema,
        files=credentials.file_io(),
        override_data_path=credentials.override_data_path,
        encrypted=credentials.encrypted,
    )


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


def spark_console_log() -> str | None:
    """Spark's console goes to `<log-path>/spark.log` unless dbt runs with --debug,
    so dbt's output holds dbt's lines only."""
    from dbt.flags import get_flags

    flags = get_flags()
    if getattr(flags, "DEBUG", False):
        return None
    return os.path.join(getattr(flags, "LOG_PATH", None) or "logs", "spark.log")


def started_session(config: SessionConfig) -> SparkSession:
    """The process's SparkSession; when getting it started a kept driver JVM
    (`spark_keep_alive`, on by default for local masters), dbt's console says so, as
    that JVM outlives the command."""
    from .spark.resident import take_started
    from .spark.session import get_session

    spark = get_session(config)
    log_path = take_started()
    if log_path is not None:
        logger.info(
            f"Started a Spark driver JVM that later dbt commands of this profile reuse; it "
            f"stops {config.keep_alive_s} s after the last one (spark_keep_alive: 0 gives "
            "each command its own JVM; `python -m dbt.adapters.ducklake.spark.resident "
            f"--stop` stops it now). Its console log: {log_path}"
        )
    return spark
