"""Shared fixtures: real SQLite files and real PostgreSQL databases for catalogs."""

from __future__ import annotations

import json
import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from tests.small_data import SMALL_DATA_CONF

pytest_plugins = ["dbt.tests.fixtures.project"]  # dbt-tests-adapter's fixtures

PG_DSN = os.environ.get("DUCKLAKE_TEST_PG", "host=127.0.0.1 port=5432 dbname=test")


@dataclass
class Catalog:
    """A fresh, empty metadata database plus a data directory."""

    backend: str
    metadata: str  # what a user writes in profiles.yml
    duckdb_attach: str  # what DuckDB attaches after `ducklake:`
    data_path: str


def _pg_admin() -> psycopg.Connection:
    return psycopg.connect(PG_DSN, autocommit=True)


# Markers by folder and fixture (registered in pyproject.toml), so lanes are chosen with
# `-m` and no test file has to remember them; files that spawn processes or kill loops
# say `pytestmark = pytest.mark.slow` themselves.
MARK_BY_FIXTURE = {"s3_server": "s3", "pg_catalog": "postgres", "connect_server": "slow"}
MARK_BY_FOLDER = {"cluster": ("cluster", "slow")}


# Seconds each xdist scope (a test class, or a module of test functions) took in a
# recent run (`python -m tests.lanes --save-durations`). The longest scopes go first, so
# the two workers of the parallel lane finish together instead of one waiting for
# another's last long module; a scope not listed counts as NEW_SCOPE_SECONDS.
DURATIONS = Path(__file__).with_name("durations.json")
NEW_SCOPE_SECONDS = 20.0


def xdist_scope(nodeid: str) -> str:
    """The unit `--dist loadscope` keeps on one worker, as xdist derives it."""
    return nodeid.split("[", 1)[0].rsplit("::", 1)[0]


def _longest_scopes_first(items: list[pytest.Item]) -> None:
    seconds = json.loads(DURATIONS.read_text()) if DURATIONS.exists() else {}
    first_seen: dict[str, int] = {}
    for index, item in enumerate(items):
        first_seen.setdefault(xdist_scope(item.nodeid), index)

    def weight(pair: tuple[int, pytest.Item]) -> tuple[float, int, int]:
        scope = xdist_scope(pair[1].nodeid)
        return (-seconds.get(scope, NEW_SCOPE_SECONDS), first_seen[scope], pair[0])

    items[:] = [item for _, item in sorted(enumerate(items), key=weight)]


# Tests whose PostgreSQL variant repeats, on another catalog, the engine work their
# SQLite variant checks in CI: CI's budget leaves that variant to `./dev test --full`.
# PostgreSQL's own paths stay in CI: its dialect and locking (tests/lake, test_merge,
# test_dml's task path, test_sql), commits cut mid-way (test_catalog_faults) and staging
# copies as schemas (test_publish_atomic's build).
POSTGRES_IN_FULL_ONLY = {
    "tests/functional/test_change_feed_models.py::TestChangeFeedModels",
    "tests/functional/test_duckdb_types.py::TestEveryTypeThroughADbtModel",
    "tests/functional/test_hooks.py::TestPostHooksInTheNodeTransaction",
    "tests/functional/test_publish_atomic.py::test_other_writers_mid_build",
    "tests/functional/test_python_models.py::TestPythonModels",
    "tests/spark/test_changes.py::test_change_feed_matches_duckdb",
    "tests/spark/test_deletion_vectors.py::test_duckdb_vectors_read_identically_at_every_snapshot",
    "tests/spark/test_dml.py::test_delete_and_update_match_duckdb[postgres-driver]",
    "tests/spark/test_encrypted_lakes.py::test_duckdb_encrypted_lake_reads_identically_at_every_snapshot",
    "tests/spark/test_maintenance.py::test_merge_after_many_appends_keeps_every_snapshot",
    "tests/spark/test_twin_dml.py::test_dml_twins_agree",
    "tests/spark/test_twin_property.py::test_twin_lakes_agree_at_every_snapshot",
    "tests/spark/test_type_matrix.py::test_every_special_type_reads_and_writes_back_as_duckdb_reads_it",
}


def _postgres_in_full_only(item: pytest.Item) -> bool:
    callspec = getattr(item, "callspec", None)
    if callspec is None or "postgres" not in callspec.id.split("-"):
        return False
    bare = item.nodeid.split("[", 1)[0]
    return bool({bare, xdist_scope(item.nodeid), item.nodeid} & POSTGRES_IN_FULL_ONLY)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    _longest_scopes_first(items)
    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        marks = {mark for fixture, mark in MARK_BY_FIXTURE.items() if fixture in names}
        if _postgres_in_full_only(item):
            marks.add("full")
        marks.update(MARK_BY_FOLDER.get(item.path.parent.name, ()))
        if getattr(getattr(item, "obj", None), "is_hypothesis_test", False):
            marks.add("property")
        cls = getattr(item, "cls", None)
        if cls is not None and any(
            base.__module__.startswith("dbt.tests.adapter") for base in cls.__mro__
        ):
            marks.add("dbt_suite")
        for mark in sorted(marks):
            item.add_marker(mark)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def catalog(request: pytest.FixtureRequest, tmp_path) -> Iterator[Catalog]:
    yield from _make_catalog(request.param, tmp_path)


@pytest.fixture
def sqlite_catalog(tmp_path) -> Iterator[Catalog]:
    yield from _make_catalog("sqlite", tmp_path)


@pytest.fixture
def pg_catalog(tmp_path) -> Iterator[Catalog]:
    yield from _make_catalog("postgres", tmp_path)


def _make_catalog(backend: str, tmp_path) -> Iterator[Catalog]:
    data = str(tmp_path / "data") + "/"
    if backend == "sqlite":
        path = str(tmp_path / "meta.sqlite")
        yield Catalog("sqlite", f"sqlite:///{path}", f"sqlite:{path}", data)
        return
    name = "dl_" + uuid.uuid4().hex[:12]
    with _pg_admin() as conn:
        conn.execute(f"CREATE DATABASE {name}")
    try:
        yield Catalog(
            "postgres",
            f"postgresql+psycopg://127.0.0.1:5432/{name}",
            f"postgres:dbname={name} host=127.0.0.1",
            data,
        )
    finally:
        with _pg_admin() as conn:
            conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture(scope="session")
def spark():
    """One local SparkSession for the whole test run (JVM start costs ~7 s)."""
    os.environ["TZ"] = "UTC"
    import time

    time.tzset()
    from dbt.adapters.ducklake.spark.session import SessionConfig, get_session, stop_session
    from dbt.adapters.ducklake.storage import cache_fits, s3_jars, with_s3_jars

    conf = {
        **SMALL_DATA_CONF,
        "spark.default.parallelism": "2",
        "spark.driver.memory": "2g",
    }
    # experiments: extra session settings as JSON (e.g. to time a planner option)
    conf.update(json.loads(os.environ.get("DUCKLAKE_TEST_SPARK_CONF", "{}")))
    # S3A (tests/spark/test_s3.py) needs its jars from the start: `./dev jars` fetches
    # them for the default pyspark (another Spark line's smoke runs no S3 test)
    if cache_fits(s3_jars()):
        conf = with_s3_jars(conf, s3_jars())
    session = get_session(SessionConfig(master="local[2]", conf=conf))
    session.sparkContext.setLogLevel("ERROR")
    yield session
    stop_session()


@dataclass(frozen=True)
class S3Server:
    """moto's S3 server on loopback: what a profile and DuckDB need to reach it."""

    port: int
    access_key_id: str = "ducklake-test-key"
    secret_access_key: str = "ducklake-Test-S3cret-9f2c"
    region: str = "us-east-1"

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def settings(self):
        from dbt.adapters.ducklake.lake import S3Settings

        return S3Settings(
            endpoint=self.endpoint,
            region=self.region,
            access_key_id=self.access_key_id,
            secret_access_key=self.secret_access_key,
            url_style="path",
        )

    def profile_fields(self) -> dict[str, str]:
        """The profile's `s3_*` fields that reach this server."""
        return {
            "s3_endpoint": self.endpoint,
            "s3_region": self.region,
            "s3_access_key_id": self.access_key_id,
            "s3_secret_access_key": self.secret_access_key,
            "s3_url_style": "path",
        }

    def new_bucket(self) -> str:
        """A fresh bucket, so tests never see each other's files."""
        import pyarrow.fs as pafs

        name = "lake-" + uuid.uuid4().hex[:12]
        pafs.S3FileSystem(
            access_key=self.access_key_id,
            secret_key=self.secret_access_key,
            region=self.region,
            endpoint_override=f"127.0.0.1:{self.port}",
            scheme="http",
            allow_bucket_creation=True,
        ).create_dir(name)
        return name

    def duckdb_secret(self) -> str:
        return (
            f"CREATE SECRET (TYPE s3, KEY_ID '{self.access_key_id}', "
            f"SECRET '{self.secret_access_key}', ENDPOINT '127.0.0.1:{self.port}', "
            f"URL_STYLE 'path', USE_SSL false, REGION '{self.region}')"
        )


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """One moto S3 server (`moto[server]`) for the session, on a free loopback port,
    stopped by its pid."""
    import socket
    import subprocess
    import sys
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
                break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("moto's S3 server did not start") from None
                time.sleep(0.1)
        yield S3Server(port)
    finally:
        os.kill(proc.pid, 15)
        proc.wait(timeout=30)
