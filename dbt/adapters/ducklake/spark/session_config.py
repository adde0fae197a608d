"""What a SparkSession is built from: the profile's choices and the settings DuckLake
needs. Kept apart from `session.py` so reading a profile imports no pyspark (a dbt
command that never runs a statement, such as `run-operation`, starts faster)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .errors import SessionConfigError
from .shipping import is_local_master

# spark_keep_alive where a profile leaves it unset and a kept JVM can serve: a quarter
# of an hour covers the pauses of an edit-and-run loop, and an idle JVM holds only
# memory (build tools' daemons, Gradle's and Bazel's, are on by default for the same
# start-up cost; theirs wait three hours)
DEFAULT_KEEP_ALIVE_S = 900


def default_keep_alive(master: str | None, remote: str | None, s3_data: bool) -> int:
    """Seconds a driver JVM is kept when the profile does not say: kept for local
    masters on local or mounted storage (resident.py), not for clusters, Spark Connect,
    S3 data paths (a kept JVM's Hadoop settings would be shared) or non-POSIX systems
    (its locks are POSIX file locks)."""
    if remote or s3_data or os.name != "posix" or not is_local_master(master):
        return 0
    return DEFAULT_KEEP_ALIVE_S


# What the format needs; users may add to these but not change them.
REQUIRED_CONF: dict[str, str] = {
    # DuckLake matches Parquet columns by field id = column id, nested fields included
    "spark.sql.parquet.fieldId.write.enabled": "true",
    "spark.sql.parquet.fieldId.read.enabled": "true",
    # a column added after a file was written is simply absent from that file
    "spark.sql.parquet.fieldId.read.ignoreMissing": "true",
    # DuckLake timestamps are INT64 microseconds; Spark's INT96 default is wrong for it
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    # proleptic Gregorian calendar both ways, like DuckDB
    "spark.sql.parquet.datetimeRebaseModeInWrite": "CORRECTED",
    "spark.sql.parquet.datetimeRebaseModeInRead": "CORRECTED",
    "spark.sql.parquet.int96RebaseModeInWrite": "CORRECTED",
    "spark.sql.parquet.int96RebaseModeInRead": "CORRECTED",
}

# Defaults a user may override through spark_conf.
DEFAULT_CONF: dict[str, str] = {
    # partition values of time transforms and TIMESTAMP rendering are evaluated in the
    # session time zone; UTC makes them match DuckDB's defaults
    "spark.sql.session.timeZone": "UTC",
    # failing casts and overflows raise, as in DuckDB (Spark 4's default; 3.5's is off)
    "spark.sql.ansi.enabled": "true",
    "spark.ui.showConsoleProgress": "false",
    # DuckLake hands Spark the exact file list of a snapshot; a distributed listing job
    # for it costs seconds on local disks (lower this for object stores with slow HEADs)
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
    # an Arrow batch into a Python task stays far below Arrow's 2 GiB per column (a
    # batch of sealed files holds whole files, see sealed.py)
    "spark.sql.execution.arrow.maxBytesPerBatch": str(256 << 20),
}


@dataclass(frozen=True)
class SessionConfig:
    master: str | None = None  # spark_master; local[*] when neither this nor remote is set
    remote: str | None = None  # spark_remote: sc://host:15002 (Spark Connect)
    conf: Mapping[str, Any] = field(default_factory=dict)
    app_name: str = "dbt-ducklake"
    # a file for the JVM's console (log4j, JVM warnings, Python workers); None keeps
    # it on this process's stderr
    console_log: str | None = None
    # spark_keep_alive: seconds a local driver JVM outlives the last dbt process using
    # it (resident.py); 0 starts and stops a JVM with each process
    keep_alive_s: int = 0

    @property
    def local(self) -> bool:
        """Executors run on this machine (a local master, not Connect)."""
        return not self.remote and is_local_master(self.master)

    def validate(self) -> None:
        if self.master and self.remote:
            raise SessionConfigError(
                "spark_master and spark_remote are exclusive: set spark_master for a "
                "local or standalone cluster, or spark_remote (sc://host:port) for Spark Connect"
            )
        if self.remote and not self.remote.startswith("sc://"):
            raise SessionConfigError(
                f"spark_remote {self.remote!r} must be a Spark Connect URL sc://host:port"
            )
        if self.keep_alive_s < 0:
            raise SessionConfigError(
                f"spark_keep_alive {self.keep_alive_s} must be 0 (off) or the seconds a "
                "local driver JVM waits for the next dbt command"
            )
        if self.keep_alive_s and not self.local:
            raise SessionConfigError(
                "spark_keep_alive keeps a local driver JVM between dbt commands; it needs a "
                f"local spark_master (local, local[N], local[*]), not {self.remote or self.master}"
            )
        for key, value in REQUIRED_CONF.items():
            given = self.conf.get(key)
            if given is not None and str(given).lower() != value.lower():
                raise SessionConfigError(
                    f"spark_conf {key}={given!r} conflicts with DuckLake, which needs {value!r}"
                )
