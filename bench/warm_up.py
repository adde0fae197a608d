"""Benchmark: what the first statements of a new dbt process cost, against the next ones.

A dbt invocation is a new process, so every `dbt run` pays the JVM's start and the first
use of each code path (class loading, JIT). The adapter starts Spark while dbt parses
and warms it (`prestart.py`, `spark/warm.py`), and maps the JVM class archive
(`spark/class_archive.py`). Measured as a user runs dbt, each `dbt run` a fresh process:
- three incremental `merge` models of 8 rows in a chain (threads 1); after their first
  build, each `dbt run --vars {round: N}` MERGEs new rows into all three. dbt's own
  execution time of the first model's MERGE against the second's is the warm-up tax
  (goal <= 1.5x), the median over `--rounds` processes, on the default profile: the
  processes attach to a driver JVM kept between commands (`spark_keep_alive`), which an
  untimed run started;
- the same with `spark_keep_alive: 0` (each process its own JVM, as the first command
  after an idle spell), and also with `spark_prestart: false`, for comparison. In a
  project this small dbt's parse ends long before a new JVM is up, so the first model
  waits for it;
- hence the statements themselves, in a fresh Python process once its session is up:
  the first MERGE against the second, after the warm-up prestart runs (as when dbt's
  parse outlasts the JVM's start) and without it (goal <= 1.5x); and the first 1%
  DELETE of a 500,000-row table against the second (it runs a Python task);
- `dbt run-operation ducklake_snapshots` (metadata only: it must not start a JVM), beside
  the wall of importing dbt's CLI alone, the floor of any dbt command on this machine.

    .venv/bin/python bench/warm_up.py              # 3 rounds
    .venv/bin/python bench/warm_up.py --smoke      # 1 round
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import own_kept_jvms, record, run_dbt

MODEL = """{{{{ config(materialized='incremental', incremental_strategy='merge',
    unique_key='id') }}}}
{depends}
{{% set round = var('round', 0) | int %}}
select id, concat('r', cast({{{{ round }}}} as string), '-', cast(id as string)) as s,
  {{{{ round }}}} as n
from (values (0), (1), (2), (3), (4), (5), (6), (7)) as t(id)
{{% if is_incremental() %}} where id >= {{{{ round }}}} % 8 {{% endif %}}
"""


# (target, spark_prestart, spark_keep_alive): the default profile (a JVM kept between
# commands, started by an untimed run first); a JVM per command, prestarted and warmed
# while dbt parses (what the first command after an idle spell pays); nor prestarted
TARGETS = (("default", "true", None), ("own_jvm", "true", 0), ("cold", "false", 0))
LABELS = {
    "default": "default (kept JVM)",
    "own_jvm": "spark_keep_alive: 0",
    "cold": "... and spark_prestart: false",
}


def write_project(root: str) -> None:
    os.makedirs(os.path.join(root, "models"))
    with open(os.path.join(root, "dbt_project.yml"), "w") as f:
        f.write("name: warm\nversion: '1.0'\nconfig-version: 2\nprofile: warm\n")
    for index in (1, 2, 3):
        depends = f"-- depends_on: {{{{ ref('merged_{index - 1}') }}}}" if index > 1 else ""
        with open(os.path.join(root, "models", f"merged_{index}.sql"), "w") as f:
            f.write(MODEL.format(depends=depends))
    with open(os.path.join(root, "profiles.yml"), "w") as f:
        f.write("warm:\n  target: default\n  outputs:\n")
        for target, prestart, keep_alive in TARGETS:
            keep = "" if keep_alive is None else f"      spark_keep_alive: {keep_alive}\n"
            f.write(
                f"    {target}:\n      type: ducklake\n"
                f"      metadata: sqlite:///{root}/lake.sqlite\n"
                f"      data_path: {root}/data\n      schema: main\n      threads: 1\n"
                f"      spark_master: local[2]\n      spark_prestart: {prestart}\n"
                f"{keep}"
                "      spark_conf:\n        spark.sql.shuffle.partitions: '4'\n"
                "        spark.ui.enabled: 'false'\n"
            )


def fresh_process_merges(root: str, rounds: int) -> dict[str, list[list[float]]]:
    """Per target, each round's three MERGE models' seconds, the targets taking turns.
    The kept JVM lives in a cache folder of this run, and is stopped at the end."""
    with own_kept_jvms(root):
        run_dbt(root, "cold", ["run"])  # the tables' first build (CREATE TABLE AS)
        run_dbt(root, "default", ["run", "--vars", "{round: 0}"])  # starts the kept JVM
        samples: dict[str, list[list[float]]] = {target: [] for target in LABELS}
        order = list(LABELS)
        for round_ in range(1, rounds + 1):
            for target in order[round_ % 3 :] + order[: round_ % 3]:
                run_dbt(root, target, ["run", "--vars", f"{{round: {round_}}}"])
                samples[target].append(merge_seconds(root))
        return samples


def merge_seconds(root: str) -> list[float]:
    """dbt's execution time of each model of the last run, in the chain's order."""
    with open(os.path.join(root, "target", "run_results.json")) as f:
        results = {r["unique_id"]: r["execution_time"] for r in json.load(f)["results"]}
    return [results[f"model.warm.merged_{index}"] for index in (1, 2, 3)]


def statement_seconds(warm: bool) -> list[float]:
    """In a fresh process (`--child`): three MERGEs into an 8-row table once the session
    is up, after `warm_up` or not, then two DELETEs of 1% of a 500,000-row table (their
    5,000 victims each go through a Python task); seconds each."""
    with tempfile.TemporaryDirectory() as root:
        child = [sys.executable, __file__, "--child", root] + (["--warm"] if warm else [])
        done = subprocess.run(child, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            print(done.stdout[-3000:], done.stderr[-3000:], sep="\n")
            raise SystemExit("the fresh process failed")
        return json.loads(done.stdout.strip().splitlines()[-1])


def child(root: str, warm: bool) -> list[float]:
    from bench.common import bench_session
    from dbt.adapters.ducklake.lake import Lake
    from dbt.adapters.ducklake.spark.sql import LakeSQL
    from dbt.adapters.ducklake.spark.warm import warm_up

    spark = bench_session()
    if warm:
        warm_up(spark)
    sql = LakeSQL(spark, Lake.open(f"sqlite:///{root}/lake.sqlite", data_path=f"{root}/data"))
    sql.execute("CREATE TABLE target AS SELECT id, concat('v', id) AS s, 0 AS n FROM range(8)")
    seconds = []
    for round_ in (1, 2, 3):
        start = time.perf_counter()
        sql.execute(
            "CREATE OR REPLACE TEMPORARY VIEW updates AS SELECT id, "
            f"concat('r{round_}-', id) AS s, {round_} AS n FROM range({round_}, 8 + {round_})"
        )
        sql.execute(
            "MERGE INTO target AS t USING updates AS s ON t.id = s.id "
            "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *"
        )
        seconds.append(time.perf_counter() - start)
    sql.execute("CREATE TABLE wide AS SELECT id, concat('v', id) AS s FROM range(500000)")
    for rest in (0, 1):
        start = time.perf_counter()
        sql.execute(f"DELETE FROM wide WHERE id % 100 = {rest}")
        seconds.append(time.perf_counter() - start)
    return seconds


def run_operation_wall() -> tuple[float, float]:
    """Wall of `dbt run-operation ducklake_snapshots` on a one-table lake, and of
    importing dbt's CLI alone, each in a fresh process."""
    from dbt.adapters.ducklake.lake import Lake

    with tempfile.TemporaryDirectory() as root:
        lake = Lake.open(f"sqlite:///{root}/lake.sqlite", data_path=f"{root}/data")
        lake.close()
        with open(os.path.join(root, "dbt_project.yml"), "w") as f:
            f.write("name: warm\nversion: '1.0'\nconfig-version: 2\nprofile: warm\n")
        with open(os.path.join(root, "profiles.yml"), "w") as f:
            f.write(
                "warm:\n  target: lake\n  outputs:\n    lake:\n      type: ducklake\n"
                f"      metadata: sqlite:///{root}/lake.sqlite\n"
                f"      data_path: {root}/data\n      schema: main\n"
            )
        dbt = os.path.join(os.path.dirname(sys.executable), "dbt")
        command = [dbt, "run-operation", "ducklake_snapshots", "--profiles-dir", root]
        subprocess.run(command, cwd=root, capture_output=True, check=True)  # first parse
        start = time.perf_counter()
        done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
        wall = time.perf_counter() - start
        if done.returncode != 0:
            print(done.stdout[-3000:])
            raise SystemExit("dbt run-operation ducklake_snapshots failed")
        if os.path.exists(os.path.join(root, "logs", "spark.log")):  # the JVM's console
            raise SystemExit("dbt run-operation ducklake_snapshots started Spark")
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "import dbt.cli.main"], check=True)
        return wall, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--smoke", action="store_true", help="one round (CI)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--warm", action="store_true", help=argparse.SUPPRESS)
    args, _ = parser.parse_known_args()  # `./dev bench` passes every bench its options
    if args.child:
        print(json.dumps(child(args.child, args.warm)))
        return
    rounds = 1 if args.smoke else args.rounds
    with tempfile.TemporaryDirectory() as root:
        write_project(root)
        samples = fresh_process_merges(root, rounds)
    print(f"warm-up: three 8-row MERGE models per fresh dbt process, median of {rounds}")
    for target, label in LABELS.items():
        first, second, third = (statistics.median(s[i] for s in samples[target]) for i in range(3))
        ratio = first / second
        print(
            f"  {label:<30} MERGE 1 {first:5.2f} s  2 {second:5.2f} s  3 {third:5.2f} s"
            f"  first/second {ratio:4.2f}x"
        )
        goal = "<= 1.5" if target == "default" else ""
        record("warm_up", f"first MERGE model vs second ({label})", ratio, "x", goal)
    print("  statements once the session is up, fresh processes:")
    for warm, label in ((True, "after the warm-up"), (False, "without a warm-up")):
        runs = [statement_seconds(warm) for _ in range(rounds)]
        first, second, delete_1, delete_2 = (
            statistics.median(r[i] for r in runs) for i in (0, 1, 3, 4)
        )
        print(
            f"    {label:<28} MERGE 1 {first:5.2f} s  2 {second:5.2f} s"
            f"  first/second {first / second:4.2f}x"
        )
        print(
            f"    {'':<28} DELETE 1 {delete_1:5.2f} s  2 {delete_2:5.2f} s"
            f"  first/second {delete_1 / delete_2:4.2f}x"
        )
        record(
            "warm_up",
            f"first 1% DELETE of 500,000 rows vs second ({label})",
            delete_1 / delete_2,
            "x",
        )
        record(
            "warm_up",
            f"first MERGE statement vs second ({label})",
            first / second,
            "x",
            "<= 1.5" if warm else "",
        )
    wall, dbt_import = run_operation_wall()
    print(
        f"  dbt run-operation ducklake_snapshots {wall:5.2f} s wall (goal <= 3); "
        f"importing dbt's CLI alone {dbt_import:4.2f} s"
    )
    record("warm_up", "run-operation ducklake_snapshots (s)", wall, "s", "<= 3")
    record("warm_up", "importing dbt's CLI alone (s)", dbt_import, "s")


if __name__ == "__main__":
    main()
