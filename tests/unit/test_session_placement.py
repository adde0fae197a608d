"""Where Python tasks run and with what: decided before Spark starts."""

from __future__ import annotations

import socket
import sys
import time
import zipfile

import pytest

from dbt.adapters.ducklake.spark.driver_launch import executors_python
from dbt.adapters.ducklake.spark.session import SessionConfig, check_reachable
from dbt.adapters.ducklake.spark.shipping import engine_zip, is_local_master


@pytest.mark.parametrize(
    ("config", "environment", "expected"),
    [
        (SessionConfig(master="local[2]"), None, sys.executable),
        (SessionConfig(master="local[2]"), "/opt/py/bin/python", "/opt/py/bin/python"),
        (SessionConfig(master="local-cluster[2,1,1024]"), None, sys.executable),
        # a cluster's executors keep their own Python; the engine is shipped to them
        (SessionConfig(master="spark://h:7077"), None, None),
        (SessionConfig(master="yarn"), "/usr/bin/python3", None),
        (SessionConfig(remote="sc://h:15002"), None, None),
        # the profile's choice wins everywhere the driver starts executors
        (SessionConfig(master="spark://h:7077", conf={"spark.pyspark.python": "/x"}), None, "/x"),
        (SessionConfig(master="local[2]", conf={"spark.pyspark.python": "/x"}), "/y", "/x"),
    ],
)
def test_pyspark_python_is_set_for_local_masters_and_by_the_profile(
    config: SessionConfig, environment: str | None, expected: str | None
) -> None:
    assert executors_python(config, environment) == expected


def test_local_masters() -> None:
    assert all(
        map(is_local_master, [None, "local", "local[*]", "LOCAL[4]", "local-cluster[1,1,512]"])
    )
    assert not any(map(is_local_master, ["spark://h:7077", "yarn", "k8s://https://h:443"]))


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again once the socket is


@pytest.mark.parametrize(
    ("url", "shown", "field"),
    [
        ("spark://127.0.0.1:{port}", "Spark master spark://127.0.0.1:{port}", "spark_master"),
        (
            "sc://127.0.0.1:{port}/;token=s3cr3t",
            "Spark Connect server sc://127.0.0.1:{port} ",
            "spark_remote",
        ),
    ],
)
def test_an_unreachable_cluster_fails_fast_naming_the_url(url: str, shown: str, field: str) -> None:
    port = _closed_port()
    started = time.monotonic()
    with pytest.raises(ConnectionError) as raised:
        check_reachable(url.format(port=port))
    assert time.monotonic() - started < 30
    message = str(raised.value)
    assert shown.format(port=port) in message and field in message
    assert "s3cr3t" not in message


def test_the_engine_zip_holds_only_the_adapters_modules() -> None:
    path = engine_zip()
    assert engine_zip() == path  # once per process
    with zipfile.ZipFile(path) as archive:
        names = archive.namelist()
    files = [n for n in names if not n.endswith("/")]
    assert "dbt/adapters/ducklake/spark/write_task.py" in files
    assert all(n.startswith("dbt/adapters/ducklake/") and n.endswith(".py") for n in files)
    # no dbt/__init__.py: dbt and dbt.adapters stay namespace packages on executors
    assert {"dbt/", "dbt/adapters/"} <= set(names) and "dbt/__init__.py" not in names
