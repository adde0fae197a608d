"""Benchmark: ours against Delta Lake and Apache Iceberg on one Spark, in one run.

The same data (`id bigint, s string, n int, d double, dt date`, as engine_paths.py) and
the same statements for each system, in one SparkSession:
- write: N rows into a new table;
- scan: `select n, count(*), sum(d) group by n` over it;
- MERGE of 1% of the rows (half updates of existing ids, half inserts of new ones),
  the updated ids spread over the table, then packed at its start (inside one file);
- DELETE of 1% of the rows, spread (`id % 100 = 3`);
- INSERT of 100 rows (`SELECT … FROM range(100)`) into a 1,000-row table, each system
  5 x `--repeat` times (a small change: its cost is the statement's fixed overhead).
Delta runs with deletion vectors on; Iceberg with format version 2 and merge-on-read
for delete, update and merge. `ours_dv` is ours in a schema whose
`write_deletion_vectors` option is on (puffin deletion vectors, not Parquet delete
files). Every MERGE and DELETE starts from a freshly written
table (not timed). Rounds rotate the systems' order; each figure is the median of
`--repeat` rounds after one warm-up round. Bytes are the data bytes an operation adds
to the table's folder (Parquet files, deletion vectors, delete files; never the logs or
manifests). After each operation the three tables must aggregate to the same rows.

Delta 4.4 and Iceberg 1.12 support Spark 4.1 at the newest, so `./dev bench --peers`
runs this in `.venv-peers`, with pyspark 4.1 for all three systems; the jars come from
`./dev jars` (set `peers`).

    ./dev bench --peers                    # 10,000,000 rows, 3 rounds
    .venv-peers/bin/python bench/peers.py --rows 1000000 --repeat 1 --profile
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable, Sequence
from datetime import datetime

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from pyspark.sql import DataFrame, SparkSession

from bench.common import interleaved, record
from bench.engine_paths import aggregate, source
from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.engine import create_table_as
from dbt.adapters.ducklake.spark.scan import scan_table
from dbt.adapters.ducklake.spark.session import SessionConfig, get_session
from dbt.adapters.ducklake.spark.sql import LakeSQL

MERGE = (
    "MERGE INTO {t} AS t USING changes AS s ON t.id = s.id "
    "WHEN MATCHED THEN UPDATE SET s = s.s, n = s.n WHEN NOT MATCHED THEN INSERT *"
)
DELETE = "DELETE FROM {t} WHERE id % 100 = 3"
DATA_SUFFIXES = (".parquet", ".bin", ".puffin")
SYSTEMS = ("ours", "ours_dv", "delta", "iceberg")
DELTA_CATALOG = "org.apache.spark.sql.delta.catalog.DeltaCatalog"


def peer_session(jars_dir: str, warehouse: str, ui_port: int | None = None) -> SparkSession:
    jars = sorted(glob.glob(os.path.join(jars_dir, "*.jar")))
    if not jars:
        raise SystemExit(f"no jars in {jars_dir}: run ./dev jars first")
    spark = get_session(
        SessionConfig(
            master="local[2]",
            conf={
                "spark.ui.enabled": "true" if ui_port else "false",
                **({"spark.ui.port": str(ui_port)} if ui_port else {}),
                "spark.sql.shuffle.partitions": "4",
                "spark.jars": ",".join(jars),
                "spark.sql.extensions": (
                    "io.delta.sql.DeltaSparkSessionExtension,"
                    "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
                ),
                "spark.sql.catalog.spark_catalog": DELTA_CATALOG,
                "spark.sql.catalog.ice": "org.apache.iceberg.spark.SparkCatalog",
                "spark.sql.catalog.ice.type": "hadoop",
                "spark.sql.catalog.ice.warehouse": warehouse,
                # both peers on by default where they are not already
                "spark.databricks.delta.properties.defaults.enableDeletionVectors": "true",
            },
        )
    )
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def data_bytes(folder: str) -> int:
    return sum(
        os.path.getsize(os.path.join(d, f))
        for d, _, files in os.walk(folder)
        for f in files
        if f.endswith(DATA_SUFFIXES)
    )


class JobProfile:
    """Spark's own account of the jobs an operation ran (the UI's REST API): how many,
    and how much of the operation's wall time was inside a Spark job at all. The rest
    is the driver: planning, catalog reads and commits, py4j, Python."""

    def __init__(self, spark: SparkSession, port: int):
        self.url = f"http://127.0.0.1:{port}/api/v1/applications/{spark.sparkContext.applicationId}"
        self.lines: list[str] = []

    def jobs_between(self, start: float, end: float) -> list[tuple[float, float]]:
        with urllib.request.urlopen(f"{self.url}/jobs") as answer:
            jobs = json.load(answer)
        spans = []
        for job in jobs:
            if "completionTime" not in job:
                continue
            begin, done = (_ui_time(job[k]) for k in ("submissionTime", "completionTime"))
            if start <= begin and done <= end:
                spans.append((begin, done))
        return spans

    def note(self, label: str, system: str, start: float, end: float) -> None:
        spans = sorted(self.jobs_between(start, end))
        inside, reach = 0.0, start
        for begin, done in spans:  # the union of the job intervals
            inside += max(0.0, done - max(begin, reach))
            reach = max(reach, done)
        total = end - start
        self.lines.append(
            f"{label:<22} {system:<8} {total:6.2f} s: {len(spans):3d} Spark jobs cover "
            f"{inside:6.2f} s, driver alone {total - inside:6.2f} s"
        )


def _ui_time(text: str) -> float:
    """The UI's `2026-11-25T11:40:01.123GMT` as epoch seconds."""
    moment = datetime.strptime(text.replace("GMT", "+0000"), "%Y-%m-%dT%H:%M:%S.%f%z")
    return moment.timestamp()


class Systems:
    """The three tables of one name, written, read, merged and deleted from alike."""

    def __init__(self, spark: SparkSession, root: str):
        self.spark = spark
        self.root = root
        self.lake = Lake.open(f"sqlite:///{root}/meta.sqlite", data_path=f"{root}/data")
        self.sql = LakeSQL(spark, self.lake)
        with self.lake.transaction() as tx:
            tx.create_schema("dv", if_not_exists=True)
            tx.set_option("write_deletion_vectors", "true", schema="dv")
        spark.sql("CREATE NAMESPACE IF NOT EXISTS ice.db")

    def folder(self, system: str, name: str) -> str:
        return {
            "ours": f"{self.root}/data/main/{name}",
            "ours_dv": f"{self.root}/data/dv/{name}",
            "delta": f"{self.root}/delta/{name}",
            "iceberg": f"{self.root}/ice/db/{name}",
        }[system]

    def target(self, system: str, name: str) -> str:
        return {
            "ours": f"main.{name}",
            "ours_dv": f"dv.{name}",
            "delta": f"delta.`{self.folder('delta', name)}`",
            "iceberg": f"ice.db.{name}",
        }[system]

    def write(self, system: str, name: str, df: DataFrame) -> None:
        self.drop(system, name)
        if system.startswith("ours"):
            create_table_as(self.lake, self.target(system, name).split(".")[0], name, df)
        elif system == "delta":
            df.write.format("delta").save(self.folder("delta", name))
        else:
            df.writeTo(self.target("iceberg", name)).using("iceberg").tableProperty(
                "format-version", "2"
            ).tableProperty("write.delete.mode", "merge-on-read").tableProperty(
                "write.update.mode", "merge-on-read"
            ).tableProperty("write.merge.mode", "merge-on-read").create()

    def drop(self, system: str, name: str) -> None:
        if system.startswith("ours"):
            self.sql.execute(f"DROP TABLE IF EXISTS {self.target(system, name)}")
        elif system == "iceberg":
            self.spark.sql(f"DROP TABLE IF EXISTS ice.db.{name} PURGE")
        shutil.rmtree(self.folder(system, name), ignore_errors=True)

    def read(self, system: str, name: str) -> DataFrame:
        if system.startswith("ours"):
            return scan_table(self.spark, self.lake, self.target(system, name).split(".")[0], name)
        if system == "delta":
            return self.spark.read.format("delta").load(self.folder("delta", name))
        return self.spark.table(self.target("iceberg", name))

    def run(self, system: str, statement: str, name: str) -> None:
        text = statement.format(t=self.target(system, name))
        if system.startswith("ours"):
            self.sql.execute(text)
        else:
            self.spark.sql(text)


def zstd_write(systems: Systems, df: DataFrame, iceberg_bytes: int) -> None:
    """Ours writes snappy Parquet by default, as DuckDB does; Iceberg writes zstd. The
    same write into a schema whose `parquet_compression` option is zstd shows the bytes
    gap is the codec, not the format."""
    with systems.lake.transaction() as tx:
        tx.create_schema("zstd", if_not_exists=True)
        tx.set_option("parquet_compression", "zstd", schema="zstd")
    start = time.perf_counter()
    create_table_as(systems.lake, "zstd", "t", df)
    elapsed = time.perf_counter() - start
    written = data_bytes(f"{systems.root}/data/zstd/t")
    ratio = written / iceberg_bytes
    print(
        f"{'write, ours zstd':<22} ours {elapsed:7.2f} s  (one run)"
        f"          data written {written / 1e6:7.1f} MB vs iceberg {iceberg_bytes / 1e6:7.1f} MB"
        f" {ratio:5.2f}x"
    )
    record("peers", "write with parquet_compression=zstd: bytes vs iceberg", ratio, "x", "<= 1.0")


def changes(spark: SparkSession, rows: int, clustered: bool) -> None:
    """1% of the table: half updates of existing ids (spread, or the first ids), half
    inserts of ids past the end."""
    half = rows // 200
    step = 1 if clustered else rows // half
    spark.sql(
        f"SELECT id * {step} AS id, 'changed' AS s, -1 AS n, 0.5D AS d, DATE'2021-01-01' AS dt "
        f"FROM range({half}) UNION ALL "
        f"SELECT {rows} + id, 'new', 1, 0.25D, DATE'2021-01-02' FROM range({half})"
    ).createOrReplaceTempView("changes")


def measure(
    systems: Systems,
    repeat: int,
    setup: Callable[[str], None],
    action: Callable[[str], None],
    check: Callable[[str], object],
    profile: tuple[JobProfile, str] | None = None,
) -> tuple[dict[str, float], dict[str, int]]:
    """Median time and the data bytes `action` adds, per system; `setup` is not timed.
    The systems take turns, in a rotated order each round; round 0 is a warm-up."""
    samples: dict[str, list[float]] = {s: [] for s in SYSTEMS}
    added: dict[str, int] = {}
    for round_ in range(repeat + 1):
        shift = round_ % len(SYSTEMS)
        for system in SYSTEMS[shift:] + SYSTEMS[:shift]:
            setup(system)
            before = data_bytes(systems.folder(system, "t"))
            start, wall = time.perf_counter(), time.time()
            action(system)
            elapsed = time.perf_counter() - start
            if profile is not None and round_ == repeat:
                profiler, label = profile
                profiler.note(label, system, wall, time.time())
            added[system] = data_bytes(systems.folder(system, "t")) - before
            if round_:
                samples[system].append(elapsed)
    results = {s: check(s) for s in SYSTEMS}
    if len({repr(r) for r in results.values()}) != 1:
        raise SystemExit(f"the systems disagree after the operation: {results}")
    return {s: statistics.median(v) for s, v in samples.items()}, added


def report(
    figure: str,
    times: dict[str, float],
    added: dict[str, int] | None,
    more: Sequence[tuple[str, str]] = (),
) -> None:
    """Ours against each peer; `ours_dv` (deletion vectors) against Delta and against
    ours with Parquet delete files, where deletes are written (MERGE, DELETE); `more`
    pairs after those."""
    pairs = [("ours", "delta"), ("ours", "iceberg")]
    if added is not None and added["ours"] != added["ours_dv"]:
        pairs += [("ours_dv", "delta"), ("ours_dv", "ours")]
    pairs += more
    for mine, peer in pairs:
        time_ratio = times[mine] / times[peer]
        line = (
            f"{figure:<22} {mine:<7} {times[mine]:7.2f} s  {peer:<7} {times[peer]:7.2f} s"
            f"  {time_ratio:5.2f}x"
        )
        record("peers", f"{figure}: {mine} time vs {peer}", time_ratio, "x", "<= 1.0")
        if added is not None and added[peer]:
            bytes_ratio = added[mine] / added[peer]
            line += (
                f"   data written {added[mine] / 1e6:7.1f} MB vs {added[peer] / 1e6:7.1f} MB"
                f" {bytes_ratio:5.2f}x"
            )
            record("peers", f"{figure}: {mine} bytes vs {peer}", bytes_ratio, "x", "<= 1.0")
        print(line)


def deleted_scan(
    systems: Systems,
    fresh: Callable[[str], None],
    result: Callable[[str], object],
    repeat: int,
) -> None:
    """The group-by scan of a table with 10% of its rows deleted, spread over every
    file (each system's merge-on-read deletes, not yet compacted)."""
    for system in SYSTEMS:
        fresh(system)
        systems.run(system, "DELETE FROM {t} WHERE id % 10 = 3", "t")
    results = {s: result(s) for s in SYSTEMS}
    if len({repr(r) for r in results.values()}) != 1:
        raise SystemExit(f"the systems disagree after the 10% delete: {results}")
    scans = interleaved({s: (lambda s=s: result(s)) for s in SYSTEMS}, repeat)
    report("scan, 10% deleted", scans, None, [("ours_dv", "iceberg"), ("ours_dv", "delta")])


SMALL_INSERT = "INSERT INTO {t} SELECT id, concat('v', id), CAST(id % 7 AS INT) FROM range(100)"


def small_insert(systems: Systems, repeat: int) -> None:
    """INSERT of 100 rows into a small table: the fixed cost of one small change."""
    spark = systems.spark
    small = spark.range(1000).selectExpr("id", "concat('v', id) AS s", "CAST(id % 7 AS INT) AS n")
    for system in SYSTEMS:
        systems.write(system, "small", small)
    runs = {s: (lambda s=s: systems.run(s, SMALL_INSERT, "small")) for s in SYSTEMS}
    times = interleaved(runs, repeat * 5)
    counts = {s: systems.read(s, "small").count() for s in SYSTEMS}
    if len(set(counts.values())) != 1:
        raise SystemExit(f"the systems disagree after the inserts: {counts}")
    report("INSERT 100 rows", times, None)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--partitions", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--jars", default=os.path.join(os.environ.get("DUCKLAKE_JARS", ".jars"), "peers")
    )
    parser.add_argument(
        "--only",
        choices=["deleted-scan", "small-insert"],
        help="only the scan of a table with 10%% of its rows deleted, or only the "
        "INSERT of 100 rows",
    )
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also print, per operation and system, its Spark jobs and the driver time "
        "outside them (the UI's REST API, on port 4077)",
    )
    args = parser.parse_args()
    root = tempfile.mkdtemp(prefix="bench-peers-")
    try:
        port = 4077 if args.profile else None
        spark = peer_session(args.jars, f"{root}/ice", port)
        profiler = JobProfile(spark, port) if port else None
        systems = Systems(spark, root)
        df = source(spark, args.rows, args.partitions).cache()
        df.count()
        print(f"rows={args.rows} partitions={args.partitions} repeat={args.repeat}")
        print(f"spark={spark.version} jars={args.jars}")

        def fresh(system: str) -> None:
            systems.write(system, "t", df)

        def result(system: str) -> object:
            return aggregate(systems.read(system, "t"))

        if args.only is None:
            times, added = measure(
                systems, args.repeat, lambda s: systems.drop(s, "t"), fresh, result
            )
            report("write", times, added)
            zstd_write(systems, df, added["iceberg"])
            scans = interleaved({s: (lambda s=s: result(s)) for s in SYSTEMS}, args.repeat)
            report("scan (group by)", scans, None)
        if args.only in (None, "small-insert"):
            small_insert(systems, args.repeat)
        if args.only in (None, "deleted-scan"):
            deleted_scan(systems, fresh, result, args.repeat)
        operations = (
            ("MERGE 1% spread", MERGE, False),
            ("MERGE 1% clustered", MERGE, True),
            ("DELETE 1% spread", DELETE, None),
        )
        if args.only is not None:
            operations = ()
        for label, statement, clustered in operations:
            if clustered is not None:
                changes(spark, args.rows, clustered)
            times, added = measure(
                systems,
                args.repeat,
                fresh,
                lambda s, statement=statement: systems.run(s, statement, "t"),
                result,
                (profiler, label) if profiler else None,
            )
            report(label, times, added)
        if profiler:
            print("\nwhere the time goes (the last round of each operation):")
            print("\n".join(profiler.lines))
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
