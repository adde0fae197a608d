"""Shared fixtures: real SQLite files and real PostgreSQL databases for catalogs."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from dataclasses import dataclass

import psycopg
import pytest

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


@pytest.fixture(params=["sqlite", "postgres"])
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
def spark():  # type: ignore[no-untyped-def]
    """One local SparkSession for the whole test run (JVM start costs ~7 s)."""
    os.environ["TZ"] = "UTC"
    import time

    time.tzset()
    from dbt.adapters.ducklake.spark.session import SessionConfig, get_session, stop_session

    session = get_session(
        SessionConfig(
            master="local[2]",
            conf={
                "spark.sql.shuffle.partitions": "2",
                "spark.default.parallelism": "2",
                "spark.ui.enabled": "false",
                "spark.driver.memory": "2g",
            },
        )
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    stop_session()
