"""Which dbt processes share a kept driver JVM (`spark_keep_alive`): the same settings
share one; any difference in settings, master or app starts another."""

from __future__ import annotations

from dbt.adapters.ducklake.credentials import DucklakeCredentials
from dbt.adapters.ducklake.spark import resident
from dbt.adapters.ducklake.spark.session_config import DEFAULT_KEEP_ALIVE_S

SPEC = {"settings": {"spark.sql.shuffle.partitions": "2"}, "master": "local[2]", "app_name": "a"}


def test_the_same_settings_share_a_jvm_and_any_difference_does_not() -> None:
    key = resident._key(SPEC)
    assert resident._key(dict(SPEC)) == key
    others = [
        {**SPEC, "settings": {"spark.sql.shuffle.partitions": "3"}},
        {**SPEC, "settings": {**SPEC["settings"], "spark.driver.memory": "2g"}},
        {**SPEC, "master": "local[1]"},
        {**SPEC, "app_name": "b"},
    ]
    keys = {resident._key(other) for other in others}
    assert key not in keys and len(keys) == len(others)


def test_the_profile_field_reaches_the_session_config() -> None:
    base = {"metadata": "sqlite:///lake.sqlite", "schema": "main"}
    for keep_alive in (0, 60, 900):
        creds = DucklakeCredentials.from_dict({**base, "spark_keep_alive": keep_alive})
        assert creds.session_config().keep_alive_s == keep_alive


def test_unset_it_keeps_a_local_jvm_and_nothing_else() -> None:
    """The default keeps local drivers only: a cluster's or Connect server's driver is
    not this machine's to keep, and an S3 data path's settings would be shared."""
    base = {"metadata": "sqlite:///lake.sqlite", "schema": "main"}
    kept = {"spark_master": "local[2]"}, {}, {"spark_master": "local-cluster[2,1,1024]"}
    for fields in kept:
        config = DucklakeCredentials.from_dict({**base, **fields}).session_config()
        assert config.keep_alive_s == DEFAULT_KEEP_ALIVE_S == 900, fields
    not_kept = (
        {"spark_master": "spark://h:7077"},
        {"spark_remote": "sc://h:15002"},
        {"data_path": "s3://b/p", "s3_endpoint": "http://h:9000"},
    )
    for fields in not_kept:
        config = DucklakeCredentials.from_dict({**base, **fields}).session_config()
        assert config.keep_alive_s == 0, fields
    # the lake's stored data path decides too: a local profile on an S3 lake
    local = DucklakeCredentials.from_dict({**base, "s3_endpoint": "http://h:9000"})
    assert local.session_config().keep_alive_s == DEFAULT_KEEP_ALIVE_S
    assert local.session_config("s3://b/p").keep_alive_s == 0
