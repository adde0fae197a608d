"""A Spark Connect server (from the pyspark package, loopback only) scans and writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests import duck
from tests.cluster.servers import start_connect
from tests.conftest import Catalog


@pytest.fixture(scope="module")
def connect_server(tmp_path_factory) -> Iterator[str]:
    # the driver's interpreter for the server's Python workers; tests/cluster runs
    # workers that have only pyspark[sql]
    server = start_connect(tmp_path_factory.mktemp("connect"), sys.executable)
    try:
        yield server.url
    finally:
        server.stop()


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
