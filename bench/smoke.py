"""Every benchmark at its `--smoke` size, in one process: CI checks that each still runs
and prints its figures, and pays for one Spark start instead of one per benchmark.

    .venv/bin/python bench/smoke.py            # all of them, in `./dev bench`'s order
    .venv/bin/python bench/smoke.py merge      # some of them

With `DUCKLAKE_CLASS_ARCHIVE_OUT=PATH` set (`./dev test` does when the test JVMs' class
archive is missing), the session's JVM also dumps the classes it loaded to PATH as it
exits: the smoke's work is a superset of what the test JVMs load first, and the
archive then costs no separate Spark run (67 s of a cold CI).
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import time
from collections.abc import Iterator

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
    archive = os.environ.get("DUCKLAKE_CLASS_ARCHIVE_OUT")
    with _dumping_classes_to(archive):
        spark = bench_session()  # the session every benchmark reuses (the first config wins)
    took: list[tuple[str, float]] = []
    for name in chosen:
        module = importlib.import_module(f"bench.{name}")
        sys.argv = [f"bench/{name}.py", "--smoke"]
        started = time.perf_counter()
        module.main()
        took.append((name, time.perf_counter() - started))
    print("\nsmoke benchmarks: " + ", ".join(f"{n} {s:.0f} s" for n, s in took), end="")
    print(f"; {time.perf_counter() - began:.0f} s in all")
    if archive:
        _stop_and_wait_for_dump(spark, archive)


@contextlib.contextmanager
def _dumping_classes_to(archive: str | None) -> Iterator[None]:
    """The JVM started inside dumps its classes at exit to `archive`; the JVMs the
    benchmarks start later (dbt runs) do not. They run with the JVM's default sharing
    (`-Xshare:auto`, named so that the adapter does not start archives of its own)."""
    if not archive:
        yield
        return
    before = os.environ.get("SPARK_SUBMIT_OPTS", "")
    os.environ["SPARK_SUBMIT_OPTS"] = f"{before} -XX:ArchiveClassesAtExit={archive}"
    try:
        yield
    finally:
        os.environ["SPARK_SUBMIT_OPTS"] = f"{before} -Xshare:auto"


def _stop_and_wait_for_dump(spark: object, archive: str) -> None:
    """The JVM writes the archive as it exits, which its gateway's stdin closing starts."""
    from dbt.adapters.ducklake.spark.session import stop_session

    stop_session()
    gateway = getattr(getattr(spark, "sparkContext", None), "_gateway", None)
    process = getattr(gateway, "proc", None)
    if process is not None:
        process.stdin.close()
        process.wait(timeout=180)
    if not os.path.exists(archive):
        raise SystemExit(f"the smoke's JVM wrote no class archive at {archive}")
    print(f"class archive: {archive} ({os.path.getsize(archive) >> 20} MiB)")


if __name__ == "__main__":
    main()
