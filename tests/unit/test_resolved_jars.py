"""The jars `spark.jars.packages` resolved are remembered when all are S3A's Java-only
jars, and later sessions take them as `spark.jars` while every one is on disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from dbt.adapters.ducklake.spark.resolved_jars import PACKAGES, memo_file, recalled, remember

HADOOP_AWS = "org.apache.hadoop:hadoop-aws:3.5.0"
IVY_NAMES = (
    "org.apache.hadoop_hadoop-aws-3.5.0.jar",
    "software.amazon.awssdk_bundle-2.35.4.jar",
    "org.wildfly.openssl_wildfly-openssl-2.2.5.Final.jar",
)


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


def _jars(folder: Path, names: tuple[str, ...] = IVY_NAMES) -> list[str]:
    folder.mkdir(parents=True, exist_ok=True)
    for name in names:
        (folder / name).write_bytes(b"PK\x05\x06" + b"\0" * 18)  # an empty zip
    return [str(folder / name) for name in names]


def test_a_memo_per_resolution_and_pyspark_version() -> None:
    settings = {PACKAGES: HADOOP_AWS}
    memo = memo_file(settings, "4.3.0")
    assert memo is not None and memo == memo_file(dict(settings), "4.3.0")
    assert memo.parent.parent.name == "dbt-ducklake"
    assert memo != memo_file(settings, "4.1.4")
    assert memo != memo_file({**settings, "spark.jars.repositories": "https://r.example"}, "4.3.0")
    assert memo_file({}, "4.3.0") is None
    moving_versions = ("g:a:3.5.1-SNAPSHOT", "g:a:latest.release", "g:a:[1,2)", "g:a:1.0.+")
    for moving in moving_versions:
        assert memo_file({PACKAGES: moving}, "4.3.0") is None


def test_the_next_session_takes_the_resolved_jars_instead_of_the_packages(tmp_path) -> None:
    settings = {PACKAGES: HADOOP_AWS, "spark.jars": "/opt/engine.jar", "spark.ui.enabled": "false"}
    memo = memo_file(settings, "4.3.0")
    assert recalled(settings, memo) == settings  # nothing remembered yet
    jars = _jars(tmp_path / "ivy" / "jars")
    assert remember(memo, ",".join(jars))
    assert memo is not None and json.loads(memo.read_text()) == {"jars": jars}
    again = recalled(settings, memo)
    assert PACKAGES not in again
    assert again["spark.jars"].split(",") == ["/opt/engine.jar", *jars]
    assert again["spark.ui.enabled"] == "false"
    assert not list(memo.parent.glob("*.tmp"))


def test_a_jar_gone_from_disk_or_a_torn_memo_resolves_again(tmp_path) -> None:
    settings = {PACKAGES: HADOOP_AWS}
    memo = memo_file(settings, "4.3.0")
    jars = _jars(tmp_path / "ivy" / "jars")
    assert remember(memo, ",".join(jars))
    Path(jars[1]).unlink()  # Ivy's cache was cleaned
    assert recalled(settings, memo) == settings
    assert memo is not None
    memo.write_text('{"jars": ["/x.jar"')
    assert recalled(settings, memo) == settings


def test_jars_that_may_carry_python_are_left_to_spark(tmp_path) -> None:
    settings = {PACKAGES: f"{HADOOP_AWS},graphframes:graphframes:0.8.4-spark3.5-s_2.12"}
    memo = memo_file(settings, "4.3.0")
    jars = _jars(tmp_path / "ivy", (*IVY_NAMES, "graphframes_graphframes-0.8.4.jar"))
    assert not remember(memo, ",".join(jars))
    assert memo is not None and not memo.exists()
    assert not remember(memo, "")  # nothing resolved (spark.submit.pyFiles empty)
    assert not remember(memo, f"{jars[0]},/work/helpers.py")
    assert not memo.exists()
