"""What a Spark task runs to remove files. Executors import this module: it needs only
pyarrow, never dbt, SQLAlchemy or pyspark."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

import pyarrow as pa


def remove_paths(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """Remove each path of the batches' first column (gone already counts as removed)."""
    removed = 0
    for batch in batches:
        for path in batch.column(0).to_pylist():
            remove_path(path)
            removed += 1
    yield pa.RecordBatch.from_pylist([{"removed": removed}])


def remove_path(path: str) -> None:
    """Remove a file; one already gone counts as removed."""
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)
