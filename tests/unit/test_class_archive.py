"""The driver JVM's class archive: claimed once, promoted only when finished and whole,
never mapped half-written, and out of the way when the user manages CDS themselves."""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from dbt.adapters.ducklake.spark import class_archive
from dbt.adapters.ducklake.spark.class_archive import OPTIONS_KEY
from dbt.adapters.ducklake.spark.class_archive import _with_class_archive as with_class_archive
from dbt.adapters.ducklake.spark.compat import CLIENT_IS_SPARK_4

pytestmark = pytest.mark.skipif(not CLIENT_IS_SPARK_4, reason="Spark 4 clients only")

MAGIC = struct.pack("<I", 0xF00BABA8)


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    for name in ("DUCKLAKE_CLASS_ARCHIVE", *class_archive.JVM_OPTION_VARIABLES):
        monkeypatch.delenv(name, raising=False)
    return tmp_path / "dbt-ducklake" / "class-archives"


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def _age(path: Path, seconds: float) -> None:
    past = time.time() - seconds
    os.utime(path, (past, past))


def test_the_first_session_claims_and_dumps_the_next_runs_without(cache: Path) -> None:
    settings, partial = with_class_archive({OPTIONS_KEY: "-Xmx1g"})
    assert partial is not None and partial.is_file() and partial.stat().st_size == 0
    assert settings[OPTIONS_KEY].startswith("-Xmx1g -XX:ArchiveClassesAtExit=")
    assert str(partial) in settings[OPTIONS_KEY]
    # this process's claim is live: a second session neither maps nor dumps
    again, second = with_class_archive({})
    assert second is None and OPTIONS_KEY not in again


def test_a_finished_dump_is_promoted_and_mapped(cache: Path) -> None:
    key = class_archive.archive_key({})
    cache.mkdir(parents=True)
    partial = cache / f"{key}.{_dead_pid()}.partial"
    partial.write_bytes(MAGIC + b"\0" * 64)
    _age(partial, 120)
    settings, dump = with_class_archive({})
    final = cache / f"{key}.jsa"
    assert dump is None and final.is_file() and not partial.exists()
    assert f"-XX:SharedArchiveFile={final}" in settings[OPTIONS_KEY]


def test_a_damaged_or_recent_dump_is_never_mapped(cache: Path) -> None:
    key = class_archive.archive_key({})
    cache.mkdir(parents=True)
    damaged = cache / f"{key}.{_dead_pid()}.partial"
    damaged.write_bytes(b"\0" * 68)  # a JVM killed before it wrote the header
    _age(damaged, 120)
    settings, dump = with_class_archive({})
    assert not damaged.exists() and not (cache / f"{key}.jsa").exists()
    assert dump is not None  # this session dumps instead
    dump.unlink()
    writing = cache / f"{key}.{_dead_pid()}.partial"
    writing.write_bytes(MAGIC)  # its JVM may still be writing: changed seconds ago
    settings, dump = with_class_archive({})
    assert dump is None and OPTIONS_KEY not in settings and writing.exists()


def test_a_dump_whose_jvm_has_exited_is_mapped_at_once(cache: Path) -> None:
    """With its JVM named, a dump is taken as soon as that JVM is gone (no minute's
    wait); while it runs, the dump stays claimed."""
    key = class_archive.archive_key({})
    cache.mkdir(parents=True)
    partial = cache / f"{key}.{_dead_pid()}.partial"
    partial.write_bytes(MAGIC + b"\0" * 64)  # changed just now
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        Path(f"{partial}.jvm").write_text(str(sleeper.pid))
        settings, dump = with_class_archive({})
        assert dump is None and OPTIONS_KEY not in settings and partial.exists()
    finally:
        sleeper.kill()
        sleeper.wait()
    settings, dump = with_class_archive({})
    final = cache / f"{key}.jsa"
    assert dump is None and final.is_file() and not partial.exists()
    assert not Path(f"{partial}.jvm").exists()
    assert f"-XX:SharedArchiveFile={final}" in settings[OPTIONS_KEY]


def test_the_claiming_process_names_its_jvm(cache: Path) -> None:
    _settings, partial = with_class_archive({})
    assert partial is not None
    class_archive.note_dumping_jvm(lambda: 4242)
    assert Path(f"{partial}.jvm").read_text() == "4242"


def test_the_key_follows_the_jars(cache: Path, tmp_path: Path) -> None:
    jar = tmp_path / "extra.jar"
    jar.write_bytes(b"one")
    first = class_archive.archive_key({"spark.jars": str(jar)})
    assert first == class_archive.archive_key({"spark.jars": str(jar)})
    assert first != class_archive.archive_key({})
    jar.write_bytes(b"other contents")
    assert first != class_archive.archive_key({"spark.jars": str(jar)})


@pytest.mark.parametrize(
    "own", ["-Xshare:off", "-XX:SharedArchiveFile=/mine.jsa", "-XX:ArchiveClassesAtExit=/x"]
)
def test_a_users_own_sharing_options_are_left_alone(cache: Path, own: str) -> None:
    settings, dump = with_class_archive({OPTIONS_KEY: own})
    assert dump is None and settings[OPTIONS_KEY] == own and not cache.exists()


@pytest.mark.parametrize("variable", ["SPARK_SUBMIT_OPTS", "JAVA_TOOL_OPTIONS"])
def test_sharing_options_in_the_jvms_environment_are_left_alone(
    cache: Path, monkeypatch: pytest.MonkeyPatch, variable: str
) -> None:
    monkeypatch.setenv(variable, "-XX:TieredStopAtLevel=1 -XX:SharedArchiveFile=/tests.jsa")
    settings, dump = with_class_archive({})
    assert dump is None and settings == {} and not cache.exists()


def test_turned_off_by_the_environment(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DUCKLAKE_CLASS_ARCHIVE", "off")
    settings, dump = with_class_archive({})
    assert dump is None and settings == {} and not cache.exists()
