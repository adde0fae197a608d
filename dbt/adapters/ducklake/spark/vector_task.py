"""The task that turns deletion vectors (`puffin` delete files) into deleted positions.

It runs in Python workers over Spark's `binaryFile` rows (path, length, content), one
row per vector file, so the positions of a large delete never reach the driver. Nothing
here imports pyspark.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator, Mapping, Sequence
from urllib.parse import unquote

import numpy as np
import pyarrow as pa

from ..lake import DeleteFile, first_deletions, read_vectors


class DecodeVectorsTask:
    """Picklable mapInArrow task: per vector file, (data file id, position, deleting
    snapshot, row offset) rows under the column names given; a data file's row offset
    is its first row number in a scan (`offsets`, 0 when absent)."""

    def __init__(
        self, files: Sequence[DeleteFile], offsets: Mapping[int, int], names: Sequence[str]
    ):
        self.by_name: dict[str, list[DeleteFile]] = {}
        for f in files:
            self.by_name.setdefault(posixpath.basename(f.path), []).append(f)
        self.offsets = {f.data_file_id: offsets.get(f.data_file_id, 0) for f in files}
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
                        pa.array(np.full(n, self.offsets[f.data_file_id], np.int64)),
                    ],
                    schema=self.schema,
                )

    def _catalog_entry(self, path: str, size: int) -> DeleteFile:
        """The catalog row of a file Spark read: by name (DuckDB names each vector with a
        fresh UUID), then by size and the path's tail when names repeat."""
        name = unquote(posixpath.basename(path))
        candidates = self.by_name.get(name) or self.by_name.get(posixpath.basename(path)) or []
        matching = [f for f in candidates if f.file_size_bytes == size]
        if len(matching) > 1:
            local = unquote(path.split(":", 1)[-1]).lstrip("/")
            matching = [f for f in matching if local.endswith(f.path.split("://")[-1].lstrip("/"))]
        if len(matching) != 1:
            raise ValueError(
                f"deletion vector {path} ({size} bytes) is not the file the DuckLake catalog "
                "records: it was changed outside the lake"
            )
        return matching[0]
