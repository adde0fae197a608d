"""`spark_keep_alive`: dbt processes share one local driver JVM that outlives them.

Real processes on a real lake, all started together: one keeper starts; two writers
and a reader attach to its JVM, each with its own SparkSession, and the reader counts
what the writers wrote; DuckDB reads the tables identically; a process killed during a
job has that job stopped; the keeper and its JVM stop after the keep-alive time once no
process is attached. (A keeper that died while its JVM still answers: test_resident.py.)"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dbt.adapters.ducklake.spark.resident import running as alive
from tests import duck
from tests.conftest import Catalog

pytestmark = pytest.mark.slow  # it starts a driver JVM of its own
ROOT = Path(__file__).resolve().parents[2]
KEEP_ALIVE_S = 3


def client(catalog: Catalog, env: dict[str, str], mode: str, *names: str) -> subprocess.Popen:
    args = [sys.executable, "-m", "tests.spark.kept_client", catalog.metadata, catalog.data_path]
    return subprocess.Popen(
        [*args, str(KEEP_ALIVE_S), mode, *names],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def line(proc: subprocess.Popen) -> str:
    assert proc.stdout is not None
    return proc.stdout.readline().strip()


def outcome(proc: subprocess.Popen) -> dict:
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def test_processes_share_a_kept_jvm_that_stops_a_dead_ones_jobs_and_stops_when_idle(
    sqlite_catalog: Catalog, tmp_path: Path
) -> None:
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "TZ": "UTC"}
    folder = tmp_path / "cache" / "dbt-ducklake" / "resident"
    writers = [client(sqlite_catalog, env, "write", name) for name in ("t_a", "t_b")]
    holder = client(sqlite_catalog, env, "hold")
    reader = client(sqlite_catalog, env, "read", "t_a", "t_b")

    wrote = [outcome(proc) for proc in writers]
    assert [w["counts"] for w in wrote] == [{"t_a": 50}, {"t_b": 50}]
    jvm = wrote[0]["jvm"]
    assert wrote[1]["jvm"] == jvm, "processes started together share one JVM"
    (state,) = [json.loads(p.read_text()) for p in folder.glob("*.json")]  # one keeper
    assert line(holder) == "attached" and line(reader) == "seen"
    holder.kill()  # during its endless job
    holder.wait()
    read = outcome(reader)
    assert read["seen"] and read["active"] == 0, "the killed process's job was stopped"
    assert (read["jvm"], read["counts"], read["udf"]) == (jvm, {"t_a": 50, "t_b": 50}, 12)
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach, data_path=sqlite_catalog.data_path)
    for name in ("t_a", "t_b"):
        rows = con.execute(f"SELECT count(*), min(s), max(id) FROM lake.main.{name}").fetchone()
        assert rows == (50, f"{name}-0", 49)

    deadline = time.monotonic() + 60  # idle for KEEP_ALIVE_S: the keeper and JVM stop
    while time.monotonic() < deadline and (alive(state["pid"]) or alive(jvm)):
        time.sleep(0.5)
    assert not alive(state["pid"]) and not alive(jvm)
    assert list(folder.glob("*.json")) == []
