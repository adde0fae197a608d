"""Spark processes started from the pyspark wheel on 127.0.0.1: a standalone master and
worker, a Spark Connect server, and the executors' Python, a venv that has only
`pyspark[sql]`. Used by the cluster tests and by `./dev cluster up|down`.

Every process is started directly as its JVM (`spark-class` and `spark-submit` end in
`exec`), so the pid we keep is the one to stop.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import pyspark

from tests import venvs

SPARK_HOME = os.path.dirname(pyspark.__file__)
LOOPBACK = "127.0.0.1"


def free_port(preferred: int = 0) -> int:
    """`preferred` when nothing listens there, else any free port."""
    with socket.socket() as s:
        try:
            s.bind((LOOPBACK, preferred))
        except OSError:
            s.bind((LOOPBACK, 0))
        return int(s.getsockname()[1])


def cached_executor_venv() -> str:
    """The executors' venv under a stable path keyed by the pyspark and Python versions
    (`$XDG_CACHE_HOME/dbt-ducklake/`, else `~/.cache/dbt-ducklake/`), so test runs and
    fresh clones on one machine build it once."""
    root = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "dbt-ducklake"
    root.mkdir(parents=True, exist_ok=True)
    version = f"pyspark-{pyspark.__version__}-py{sys.version_info[0]}.{sys.version_info[1]}"
    with open(root / f"executor-venv-{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs at once: one builds, the other waits
        return executor_venv(root / f"executor-venv-{version}")


def executor_venv(path: Path) -> str:
    """A venv with pyspark[sql] at the driver's pyspark version and nothing else, the
    Python a real cluster's executors have; built once, reused while its marker holds."""
    python = path / "bin" / "python"
    marker = path / "pyspark-version"
    if marker.exists() and marker.read_text() == pyspark.__version__ and python.exists():
        return str(python)
    venvs.install(venvs.create(path), f"pyspark[sql]=={pyspark.__version__}")
    marker.write_text(pyspark.__version__)
    return str(python)


def _env(python: str | None = None) -> dict[str, str]:
    env = {**os.environ, "SPARK_HOME": SPARK_HOME, "SPARK_LOCAL_IP": LOOPBACK, "TZ": "UTC"}
    # the driver's venv must not leak into processes that stand for other machines
    for name in ("VIRTUAL_ENV", "PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):
        env.pop(name, None)
    if python:
        env["PYSPARK_PYTHON"] = python
    return env


def _start(argv: list[str], log: Path, env: dict[str, str]) -> int:
    # in the log's folder: Python workers put their working directory first on sys.path,
    # and a source checkout there would hide what executors lack
    with open(log, "ab") as out:
        process = subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            cwd=log.parent,
            start_new_session=True,
        )
    return process.pid


def _wait_listening(port: int, pid: int, log: Path, timeout_s: float = 120) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex((LOOPBACK, port)) == 0:
                return
        if not _alive(pid):
            raise RuntimeError(f"process {pid} exited before listening on {port}; see {log}")
        time.sleep(0.3)
    raise RuntimeError(f"nothing listened on {port} after {timeout_s:.0f} s; see {log}")


def _alive(pid: int) -> bool:
    try:
        waited, _ = os.waitpid(pid, os.WNOHANG)
        if waited == pid:
            return False
    except ChildProcessError:
        pass  # not our child (./dev cluster down in a later process)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def stop(pid: int, timeout_s: float = 30) -> None:
    """SIGTERM, then SIGKILL if the JVM has not exited in time."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not _alive(pid):
                return
            time.sleep(0.2)


@dataclass
class Standalone:
    master_url: str
    master_pid: int
    worker_pid: int
    master_ui: int
    workdir: str  # the worker's work dir holds each application's executor logs

    def stop(self) -> None:
        stop(self.worker_pid)
        stop(self.master_pid)


def start_standalone(
    workdir: Path, cores: int = 2, memory: str = "2g", port: int = 0
) -> Standalone:
    """A master and one worker; executors take their Python from the driver's
    `spark.pyspark.python`, as on any cluster."""
    workdir.mkdir(parents=True, exist_ok=True)
    port, ui, worker_ui = free_port(port), free_port(), free_port()
    spark_class = os.path.join(SPARK_HOME, "bin", "spark-class")
    env = _env()
    master_log = workdir / "master.log"
    master_argv = ["--host", LOOPBACK, "--port", str(port), "--webui-port", str(ui)]
    master_pid = _start(
        [spark_class, "org.apache.spark.deploy.master.Master", *master_argv], master_log, env
    )
    _wait_listening(port, master_pid, master_log)
    url = f"spark://{LOOPBACK}:{port}"
    worker_log = workdir / "worker.log"
    worker_argv = ["--host", LOOPBACK, "--cores", str(cores), "--memory", memory]
    worker_argv += ["--webui-port", str(worker_ui), "--work-dir", str(workdir / "work"), url]
    worker_pid = _start(
        [spark_class, "org.apache.spark.deploy.worker.Worker", *worker_argv], worker_log, env
    )
    cluster = Standalone(url, master_pid, worker_pid, ui, str(workdir))
    try:
        _wait_registered(cluster, worker_log)
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _wait_registered(cluster: Standalone, log: Path, timeout_s: float = 120) -> None:
    """The master accepts applications before a worker has joined; jobs would then
    wait for resources, so readiness is the worker's registration."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if log.exists() and "Successfully registered with master" in log.read_text(
            errors="replace"
        ):
            return
        if not _alive(cluster.worker_pid):
            raise RuntimeError(f"the worker exited; see {log}")
        time.sleep(0.3)
    raise RuntimeError(f"the worker did not register with {cluster.master_url}; see {log}")


@dataclass
class ConnectServer:
    url: str
    pid: int

    def stop(self) -> None:
        stop(self.pid)


def start_connect(
    workdir: Path,
    python: str,
    master: str = "local[2]",
    conf: dict[str, str] | None = None,
    port: int = 0,
) -> ConnectServer:
    """A Spark Connect server whose Python workers run `python`."""
    workdir.mkdir(parents=True, exist_ok=True)
    port = free_port(port)
    settings = {
        "spark.connect.grpc.binding.port": str(port),
        "spark.connect.grpc.binding.address": LOOPBACK,
        "spark.sql.shuffle.partitions": "2",
        "spark.ui.enabled": "false",
        "spark.sql.session.timeZone": "UTC",
        **(conf or {}),
    }
    argv = [os.path.join(SPARK_HOME, "bin", "spark-submit")]
    argv += ["--class", "org.apache.spark.sql.connect.service.SparkConnectServer"]
    argv += ["--master", master]
    for key, value in settings.items():
        argv += ["--conf", f"{key}={value}"]
    log = workdir / "connect.log"
    pid = _start([*argv, "spark-internal"], log, _env(python))
    try:
        _wait_listening(port, pid, log)
    except BaseException:
        stop(pid)
        raise
    return ConnectServer(f"sc://{LOOPBACK}:{port}", pid)


def _up(state: Path) -> None:
    if (state / "cluster.json").exists():
        sys.exit(f"a cluster from {state} may still run: ./dev cluster down first")
    python = cached_executor_venv()
    # Spark's usual ports when free, so profiles can name them (sample_project's do)
    cluster = start_standalone(state, port=7077)
    try:
        connect = start_connect(state, python, port=15002)
    except BaseException:
        cluster.stop()
        raise
    info = {
        "standalone": asdict(cluster),
        "connect": asdict(connect),
        "executor_python": python,
    }
    (state / "cluster.json").write_text(json.dumps(info, indent=2))
    print(
        f"standalone master {cluster.master_url} (UI http://{LOOPBACK}:{cluster.master_ui})\n"
        f"Spark Connect     {connect.url}\n"
        f"executors' Python {python} (pyspark[sql] only)\n\n"
        "profile outputs:\n"
        f"  spark_master: {cluster.master_url}\n"
        f"  spark_conf: {{spark.pyspark.python: {python}}}\n"
        "or\n"
        f"  spark_remote: {connect.url}\n"
        "with an absolute data_path. Stop them with ./dev cluster down."
    )


def _down(state: Path) -> None:
    path = state / "cluster.json"
    if not path.exists():
        print(f"no cluster recorded in {state}")
        return
    info = json.loads(path.read_text())
    stop(info["connect"]["pid"])
    stop(info["standalone"]["worker_pid"])
    stop(info["standalone"]["master_pid"])
    path.unlink()
    print("stopped the Connect server, the worker and the master")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=["up", "down"])
    parser.add_argument("--state", type=Path, default=Path(".cluster"))
    args = parser.parse_args()
    args.state.mkdir(parents=True, exist_ok=True)
    (_up if args.action == "up" else _down)(args.state.resolve())


if __name__ == "__main__":
    main()
