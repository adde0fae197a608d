"""The task that turns deletion vectors (`puffin` delete files) into deleted positions.

It runs in Python workers over Spark's `binaryFile` rows (path, length, content), one
row per vector file, so the positions of a large delete never reach the driver. Nothing
here imports pyspark.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from urllib.parse import unquote

import numpy as np
import pyarrow as pa

from ..lake import first_deletions, read_vectors


@dataclass(frozen=True)
class VectorFile:
    """A live deletion vector as the catalog records it."""

    path: str
    size: int
    data_file_id: int
    begin_snapshot: int
    row_offset: int  # the data file's first row number in the scan (0 outside scans)


class DecodeVectorsTask:
    """Picklable mapInArrow task: per vector file, (data file id, position, deleting
    snapshot, row offset) rows under the column names given."""

    def __init__(self, files: Sequence[VectorFile], names: Sequence[str]):
        self.by_name: dict[str, list[VectorFile]] = {}
        for f in files:
            self.by_name.setdefault(posixpath.basename(f.path), []).append(f)
        self.schema = pa.schema([pa.field(n, pa.int64()) for n in names])

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        for batch in batches:
            paths = batch.column("path").to_pylist()
            sizes = batch.column("length").to_pylist()
            contents = batch.column("content")
            for i, (path, size) in enumerate(zip(paths, sizes, strict=True)):
                f = self._catalog_entry(path, size)
                vectors = read_vectors(contents[i].as_buffer().to_pybytes(), f.path)
                positions, snapshots = first_deletions(vectors, f.begin_snapshot)
                n = len(positions)
                yield pa.RecordBatch.from_arrays(
                    [
                        pa.array(np.full(n, f.data_file_id, np.int64)),
                        pa.array(positions),
                        pa.array(snapshots),
                        pa.array(np.full(n, f.row_offset, np.int64)),
                    ],
                    schema=self.schema,
                )

    def _catalog_entry(self, path: str, size: int) -> VectorFile:
        """The catalog row of a file Spark read: by name (DuckDB names each vector with a
        fresh UUID), then by size and the path's tail when names repeat."""
        name = unquote(posixpath.basename(path))
        candidates = self.by_name.get(name) or self.by_name.get(posixpath.basename(path)) or []
        matching = [f for f in candidates if f.size == size]
        if len(matching) > 1:
            local = unquote(path.split(":", 1)[-1]).lstrip("/")
            matching = [f for f in matching if local.endswith(f.path.split("://")[-1].lstrip("/"))]
        if len(matching) != 1:
            raise ValueError(
                f"deletion vector {path} ({size} bytes) is not the file the DuckLake catalog "
                "records: it was changed outside the lake"
            )
        return matching[0]
