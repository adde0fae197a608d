"""Benchmark: a whole `dbt run` on this adapter against dbt-spark's session method.

Generates one project (a big table of N rows, an aggregate of it, and ten one-row
tables) and two profiles on the same machine and threads: `type: ducklake` (SQLite
metadata, local Spark) and dbt-spark `method: session` writing Parquet tables. Each
`dbt run` is a fresh process, each adapter on its defaults as a user sees them: ours
attaches to the driver JVM its first run left (`spark_keep_alive`, stopped at the end),
dbt-spark starts a JVM per process. Each target runs once to warm caches, then
`--repeat` times, and the medians and the ratio are printed.
`--smoke` is a small size for CI (three one-row tables), one cold run of this adapter
only: CI checks the bench runs, and dbt-spark's cold process (~30 s of a CI's smoke
stage, measured) adds no check of ours.

    .venv/bin/python bench/dbt_run.py              # 5,000,000-row table
    .venv/bin/python bench/dbt_run.py --smoke      # 20,000 rows, one timed run
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import own_kept_jvms, record, run_dbt

SPARK_CONF = {
    "spark.master": "local[2]",
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
}


def write_project(root: str, rows: int, one_row_models: int = 10) -> None:
    models = os.path.join(root, "models")
    os.makedirs(models)
    with open(os.path.join(root, "dbt_project.yml"), "w") as f:
        f.write(
            "name: bench\nversion: '1.0'\nconfig-version: 2\nprofile: bench\n"
            "models:\n  bench:\n    +materialized: table\n"
            "    +file_format: \"{{ 'parquet' if target.type == 'spark' else none }}\"\n"
        )
    with open(os.path.join(models, "big.sql"), "w") as f:
        f.write(
            "select id, concat('value-', id) as s, cast(id % 97 as int) as n, rand(7) as d,\n"
            "  date_add(date '2020-01-01', cast(id % 1000 as int)) as dt\n"
            f"from range({rows})\n"
        )
    with open(os.path.join(models, "agg.sql"), "w") as f:
        f.write("select n, count(*) as c, sum(d) as sd from {{ ref('big') }} group by n\n")
    for i in range(one_row_models):
        with open(os.path.join(models, f"one_{i}.sql"), "w") as f:
            f.write(f"select {i} as id, 'row {i}' as v\n")
    conf = "".join(f'        {k}: "{v}"\n' for k, v in SPARK_CONF.items())
    with open(os.path.join(root, "profiles.yml"), "w") as f:
        f.write(
            "bench:\n  target: ducklake\n  outputs:\n"
            "    ducklake:\n      type: ducklake\n"
            f"      metadata: sqlite:///{root}/lake/metadata.sqlite\n"
            f"      data_path: {root}/lake/data\n"
            "      schema: bench\n      threads: 2\n      spark_master: local[2]\n"
            "      spark_conf:\n"
            + "".join(f'        {k}: "{v}"\n' for k, v in SPARK_CONF.items() if k != "spark.master")
            + "    spark:\n      type: spark\n      method: session\n      host: NA\n"
            "      schema: bench\n      threads: 2\n      server_side_parameters:\n"
            + conf
            + f'        spark.sql.warehouse.dir: "{root}/warehouse"\n'
        )


def dbt_run(root: str, target: str) -> tuple[float, float]:
    """Wall time of one `dbt run`, and the median time dbt reports for the one-row models
    (what each node costs beyond its trivial query)."""
    elapsed = run_dbt(root, target, ["run"])
    with open(os.path.join(root, "target", "run_results.json"), encoding="utf-8") as f:
        results = json.load(f)["results"]
    one_row = [
        r["execution_time"] for r in results if r["unique_id"].startswith("model.bench.one_")
    ]
    return elapsed, statistics.median(one_row)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--smoke", action="store_true", help="20,000 rows, 1 cold run of ours (CI)")
    args = parser.parse_args()
    rows, repeat = (20_000, 1) if args.smoke else (args.rows, args.repeat)
    one_row_models = 3 if args.smoke else 10  # smoke: each model costs ~0.5 s in each run
    root = tempfile.mkdtemp(prefix="bench-dbt-")
    try:
        with own_kept_jvms(root):
            measure(root, rows, one_row_models, repeat, args.smoke)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def measure(root: str, rows: int, one_row_models: int, repeat: int, smoke: bool) -> None:
    """The timed runs, their medians and ratios."""
    write_project(root, rows, one_row_models)
    targets = ["ducklake"] if smoke else ["ducklake", "spark"]
    times: dict[str, list[float]] = {t: [] for t in targets}
    per_node: dict[str, list[float]] = {t: [] for t in targets}
    if not smoke:
        for target in times:
            dbt_run(root, target)  # warm-up: first parse, first files, OS caches
    for _ in range(repeat):
        for target, samples in times.items():
            elapsed, node = dbt_run(root, target)
            samples.append(elapsed)
            per_node[target].append(node)
    ours = statistics.median(times["ducklake"])
    models = 2 + one_row_models
    print(
        f"dbt run, {models} models ({rows:,}-row table, its aggregate, "
        f"{one_row_models} one-row tables)"
    )
    print(f"  ducklake (this adapter):          {ours:7.2f} s")
    node_ours = statistics.median(per_node["ducklake"])
    if smoke:
        print(f"  one-row model, median node time: {node_ours:.3f} s (no baseline in smoke)")
        return
    theirs = statistics.median(times["spark"])
    print(f"  dbt-spark session, parquet:       {theirs:7.2f} s")
    print(f"  ratio ours/dbt-spark: {ours / theirs:.2f}")
    node_theirs = statistics.median(per_node["spark"])
    print(
        f"  one-row model, median node time: ours {node_ours:.3f} s, "
        f"dbt-spark {node_theirs:.3f} s, ratio {node_ours / node_theirs:.2f}"
    )
    record(
        "dbt",
        f"dbt run of {models} models ({rows:,} rows) vs dbt-spark",
        ours / theirs,
        "x",
        "<= 1.0",
    )
    record("dbt", "one-row model node time vs dbt-spark", node_ours / node_theirs, "x", "<= 1.0")


if __name__ == "__main__":
    main()
