"""Shared pieces of the twin-lake property tests (hypothesis runs many histories in one
test function, so each gets its own directory, and on PostgreSQL its own database).

`DUCKLAKE_PROPERTY_EXAMPLES` sets the histories per backend (long mode: 100 or more).
"""

from __future__ import annotations

import random
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from hypothesis import HealthCheck, settings

from tests.conftest import PG_DSN
from tests.sizes import size

BACKENDS = ["sqlite", "postgres"]


def examples(ci: int, full: int) -> int:
    """Histories per backend: `ci` in CI, `full` under `./dev test --full`, or
    DUCKLAKE_PROPERTY_EXAMPLES's count."""
    return size("DUCKLAKE_PROPERTY_EXAMPLES", ci, full)


@contextmanager
def our_catalog(backend: str, root: Path) -> Iterator[tuple[str, str]]:
    """(metadata for Lake.open, what DuckDB attaches after `ducklake:`) of a fresh
    catalog on `backend`, removed afterwards."""
    if backend == "sqlite":
        yield f"sqlite:///{root}/ours.sqlite", f"sqlite:{root}/ours.sqlite"
        return
    name = "dl_" + uuid.uuid4().hex[:12]
    with psycopg.connect(PG_DSN, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    try:
        yield (
            f"postgresql+psycopg://127.0.0.1:5432/{name}",
            f"postgres:dbname={name} host=127.0.0.1",
        )
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as admin:
            admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


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
