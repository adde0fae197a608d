"""S3A's jars off the driver's Python path.

pyspark puts every jar that `spark.jars.packages` resolves on `sys.path`, since a
package's jar may carry Python modules. S3A's jars (hadoop-aws, which the adapter adds
for an `s3://` data path from an installed wheel, and what it pulls in) carry none, and
the AWS SDK bundle among them is a ~690 MB zip: every `importlib.metadata` lookup that
reaches it lists its whole directory, ~4.5 s measured, and dbt looks a version up on
each manifest write (once per command; once per invocation for in-process runners)."""

from __future__ import annotations

import os
import sys

# the Ivy file names (`<group>_<artifact>-<version>.jar`) of S3A and its dependencies
JAVA_ONLY_JARS = (
    "org.apache.hadoop_hadoop-aws-",
    "software.amazon.awssdk_",
    "software.amazon.s3.",
    "software.amazon.eventstream_",
    "org.wildfly.openssl_",
)


def drop_java_only_jars(path: list[str] | None = None) -> list[str]:
    """Remove S3A's jars from `path` (sys.path); the entries removed."""
    entries = sys.path if path is None else path
    dropped = [
        entry
        for entry in entries
        if entry.endswith(".jar") and os.path.basename(entry).startswith(JAVA_ONLY_JARS)
    ]
    entries[:] = [entry for entry in entries if entry not in dropped]
    return dropped
