"""A driver JVM that outlives dbt processes (profile field `spark_keep_alive`).

Every dbt command otherwise starts its own JVM: seconds before the first statement,
and then each code path runs cold (class loading, the JIT) once per process. With
`spark_keep_alive: N`, the first command starts a small keeper process that holds a
local Spark driver; later commands with the same settings attach to it over py4j (as
`spark-submit` hands a Python program its gateway), each in its own SparkSession, and
find it started and compiled. The keeper exits after N seconds without a dbt process.

Files, in a folder of the user's cache, per key (the settings, Java, pyspark, this
Python and this package's code, so a changed setting or upgrade starts a new JVM):
`<key>.json` the gateway's port and secret (mode 0600); `<key>.alive` a lock the keeper
holds while it lives; `<key>.clients` a lock every attached process holds shared, and
a line with its pid; `<key>.start` a lock held while a keeper is started or retired;
`<key>.log` the keeper's lines and the JVM's console.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import json
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import IO, Any

from .class_archive import cache_folder
from .driver_jvm import driver_settings, tail_of
from .errors import SessionConfigError

log = logging.getLogger("dbt.adapters.ducklake.spark")

_START_TIMEOUT_S = 180.0
_POLL_S = 0.1
_IDLE_CHECK_S = 2.0
_MAX_ATTACHES = 500
_held: list[IO[bytes]] = []  # this process's shared lock on its keeper's clients file
_started: list[Path] = []  # the log of a keeper this process started, until announced


def folder() -> Path:
    return cache_folder().parent / "resident"


def attach(settings: Mapping[str, str], master: str, app_name: str, keep_alive_s: int) -> Any:
    """A SparkSession of its own on the kept JVM for these settings, starting the keeper
    if none runs."""
    spec = {"settings": dict(settings), "master": master, "app_name": app_name}
    key = _key(spec)
    base = folder() / key
    base.parent.mkdir(parents=True, exist_ok=True)
    with _locked(base.with_suffix(".start"), fcntl.LOCK_EX):
        state = _read_state(base)
        if state is None:
            _tidy()
            state = _start_keeper(base, {**spec, "keep_alive_s": keep_alive_s})
            _started.append(base.with_suffix(".log"))
        clients = open(base.with_suffix(".clients"), "ab")  # noqa: SIM115 held until exit
        fcntl.flock(clients, fcntl.LOCK_SH)
        # a line per attach: the keeper retires after many, and stops a dead one's jobs
        clients.write(f"{os.getpid()}\n".encode())
        clients.flush()
        _held.append(clients)
    log.info("attached to the kept Spark driver (pid %s, %s)", state["pid"], base)
    return _session_on(state)


def take_started() -> Path | None:
    """The log of the keeper this process started, once: a process that outlives the
    command is worth a line on the user's console when it starts."""
    return _started.pop() if _started else None


def _key(spec: Mapping[str, Any]) -> str:
    import pyspark

    from .class_archive import archive_key

    parts = [
        json.dumps(spec, sort_keys=True),
        sys.executable,
        os.environ.get("PYSPARK_PYTHON", ""),
        archive_key(spec["settings"]),  # Java, pyspark's jars, the added jars
        pyspark.__version__,
        _code_stamp(),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


def _code_stamp() -> str:
    """This package's code as Python workers will import it: a kept JVM reuses its
    workers, which must not run code older than the driver's."""
    package = Path(__file__).resolve().parent.parent
    newest = max((p.stat().st_mtime_ns for p in package.rglob("*.py")), default=0)
    return f"{package}:{newest}"


@contextlib.contextmanager
def _locked(path: Path, mode: int) -> Iterator[None]:
    with open(path, "ab") as f:
        fcntl.flock(f, mode)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _read_state(base: Path) -> dict[str, Any] | None:
    """The running keeper's gateway, if the keeper lives (it holds its `.alive` lock
    while it runs; the OS drops the lock when it dies, before any zombie state or pid
    reuse) and its port answers."""
    try:
        state = json.loads(base.with_suffix(".json").read_text())
        with open(base.with_suffix(".alive"), "ab") as alive:
            try:
                fcntl.flock(alive, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                pass  # held by the keeper: it lives
            else:
                return None
        socket.create_connection(("127.0.0.1", int(state["port"])), timeout=2).close()
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return state


def _tidy() -> None:
    """Remove the files of keepers that stopped a week ago (a new key per upgrade)."""
    week_ago = time.time() - 7 * 24 * 3600
    for log_file in folder().glob("*.log"):
        base = log_file.with_suffix("")
        with contextlib.suppress(OSError):
            if log_file.stat().st_mtime < week_ago and _read_state(base) is None:
                for path in folder().glob(f"{base.name}.*"):
                    if path.is_dir():
                        shutil.rmtree(path, ignore_errors=True)
                    else:
                        path.unlink(missing_ok=True)


def _start_keeper(base: Path, spec: Mapping[str, Any]) -> dict[str, Any]:
    base.with_suffix(".json").unlink(missing_ok=True)
    spec_path = base.with_suffix(".spec")
    fd = os.open(spec_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)  # may hold secrets
    with os.fdopen(fd, "w") as f:
        json.dump(spec, f)
    log_path = base.with_suffix(".log")
    log.info("starting a kept Spark driver; its console goes to %s", log_path)
    with open(log_path, "ab") as out:
        keeper = subprocess.Popen(
            [sys.executable, "-m", __name__, str(base)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=out,
            start_new_session=True,  # outlives this process and its terminal's signals
        )
    deadline = time.monotonic() + _START_TIMEOUT_S
    while time.monotonic() < deadline:
        state = _read_state(base)
        if state is not None:
            return state
        if keeper.poll() is not None:
            break
        time.sleep(_POLL_S)
    keeper.kill()
    raise SessionConfigError(
        f"the kept Spark driver did not start (spark_keep_alive); its log is {log_path}:\n"
        + tail_of(log_path)
    )


def _session_on(state: Mapping[str, Any]) -> Any:
    """A new SparkSession (its own SQL settings and temporary views) on the kept
    SparkContext, reached through its py4j gateway."""
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    from .gateway import connect_gateway

    gateway = connect_gateway(int(state["port"]), str(state["secret"]))
    SparkContext._ensure_initialized(gateway=gateway)
    jvm = gateway.jvm
    jsc = jvm.JavaSparkContext.fromSparkContext(jvm.org.apache.spark.SparkContext.getOrCreate())
    context = SparkContext(gateway=gateway, jsc=jsc)
    shared = jvm.org.apache.spark.sql.SparkSession.getDefaultSession().get()
    session = SparkSession(context, jsparkSession=shared.newSession())
    atexit.register(_release, gateway)
    return session


def _release(gateway: Any) -> None:
    """Let the kept JVM collect what this process used. py4j keeps every object handed
    to Python until Python says it is gone, which an exiting process never says: each
    dbt command would leave its DataFrames and plans in the JVM."""
    from py4j.finalizer import ThreadSafeFinalizer

    client = gateway._gateway_client
    prefix = f"{client.address}{client.port}"
    with contextlib.suppress(Exception):  # the JVM may be gone; nothing to release then
        for key in list(ThreadSafeFinalizer.finalizers):
            if key.startswith(prefix):
                client.garbage_collect_object(key[len(prefix) :], enqueue=False)
        gateway.close()


def _keep(base: Path) -> None:
    """The keeper process: start the driver, publish its gateway, and stop it once no
    dbt process has held the clients lock for the keep-alive time."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    alive = open(base.with_suffix(".alive"), "ab")  # noqa: SIM115 held while this lives
    fcntl.flock(alive, fcntl.LOCK_EX)
    spec = json.loads(base.with_suffix(".spec").read_text())
    base.with_suffix(".spec").unlink()
    settings = driver_settings(spec["settings"], lambda: str(base.with_suffix(".warehouse")))
    conf = SparkConf(loadDefaults=False)
    conf.setAll([*settings.items(), ("spark.master", spec["master"])])
    conf.setAppName(spec["app_name"])
    gateway = launch_gateway(conf)  # the JVM's output is this process's (the log file)
    SparkContext._ensure_initialized(gateway=gateway)
    spark = SparkSession.builder.config(conf=conf).getOrCreate()
    state = {"port": gateway.java_parameters.port, "secret": gateway.java_parameters.auth_token}
    state["pid"] = os.getpid()
    base.with_suffix(".clients").write_bytes(b"")  # the attach count starts again
    # `--stop` (SIGTERM) stops the driver as an idle keeper would
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        _publish(base, state)
        _say(f"driver ready, gateway port {state['port']}, keep-alive {spec['keep_alive_s']} s")
        _wait_until_idle(base, float(spec["keep_alive_s"]), spark)
    finally:
        _unpublish(base)
        _say("stopping the driver JVM")
        spark.stop()
        _say("stopped")


def _say(message: str) -> None:
    """A line in the keeper's log (`<key>.log`, beside the JVM's console)."""
    print(f"{time.strftime('%y/%m/%d %H:%M:%S')} keeper {os.getpid()}: {message}", flush=True)


def _publish(base: Path, state: Mapping[str, Any]) -> None:
    partial = base.with_suffix(f".json.{os.getpid()}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(state, f)
    os.replace(partial, base.with_suffix(".json"))


def _unpublish(base: Path) -> None:
    """Remove this keeper's state file (not a successor's)."""
    with contextlib.suppress(OSError, ValueError):
        if json.loads(base.with_suffix(".json").read_text()).get("pid") == os.getpid():
            base.with_suffix(".json").unlink()


def _wait_until_idle(base: Path, keep_alive_s: float, spark: Any) -> None:
    """Return once no dbt process has been attached for `keep_alive_s`, or once idle
    after `_MAX_ATTACHES` (Spark keeps a little of every session it made)."""
    last_used, busy = time.monotonic(), False
    gone: set[str] = set()  # attached processes known dead
    jvm = spark.sparkContext._gateway.proc
    while jvm is None or jvm.poll() is None:
        time.sleep(_IDLE_CHECK_S)
        attached = base.with_suffix(".clients").read_text().split()
        gone |= _stop_jobs_of_dead(spark, set(attached) - gone)
        # retire under the start lock: a process that read the state attaches first
        with _locked(base.with_suffix(".start"), fcntl.LOCK_EX):
            if _has_clients(base):
                last_used, busy = time.monotonic(), True
                continue
            if busy:  # the last process left: drop what a killed one may have cached
                spark.catalog.clearCache()
                busy = False
            worn = len(attached) >= _MAX_ATTACHES
            if worn or time.monotonic() - last_used >= keep_alive_s:
                _unpublish(base)
                return


def _stop_jobs_of_dead(spark: Any, pids: set[str]) -> set[str]:
    """Cancel the Spark jobs of attached processes that died (killed mid-statement):
    nothing of theirs commits, and their jobs would only take the cores. Which died."""
    dead = {pid for pid in pids if not pid.isdigit() or not running(int(pid))}
    for pid in dead:
        if pid.isdigit():
            spark.sparkContext.cancelJobsWithTag(process_tag(int(pid)))
    return dead


def running(pid: int) -> bool:
    """Whether process `pid` runs: not gone, and not a zombie that nobody reaped yet
    (an orphan waits for the machine's init to collect it)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc (macOS): ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def process_tag(pid: int) -> str:
    """The job tag every Spark job of process `pid` carries on a kept JVM."""
    return f"dbt-process-{pid}"


def _has_clients(base: Path) -> bool:
    with open(base.with_suffix(".clients"), "ab") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(f, fcntl.LOCK_UN)
        return False


def stop_all() -> int:
    """Stop every kept driver of this user (`python -m ... --stop`); how many."""
    stopped = 0
    for path in folder().glob("*.json"):
        state = _read_state(path.with_suffix(""))
        if state is not None:
            os.kill(int(state["pid"]), signal.SIGTERM)
            stopped += 1
        path.unlink(missing_ok=True)
    return stopped


if __name__ == "__main__":
    if sys.argv[1:] == ["--stop"]:
        print(f"stopped {stop_all()} kept Spark driver(s)")
    else:
        _keep(Path(sys.argv[1]))
