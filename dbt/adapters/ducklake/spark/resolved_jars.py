"""Jars that `spark.jars.packages` resolved, taken as `spark.jars` by later sessions.

Spark resolves `spark.jars.packages` with Ivy at every start, even when every jar is in
Ivy's cache: ~1 s per dbt command for the S3A jars that the adapter asks for when an
installed wheel (no jar cache) meets an `s3://` data path, and a round trip to each
repository that Ivy asks. When every jar a start resolved is one of S3A's Java-only
jars (`python_path.JAVA_ONLY_JARS`), they are remembered, per packages, repositories,
exclusions, Ivy settings and pyspark version, and the next sessions take them as
`spark.jars` while they are all still on disk. Other packages may carry Python, which
pyspark puts on `sys.path` for resolved packages only: Spark resolves those as before.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Mapping
from pathlib import Path

from .class_archive import cache_folder
from .python_path import JAVA_ONLY_JARS

log = logging.getLogger("dbt.adapters.ducklake.spark")

PACKAGES = "spark.jars.packages"
# what decides which jars Ivy resolves
_RESOLUTION_KEYS = (
    PACKAGES,
    "spark.jars.repositories",
    "spark.jars.excludes",
    "spark.jars.ivy",
    "spark.jars.ivySettings",
)
# versions Ivy may resolve to a newer jar on a later start: never remembered
_MOVING_VERSIONS = ("SNAPSHOT", "latest.", "[", "(", "+")


def memo_file(settings: Mapping[str, str], pyspark_version: str) -> Path | None:
    """Where the jars these settings' packages resolve to are remembered; None without
    packages, or with a version that can move."""
    packages = settings.get(PACKAGES, "")
    if not packages or any(moving in packages for moving in _MOVING_VERSIONS):
        return None
    key = json.dumps([settings.get(k, "") for k in _RESOLUTION_KEYS] + [pyspark_version])
    digest = hashlib.sha256(key.encode()).hexdigest()[:24]
    return cache_folder().parent / "resolved-jars" / f"{digest}.json"


def recalled(settings: Mapping[str, str], memo: Path | None) -> dict[str, str]:
    """`settings` with the remembered jars in `spark.jars` instead of the packages, when
    there is a memo and every jar in it is still a file; else unchanged."""
    out = dict(settings)
    if memo is None:
        return out
    try:
        jars = json.loads(memo.read_text())["jars"]
    except (OSError, ValueError, KeyError, TypeError):
        return out
    if not jars or not all(isinstance(j, str) and os.path.isfile(j) for j in jars):
        return out
    given = [j for j in out.get("spark.jars", "").split(",") if j]
    out["spark.jars"] = ",".join([*given, *jars])
    log.info("Spark takes the jars of %s resolved before (%s)", out.pop(PACKAGES), memo)
    return out


def remember(memo: Path | None, resolved: str) -> bool:
    """Remember the jars a start resolved (`spark.submit.pyFiles`, where pyspark lists
    them) if all are Java-only; whether it did. A memo is replaced whole, never torn."""
    jars = [j for j in resolved.split(",") if j]
    if memo is None or not jars:
        return False
    if not all(j.endswith(".jar") and os.path.basename(j).startswith(JAVA_ONLY_JARS) for j in jars):
        return False
    try:
        memo.parent.mkdir(parents=True, exist_ok=True)
        partial = memo.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps({"jars": jars}))
        os.replace(partial, memo)
    except OSError as exc:  # no cache folder: Spark resolves them again next time
        log.debug("the resolved jars were not remembered: %s", exc)
        return False
    return True
