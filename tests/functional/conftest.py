"""dbt functional tests (dbt-tests-adapter): each test class gets a fresh lake — SQLite
metadata and a data directory — and the process's one local SparkSession."""

from __future__ import annotations

from typing import Any

import pytest


def lake_target(metadata: str, data_path: str) -> dict[str, Any]:
    """The profile target of a functional test's lake: one thread, local[2]."""
    return {
        "type": "ducklake",
        "metadata": metadata,
        "data_path": data_path,
        "threads": 1,
        "spark_master": "local[2]",
        "spark_conf": {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"},
        "author": "dbt-tests",
    }


@pytest.fixture(scope="class")
def dbt_profile_target(tmp_path_factory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("lake")
    return lake_target(f"sqlite:///{root}/metadata.sqlite", f"{root}/data")
