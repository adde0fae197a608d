"""The installed pyspark's version and what follows from it, asked without importing
pyspark (the prestart launches the JVM before that import: driver_launch.py)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import sys

# the oldest Spark line this adapter runs on and is tested with (session.py refuses
# older, naming it; spark/compat.py takes 3.5's other paths)
OLDEST_SPARK = (3, 5)


def pyspark_version() -> str:
    """The installed pyspark's version, without importing it when it is not yet."""
    loaded = sys.modules.get("pyspark")
    if loaded is not None:
        return str(loaded.__version__)
    try:
        return importlib.metadata.version("pyspark")
    except importlib.metadata.PackageNotFoundError:  # pyspark from a source tree
        import pyspark

        return str(pyspark.__version__)


def version_of(text: str) -> tuple[int, int]:
    """(major, minor) of a Spark version string such as '3.5.9' or '4.1.0-preview'."""
    parts = [int("".join(ch for ch in p if ch.isdigit()) or 0) for p in text.split(".")[:2]]
    major, minor = [*parts, 0, 0][:2]
    return major, minor


def client_is_spark_4() -> bool:
    """Whether the local pyspark's API is Spark 4's (a Spark Connect client's too)."""
    return version_of(pyspark_version()) >= (4, 0)


def spark_3_defaults() -> dict[str, str]:
    """Spark 3.5's vectorized reader of nested columns fails on a struct field a file
    lacks (a field added later, matched by field id): its rows path reads them right."""
    if client_is_spark_4():
        return {}
    return {"spark.sql.parquet.enableNestedColumnVectorizedReader": "false"}


def pyspark_folder() -> str:
    """The installed pyspark package's folder (its jars, `bin/spark-submit`), found
    without importing it; "" if pyspark is not installed."""
    spec = importlib.util.find_spec("pyspark")
    return os.path.dirname(spec.origin) if spec is not None and spec.origin else ""
