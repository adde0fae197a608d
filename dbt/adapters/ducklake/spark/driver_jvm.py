"""What a driver JVM this adapter starts runs with, shared by the process's own JVM
(`session.py`) and a kept one (`resident.py`)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Mapping

from .class_archive import with_class_archive
from .jit import with_short_run_jit

WAREHOUSE_KEY = "spark.sql.warehouse.dir"


def driver_settings(settings: Mapping[str, str], warehouse: Callable[[], str]) -> dict[str, str]:
    """What a driver JVM this adapter starts runs with, beyond the session's settings:
    the class archive, the JIT opt-in and a warehouse folder (`warehouse()` unless the
    user set one). For this process's JVM and for a kept one (resident.py) alike."""
    out = with_short_run_jit(with_class_archive(settings))
    if WAREHOUSE_KEY not in out:
        out[WAREHOUSE_KEY] = warehouse()
    return out


def tail_of(path: str | os.PathLike[str], lines: int = 15) -> str:
    """The last lines of a JVM's console file, for an error message ("" if unreadable)."""
    with contextlib.suppress(OSError), open(path, encoding="utf-8", errors="replace") as f:
        return "".join(f.readlines()[-lines:])
    return ""
