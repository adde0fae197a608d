"""Benchmark: one incremental dbt project on this adapter and on dbt-spark + Delta Lake.

Today's way to run incremental MERGE and snapshots on Spark is dbt-spark with
`file_format: delta`. The same project runs on both, on the same Spark (dbt-spark's
session method, with the Delta jars from `./dev jars`), each `dbt` invocation a fresh
process as a user runs it, each adapter on its defaults (ours attaches to the driver JVM
its first step left, `spark_keep_alive`; dbt-spark starts a JVM per process):
1. `dbt run`: `events`, an incremental model (merge on `id`) of N rows, built in full;
2. `dbt snapshot`: `events_snapshot`, a check snapshot (`s`, `n`) of it, first build;
3. `dbt run --vars '{round: 1}'`: 1% of the rows changed (ids spread over the table),
   merged into `events`;
4. `dbt snapshot`: the check snapshot closes and opens those 1% of rows.
The wall time of each step is printed for both, with the ratio ours / dbt-spark. Then
both projects' tables are read in one SparkSession and must hold the same rows
(the snapshot compared on its key, its checked columns and which version is current).

Delta Lake 4.4 runs on Spark 4.1 at the newest, so `./dev bench --peers` runs this in
`.venv-peers` (pyspark 4.1).

    ./dev bench --peers                                  # with bench/peers.py, 5,000,000 rows
    .venv-peers/bin/python bench/dbt_peer.py --rows 200000
"""

from __future__ import annotations

import argparse
import glob
import os
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pyspark.sql import DataFrame

from bench.common import own_kept_jvms, record, run_dbt
from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.scan import scan_table
from dbt.adapters.ducklake.spark.session import SessionConfig, get_session

SPARK_CONF = {
    "spark.sql.shuffle.partitions": "4",
    "spark.ui.enabled": "false",
}
DELTA_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    "spark.databricks.delta.properties.defaults.enableDeletionVectors": "true",
}
TARGETS = ("ducklake", "delta")
STEPS = (
    ("dbt run (full build)", ["run"]),
    ("dbt snapshot (first)", ["snapshot"]),
    ("dbt run (merge 1%)", ["run", "--vars", "{round: 1}"]),
    ("dbt snapshot (check 1%)", ["snapshot"]),
)

EVENTS = """{{ config(materialized='incremental', incremental_strategy='merge', unique_key='id',
    file_format=('delta' if target.type == 'spark' else none)) }}
{% set round = var('round', 0) | int %}
select id,
  case when id % 100 = 7 and {{ round }} > 0 then concat('changed-', {{ round }}, '-', id)
       else concat('value-', id) end as s,
  case when id % 100 = 7 and {{ round }} > 0 then -{{ round }} else cast(id % 97 as int) end as n,
  id * 0.5 as d,
  date_add(date '2020-01-01', cast(id % 1000 as int)) as dt
from range({ROWS})
{% if is_incremental() %} where id % 100 = 7 {% endif %}
"""

SNAPSHOT = """{% snapshot events_snapshot %}
{{ config(unique_key='id', strategy='check', check_cols=['s', 'n'], target_schema='bench',
    file_format=('delta' if target.type == 'spark' else none)) }}
select id, s, n from {{ ref('events') }}
{% endsnapshot %}
"""


def write_project(root: str, rows: int, jars: list[str]) -> None:
    os.makedirs(os.path.join(root, "models"))
    os.makedirs(os.path.join(root, "snapshots"))
    with open(os.path.join(root, "dbt_project.yml"), "w") as f:
        f.write("name: peer\nversion: '1.0'\nconfig-version: 2\nprofile: peer\n")
    with open(os.path.join(root, "models", "events.sql"), "w") as f:
        f.write(EVENTS.replace("{ROWS}", str(rows)))
    with open(os.path.join(root, "snapshots", "events_snapshot.sql"), "w") as f:
        f.write(SNAPSHOT)
    ours = "".join(f'        {k}: "{v}"\n' for k, v in SPARK_CONF.items())
    theirs = {
        "spark.master": "local[2]",
        **SPARK_CONF,
        **DELTA_CONF,
        "spark.jars": ",".join(jars),
        "spark.sql.warehouse.dir": f"{root}/warehouse",
    }
    with open(os.path.join(root, "profiles.yml"), "w") as f:
        f.write(
            "peer:\n  target: ducklake\n  outputs:\n"
            "    ducklake:\n      type: ducklake\n"
            f"      metadata: sqlite:///{root}/lake/metadata.sqlite\n"
            f"      data_path: {root}/lake/data\n"
            "      schema: bench\n      threads: 1\n      spark_master: local[2]\n"
            "      spark_conf:\n" + ours + "    delta:\n      type: spark\n      method: session\n"
            "      host: NA\n      schema: bench\n      threads: 1\n"
            "      server_side_parameters:\n"
            + "".join(f'        {k}: "{v}"\n' for k, v in theirs.items())
        )


def compare_tables(root: str, jars: list[str]) -> None:
    """Both projects' tables hold the same rows, read in one SparkSession."""
    spark = get_session(
        SessionConfig(
            master="local[2]",
            conf={**SPARK_CONF, **DELTA_CONF, "spark.jars": ",".join(jars)},
        )
    )
    lake = Lake.open(f"sqlite:///{root}/lake/metadata.sqlite")

    def pair(table: str, columns: str) -> tuple[DataFrame, DataFrame]:
        ours = scan_table(spark, lake, "bench", table).selectExpr(*columns.split(", "))
        path = f"{root}/warehouse/bench.db/{table}"
        theirs = spark.read.format("delta").load(path).selectExpr(*columns.split(", "))
        return ours, theirs

    checks = {
        "events": "id, s, n, d, dt",
        "events_snapshot": "id, s, n, dbt_valid_to IS NULL AS current",
    }
    for table, columns in checks.items():
        ours, theirs = pair(table, columns)
        missing, extra = theirs.exceptAll(ours).count(), ours.exceptAll(theirs).count()
        rows = ours.count()
        if missing or extra or rows != theirs.count():
            raise SystemExit(f"{table} differs: {missing} rows only in Delta, {extra} only ours")
        print(f"  {table}: the same {rows:,} rows in both")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=5_000_000)
    parser.add_argument(
        "--jars", default=os.path.join(os.environ.get("DUCKLAKE_JARS", ".jars"), "peers")
    )
    args = parser.parse_args()
    jars = sorted(os.path.abspath(j) for j in glob.glob(os.path.join(args.jars, "*.jar")))
    if not jars:
        raise SystemExit(f"no Delta jars in {args.jars}: run ./dev jars first")
    root = tempfile.mkdtemp(prefix="bench-dbt-peer-")
    try:
        with own_kept_jvms(root):  # ours on its default: later steps attach to a kept JVM
            run_steps(root, args.rows, jars)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run_steps(root: str, rows: int, jars: list[str]) -> None:
    """Each step on both targets, taking turns, then the tables compared."""
    write_project(root, rows, jars)
    print(f"dbt project: incremental merge model of {rows:,} rows + check snapshot")
    for index, (label, dbt_args) in enumerate(STEPS):
        # the targets take turns going first, so neither always runs on warmer caches
        order = TARGETS if index % 2 == 0 else TARGETS[::-1]
        times = {target: run_dbt(root, target, dbt_args) for target in order}
        ratio = times["ducklake"] / times["delta"]
        print(
            f"  {label:<26} ours {times['ducklake']:7.2f} s  "
            f"dbt-spark+delta {times['delta']:7.2f} s  {ratio:5.2f}x"
        )
        record("dbt peer", f"{label} vs dbt-spark+delta", ratio, "x", "<= 1.0")
    compare_tables(root, jars)


if __name__ == "__main__":
    main()
