"""Benchmark: the driver cost of one DuckLake commit on SQLite metadata.

Each commit registers one data file (with column stats) in a table that grows by one
file per commit, as an append-heavy dbt incremental model does. Prints the median and
the 90th percentile of `--commits` commits after a few warm-up ones. No Spark: this is
the catalog transaction alone (`lake/`), the part every snapshot pays.

    .venv/bin/python bench/commit_latency.py              # 100 commits
    .venv/bin/python bench/commit_latency.py --smoke      # 20 commits
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import record
from dbt.adapters.ducklake.lake import ColumnSpec, DataFileSpec, FileColumnStats, Lake

WARM_UP = 5


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=100)
    parser.add_argument("--smoke", action="store_true", help="20 commits (CI)")
    args = parser.parse_args()
    commits = 20 if args.smoke else args.commits
    with tempfile.TemporaryDirectory() as root:
        lake = Lake.open(f"sqlite:///{root}/meta.sqlite", data_path=f"{root}/data")
        with lake.transaction() as tx:
            tx.create_table(
                "main", "events", [ColumnSpec("id", "int64"), ColumnSpec("v", "varchar")]
            )
        samples = []
        for i in range(WARM_UP + commits):
            spec = DataFileSpec(
                f"ducklake-{i:06d}.parquet",
                1000,
                20_000,
                500,
                {
                    1: FileColumnStats(1000, 0, str(i * 1000), str(i * 1000 + 999)),
                    2: FileColumnStats(1000, 3, "a", "z"),
                },
            )
            start = time.perf_counter()
            with lake.transaction(author="bench", commit_message=f"append {i}") as tx:
                tx.add_data_files(tx.table("main", "events"), [spec])
            if i >= WARM_UP:
                samples.append(time.perf_counter() - start)
    samples.sort()
    p90 = samples[int(0.9 * (len(samples) - 1))]
    print(f"commits={commits} (one data file each, SQLite metadata)")
    median = statistics.median(samples) * 1000
    print(f"commit median {median:.1f} ms, p90 {p90 * 1000:.1f} ms")
    record("metadata", f"one SQLite commit, median of {commits}", median, "ms", "< 20")


if __name__ == "__main__":
    main()
