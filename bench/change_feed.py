"""Benchmark: an incremental model fed by its upstream's change feed against the same
model built with dbt's watermark idiom (`where updated_at > (select max(updated_at)
from {{ this }})`), after a 0.1% change to the upstream.

The upstream has `--rows` rows from ten inserts (three in smoke mode); the change
updates 0.1% of them, all in one file. Both models run in this process through dbt's
runner (one warm JVM), and the figures are dbt's own node times: the build of the
model, without dbt's start, after one untimed round of both; each model goes first in
half of the timed rounds. The feed's read set is counted from the same window
(`table_changes` scan metrics). A third copy of the model (the floor), built last in
each round, MERGEs the same changed rows from a table holding just them: the MERGE as
Spark runs it for a source read from files. The feed's window is rows the driver holds,
so its MERGE is decided on the driver (spark/driver_merge.py) and goes below that.

    .venv/bin/python bench/change_feed.py             # 10,000,000 rows
    .venv/bin/python bench/change_feed.py --smoke     # 100,000 rows (CI)
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import bench_session, record

FILES = 10
FEED = """
{{ config(materialized='incremental', incremental_strategy='apply_changes', unique_key='id') }}
select snapshot_id, change_type, id, v * 2 as v2, updated_at
from {{ ducklake_changes_since_last_build(ref('up')) }}
"""
WATERMARK = """
{{ config(materialized='incremental', incremental_strategy='merge', unique_key='id') }}
select id, v * 2 as v2, updated_at from {{ ref('up') }}
{% if is_incremental() %}
where updated_at > (select max(updated_at) from {{ this }})
{% endif %}
"""

# the same model again, its incremental rows read from a table holding just the changed
# rows (written untimed before the round): Spark's MERGE into the 10M-row table with a
# source that costs nothing to compute
FLOOR = """
{{ config(materialized='incremental', incremental_strategy='merge', unique_key='id') }}
{% if is_incremental() %}
select id, v * 2 as v2, updated_at from bench.changed_rows
{% else %}
select id, v * 2 as v2, updated_at from {{ ref('up') }}
{% endif %}
"""


def write_project(root: str, rows: int, files: int) -> None:
    models = os.path.join(root, "models")
    os.makedirs(models)
    with open(os.path.join(root, "dbt_project.yml"), "w") as f:
        f.write("name: bench\nversion: '1.0'\nconfig-version: 2\nprofile: bench\n")
    per_file = rows // files
    with open(os.path.join(models, "up.sql"), "w") as f:
        # one insert per file: the change below touches one of them
        f.write(
            "{{ config(materialized='incremental', incremental_strategy='append') }}\n"
            "select id, cast(id % 1000 as int) as v, cast(0 as bigint) as updated_at\n"
            f"from range({per_file} * {{{{ var('part', 0) }}}}, "
            f"{per_file} * ({{{{ var('part', 0) }}}} + 1))\n"
        )
    for name, sql in (("feed_model", FEED), ("watermark_model", WATERMARK), ("floor_model", FLOOR)):
        with open(os.path.join(models, f"{name}.sql"), "w") as f:
            f.write(sql)
    with open(os.path.join(root, "profiles.yml"), "w") as f:
        f.write(
            "bench:\n  target: lake\n  outputs:\n    lake:\n      type: ducklake\n"
            f"      metadata: sqlite:///{root}/lake/metadata.sqlite\n"
            f"      data_path: {root}/lake/data\n"
            "      schema: bench\n      threads: 1\n      spark_master: local[2]\n"
            # every build runs in this process, on its own JVM: none to keep
            "      spark_keep_alive: 0\n"
            '      spark_conf:\n        spark.sql.shuffle.partitions: "4"\n'
            '        spark.ui.enabled: "false"\n'
        )


def dbt(root: str, *args: str) -> float:
    """One in-process dbt invocation; dbt's node time of its (single) node."""
    from dbt.cli.main import dbtRunner

    done = dbtRunner().invoke([*args, "--project-dir", root, "--profiles-dir", root, "-q"])
    if not done.success:
        raise SystemExit(f"dbt {' '.join(args)} failed: {done.exception}")
    return float(sum(r.execution_time for r in done.result.results))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--repeat", type=int, default=4, help="timed rounds (even: fair)")
    parser.add_argument("--smoke", action="store_true", help="100,000 rows, one round (CI)")
    args = parser.parse_args()
    rows, repeat = (100_000, 1) if args.smoke else (args.rows, args.repeat)
    files = 3 if args.smoke else FILES
    changed = max(rows // 1000, 1)
    spark = bench_session()
    root = tempfile.mkdtemp(prefix="bench-feed-")
    cwd = os.getcwd()
    try:
        os.chdir(root)
        write_project(root, rows, files)
        for part in range(files):
            dbt(root, "run", "-s", "up", "--vars", f"{{part: {part}}}")
        dbt(root, "run", "-s", "feed_model", "watermark_model", "floor_model")
        feed: list[float] = []
        watermark: list[float] = []
        floor: list[float] = []
        reads: list[tuple[int, int]] = []
        # round 0 warms both incremental builds (the MERGE's code paths are shared, and
        # the first to run them would pay their JIT compilation); rounds 1.. are timed
        for round_ in range(repeat + 1):
            start = (round_ + 1) * changed % (rows - changed)
            _change(root, start, changed, round_ + 1)
            window = _last_window(root)
            # alternate which model goes first: the second finds warmer caches
            order = [("feed", feed), ("watermark", watermark)]
            for name, samples in order if round_ % 2 else order[::-1]:
                took = dbt(root, "run", "-s", f"{name}_model")
                if round_:
                    samples.append(took)
            # last: the warmest caches, so its floor is if anything too low
            took = dbt(root, "run", "-s", "floor_model")
            if round_:
                floor.append(took)
            reads.append(_feed_reads(spark, root, window))
        _check_equal(root)
        ours, theirs = statistics.median(feed), statistics.median(watermark)
        least = statistics.median(floor)
        files_read, files_total = max(reads)
        print(f"incremental model after a 0.1% change ({changed:,} of {rows:,} rows, one file)")
        print(f"  change feed (apply_changes):      {ours:7.3f} s  (node time, median)")
        print(f"  watermark (merge, max(updated_at)): {theirs:7.3f} s")
        print(f"  ratio feed/watermark: {ours / theirs:.2f}")
        print(f"  floor (merge of the changed rows from a ready table): {least:7.3f} s")
        print(f"  ratio feed/floor: {ours / least:.2f}")
        print(f"  ratio floor/watermark: {least / theirs:.2f}  (Spark's MERGE from a table)")
        print(f"  the feed read {files_read} of the upstream's {files_total} data files")
        record(
            "change feed",
            f"feed model vs watermark ({rows:,} rows, 0.1%)",
            ours / theirs,
            "x",
            "<= 0.2",
        )
        record("change feed", "upstream files the feed read", files_read, "files", "<= 2")
        record("change feed", "floor: MERGE from a ready table vs watermark", least / theirs, "x")
    finally:
        os.chdir(cwd)
        shutil.rmtree(root, ignore_errors=True)
        del spark


def _lake(root: str):
    from dbt.adapters.ducklake.lake import Lake

    return Lake.open(f"sqlite:///{root}/lake/metadata.sqlite")


def _change(root: str, start: int, count: int, round_: int) -> None:
    """UPDATE `count` consecutive ids (one file) with a new updated_at, through the engine."""
    from dbt.adapters.ducklake.spark.sql import LakeSQL

    sql = LakeSQL(bench_session(), _lake(root), default_schema="bench")
    sql.execute(
        f"UPDATE up SET v = v + 1, updated_at = {round_} "
        f"WHERE id >= {start} AND id < {start + count}"
    )
    # the floor model's source: the changed rows, ready
    sql.execute(
        f"CREATE OR REPLACE TABLE changed_rows AS SELECT * FROM up WHERE updated_at = {round_}"
    )


def _last_window(root: str) -> tuple[int, int]:
    """(the snapshot the feed model consumed last, the latest): the next build's window."""
    from dbt.adapters.ducklake.change_windows import last_consumed

    lake = _lake(root)
    consumed = (last_consumed(lake, "bench", "feed_model") or {})["bench.up"]
    return consumed.snapshot_id + 1, lake.latest_snapshot().snapshot_id


def _feed_reads(spark, root: str, window: tuple[int, int]) -> tuple[int, int]:
    from dbt.adapters.ducklake.spark.changes import table_changes
    from dbt.adapters.ducklake.spark.scan import ScanMetrics

    lake = _lake(root)
    metrics = ScanMetrics()
    table_changes(spark, lake, "bench", "up", window[0], window[1], metrics=metrics)
    cat = lake.catalog(window[0] - 1)
    total = len(cat.data_files(cat.table("bench", "up")))
    return metrics.files_read, total


def _check_equal(root: str) -> None:
    """The feed and floor models hold the watermark model's rows, no more, no fewer."""
    from dbt.adapters.ducklake.spark.sql import LakeSQL

    sql = LakeSQL(bench_session(), _lake(root), default_schema="bench")
    theirs = "SELECT * FROM watermark_model"
    for name in ("feed_model", "floor_model"):
        ours = f"SELECT id, v2, updated_at FROM {name}"
        differ = sql.query(
            f"SELECT count(*) FROM (({ours} EXCEPT ALL {theirs}) "
            f"UNION ALL ({theirs} EXCEPT ALL {ours}))"
        ).first()[0]
        if differ:
            raise SystemExit(f"{name} differs from watermark_model in {differ} rows")


if __name__ == "__main__":
    main()
