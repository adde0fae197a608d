"""dbt functional tests (dbt-tests-adapter): each test class gets a fresh lake — SQLite
metadata and a data directory — and the process's one local SparkSession."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import _make_catalog
from tests.small_data import SMALL_DATA_CONF


@pytest.fixture(scope="module")
def without_json_artifacts() -> Iterator[None]:
    """dbt runs of the module (in this process or started from it) write no
    manifest.json, semantic_manifest.json or run_results.json (`DBT_WRITE_JSON=false`):
    for modules whose tests read none of them. Measured, writing them was a quarter of
    TestIncrementalUniqueKey's time (53.6 -> 39.4 s), most of it dbt validating the
    semantic manifest. Partial parsing (target/partial_parse.msgpack) is unaffected."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("DBT_WRITE_JSON", "false")
        yield


def lake_target(metadata: str, data_path: str) -> dict[str, Any]:
    """The profile target of a functional test's lake: one thread, local[2]."""
    return {
        "type": "ducklake",
        "metadata": metadata,
        "data_path": data_path,
        "threads": 1,
        "spark_master": "local[2]",
        "spark_conf": dict(SMALL_DATA_CONF),
        "author": "dbt-tests",
        # the per-command JVM; the kept one (the default) is test_kept_jvm_default.py's
        "spark_keep_alive": 0,
    }


def catalog_target(backend: str, tmp_path_factory: Any, **extra: Any) -> Iterator[dict[str, Any]]:
    """A profile target on a fresh `backend` catalog ("sqlite" or "postgres") with the
    string DuckDB attaches it by (`duckdb_attach`); for a class fixture that yields
    from it (the PostgreSQL database is dropped after the class)."""
    catalogs = _make_catalog(backend, tmp_path_factory.mktemp("lake"))
    catalog = next(catalogs)
    yield {
        **lake_target(catalog.metadata, catalog.data_path),
        "duckdb_attach": catalog.duckdb_attach,
        **extra,
    }
    next(catalogs, None)


@pytest.fixture(scope="session", autouse=True)
def _the_test_session_first(spark):
    """The process has one SparkSession, built by whoever asks first. dbt would build it
    from a profile (without the S3A jars the S3 tests need on the JVM from its start), so
    the suite's own session fixture (tests/conftest.py) builds it before any dbt run."""
    return spark


@pytest.fixture(scope="class")
def dbt_profile_target(tmp_path_factory):
    root = tmp_path_factory.mktemp("lake")
    return lake_target(f"sqlite:///{root}/metadata.sqlite", f"{root}/data")
