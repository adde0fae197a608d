"""The driver JVM's class-data-sharing archive: every dbt command is a new process, and
a new Spark JVM spends seconds of CPU loading and verifying the same ten thousand
classes. Java (13+) can dump the classes a run loaded into an archive that later JVMs
map instead (`-XX:ArchiveClassesAtExit`, then `-XX:SharedArchiveFile`). Measured here
(2 cores): the session's start 7.8 -> 5.0 s, the first statements 7 -> 5 s.

The first session of a setup (a key: Java, pyspark, the jars) claims the archive (an
empty file named with its pid) and its JVM dumps the archive there as it exits (about
10 s of CPU after dbt has finished: nobody waits for it). A later session renames it
into place once its claimer is gone, it has not changed for a minute and it starts with
the archive's magic number, else removes it; sessions starting while a claim is live
run without an archive, and do not dump again. A JVM that finds an archive unusable
(a jar changed, a damaged file) ignores it and starts as it would without.
Off with `-Xshare:off` in `spark.driver.extraJavaOptions` or the JVM's option variables
(`SPARK_SUBMIT_OPTS`, `JAVA_TOOL_OPTIONS`, …), or `DUCKLAKE_CLASS_ARCHIVE=off`.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import logging
import os
import shutil
import struct
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from .versions import client_is_spark_4, pyspark_folder, pyspark_version

log = logging.getLogger(__name__)

OPTIONS_KEY = "spark.driver.extraJavaOptions"
# settings that change the driver's class path, hence the archive
_CLASS_PATH_KEYS = ("spark.jars", "spark.jars.packages", "spark.driver.extraClassPath")
_QUIET = "-Xlog:cds*=off -Xlog:class+path*=off"
# where else the driver JVM's options come from: a CDS option there is the user's own
JVM_OPTION_VARIABLES = (
    "SPARK_SUBMIT_OPTS",
    "JAVA_TOOL_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "_JAVA_OPTIONS",
)
_KEEP = 3  # archives kept (of other setups too), newest first
_STALE_PARTIAL_S = 3600.0  # a partial dump left this long is removed
_SETTLED_S = 60.0  # a partial dump unchanged this long is finished (dumps take ~10 s)
_DYNAMIC_ARCHIVE_MAGIC = 0xF00BABA8


def cache_folder() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "dbt-ducklake" / "class-archives"


def with_class_archive(settings: Mapping[str, str]) -> dict[str, str]:
    """`settings` with the JVM option that maps the archive, or has the JVM dump it at
    exit, or unchanged (the user's own sharing options, Spark 3.5, no cache folder)."""
    return _with_class_archive(settings)[0]


def _with_class_archive(settings: Mapping[str, str]) -> tuple[dict[str, str], Path | None]:
    """`with_class_archive`, and the partial archive this JVM will dump, if any."""
    out = dict(settings)
    own = out.get(OPTIONS_KEY, "")
    if (
        not client_is_spark_4()  # Spark 3.5 may run on Java 8/11 (no dynamic archives)
        or os.environ.get("DUCKLAKE_CLASS_ARCHIVE", "").lower() in ("off", "0", "false")
        or user_sets(_SHARING_FLAGS, own)
    ):
        return out, None
    folder = cache_folder()
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return out, None
    if not os.access(folder, os.W_OK):
        return out, None
    final = folder / f"{archive_key(out)}.jsa"
    claimed = _settle(final)
    if final.is_file():
        with contextlib.suppress(OSError):
            os.utime(final)  # the newest archives are kept
        out[OPTIONS_KEY] = f"{own} -XX:SharedArchiveFile={final} {_QUIET}".strip()
        return out, None
    if claimed:  # a running session (or its exiting JVM) will write this archive
        return out, None
    _tidy(folder)
    partial = folder / f"{final.stem}.{os.getpid()}.partial"
    try:
        partial.touch()  # the claim: sessions starting meanwhile do not dump again
    except OSError:
        return out, None
    out[OPTIONS_KEY] = f"{own} -XX:ArchiveClassesAtExit={partial} {_QUIET}".strip()
    log.debug("Spark's JVM dumps its class archive at exit: %s", partial)
    return out, partial


_SHARING_FLAGS = ("Xshare", "SharedArchiveFile", "ArchiveClassesAtExit")


def user_sets(flags: tuple[str, ...], own_options: str) -> bool:
    """Whether the user's driver options or the JVM's option variables already name any
    of `flags`: then the user manages that part of the JVM and we add nothing."""
    sources = [own_options, *(os.environ.get(name, "") for name in JVM_OPTION_VARIABLES)]
    return any(flag in options for options in sources for flag in flags)


def archive_key(settings: Mapping[str, str]) -> str:
    """What the archive depends on: the Java binary, pyspark's jars, the added jars.
    Asked before pyspark is imported (driver_launch.py), so it is found, not imported."""
    java_home = os.environ.get("JAVA_HOME") or ""
    java = os.path.realpath(
        os.path.join(java_home, "bin", "java") if java_home else (shutil.which("java") or "")
    )
    parts = [java, _stamp(java), pyspark_folder(), pyspark_version()]
    for key in _CLASS_PATH_KEYS:
        for entry in filter(None, settings.get(key, "").split(",")):
            parts += [entry, _stamp(entry)]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:24]


def _settle(final: Path) -> bool:
    """Rename a finished partial dump of `final`'s key into place and remove the dead
    ones; whether a dump of that key is claimed by a live session or being written."""
    now = time.time()
    claimed = False
    for name in glob.glob(str(final.with_suffix("")) + ".*.partial"):
        partial = Path(name)
        try:
            if _dumping(partial, now):
                claimed = True
                continue
            if not final.is_file() and _starts_with_magic(partial):
                os.replace(partial, final)
                log.debug("JVM class archive %s ready", final)
            else:
                partial.unlink()
        except OSError:  # another process renamed or removed it first
            continue
        with contextlib.suppress(OSError):
            _dumper_note(partial).unlink()
    return claimed


def note_dumping_jvm(jvm_pid: Callable[[], int]) -> None:
    """Name the JVM that dumps this process's claimed archive (its pid, asked only when
    there is a claim, beside the partial dump): a later session then takes the archive
    as soon as that JVM has exited, instead of a minute after the file last changed."""
    claims = glob.glob(str(cache_folder() / f"*.{os.getpid()}.partial"))
    pid = str(jvm_pid()) if claims else ""
    for name in claims:
        with contextlib.suppress(OSError):
            _dumper_note(Path(name)).write_text(pid)


def _dumper_note(partial: Path) -> Path:
    return partial.with_name(partial.name + ".jvm")


def _dumping(partial: Path, now: float) -> bool:
    """Whether `partial` may still be written: its claimer runs, or its JVM (when
    named) runs, or (when not) it changed within the last minute."""
    if _alive(partial):
        return True
    try:
        jvm_pid = int(_dumper_note(partial).read_text())
    except (OSError, ValueError):
        return now - partial.stat().st_mtime < _SETTLED_S
    return _pid_alive(jvm_pid)


def _alive(partial: Path) -> bool:
    """Whether the process that claimed `partial` (its name's pid) still runs."""
    try:
        return _pid_alive(int(partial.name.split(".")[1]))
    except (ValueError, IndexError):
        return False


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process
        return True
    return True


def _starts_with_magic(path: Path) -> bool:
    # HotSpot writes the header, magic first, after the archive's regions
    with open(path, "rb") as f:
        head = f.read(4)
    return len(head) == 4 and struct.unpack("<I", head)[0] == _DYNAMIC_ARCHIVE_MAGIC


def _stamp(path: str) -> str:
    try:
        stat = os.stat(path)
    except OSError:
        return "-"
    return f"{stat.st_size}:{stat.st_mtime_ns}"


def _tidy(folder: Path) -> None:
    """Partial dumps of other keys left long ago, and all but the newest archives."""
    now = time.time()
    for partial in glob.glob(str(folder / "*.partial*")):  # and their JVMs' notes
        try:
            if now - os.path.getmtime(partial) > _STALE_PARTIAL_S:
                os.unlink(partial)
        except OSError:
            pass
    try:
        archives = sorted(folder.glob("*.jsa"), key=lambda p: p.stat().st_mtime, reverse=True)
        for old in archives[_KEEP:]:
            old.unlink(missing_ok=True)
    except OSError:  # another process tidied at the same time
        pass
