"""What every benchmark shares: fair timing and one place to put the figures.

Figures go to stdout as each bench prints them, and, when `DUCKLAKE_BENCH_RESULTS`
names a file, one JSON line per figure into it; `bench/report.py` turns that file into
the single table `./dev bench` ends with.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

RESULTS_ENV = "DUCKLAKE_BENCH_RESULTS"


def median_seconds(fn: Callable[[], object], repeat: int) -> float:
    """Median wall time of `fn` over `repeat` runs after one warm-up run."""
    return interleaved({"only": fn}, repeat)["only"]


def interleaved(fns: dict[str, Callable[[], object]], repeat: int) -> dict[str, float]:
    """Median wall time of each function, the functions taking turns.

    Timing one function `repeat` times and then the next favours whichever runs last:
    the JVM's JIT and the OS caches keep warming for minutes. Each function runs once as
    a warm-up, then the rounds rotate the order (ABC, BCA, CAB, ...), so every function
    is measured at every position.
    """
    names = list(fns)
    for name in names:
        fns[name]()
    samples: dict[str, list[float]] = {name: [] for name in names}
    for round_ in range(repeat):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            start = time.perf_counter()
            fns[name]()
            samples[name].append(time.perf_counter() - start)
    return {name: statistics.median(values) for name, values in samples.items()}


def record(bench: str, figure: str, value: float, unit: str, goal: str = "") -> None:
    """Keep one figure for the combined table (a no-op unless the env var is set).

    `unit` is "x" for a ratio against a baseline of the same run, else a unit of
    measure; `goal` is the target written as a comparison, e.g. "<= 1.10".
    """
    path = os.environ.get(RESULTS_ENV)
    if not path:
        return
    line = {"bench": bench, "figure": figure, "value": value, "unit": unit, "goal": goal}
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


def meets(value: float, goal: str) -> bool | None:
    """Whether `value` meets a goal such as "<= 1.10" or "< 20"; None without a goal."""
    goal = goal.strip()
    for op, test in (("<=", float.__le__), ("<", float.__lt__), (">=", float.__ge__)):
        if goal.startswith(op):
            return bool(test(float(value), float(goal[len(op) :])))
    return None


def bench_session(shuffle_partitions: int = 4) -> Any:
    """The session every data bench uses: `local[2]`, no UI, few shuffle partitions."""
    from dbt.adapters.ducklake.spark.session import SessionConfig, get_session

    spark = get_session(
        SessionConfig(
            master="local[2]",
            conf={
                "spark.ui.enabled": "false",
                "spark.sql.shuffle.partitions": str(shuffle_partitions),
            },
        )
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


class PruneLog(logging.Handler):
    """Collects the engine's "N of M data files pruned" lines (see `watch_pruning`)."""

    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if "data files pruned" in message:
            self.lines.append(message)


def watch_pruning() -> PruneLog:
    handler = PruneLog()
    engine_log = logging.getLogger("dbt.adapters.ducklake.spark")
    engine_log.addHandler(handler)
    engine_log.setLevel(logging.INFO)
    return handler


def run_dbt(root: str, target: str, args: list[str]) -> float:
    """Wall time of one dbt invocation on the project in `root`, in a fresh process as a
    user runs it (JVM start included); a failure prints dbt's output and exits."""
    dbt = os.path.join(os.path.dirname(sys.executable), "dbt")
    command = [dbt, *args, "--profiles-dir", root, "--project-dir", root, "--target", target]
    start = time.perf_counter()
    done = subprocess.run(
        command,
        cwd=root,  # dbt-spark's session keeps its Derby metastore in the working directory
        capture_output=True,
        text=True,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
    )
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        print(done.stdout[-4000:], done.stderr[-4000:], sep="\n")
        raise SystemExit(f"dbt {' '.join(args)} --target {target} failed")
    return elapsed


@contextlib.contextmanager
def own_kept_jvms(root: str) -> Iterator[None]:
    """Kept driver JVMs (`spark_keep_alive`) started inside live in a cache folder under
    `root` and are stopped on the way out, so a bench neither finds a user's warm JVM
    nor leaves its own running. The JVM class archives stay the user's (linked in): a
    returning user has one, and an empty folder would time its first dump instead."""
    from dbt.adapters.ducklake.spark import class_archive, resident

    user_cache = os.environ.get("XDG_CACHE_HOME")
    archives = class_archive.cache_folder()
    archives.mkdir(parents=True, exist_ok=True)
    os.environ["XDG_CACHE_HOME"] = os.path.join(root, "cache")
    class_archive.cache_folder().parent.mkdir(parents=True, exist_ok=True)
    class_archive.cache_folder().symlink_to(archives, target_is_directory=True)
    try:
        yield
    finally:
        resident.stop_all()
        os.environ.pop("XDG_CACHE_HOME")
        if user_cache is not None:
            os.environ["XDG_CACHE_HOME"] = user_cache
