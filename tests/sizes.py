"""How many times the loops of the slow tests repeat: CI's size by default, the full size
under `./dev test --full` (DUCKLAKE_FULL=1), or exactly what a variable of its own says.
Only repetitions shrink for CI; every kind of step, writer and check still runs."""

from __future__ import annotations

import os


def full_size() -> bool:
    return os.environ.get("DUCKLAKE_FULL", "") not in ("", "0")


def size(variable: str, ci: int, full: int) -> int:
    """`variable` from the environment if set, else `full` or `ci`."""
    given = os.environ.get(variable, "")
    if given:
        return int(given)
    return full if full_size() else ci
