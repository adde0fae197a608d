"""Benchmark: what `publish: atomic` pays once per invocation to stage the catalog.

Builds a SQLite catalog holding `--files` data files (in commits of 500), then times
the staging copy (lake/staging_copy.py) against one ordinary commit on the same catalog, both
measured here, and prints the ratio: the copy costs about as much as a few commits.

    .venv/bin/python bench/stage_copy.py              # 100,000 files
    .venv/bin/python bench/stage_copy.py --smoke      # 5,000 files (CI)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import uuid

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import interleaved, record
from dbt.adapters.ducklake.lake import ColumnSpec, DataFileSpec, Lake, drop_stage, open_stage

PER_COMMIT = 500


def _files(count: int) -> list[DataFileSpec]:
    return [DataFileSpec(f"ducklake-{uuid.uuid4()}.parquet", 100, 4_000) for _ in range(count)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--smoke", action="store_true", help="5,000 files (CI)")
    args = parser.parse_args()
    files = 5_000 if args.smoke else args.files
    with tempfile.TemporaryDirectory() as root:
        lake = Lake.open(f"sqlite:///{root}/meta.sqlite", data_path=f"{root}/data")
        with lake.transaction() as tx:
            tx.create_table("main", "events", [ColumnSpec("id", "int64")])
        for start in range(0, files, PER_COMMIT):
            with lake.transaction() as tx:
                tx.add_data_files(
                    tx.table("main", "events"), _files(min(PER_COMMIT, files - start))
                )

        def stage() -> None:
            drop_stage(open_stage(lake, uuid.uuid4().hex))

        def commit() -> None:
            with lake.transaction(commit_message="one file") as tx:
                tx.add_data_files(tx.table("main", "events"), _files(1))

        took = interleaved({"stage": stage, "commit": commit}, repeat=5)
    ratio = took["stage"] / took["commit"]
    print(f"catalog of {files:,} data files (SQLite)")
    print(f"staging copy {took['stage'] * 1000:.1f} ms; one commit {took['commit'] * 1000:.1f} ms")
    print(f"staging copy / one commit: {ratio:.2f}x")
    record("publish: atomic", f"staging copy of {files:,} files / one commit", ratio, "x", "<= 10")


if __name__ == "__main__":
    main()
