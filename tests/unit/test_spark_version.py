"""Spark older than 4.0 is refused by name, before a JVM starts (pyspark) or once the
Connect server answers (its own version)."""

from __future__ import annotations

import pytest

from dbt.adapters.ducklake.spark.errors import SessionConfigError
from dbt.adapters.ducklake.spark.session import require_spark_4


@pytest.mark.parametrize("version", ["3.5.9", "3.4.4", "2.4.8"])
def test_spark_before_4_is_refused_naming_its_version(version: str) -> None:
    with pytest.raises(SessionConfigError) as refused:
        require_spark_4("pyspark", version)
    text = str(refused.value)
    assert f"pyspark is Spark {version}" in text and "needs Spark 4.0 or later" in text
    assert "type promotion" in text


@pytest.mark.parametrize("version", ["4.0.5", "4.1.4", "4.2.1", "4.3.0", "4.4.0-SNAPSHOT"])
def test_spark_4_lines_pass(version: str) -> None:
    require_spark_4("pyspark", version)
