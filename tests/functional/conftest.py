"""dbt functional tests (dbt-tests-adapter): each test class gets a fresh lake — SQLite
metadata and a data directory — and the process's one local SparkSession."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="class")
def dbt_profile_target(tmp_path_factory):  # type: ignore[no-untyped-def]
    root = tmp_path_factory.mktemp("lake")
    return {
        "type": "ducklake",
        "metadata": f"sqlite:///{root}/metadata.sqlite",
        "data_path": f"{root}/data",
        "threads": 1,
        "spark_master": "local[2]",
        "spark_conf": {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"},
        "author": "dbt-tests",
    }
