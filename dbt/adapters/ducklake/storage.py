"""Spark's side of object storage: the S3A connector's jars and settings.

DuckLake stores `s3://bucket/prefix/` paths (as DuckDB writes them), so Spark maps the
`s3` scheme to Hadoop's S3A filesystem and reads and writes the catalog's paths as they
are. The driver's own file work goes through `lake.FileIO` with the same settings.
"""

from __future__ import annotations

import glob
import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .lake import S3Settings

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("dbt.adapters.ducklake.spark")

S3A = "org.apache.hadoop.fs.s3a.S3AFileSystem"
# the checkout's jar cache (`./dev jars`); DUCKLAKE_JARS points elsewhere
_CHECKOUT_JARS = Path(__file__).resolve().parents[3] / ".jars"


def uses_s3(data_path: str | None) -> bool:
    return bool(data_path) and str(data_path).startswith(("s3://", "s3a://"))


def s3_jars(jar_dir: str | None = None) -> list[str]:
    """hadoop-aws and the AWS SDK bundle from the jar cache (`<cache>/s3/*.jar`)."""
    root = jar_dir or os.environ.get("DUCKLAKE_JARS") or str(_CHECKOUT_JARS)
    return sorted(glob.glob(os.path.join(root, "s3", "*.jar")))


def with_s3_jars(conf: Mapping[str, Any], jars: list[str]) -> dict[str, str]:
    """`conf` with S3A's jars, unless the profile brings hadoop-aws itself (in
    spark.jars or spark.jars.packages): the cache's jars (`./dev jars`) in `spark.jars`
    when there are some, else hadoop-aws of pyspark's own Hadoop in
    `spark.jars.packages`, which Spark resolves from Maven Central (or the profile's
    `spark.jars.repositories`) at start, as an installed wheel has no jar cache."""
    out = {k: str(v) for k, v in conf.items()}
    given = out.get("spark.jars", "")
    packages = out.get("spark.jars.packages", "")
    if "hadoop-aws" in given or "hadoop-aws" in packages:
        return out
    package = hadoop_aws_package()
    if jars and cache_fits(jars, package):
        out["spark.jars"] = ",".join([*(j for j in given.split(",") if j), *jars])
        return out
    if package is not None:
        log.info("S3: Spark fetches %s (spark.jars.packages) at start", package)
        out["spark.jars.packages"] = ",".join([*(p for p in packages.split(",") if p), package])
    return out


def cache_fits(jars: list[str], package: str | None = None) -> bool:
    """Whether the cache's hadoop-aws is the version pyspark's Hadoop needs (a cache
    made for another pyspark line is passed over: S3A must equal Hadoop's client)."""
    package = package or hadoop_aws_package()
    cached = [os.path.basename(j) for j in jars if os.path.basename(j).startswith("hadoop-aws-")]
    if package is None or not cached:
        return True
    return cached[0] == f"hadoop-aws-{package.rsplit(':', 1)[1]}.jar"


def hadoop_aws_package(spark_jars: str | None = None) -> str | None:
    """The Maven coordinate of hadoop-aws matching the Hadoop client pyspark ships
    (`jars/hadoop-client-api-<version>.jar`): S3A must equal it. None when pyspark's
    jars are elsewhere (a SPARK_HOME install): the profile then names it."""
    if spark_jars is None:
        import pyspark

        spark_jars = os.path.join(os.path.dirname(pyspark.__file__), "jars")
    found = sorted(glob.glob(os.path.join(spark_jars, "hadoop-client-api-*.jar")))
    if not found:
        return None
    version = os.path.basename(found[-1])[len("hadoop-client-api-") : -len(".jar")]
    return f"org.apache.hadoop:hadoop-aws:{version}"


def hadoop_s3_conf(settings: S3Settings) -> dict[str, str]:
    """S3A's settings (Hadoop keys) for these S3 settings; credentials only when given,
    else S3A's own chain (environment, instance profile) applies."""
    conf = {
        "fs.s3.impl": S3A,
        "fs.AbstractFileSystem.s3.impl": "org.apache.hadoop.fs.s3a.S3A",
        "fs.s3a.path.style.access": str(settings.path_style).lower(),
        "fs.s3a.connection.ssl.enabled": str(settings.use_ssl).lower(),
    }
    if settings.endpoint:
        scheme = "https" if settings.use_ssl else "http"
        conf["fs.s3a.endpoint"] = f"{scheme}://{settings.host}"
    if settings.region:
        conf["fs.s3a.endpoint.region"] = settings.region
    if settings.access_key_id and settings.secret_access_key:
        conf["fs.s3a.access.key"] = settings.access_key_id
        conf["fs.s3a.secret.key"] = settings.secret_access_key
    return conf


def apply_s3(spark: SparkSession, settings: S3Settings) -> None:
    """Set S3A's settings on the running session's Hadoop configuration, which Spark
    hands to every read and write job (so executors of a cluster get them too).

    Set at runtime rather than as `spark.hadoop.*` builder settings, so the secret key
    is never on a spark-submit command line. A Spark Connect client cannot reach the
    server's Hadoop configuration: the server needs the S3A settings and jars itself.
    """
    if type(spark).__module__.startswith("pyspark.sql.connect"):
        log.info("Spark Connect: the server's own S3A settings apply")
        return
    hadoop = spark._jsc.hadoopConfiguration()
    for key, value in hadoop_s3_conf(settings).items():
        hadoop.set(key, value)
