"""Which S3A jars a session with an S3 data path gets: the profile's own, else the
checkout's jar cache, else hadoop-aws of the Hadoop that pyspark ships, fetched by
Spark itself (an installed wheel has no cache)."""

from __future__ import annotations

import glob
import os
from pathlib import Path

import pyspark

from dbt.adapters.ducklake.storage import hadoop_aws_package, with_s3_jars


def _pyspark_hadoop() -> str:
    jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    (api,) = glob.glob(os.path.join(jars, "hadoop-client-api-*.jar"))
    return Path(api).name.removeprefix("hadoop-client-api-").removesuffix(".jar")


def test_the_package_is_hadoop_aws_of_pyspark_s_own_hadoop(tmp_path) -> None:
    assert hadoop_aws_package() == f"org.apache.hadoop:hadoop-aws:{_pyspark_hadoop()}"
    (tmp_path / "hadoop-client-api-3.3.4.jar").touch()
    assert hadoop_aws_package(str(tmp_path)) == "org.apache.hadoop:hadoop-aws:3.3.4"
    assert hadoop_aws_package(str(tmp_path / "elsewhere")) is None


def test_without_a_jar_cache_spark_fetches_hadoop_aws() -> None:
    conf = with_s3_jars({"spark.jars.packages": "io.delta:delta-spark_2.13:4.0.0"}, [])
    assert conf["spark.jars.packages"] == (
        f"io.delta:delta-spark_2.13:4.0.0,org.apache.hadoop:hadoop-aws:{_pyspark_hadoop()}"
    )
    assert "spark.jars" not in conf


def test_the_jar_cache_comes_before_a_fetch() -> None:
    conf = with_s3_jars({"spark.jars": "/x/a.jar"}, ["/c/s3/hadoop-aws.jar"])
    assert conf["spark.jars"] == "/x/a.jar,/c/s3/hadoop-aws.jar"
    assert "spark.jars.packages" not in conf


def test_a_profile_naming_hadoop_aws_is_left_as_it_is() -> None:
    pinned = {"spark.jars.packages": "org.apache.hadoop:hadoop-aws:3.4.1"}
    assert with_s3_jars(pinned, ["/c/s3/hadoop-aws.jar"]) == pinned
    assert with_s3_jars(pinned, []) == pinned
    listed = {"spark.jars": "/opt/hadoop-aws-3.4.1.jar"}
    assert with_s3_jars(listed, []) == listed


def test_a_jar_cache_of_another_hadoop_is_passed_over() -> None:
    ours = _pyspark_hadoop()
    matching = [f"/c/s3/hadoop-aws-{ours}.jar", "/c/s3/bundle-2.35.4.jar"]
    assert with_s3_jars({}, matching)["spark.jars"] == ",".join(matching)
    other = ["/c/s3/hadoop-aws-2.7.7.jar", "/c/s3/bundle-2.35.4.jar"]
    conf = with_s3_jars({}, other)
    assert "spark.jars" not in conf
    assert conf["spark.jars.packages"] == f"org.apache.hadoop:hadoop-aws:{ours}"
