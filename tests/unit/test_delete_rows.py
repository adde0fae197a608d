"""A delete file's rows: the live delete file's deletes keep their snapshots, new
positions take the statement's (or their own), ascending, each position once; the data
file's path in every row."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from dbt.adapters.ducklake.spark.delete_rows import merged_deletes, repeated_text


def _lists(merged: tuple[np.ndarray, np.ndarray]) -> tuple[list[int], list[int]]:
    return merged[0].tolist(), merged[1].tolist()


def test_old_deletes_keep_their_snapshots_and_new_ones_take_the_stamp() -> None:
    old = (np.array([9, 2, 5], np.int64), np.array([3, 1, 2], np.int64))
    new = np.array([1, 5, 12], np.int64)  # 5 was deleted already, at snapshot 2
    assert _lists(merged_deletes(new, 7, None, old)) == ([1, 2, 5, 9, 12], [7, 1, 2, 3, 7])


def test_each_new_position_may_carry_its_own_snapshot() -> None:
    old = (np.array([4], np.int64), np.array([2], np.int64))
    new = np.array([3, 4, 8], np.int64)
    stamps = {3: 5, 4: 6, 8: 9}
    assert _lists(merged_deletes(new, 0, stamps, old)) == ([3, 4, 8], [5, 2, 9])


def test_without_a_live_delete_file_and_with_a_position_listed_twice() -> None:
    assert _lists(merged_deletes(np.array([6, 2], np.int64), 4, None, None)) == (
        [2, 6],
        [4, 4],
    )
    old = (np.array([3, 3], np.int64), np.array([1, 2], np.int64))
    assert _lists(merged_deletes(np.empty(0, np.int64), 4, None, old)) == ([3], [2])


def test_the_data_file_path_repeated_per_row_is_the_path() -> None:
    for path, n in (("s3://bucket/é/data.parquet", 5), ("/x", 1), ("/x", 0)):
        column = repeated_text(path, n)
        column.validate(full=True)
        assert column.type == pa.string()
        assert column.to_pylist() == [path] * n
