"""Reading the Parquet files of an encrypted lake (DuckDB's `ATTACH ... (ENCRYPTED)`).

DuckDB encrypts each file with its own AES key (base64 in the catalog's
`encryption_key`) in a layout Spark's Parquet reader cannot decrypt. The adapter's JVM
classes (jvm/, built by Maven into `jars/ducklake-jvm.jar` and shipped with
`spark.jars`) give a scan a file system that opens those files as plaintext Parquet in
the task's memory; nothing decrypted touches a disk. This module sets a read up for it.
Python tasks cannot decrypt (`pyspark[sql]` has no AES), so without the classes an
encrypted file is refused by name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

from pyspark.sql import SparkSession

from ..lake import DataFile, DeleteFile, UnsupportedFeatureError
from .driver_launch import ENGINE_JAR

KEYED_FS = "ducklake.jvm.KeyedFileSystem"
# the file systems a keyed read wraps, by scheme (S3A serves s3:// too: the adapter's storage.py)
_DELEGATES = {
    "file": "org.apache.hadoop.fs.LocalFileSystem",
    "s3a": "org.apache.hadoop.fs.s3a.S3AFileSystem",
    "s3": "org.apache.hadoop.fs.s3a.S3AFileSystem",
}


def file_keys(files: Iterable[DataFile | DeleteFile]) -> dict[str, str]:
    """path -> base64 key of the encrypted files among `files`."""
    return {f.path: f.encryption_key for f in files if f.encryption_key}


def key_id(path: str) -> str:
    """What KeyedFileSystem.idOf computes for the URI Spark opens for `path`."""
    parts = urlsplit(path) if "://" in path else None
    authority, name = (parts.netloc, parts.path) if parts else ("", path)
    return hashlib.sha256((authority + name).encode()).hexdigest()


def require_decryption(
    spark: SparkSession, table: str, files: Iterable[DataFile | DeleteFile]
) -> None:
    """Before planning a read of `files`: refuse, naming `table`, when some are
    encrypted and this session cannot decrypt them."""
    if any(f.encryption_key for f in files):
        require_engine_classes(spark, f"table {table} has encrypted files")


def keyed_read_options(spark: SparkSession, keys: Mapping[str, str]) -> dict[str, str]:
    """Options of one Parquet read that open the files in `keys` decrypted."""
    first = sorted(keys)[0]
    more = f" and {len(keys) - 1} more" if len(keys) > 1 else ""
    require_engine_classes(spark, f"encrypted file {first}{more}")
    schemes = {urlsplit(p).scheme if "://" in p else "file" for p in keys}
    unknown = sorted(schemes - set(_DELEGATES))
    if unknown or len(schemes) > 1:
        raise UnsupportedFeatureError(
            f"encrypted files under {', '.join(sorted(schemes))}://: one scan reads "
            f"encrypted files from one of {', '.join(sorted(_DELEGATES))}"
        )
    (scheme,) = schemes
    options = {
        f"fs.{scheme}.impl": KEYED_FS,
        f"fs.{scheme}.impl.disable.cache": "true",
        "ducklake.keyed.delegate": _DELEGATES[scheme],
    }
    for path, key in keys.items():
        options[f"ducklake.secret.{key_id(path)}"] = key
    return options


_checked: dict[int, bool] = {}


def has_engine_classes(spark: SparkSession) -> bool:
    """Whether this session's JVM has the adapter's classes (never through Spark
    Connect, whose server's class path is not visible from here)."""
    jvm = getattr(getattr(spark, "_sc", None), "_jvm", None)
    if jvm is None:
        return False
    ok = _checked.get(id(spark))
    if ok is None:
        try:
            loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
            jvm.java.lang.Class.forName(KEYED_FS, False, loader)
            ok = True
        except Exception:  # py4j reports ClassNotFoundException as a Py4JJavaError
            ok = False
        _checked[id(spark)] = ok
    return ok


def require_engine_classes(spark: SparkSession, what: str, doing: str = "reading them") -> None:
    """Refuse `what` (reading or writing an encrypted lake's files: `doing`) unless this
    session has the adapter's JVM classes."""
    jvm = getattr(getattr(spark, "_sc", None), "_jvm", None)
    if jvm is None:
        # Spark Connect: the server's class path is not visible from here
        raise UnsupportedFeatureError(
            f"{what} (an encrypted lake): {doing} through "
            "Spark Connect is not supported yet; use spark_master (local or a cluster), "
            "whose driver and executors get the adapter's JVM classes. Nothing was read or written"
        )
    if not has_engine_classes(spark):
        raise UnsupportedFeatureError(
            f"{what} (an encrypted lake): {doing} needs the "
            f"adapter's JVM classes ({ENGINE_JAR.name}, built from jvm/ by `./dev setup` with "
            "Maven), which this Spark session does not have. Nothing was read or written"
        )
