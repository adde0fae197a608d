"""One SparkSession per process, configured for DuckLake's Parquet conventions."""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
from collections.abc import Mapping
from typing import Any

from pyspark.sql import SparkSession

from .class_archive import note_dumping_jvm
from .driver_jvm import driver_settings, tail_of
from .driver_launch import (
    LAUNCH_ONLY,
    EarlyDriver,
    export_executors_python,
    launch_key,
    session_settings,
    take_early,
    throwaway_warehouse,
)
from .errors import SessionConfigError
from .python_path import drop_java_only_jars
from .session_config import REQUIRED_CONF, SessionConfig
from .shipping import ship_engine
from .versions import OLDEST_SPARK, pyspark_version, version_of

log = logging.getLogger("dbt.adapters.ducklake.spark")

_lock = threading.Lock()
_session: SparkSession | None = None
_session_config: SessionConfig | None = None
# whether the session is on a kept JVM (resident.py), which outlives this process
_resident = False


def get_session(config: SessionConfig | None = None) -> SparkSession:
    """The process's SparkSession, built once from `config` and reused afterwards."""
    global _session, _session_config, _resident
    config = config or SessionConfig()
    with _lock:
        if _session is not None:
            if _session_config is not None and config != _session_config:
                log.debug("reusing the process's SparkSession; a second config is ignored")
            return _session
        config.validate()
        require_supported_spark("pyspark", pyspark_version(), connect=bool(config.remote))
        local = config.local
        export_executors_python(config)
        if not local:
            check_reachable(config.remote or config.master or "")
        settings = session_settings(config)
        if not config.remote:
            _numpy_converters_ask_numpy_values_only()
        if config.keep_alive_s:
            from .resident import attach

            session = attach(
                settings, config.master or "local[*]", config.app_name, config.keep_alive_s
            )
            _session, _session_config, _resident = session, config, True
            drop_java_only_jars()
            return session
        session = _build(config, settings)
        drop_java_only_jars()
        if not local:
            ship_engine(session, connect=bool(config.remote))
        _session, _session_config = session, config
        log.info("SparkSession ready (%s)", config.remote or config.master or "local[*]")
        return _session


def _build(config: SessionConfig, settings: dict[str, str]) -> SparkSession:
    """A session of this process's own JVM (local or a cluster's driver) or of a Spark
    Connect server."""
    early: EarlyDriver | None = None
    if not config.remote:
        # a JVM the prestart launched for these settings (driver_launch.py) runs with
        # its own driver settings; any other is stopped
        early = take_early(launch_key(config, settings), config.console_log or "")
        if early is not None:
            settings = {k: v for k, v in early.launched.items() if k not in LAUNCH_ONLY}
        else:
            settings = driver_settings(settings, throwaway_warehouse)
    builder: Any = SparkSession.builder.appName(config.app_name)
    if config.remote:
        builder = builder.remote(config.remote)
    else:
        builder = builder.master(config.master or "local[*]")
        if config.console_log:
            _start_jvm_logging_to(
                config.console_log,
                {
                    **settings,
                    "spark.master": config.master or "local[*]",
                    "spark.app.name": config.app_name,
                },
                early,
            )
    for key, value in settings.items():
        builder = builder.config(key, value)
    if config.console_log:
        _quiet_python_error_loggers()
    session = builder.getOrCreate()
    if not config.remote:
        _name_the_archive_dumper(session)
    if config.remote:
        # the server's Spark, which may differ from this client's
        server = f"the Spark Connect server {config.remote}"
        require_supported_spark(server, session.version, connect=True)
        # Spark Connect sessions take SQL configs at runtime
        for key, value in REQUIRED_CONF.items():
            session.conf.set(key, value)
    return session


def _name_the_archive_dumper(session: SparkSession) -> None:
    """If this JVM dumps the class archive at its exit, say which JVM it is, so the
    next session takes the archive as soon as the dump ends (class_archive.py)."""
    jvm = session._jvm
    if jvm is not None:
        note_dumping_jvm(lambda: int(jvm.java.lang.ProcessHandle.current().pid()))


class _NumpyValuesOnly:
    """One of pyspark's py4j converters of numpy values, asked about numpy values only.

    pyspark's own check imports `pyspark.testing.utils`, which looks for pandas, scipy
    and more: 0.3 s (pyspark 4.3) to 1.2 s (4.1) of the first py4j call that passes an
    argument, in every new process. A value can be a numpy one only once numpy is
    imported, so the answer is the same."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    def can_convert(self, obj: Any) -> bool:
        # numpy may be mid-import on another thread (the warm-up imports pandas): its
        # module is in sys.modules before its types are, and no value is one of them yet
        numpy = sys.modules.get("numpy")
        types = (getattr(numpy, "ndarray", None), getattr(numpy, "generic", None))
        return (
            None not in types
            and isinstance(obj, types)  # type: ignore[arg-type]
            and bool(self.inner.can_convert(obj))
        )

    def convert(self, obj: Any, gateway_client: Any) -> Any:
        return self.inner.convert(obj, gateway_client)


def _numpy_converters_ask_numpy_values_only() -> None:
    from py4j import protocol

    numpy_converters = ("NumpyScalarConverter", "NumpyArrayConverter")
    protocol.INPUT_CONVERTER[:] = [
        _NumpyValuesOnly(c) if type(c).__name__ in numpy_converters else c
        for c in protocol.INPUT_CONVERTER
    ]


def session_started() -> bool:
    """Whether this process's SparkSession exists (or is being built)."""
    return _session is not None or _lock.locked()


def require_supported_spark(what: str, version: str, *, connect: bool = False) -> None:
    """Refuse a Spark older than OLDEST_SPARK, or than 4.0 through Spark Connect (not
    tested on 3.5), naming the version found."""
    if version_of(version) < OLDEST_SPARK:
        raise SessionConfigError(
            f"{what} is Spark {version}; dbt-ducklake needs Spark 3.5 or later (tested: "
            "3.5, 4.0, 4.1, 4.2 and 4.3)"
        )
    if connect and version_of(version) < (4, 0):
        raise SessionConfigError(
            f"{what} is Spark {version}; dbt-ducklake through Spark Connect needs Spark "
            "4.0 or later on both ends (tested: 4.0 to 4.3); with Spark 3.5 use "
            "spark_master (local or a cluster)"
        )


_CONNECT_TIMEOUT_S = 10.0
_DEFAULT_PORTS = {"spark": 7077, "sc": 15002}


def check_reachable(url: str, timeout_s: float = _CONNECT_TIMEOUT_S) -> None:
    """Fail fast when a cluster master or Connect server does not answer.

    Spark itself retries an unreachable standalone master for minutes (and then leaves
    a context without executors), and the Connect client backs off for as long, so
    the user would see a hang instead of the URL they mistyped.
    """
    scheme, _, rest = url.partition("://")
    if scheme not in _DEFAULT_PORTS:
        return  # yarn, k8s:// and others are reached through their own clients
    # sc://host:port/;token=… : what follows the authority may hold secrets
    authority = rest.split("/", 1)[0].split(";", 1)[0]
    shown = f"{scheme}://{authority}"
    failures = []
    for hostport in authority.split(","):  # spark://a:7077,b:7077 lists standby masters
        host, _, port = hostport.rpartition(":") if ":" in hostport else (hostport, "", "")
        address = (host.strip("[]") or hostport, int(port or _DEFAULT_PORTS[scheme]))
        try:
            with socket.create_connection(address, timeout=timeout_s):
                return
        except OSError as exc:
            failures.append(f"{address[0]}:{address[1]}: {exc.strerror or exc}")
    what = "Spark Connect server" if scheme == "sc" else "Spark master"
    raise ConnectionError(
        f"{what} {shown} is not reachable ({'; '.join(failures)}); "
        f"check spark_{'remote' if scheme == 'sc' else 'master'} in the profile "
        "and that the cluster is up"
    )


def _start_jvm_logging_to(
    path: str, settings: Mapping[str, str], early: EarlyDriver | None = None
) -> None:
    """Start the driver JVM with its stdout and stderr in `path`.

    pyspark starts the JVM on first use with this process's streams, so Spark's log4j
    console and the JVM's own warnings would interleave with dbt's output. Started
    here first, the builder reuses this JVM; settings are passed exactly as pyspark
    would (`--conf k=v` to spark-submit), so driver memory and Java options still apply.
    """
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None:  # a JVM from an earlier session in this process
        if early is not None:
            early.stop()
        return
    if early is not None:
        _connect_to(early)
        return
    conf = SparkConf(loadDefaults=False)
    conf.setAll(list(settings.items()))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "ab") as out:
        try:
            gateway = launch_gateway(conf, popen_kwargs={"stdout": out, "stderr": out})
        except Exception as exc:
            raise RuntimeError(
                f"Spark's JVM did not start ({exc}); its output is in {path}:\n" + tail_of(path)
            ) from exc
    SparkContext._ensure_initialized(gateway=gateway)
    log.debug("Spark's console output goes to %s", path)


def _connect_to(early: EarlyDriver) -> None:
    """This process's SparkContext on the JVM the prestart launched, reached through
    the port and secret the JVM wrote (`gateway.py`: the environment is left alone)."""
    from pyspark import SparkContext

    from .gateway import connect_gateway

    gateway = early.gateway()
    if gateway is None:
        early.stop()
        raise RuntimeError(
            f"Spark's JVM did not start; its output is in {early.console_log}:\n"
            + tail_of(early.console_log)
        )
    port, secret = gateway
    client = connect_gateway(port, secret, early.process)
    SparkContext._ensure_initialized(gateway=client)
    log.debug("Spark's console output goes to %s (a JVM started early)", early.console_log)


def _quiet_python_error_loggers() -> None:
    """pyspark logs every failed query as a JSON line with a stack trace on stderr;
    the error itself still reaches the caller, so these loggers only add noise
    (pyspark 3.5 has neither them nor their module)."""
    try:
        from pyspark.logger import PySparkLogger
    except ImportError:
        return

    for name in ("SQLQueryContextLogger", "DataFrameQueryContextLogger"):
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL)


def stop_session() -> None:
    """Stop the process's session; one on a kept JVM is left running for others."""
    global _session, _session_config, _resident
    with _lock:
        if _session is not None and not _resident:
            _session.stop()
        _session, _session_config, _resident = None, None, False


def label_jobs(spark: SparkSession, group: str, description: str) -> None:
    """Spark jobs started by this thread from now on belong to `group` (shown in the
    Spark UI with `description`), so `cancel_jobs` can stop exactly them."""
    if _is_connect(spark):
        spark.clearTags()
        spark.addTag(_tag(group))
    else:
        spark.sparkContext.setJobGroup(_tag(group), description, interruptOnCancel=True)
        if _resident:  # the keeper stops the jobs of a process that was killed
            from .resident import process_tag

            spark.sparkContext.addJobTag(process_tag(os.getpid()))


def cancel_jobs(spark: SparkSession, group: str) -> None:
    """Stop the running jobs of `group` (their statements fail; nothing commits)."""
    if _is_connect(spark):
        spark.interruptTag(_tag(group))
    else:
        spark.sparkContext.cancelJobGroup(_tag(group))


def _tag(group: str) -> str:
    # Spark Connect tags may not contain commas; the process id, as processes sharing
    # a kept JVM (resident.py) share its job groups
    safe = "".join(ch if ch.isalnum() or ch in "._-" else "_" for ch in group)
    return f"dbt-{os.getpid()}-{safe}"


def _is_connect(spark: SparkSession) -> bool:
    return type(spark).__module__.startswith("pyspark.sql.connect")
