"""Which dbt processes share a kept driver JVM (`spark_keep_alive`): the same settings
share one; any difference in settings, master or app starts another."""

from __future__ import annotations

from dbt.adapters.ducklake.credentials import DucklakeCredentials
from dbt.adapters.ducklake.spark import resident

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
    assert DucklakeCredentials.from_dict(base).session_config().keep_alive_s == 0
    creds = DucklakeCredentials.from_dict({**base, "spark_keep_alive": 900})
    assert creds.session_config().keep_alive_s == 900
