"""The driver JVM launched before pyspark is imported.

A dbt command's first model waits for its JVM. pyspark starts that JVM only once it is
imported (0.3-0.7 s with numpy, more while dbt parses beside it), so the prestart
(`prestart.py`) launches it first, here, with the very settings the session will ask
for: the settings are computed without pyspark, and `spark-submit` is started the way
pyspark's `launch_gateway` starts it (a file for the gateway's port and secret, stdin
held open so the JVM exits with this process). The session then connects to it
(`session.py`) instead of starting another, or stops it when its settings differ.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .driver_jvm import driver_settings
from .session_config import DEFAULT_CONF, REQUIRED_CONF, SessionConfig
from .shipping import is_local_master
from .versions import (
    OLDEST_SPARK,
    pyspark_folder,
    pyspark_version,
    spark_3_defaults,
    version_of,
)

ENGINE_JAR = Path(__file__).resolve().parent.parent / "jars" / "ducklake-jvm.jar"
_POLL_S = 0.01


def with_engine_jar(conf: Mapping[str, Any]) -> dict[str, str]:
    """`conf` with the adapter's JVM classes added to `spark.jars` (the driver and every
    executor load them from there), when the package has them."""
    out = {k: str(v) for k, v in conf.items()}
    if not ENGINE_JAR.is_file():
        return out
    given = [j for j in out.get("spark.jars", "").split(",") if j]
    if str(ENGINE_JAR) not in given:
        out["spark.jars"] = ",".join([*given, str(ENGINE_JAR)])
    return out


def session_settings(config: SessionConfig) -> dict[str, str]:
    """The Spark settings of a session of `config`, before the driver JVM's own."""
    settings = {
        **DEFAULT_CONF,
        **spark_3_defaults(),
        **{k: str(v) for k, v in config.conf.items()},
        **REQUIRED_CONF,
    }
    if not config.remote:
        settings = with_engine_jar(settings)  # JVM classes: encrypted lakes, Brotli files
    return settings


def executors_python(config: SessionConfig, environment: str | None) -> str | None:
    """The interpreter Python tasks run, for `PYSPARK_PYTHON` (pyspark reads only the
    environment, not `spark.pyspark.python`, when this process starts the driver).

    The profile's `spark.pyspark.python` wins; local executors run this interpreter,
    which has the adapter installed; a cluster's executors keep their own Python and
    get the engine shipped; a Connect server decides for its own workers.
    """
    if config.remote:
        return None
    chosen = config.conf.get("spark.pyspark.python")
    if chosen:
        return str(chosen)
    if is_local_master(config.master):
        return environment or sys.executable
    return None


def export_executors_python(config: SessionConfig) -> None:
    """Set `PYSPARK_PYTHON` to `executors_python` before this process starts a driver
    (only ever set, never removed: other threads may be reading the environment)."""
    python = executors_python(config, os.environ.get("PYSPARK_PYTHON"))
    if python:
        os.environ["PYSPARK_PYTHON"] = python


# what a launch adds to the session's settings, beyond the driver JVM's own
LAUNCH_ONLY = ("spark.master", "spark.app.name")


def launch_key(config: SessionConfig, settings: Mapping[str, str]) -> dict[str, str]:
    """What decides the JVM a session of `config` with `settings` is launched with."""
    return {
        **settings,
        "spark.master": config.master or "local[*]",
        "spark.app.name": config.app_name,
    }


def throwaway_warehouse() -> str:
    """A folder for Spark's own warehouse, which DuckLake never uses: Spark's default,
    `spark-warehouse/` in the working directory, would be left (empty) in every dbt
    project. Removed at exit if still empty."""
    path = tempfile.mkdtemp(prefix="dbt-ducklake-spark-warehouse-")
    atexit.register(_remove_if_empty, path)
    return path


def _remove_if_empty(path: str) -> None:
    for inner in (os.path.join(path, "default"), path):  # hold no user data: rmdir only
        with contextlib.suppress(OSError):
            os.rmdir(inner)


@dataclass
class EarlyDriver:
    """A driver JVM started ahead of its session."""

    asked: dict[str, str]  # the session's settings it was started for
    launched: dict[str, str]  # what it runs with (driver settings, master, app name)
    console_log: str
    process: subprocess.Popen[bytes]
    info_file: str

    def gateway(self) -> tuple[int, str] | None:
        """The gateway's port and secret once the JVM wrote them; None if it exited."""
        while self.process.poll() is None and not os.path.isfile(self.info_file):
            time.sleep(_POLL_S)
        try:
            with open(self.info_file, "rb") as info:
                port = int.from_bytes(info.read(4), "big", signed=True)
                length = int.from_bytes(info.read(4), "big", signed=True)
                secret = info.read(length).decode("utf-8")
        except OSError:
            return None
        finally:
            shutil.rmtree(os.path.dirname(self.info_file), ignore_errors=True)
        return port, secret

    def stop(self) -> None:
        """Stop a JVM no session will use (it would otherwise live until dbt exits)."""
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait(timeout=10)
        shutil.rmtree(os.path.dirname(self.info_file), ignore_errors=True)


_lock = threading.Lock()
_early: EarlyDriver | None = None
_asked = False  # a session was built: a JVM launched after that is not wanted


def launch_early(config: SessionConfig) -> None:
    """Start the driver JVM a session of `config` will connect to, before pyspark is
    imported: for this process's own JVM on a local master, its output going to the
    console log. Nothing is started for other sessions (a kept JVM, a cluster's
    driver, Spark Connect, no console log) or a pyspark older than 3.5."""
    global _early
    local_jvm = config.local and not config.remote and not config.keep_alive_s
    home = _spark_home()
    console_log = config.console_log
    if not (local_jvm and console_log and home) or os.name == "nt":
        return
    if os.environ.get("SPARK_TESTING"):
        return  # pyspark launches its JVM differently then
    if version_of(pyspark_version()) < OLDEST_SPARK:
        return  # the session refuses it, naming the version
    settings = session_settings(config)
    asked = launch_key(config, settings)
    launched = launch_key(config, driver_settings(settings, throwaway_warehouse))
    export_executors_python(config)  # as the session does before its own launch
    folder = tempfile.mkdtemp(prefix="dbt-ducklake-gateway-")
    info_file = os.path.join(folder, "gateway")
    command = [os.path.join(home, "bin", "spark-submit")]
    for key, value in launched.items():
        command += ["--conf", f"{key}={value}"]
    command += shlex.split(os.environ.get("PYSPARK_SUBMIT_ARGS", "pyspark-shell"))
    environment = {**os.environ, "SPARK_CONNECT_MODE": "0"}
    environment["_PYSPARK_DRIVER_CONN_INFO_PATH"] = info_file
    os.makedirs(os.path.dirname(os.path.abspath(console_log)), exist_ok=True)
    with open(console_log, "ab") as out:
        process = subprocess.Popen(
            command,
            stdin=subprocess.PIPE,  # the JVM exits when this process's end of it closes
            stdout=out,
            stderr=out,
            env=environment,
            preexec_fn=_ignore_interrupts,  # Ctrl-C is dbt's to handle, as pyspark does
        )
    early = EarlyDriver(asked, launched, console_log, process, info_file)
    with _lock:
        wanted = not _asked
        if wanted:
            _early = early
    if not wanted:  # another thread's session started meanwhile
        early.stop()


def take_early(asked: Mapping[str, str], console_log: str) -> EarlyDriver | None:
    """The JVM started early for a session with `asked` settings and console log, or
    None (none started, or for other settings: that one is stopped)."""
    global _early, _asked
    with _lock:
        early, _early, _asked = _early, None, True
    if early is None:
        return None
    if early.asked != dict(asked) or early.console_log != console_log:
        early.stop()
        return None
    return early


def _spark_home() -> str | None:
    """Where `bin/spark-submit` is, as pyspark finds it: SPARK_HOME, else the package."""
    if os.environ.get("SPARK_HOME"):
        return os.environ["SPARK_HOME"]
    home = pyspark_folder()
    return home if home and os.path.isfile(os.path.join(home, "bin", "spark-submit")) else None


def _ignore_interrupts() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)
