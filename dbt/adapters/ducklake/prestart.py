"""Spark started while dbt parses: a dbt command is a new process, and its first node
would otherwise wait for the JVM (seconds) and then for the first use of each code path
(more seconds). Commands that run nodes start the session in the background as soon as
dbt loads the adapter (a local JVM is launched before pyspark is imported:
`spark/driver_launch.py`), in local mode run dbt's usual statements once on a throwaway
lake (`spark/warm.py`), and shorten Python's thread switch interval (a py4j call waits for
the GIL when its answer comes). Metadata-only commands (`run-operation`, `ls`, `parse`,
`docs`, `debug`) never start a JVM. The profile's `spark_prestart: false` turns the
start and the warm-up off.
"""

from __future__ import annotations

import sys
import threading
from dataclasses import replace

from dbt.adapters.events.logging import AdapterLogger

from .credentials import DucklakeCredentials
from .environment import OPENING, dbt_command, open_lake, spark_console_log, started_session

logger = AdapterLogger("DuckLake")

# dbt commands whose nodes run SQL through Spark
NODE_COMMANDS = frozenset({"build", "run", "seed", "snapshot", "test", "show", "clone"})
# Every py4j call waits for the GIL when its answer arrives. With CPython's default switch
# interval (5 ms) a thread calling the JVM while another one computes (dbt's parse, the
# prestart's imports, another model's planning) waits up to that long per call, and a
# statement makes hundreds of calls. bench/warm_up.py, first MERGE model on a kept JVM:
# 1.36 s at 5 ms, 0.95 s at 1 ms (2.01x -> 1.22x the second).
SWITCH_INTERVAL_S = 0.001
_claimed = threading.Lock()
_started: list[threading.Thread] = []


def prestart_spark(credentials: DucklakeCredentials) -> threading.Thread | None:
    """Start (and warm) the process's SparkSession in a background thread, once, when
    the command will need it and no session runs yet; the thread, or None. Such a
    command also gets the shorter switch interval, prestarted or not."""
    if dbt_command() not in NODE_COMMANDS:
        return None
    _shorten_switch_interval()
    if not credentials.spark_prestart:
        return None
    with _claimed:
        if _started or _session_started():
            return None
        thread = threading.Thread(
            target=_start, args=(credentials,), name="ducklake-prestart", daemon=True
        )
        _started.append(thread)
    thread.start()
    return thread


def _shorten_switch_interval() -> None:
    """`SWITCH_INTERVAL_S`, or the user's own interval if that is shorter."""
    sys.setswitchinterval(min(sys.getswitchinterval(), SWITCH_INTERVAL_S))


def _session_started() -> bool:
    """Whether a session exists, without importing pyspark on dbt's main thread: a
    process that never imported the session module has none, and the import is left
    to the background thread."""
    started = getattr(sys.modules.get(f"{__package__}.spark.session"), "session_started", None)
    return started is not None and started()


def _start(credentials: DucklakeCredentials) -> None:
    logger.debug("starting Spark in the background while dbt parses")
    try:
        with OPENING:  # the lake's stored data path decides the session's jars (S3)
            lake = open_lake(credentials)
        try:
            data_path = lake.data_path
        finally:
            lake.close()
        config = credentials.session_config(data_path)
        config = replace(config, console_log=spark_console_log())
        if not _session_started():
            from .spark.driver_launch import launch_early

            # the JVM boots while pyspark is imported (the session then connects to it)
            launch_early(config)
        # what the first statement imports (sqlglot, pyarrow: ~1 s; pyspark's `lit`
        # imports its testing helpers and pandas with them on first use, 0.3-0.45 s),
        # imported while the JVM boots, or before a kept JVM is attached, rather than
        # by the first model (a small project's parse ends before the warm-up starts)
        from .spark import calls, sql  # noqa: F401
        from .spark.warm import import_what_lit_imports, warm_up

        import_what_lit_imports()

        spark = started_session(config)
        if config.local:
            done = warm_up(spark)
            logger.debug(f"Spark warmed in the background: {done} statements")
    except Exception as exc:  # the first statement starts Spark again and reports it
        reason = credentials.secrets().mask(str(exc))  # a catalog URL may hold a password
        logger.debug(f"starting Spark in the background failed: {reason}")
