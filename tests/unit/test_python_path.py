"""S3A's jars leave the driver's Python path; other entries stay."""

from __future__ import annotations

import importlib.metadata
import sys
import zipfile

from dbt.adapters.ducklake.spark.python_path import drop_java_only_jars

FILES = "/tmp/spark-1/userFiles-2"
# the entries pyspark added for `spark.jars.packages` with hadoop-aws 3.5.0 (seen in a
# dbt process on an s3:// data path, installed from the wheel)
S3A = [
    f"{FILES}/org.apache.hadoop_hadoop-aws-3.5.0.jar",
    f"{FILES}/software.amazon.awssdk_bundle-2.35.4.jar",
    f"{FILES}/software.amazon.s3.analyticsaccelerator_analyticsaccelerator-s3-1.3.1.jar",
    f"{FILES}/org.wildfly.openssl_wildfly-openssl-2.2.5.Final.jar",
]


def test_s3a_jars_are_dropped_and_the_rest_kept() -> None:
    kept = [
        "/venv/lib/python3.11/site-packages",
        f"{FILES}/graphframes_graphframes-0.8.4-spark3.5-s_2.12.jar",  # carries Python
        f"{FILES}/engine.zip",
        "",
    ]
    path = [kept[0], *S3A[:2], kept[1], *S3A[2:], kept[2], kept[3]]
    assert drop_java_only_jars(path) == S3A
    assert path == kept
    assert drop_java_only_jars(path) == []


def test_a_metadata_lookup_no_longer_reads_the_jar(tmp_path, monkeypatch) -> None:
    """The cost removed: importlib.metadata lists every zip on sys.path, the jar too."""
    jar = tmp_path / "software.amazon.awssdk_bundle-2.35.4.jar"
    with zipfile.ZipFile(jar, "w") as z:
        z.writestr("fake_dist-1.0.dist-info/METADATA", "Name: fake-dist\nVersion: 1.0\n")
    monkeypatch.setattr(sys, "path", [str(jar), *sys.path])
    importlib.invalidate_caches()
    assert importlib.metadata.version("fake-dist") == "1.0"  # found inside the jar
    assert drop_java_only_jars() == [str(jar)]
    importlib.invalidate_caches()
    assert "fake-dist" not in {d.metadata["Name"] for d in importlib.metadata.distributions()}
