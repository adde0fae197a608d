"""Things a statement did that its caller should tell the user, once.

A scan that keeps less than DuckDB reads by a documented rule (TIMESTAMP_NS to
microseconds) records a notice here; the adapter takes them after each statement and
shows each in the dbt output once per model. Per thread: dbt runs models in threads,
and a statement's scans run in the thread that executes it."""

from __future__ import annotations

import threading

_local = threading.local()


def notice(text: str) -> None:
    pending: list[str] = _local.__dict__.setdefault("pending", [])
    if text not in pending:
        pending.append(text)


def take_notices() -> list[str]:
    """The notices recorded in this thread since the last call."""
    pending: list[str] = _local.__dict__.setdefault("pending", [])
    taken = list(pending)
    pending.clear()
    return taken
