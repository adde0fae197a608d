"""Commands that run nodes shorten Python's thread switch interval: every py4j call waits
for the GIL when the JVM answers, up to the whole interval while another thread computes
(bench/warm_up.py measures what it buys). Metadata-only commands leave it alone, and a
shorter interval the user set stays."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

from dbt.adapters.ducklake import prestart
from dbt.adapters.ducklake.credentials import DucklakeCredentials


@pytest.fixture
def interval() -> Iterator[None]:
    original = sys.getswitchinterval()
    sys.setswitchinterval(0.005)  # CPython's default
    try:
        yield
    finally:
        sys.setswitchinterval(original)


def _prestart(monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    # spark_prestart off: the interval is set either way, and no Spark starts here
    credentials = DucklakeCredentials(
        metadata="sqlite:///unused.sqlite", schema="main", spark_prestart=False
    )
    monkeypatch.setattr(prestart, "dbt_command", lambda: command)
    assert prestart.prestart_spark(credentials) is None


def test_node_commands_shorten_it(interval: None, monkeypatch: pytest.MonkeyPatch) -> None:
    for command in sorted(prestart.NODE_COMMANDS):
        sys.setswitchinterval(0.005)
        _prestart(monkeypatch, command)
        assert sys.getswitchinterval() == pytest.approx(prestart.SWITCH_INTERVAL_S), command


def test_metadata_commands_leave_it(interval: None, monkeypatch: pytest.MonkeyPatch) -> None:
    for command in ("run-operation", "ls", "parse", "docs", "debug", "compile"):
        _prestart(monkeypatch, command)
        assert sys.getswitchinterval() == pytest.approx(0.005), command


def test_a_shorter_one_stays(interval: None, monkeypatch: pytest.MonkeyPatch) -> None:
    sys.setswitchinterval(0.0002)
    _prestart(monkeypatch, "build")
    assert sys.getswitchinterval() == pytest.approx(0.0002, rel=0.01)
