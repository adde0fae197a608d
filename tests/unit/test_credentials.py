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


def test_dbt_init_template_answers_make_a_valid_profile() -> None:
    """`dbt init` asks what profile_template.yml prompts; its defaults (plus a schema)
    must be a working profile."""
    import os

    import yaml

    import dbt.include.ducklake as include

    path = os.path.join(os.path.dirname(include.__file__), "profile_template.yml")
    with open(path) as fp:
        template = yaml.safe_load(fp)
    answers = {k: v["default"] for k, v in template["prompts"].items() if "default" in v}
    profile = {**template["fixed"], **answers, "schema": "shop"}
    assert profile.pop("type") == "ducklake" and profile.pop("threads") == 4
    creds = DucklakeCredentials.from_dict(profile)
    assert set(template["prompts"]) - {"threads"} <= set(creds.to_dict())
    assert creds.metadata == "sqlite:///lake/metadata.sqlite" and creds.data_path == "lake/data"
