"""The task that turns the rows a DELETE, UPDATE or MERGE removes into catalog changes.

It runs inside Python workers over the victims grouped by data file and sorted by
position, so counting, the repeat check and writing delete files are one Spark job:
the driver gets one small row per touched file (ended, inlined positions, or the facts
of a delete file just written), never the positions of a large delete. Nothing here
imports pyspark.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .arrow import DeleteTarget, OldDeletes, write_delete_file

ENDED, INLINE, WRITTEN, INLINED_ROWS, REPEATED = "ended", "inline", "written", "rows", "repeated"


@dataclass(frozen=True)
class FileFacts:
    """What the task must know of a data file the scan read."""

    record_count: int
    already_deleted: int  # rows its live delete file removes
    target: DeleteTarget


class StageDeletesTask:
    """Picklable mapInArrow task over (fid, pos, rowid) batches, partitioned by fid and
    sorted by (fid, pos): a partition holds every victim of its files. A fourth column,
    `old_snapshot`, marks rows that are not victims but the deletes of a file's live
    delete file, read by Spark where Python cannot (an encrypted file, see sealed.py).

    Per file, like DuckDB: every row gone ends it; up to `inline_limit` positions are
    handed back to be stored as inlined deletes; more are written as a delete file here.
    With `check_repeats`, a row listed twice (a MERGE target row matched by two source
    rows) is reported instead, and the driver removes what other tasks wrote.
    """

    def __init__(
        self,
        files: Mapping[int, FileFacts],
        inline_limit: int,
        stamp: int,
        compression: str,
        check_repeats: bool,
    ):
        self.files = dict(files)
        self.inline_limit = inline_limit
        self.stamp = stamp
        self.compression = compression
        self.check_repeats = check_repeats
        self.old: dict[int, OldDeletes] = {}

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        parts = [b for b in batches if b.num_rows]
        if not parts:
            return
        table = pa.Table.from_batches(parts)
        self.old = {}
        if table.num_columns > 3:
            table = self._take_old_deletes(table)
        # inlined rows have no file and no position: -1 keeps the arrays int64
        fids, pos, rowids = (
            pc.fill_null(table.column(i), -1).to_numpy().astype(np.int64) for i in range(3)
        )
        inlined = table.column(0).is_null().to_numpy(zero_copy_only=False)
        rows: list[dict[str, Any]] = []
        if inlined.any():
            rows.append(self._inlined_rows(rowids[inlined]))
        fids, pos, rowids = fids[~inlined], pos[~inlined], rowids[~inlined]
        # rows arrive sorted by (fid, pos): each file is one run
        bounds: Any = np.flatnonzero(np.r_[True, fids[1:] != fids[:-1], True]) if len(fids) else []
        for start, end in itertools.pairwise(bounds):
            fid = int(fids[start])
            rows.append(self._one_file(fid, pos[start:end], rowids[start:end]))
        yield pa.RecordBatch.from_pylist(rows, schema=_ARROW_RESULT)

    def _take_old_deletes(self, table: pa.Table) -> pa.Table:
        """The victims of `table`; the old deletes' rows kept per file in `self.old`."""
        is_old = table.column(3).is_valid()
        old = table.filter(is_old)
        fids, pos, snaps = (old.column(i).to_numpy() for i in (0, 1, 3))
        for fid in np.unique(fids):
            mine = fids == fid
            self.old[int(fid)] = (pos[mine], snaps[mine])
        return table.filter(pc.invert(is_old))

    def _inlined_rows(self, rowids: np.ndarray) -> dict[str, Any]:
        ordered = np.sort(rowids)
        if self.check_repeats:
            twice = ordered[1:][ordered[1:] == ordered[:-1]]
            if len(twice):
                return {"fid": None, "outcome": REPEATED, "repeated": int(twice[0])}
        unique = np.unique(ordered)
        return {"fid": None, "outcome": INLINED_ROWS, "n": len(unique), "rowids": unique.tolist()}

    def _one_file(self, fid: int, pos: np.ndarray, rowids: np.ndarray) -> dict[str, Any]:
        facts = self.files.get(fid)
        if facts is None:  # the scan read a file the driver did not plan: a bug, not data
            raise RuntimeError(f"delete staging: data file {fid} was not among the scanned files")
        repeat = np.flatnonzero(pos[1:] == pos[:-1])
        if len(repeat):
            if self.check_repeats:
                return {"fid": fid, "outcome": REPEATED, "repeated": int(rowids[repeat[0] + 1])}
            pos = np.unique(pos)
        n = len(pos)
        if n + facts.already_deleted >= facts.record_count:
            return {"fid": fid, "outcome": ENDED, "n": n}
        if n <= self.inline_limit:
            return {"fid": fid, "outcome": INLINE, "n": n, "positions": pos.tolist()}
        written = write_delete_file(
            facts.target, pos.tolist(), self.stamp, self.compression, old=self.old.get(fid)
        )
        return {"fid": fid, "outcome": WRITTEN, "n": n, **written}


# one row per touched data file (fid set) and one for rows of the inlined table (fid NULL)
_ARROW_RESULT = pa.schema(
    [
        ("fid", pa.int64()),
        ("outcome", pa.string()),
        ("n", pa.int64()),
        ("repeated", pa.int64()),
        ("positions", pa.list_(pa.int64())),
        ("rowids", pa.list_(pa.int64())),
        ("path", pa.string()),
        ("delete_count", pa.int64()),
        ("file_size", pa.int64()),
        ("footer_size", pa.int64()),
        ("begin_snapshot", pa.int64()),
        ("partial_max", pa.int64()),
        ("format", pa.string()),
    ]
)
_DDL = {pa.int64(): "bigint", pa.string(): "string", pa.list_(pa.int64()): "array<bigint>"}
# the same schema as Spark's mapInArrow takes it
RESULT_SCHEMA = ", ".join(f"{f.name} {_DDL[f.type]}" for f in _ARROW_RESULT)
