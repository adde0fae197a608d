"""A standalone cluster and a Spark Connect server from the pyspark wheel, whose Python
workers run a venv with only pyspark[sql]; dbt runs against them as a user would, in
its own process with a profile naming the cluster."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cluster.servers import (
    ConnectServer,
    Standalone,
    cached_executor_venv,
    start_connect,
    start_standalone,
)

ROOT = Path(__file__).resolve().parents[2]
DBT = str(Path(sys.executable).with_name("dbt"))


@pytest.fixture(scope="session")
def executor_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Built once per machine and pyspark version, away from the driver's venv."""
    home = tmp_path_factory.mktemp("executor")
    python = cached_executor_venv()
    probe = "import importlib.util as u; print(u.find_spec('dbt'), u.find_spec('sqlalchemy'))"
    found = subprocess.run(
        [python, "-c", probe], capture_output=True, text=True, check=True, cwd=home
    )
    assert found.stdout.split() == ["None", "None"], "the executors' venv must not have dbt"
    return python


@pytest.fixture(scope="session")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    cluster = start_standalone(tmp_path_factory.mktemp("standalone"))
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(scope="session")
def connect_server(
    tmp_path_factory: pytest.TempPathFactory, executor_python: str
) -> Iterator[ConnectServer]:
    server = start_connect(tmp_path_factory.mktemp("connect"), executor_python)
    try:
        yield server
    finally:
        server.stop()


@dataclass
class DbtRun:
    returncode: int
    output: str
    seconds: float
    results: list[dict[str, Any]]


@dataclass
class Project:
    """A copy of a dbt project with one target, its lake under `lake/`."""

    path: Path
    profile: str

    @property
    def lake(self) -> Path:
        return self.path / "lake"

    @property
    def duckdb_attach(self) -> str:
        return f"sqlite:{self.lake / 'metadata.sqlite'}"

    def argv(self, *args: str) -> list[str]:
        return [DBT, *args, "--project-dir", str(self.path), "--profiles-dir", str(self.path)]

    def env(self) -> dict[str, str]:
        env = {**os.environ, "TZ": "UTC"}
        # the driver decides the executors' Python from the profile alone
        env.pop("PYSPARK_PYTHON", None)
        return env

    def dbt(self, *args: str, timeout: float = 600) -> DbtRun:
        started = time.monotonic()
        done = subprocess.run(
            self.argv(*args),
            cwd=self.path,
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        seconds = time.monotonic() - started
        run_results = self.path / "target" / "run_results.json"
        results = json.loads(run_results.read_text())["results"] if run_results.exists() else []
        if run_results.exists():
            run_results.unlink()  # the next command's results only
        return DbtRun(done.returncode, done.stdout + done.stderr, seconds, results)

    def build(self, *args: str) -> DbtRun:
        run = self.dbt("build", *args)
        failed = [r["unique_id"] for r in run.results if r["status"] not in ("success", "pass")]
        assert run.returncode == 0 and run.results and not failed, (
            f"dbt build {' '.join(args)} in {self.path} failed {failed}:\n{run.output[-6000:]}"
        )
        return run


def make_project(source: Path, dest: Path, profile: str, target: dict[str, Any]) -> Project:
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("lake", "target", "logs"))
    lake = dest / "lake"
    lake.mkdir()
    output = {
        "type": "ducklake",
        "metadata": f"sqlite:///{lake / 'metadata.sqlite'}",
        "data_path": str(lake / "data"),
        "schema": target.pop("schema"),
        "threads": 2,
        **target,
    }
    profiles = {profile: {"target": "t", "outputs": {"t": output}}}
    (dest / "profiles.yml").write_text(yaml.safe_dump(profiles))
    return Project(dest, profile)


def local_target(schema: str) -> dict[str, Any]:
    conf = {"spark.sql.shuffle.partitions": "4", "spark.ui.enabled": "false"}
    return {"schema": schema, "spark_master": "local[2]", "spark_conf": conf}


def cluster_target(schema: str, cluster: Standalone, python: str) -> dict[str, Any]:
    conf = {
        # how any cluster's executors are told which Python to run
        "spark.pyspark.python": python,
        "spark.executor.memory": "1g",
        "spark.sql.shuffle.partitions": "4",
        "spark.ui.enabled": "false",
    }
    return {"schema": schema, "spark_master": cluster.master_url, "spark_conf": conf}


def connect_target(schema: str, server: ConnectServer) -> dict[str, Any]:
    return {"schema": schema, "spark_remote": server.url}
