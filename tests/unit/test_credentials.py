"""Profile validation: a bad profile fails with the field named, before Spark starts."""

from __future__ import annotations

import pytest
from dbt_common.exceptions import DbtConfigError

from dbt.adapters.ducklake.credentials import DucklakeCredentials

BASE = {"metadata": "sqlite:///lake.sqlite", "schema": "main"}


def test_defaults() -> None:
    creds = DucklakeCredentials.from_dict(BASE)
    assert creds.database == "ducklake" and creds.author
    assert creds.session_config().master == "local[*]"


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"metadata": ""}, "`metadata` is required"),
        ({"metadata": "mysql://x/y"}, "metadata:"),
        ({"schema": ""}, "`schema`"),
        ({"spark_master": "local[2]", "spark_remote": "sc://h:15002"}, "exclusive"),
        ({"spark_remote": "http://h:15002"}, "sc://host:port"),
        (
            {"spark_conf": {"spark.sql.parquet.outputTimestampType": "INT96"}},
            "conflicts with DuckLake",
        ),
    ],
)
def test_bad_profiles_name_the_field(change: dict, message: str) -> None:  # type: ignore[type-arg]
    with pytest.raises(DbtConfigError, match=message):
        DucklakeCredentials.from_dict({**BASE, **change})
