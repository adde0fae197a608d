"""A Spark Connect server (from the pyspark package, loopback only) scans and writes."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator

import pyspark
import pytest

from tests import duck
from tests.conftest import Catalog


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory) -> Iterator[str]:  # type: ignore[no-untyped-def]
    port = _free_port()
    home = os.path.dirname(pyspark.__file__)
    log = open(tmp_path_factory.mktemp("connect") / "server.log", "w")  # noqa: SIM115
    env = {
        **os.environ,
        "SPARK_HOME": home,
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_LOCAL_IP": "127.0.0.1",
        "TZ": "UTC",
    }
    server = subprocess.Popen(
        [
            os.path.join(home, "bin", "spark-submit"),
            "--class",
            "org.apache.spark.sql.connect.service.SparkConnectServer",
            "--master",
            "local[2]",
            "--conf",
            f"spark.connect.grpc.binding.port={port}",
            "--conf",
            "spark.connect.grpc.binding.address=127.0.0.1",
            "--conf",
            "spark.sql.shuffle.partitions=2",
            "--conf",
            "spark.ui.enabled=false",
            "--conf",
            "spark.sql.session.timeZone=UTC",
            "spark-internal",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            if server.poll() is not None:
                raise RuntimeError(f"Spark Connect server exited; see {log.name}")
            time.sleep(0.5)
        else:
            raise RuntimeError(f"Spark Connect server did not listen on {port}; see {log.name}")
        yield f"sc://127.0.0.1:{port}"
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def test_scan_and_write_through_spark_connect(connect_server: str, sqlite_catalog: Catalog) -> None:
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach, data_path=sqlite_catalog.data_path)
    con.execute("CREATE TABLE lake.main.from_duck (id BIGINT, v VARCHAR)")
    con.execute("INSERT INTO lake.main.from_duck SELECT i, 'd' || i FROM range(0, 30) r(i)")
    con.execute("DELETE FROM lake.main.from_duck WHERE id < 5")
    con.close()
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "tests.spark.connect_client",
            connect_server,
            sqlite_catalog.metadata,
            sqlite_catalog.data_path,
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TZ": "UTC"},
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(__file__))),
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["count"] == 200
    assert [r[0] for r in result["scanned"]] == list(range(5, 30)) + list(range(1000, 1020))
    assert result["rowids"][:3] == [5, 6, 7]  # DuckDB's row ids survive
    assert result["merged"] == [[i, f"s{i}"] for i in range(1010, 1015)] + [
        [i, f"m{i}"] for i in range(1015, 1025)
    ]
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach)
    assert con.execute("SELECT count(*), sum(st.a) FROM lake.main.via_connect").fetchone() == (
        200,
        19900,
    )
    assert con.execute("SELECT count(*) FROM lake.main.from_duck").fetchone() == (50,)
    con.close()
