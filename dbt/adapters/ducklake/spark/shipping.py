"""Executors of a real cluster have their own Python with pyspark[sql], never this
adapter; the modules Spark tasks import are sent to them with the session instead.

Tasks are pickled by reference (`dbt.adapters.ducklake.spark.write_task.WriteTask`), so
executors must import the same module paths. The zip holds the adapter's Python
package and nothing of dbt: `dbt/` and `dbt/adapters/` stay namespace packages there,
and the package's `__init__` modules import nothing until asked, so whatever a task
loads imports neither dbt nor SQLAlchemy.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import Any

log = logging.getLogger("dbt.adapters.ducklake.spark")

# the adapter's package: dbt/adapters/ducklake
_PACKAGE = Path(__file__).resolve().parent.parent
_ARC_ROOT = Path("dbt", "adapters", "ducklake")

_lock = threading.Lock()
_built: str | None = None


def is_local_master(master: str | None) -> bool:
    """Masters whose executors run on this machine, so they can use this interpreter."""
    if not master:
        return True
    name = master.strip().lower()
    return name == "local" or name.startswith(("local[", "local-cluster["))


def engine_zip() -> str:
    """The adapter's Python modules as a zip, built once per process.

    The name carries a hash of the contents: executors cache added files by name, and a
    long-lived cluster must never run yesterday's engine under today's driver.
    """
    global _built
    with _lock:
        if _built is not None and os.path.exists(_built):
            return _built
        blob = _zip_bytes()
        digest = hashlib.sha256(blob).hexdigest()[:16]
        folder = Path(tempfile.gettempdir(), f"dbt-ducklake-{os.getuid()}")
        folder.mkdir(mode=0o700, exist_ok=True)
        path = folder / f"dbt_ducklake_engine_{digest}.zip"
        if not path.exists():
            partial = path.with_suffix(f".{os.getpid()}.tmp")
            partial.write_bytes(blob)
            os.replace(partial, path)
        _built = str(path)
        return _built


def _zip_bytes() -> bytes:
    sources = sorted(p for p in _PACKAGE.rglob("*.py") if "__pycache__" not in p.parts)
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        # zipimport finds a namespace package (dbt/, dbt/adapters/) only by its entry
        folders = {(_ARC_ROOT / s.relative_to(_PACKAGE)).parent for s in sources}
        for folder in sorted({p for f in folders for p in (f, *f.parents)} - {Path(".")}):
            archive.writestr(_entry(folder.as_posix() + "/"), b"")
        for source in sources:
            arcname = (_ARC_ROOT / source.relative_to(_PACKAGE)).as_posix()
            archive.writestr(_entry(arcname), source.read_bytes())
    return out.getvalue()


def _entry(arcname: str) -> zipfile.ZipInfo:
    # a fixed timestamp: equal sources give equal bytes, hence an equal name
    info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


def ship_engine(spark: Any, *, connect: bool) -> str:
    """Add the engine's zip to the session's Python path on every executor."""
    path = engine_zip()
    if connect:
        spark.addArtifacts(path, pyfile=True)
    else:
        spark.sparkContext.addPyFile(path)
    log.info("engine modules shipped to executors (%s, %d KB)", path, os.path.getsize(path) // 1024)
    return path
