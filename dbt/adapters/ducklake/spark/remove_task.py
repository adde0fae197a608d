"""What a Spark task runs to remove files. Executors import this module: it needs only
pyarrow, never dbt, SQLAlchemy or pyspark."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pyarrow as pa

from ..lake import FileIO


@dataclass(frozen=True)
class RemovePaths:
    """Picklable task body: remove each path of the batches' first column (gone already
    counts as removed), through the lake's file access (local disk or S3)."""

    files: FileIO

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        removed = 0
        for batch in batches:
            for path in batch.column(0).to_pylist():
                self.files.delete(path)
                removed += 1
        yield pa.RecordBatch.from_pylist([{"removed": removed}])
