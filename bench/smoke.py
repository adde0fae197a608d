"""Every benchmark at its `--smoke` size, in one process: CI checks that each still runs
and prints its figures, and pays for one Spark start instead of one per benchmark.

    .venv/bin/python bench/smoke.py            # all of them, in `./dev bench`'s order
    .venv/bin/python bench/smoke.py merge      # some of them
"""

from __future__ import annotations

import importlib
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import bench_session

BENCHES = (
    "scan_planning",
    "merge",
    "compaction",
    "engine_paths",
    "dbt_run",
    "commit_latency",
    "small_changes",
    "stage_copy",
    "scaling",
    "change_feed",  # last: it runs dbt in this process
)


def main() -> None:
    chosen = sys.argv[1:] or list(BENCHES)
    unknown = sorted(set(chosen) - set(BENCHES))
    if unknown:
        raise SystemExit(f"unknown benchmark(s) {unknown}; accepted: {', '.join(BENCHES)}")
    began = time.perf_counter()
    bench_session()  # the session every benchmark below reuses (the first config wins)
    took: list[tuple[str, float]] = []
    for name in chosen:
        module = importlib.import_module(f"bench.{name}")
        sys.argv = [f"bench/{name}.py", "--smoke"]
        started = time.perf_counter()
        module.main()
        took.append((name, time.perf_counter() - started))
    print("\nsmoke benchmarks: " + ", ".join(f"{n} {s:.0f} s" for n, s in took), end="")
    print(f"; {time.perf_counter() - began:.0f} s in all")


if __name__ == "__main__":
    main()
