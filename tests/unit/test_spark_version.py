"""Spark older than 3.5 is refused by name, before a JVM starts (pyspark) or once the
Connect server answers (its own version)."""

from __future__ import annotations

import pytest

from dbt.adapters.ducklake.spark.compat import version_of
from dbt.adapters.ducklake.spark.errors import SessionConfigError
from dbt.adapters.ducklake.spark.session import require_supported_spark


@pytest.mark.parametrize("version", ["3.4.4", "3.3.0", "2.4.8"])
def test_spark_before_3_5_is_refused_naming_its_version(version: str) -> None:
    with pytest.raises(SessionConfigError) as refused:
        require_supported_spark("pyspark", version)
    text = str(refused.value)
    assert f"pyspark is Spark {version}" in text and "needs Spark 3.5 or later" in text


@pytest.mark.parametrize(
    "version", ["3.5.0", "3.5.9", "4.0.5", "4.1.4", "4.2.1", "4.3.0", "4.4.0-SNAPSHOT"]
)
def test_tested_lines_pass(version: str) -> None:
    require_supported_spark("pyspark", version)


@pytest.mark.parametrize(
    ("text", "parsed"),
    [("3.5.9", (3, 5)), ("4.1.0-preview2", (4, 1)), ("4.0", (4, 0)), ("4", (4, 0))],
)
def test_versions_parse_to_major_and_minor(text: str, parsed: tuple[int, int]) -> None:
    assert version_of(text) == parsed


@pytest.mark.parametrize("version", ["3.5.0", "3.5.9"])
def test_spark_connect_before_4_is_refused_naming_the_other_way(version: str) -> None:
    with pytest.raises(SessionConfigError) as refused:
        require_supported_spark("the Spark Connect server sc://x:15002", version, connect=True)
    text = str(refused.value)
    assert f"is Spark {version}" in text and "Spark Connect needs Spark 4.0" in text
    assert "use spark_master" in text
    require_supported_spark("the Spark Connect server sc://x:15002", "4.0.5", connect=True)
