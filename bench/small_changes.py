"""Benchmark: small changes, ours (SQL through the engine, one snapshot each) beside
DuckDB's ducklake extension on its own lake, in the same run (both SQLite catalogs).

DuckLake's promise is that a small change is cheap: rows under the inlining limit live
in the catalog, one transaction per change. Each figure is the median of `--repeat`
statements after one warm-up; the big table is `--rows` rows in one file on each side.
DuckDB's side runs in a child process: DuckDB links its own SQLite, and a process that
has it loaded closes our catalog connections after each use (lake/connect.py), which a
dbt process never does.

    .venv/bin/python bench/small_changes.py            # 1,000,000 rows, 15 repeats
    .venv/bin/python bench/small_changes.py --smoke    # 100,000 rows, 3 repeats
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
from collections.abc import Callable

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from bench.common import bench_session, meets, record
from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.sql import LakeSQL

# the tables both sides start from (the big table is each engine's own range query)
SETUP = (
    "CREATE TABLE small (id BIGINT, v VARCHAR)",
    "CREATE TABLE hundreds (id BIGINT, v VARCHAR)",
    "INSERT INTO small VALUES (0, 'a'), (1, 'b'), (2, 'c'), (3, 'd'), (4, 'e')",
)
# (operation, statement with {i} for the repeat, goal in ms from the small-changes issue)
OPERATIONS = (
    ("INSERT 1 row (inlined)", "INSERT INTO small VALUES ({i} + 1000, 'x')", 20),
    (
        "INSERT 100 rows (a file)",
        "INSERT INTO hundreds SELECT {i} * 1000 + r, 'y' FROM {h}",
        None,
    ),
    ("UPDATE 1 row, inlined table", "UPDATE small SET v = 'u{i}' WHERE id = 2", 50),
    ("DELETE 1 row, inlined table", "DELETE FROM small WHERE id = {i} + 1000", 50),
    ("DELETE 1 row of the big table", "DELETE FROM big WHERE id = {i} * 7 + 11", 150),
    ("UPDATE 1 row of the big table", "UPDATE big SET v = 'u' WHERE id = {i} * 7 + 12", 250),
)
# a hundred rows with a column r, as each side's SQL says it
OURS_HUNDRED = "(SELECT id AS r FROM range(100))"
DUCK_HUNDRED = "range(100) t(r)"


def _median_ms(run: Callable[[int], object], repeat: int) -> float:
    run(0)  # warm-up
    samples = []
    for i in range(1, repeat + 1):
        start = time.perf_counter()
        run(i)
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--smoke", action="store_true", help="100,000 rows, 3 repeats (CI)")
    parser.add_argument("--duckdb-side", metavar="FOLDER", help=argparse.SUPPRESS)
    args = parser.parse_args()
    rows, repeat = (100_000, 3) if args.smoke else (args.rows, args.repeat)
    if args.duckdb_side:
        print(json.dumps(duckdb_side(args.duckdb_side, rows, repeat)))
        return
    spark = bench_session()
    with tempfile.TemporaryDirectory() as root:
        lake = Lake.open(f"sqlite:///{root}/ours.sqlite", data_path=f"{root}/ours")
        ours = LakeSQL(spark, lake)
        for statement in SETUP:
            ours.execute(statement)
        ours.execute(f"CREATE TABLE big AS SELECT id, concat('v', id) AS v FROM range({rows})")
        command = [sys.executable, __file__, "--duckdb-side", root, "--rows", str(rows)]
        duck_side = subprocess.run(
            [*command, "--repeat", str(repeat)],
            capture_output=True,
            text=True,
            check=True,
        )
        duck_ms_of = json.loads(duck_side.stdout.strip().splitlines()[-1])
        print(f"small changes: {rows:,} rows in the big table, median of {repeat}")
        print(f"{'operation':32s} {'ours':>9s} {'DuckDB':>9s} {'ratio':>7s}  goal")
        for name, template, goal in OPERATIONS:
            ours_ms = _median_ms(
                lambda i, t=template: ours.execute(t.format(i=i, h=OURS_HUNDRED)), repeat
            )
            duck_ms = duck_ms_of[name]
            verdict = ""
            if goal is not None:
                verdict = f"<= {goal} ms " + ("met" if meets(ours_ms, f"<= {goal}") else "not met")
            print(
                f"{name:32s} {ours_ms:7.0f}ms {duck_ms:7.1f}ms {ours_ms / duck_ms:6.1f}x  {verdict}"
            )
            record("small_changes", f"{name} (ms)", ours_ms, "ms", f"<= {goal}" if goal else "")
            record("small_changes", f"{name} vs DuckDB", ours_ms / duck_ms, "x")


def duckdb_side(root: str, rows: int, repeat: int) -> dict[str, float]:
    """DuckDB's median per operation on its own lake in `root` (run in a child process)."""
    from tests import duck

    con = duck.connect()
    duck.attach(con, f"sqlite:{root}/duck.sqlite", alias="dl", data_path=f"{root}/duck")
    con.execute("USE dl")
    for statement in SETUP:
        con.execute(statement)
    con.execute(f"CREATE TABLE big AS SELECT range AS id, 'v' || range AS v FROM range({rows})")
    medians = {
        name: _median_ms(lambda i, t=template: con.execute(t.format(i=i, h=DUCK_HUNDRED)), repeat)
        for name, template, _ in OPERATIONS
    }
    con.close()
    return medians


if __name__ == "__main__":
    main()
