"""Shared pieces of the twin-lake property tests (hypothesis runs many histories in one
test function, so each gets its own directory)."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from hypothesis import HealthCheck, settings


def twin_settings(max_examples: int) -> settings:
    """Few, reproducible examples: each history costs Spark jobs, CI time is bounded."""
    return settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    )


def fresh_root(tmp_path: Path) -> Path:
    root = tmp_path / f"run{random.random()}"
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir()
    return root
