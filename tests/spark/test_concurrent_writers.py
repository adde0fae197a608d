"""Four Spark writer processes and a DuckDB writer commit to one PostgreSQL-backed lake at
the same time: appends to a shared table, MERGEs on disjoint keys of another shared
table, and CTAS of tables of their own. Nothing is lost, nothing is duplicated, and the
MERGEs that clash fail with a conflict naming the table instead of overwriting.

Every writer logs what it committed; the expected contents of every table are computed
from that and compared exactly with what DuckDB reads. The writers' first MERGEs are
staged on one base snapshot and committed together (BEGIN … barrier … COMMIT), so at
least three of them must lose with CommitConflictError: that conflict is forced, not
hoped for. Snapshot-id collisions with DuckDB (`DuckLake commit collided`, retried
inside the lake) depend on timing and are only reported.
"""

from __future__ import annotations

import logging
import multiprocessing as mp
import os
import re
import time
import traceback
from pathlib import Path
from typing import Any

import pytest

from dbt.adapters.ducklake.lake import CommitConflictError, Lake
from tests import duck
from tests.conftest import Catalog
from tests.sizes import size

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.serial]

WRITERS = 4
COMMITS = size("DUCKLAKE_CONCURRENT_COMMITS", ci=8, full=25)  # per Spark writer
INITIAL_KEYS = 20  # keys j = 0..19 of every writer exist before the writers start
DUCK_WRITER = 9  # `writer` value of DuckDB's appends
DUCK_MAX_OPS = 150  # DuckDB writes about once a second while the Spark writers run
APP_RETRIES = 30  # re-runs of one statement after conflicts before the writer gives up


def key(worker: int, j: int) -> int:
    return worker * 1000 + j


def merge_source(m: int) -> range:
    """The j's of the m-th MERGE of a writer: 10 existing keys updated, 2 new inserted."""
    return range(10 + 2 * m, 22 + 2 * m)


def merge_value(worker: int, j: int, m: int) -> int:
    return key(worker, j) * 10 + m + 1


def merges(worker: int) -> tuple[int, ...]:
    """Which commits of a writer are MERGEs. The first, at once in every writer, is the
    forced clash; the later ones are staggered between writers, since every clash re-runs
    a whole MERGE (the costly kind) and aligned MERGEs would mostly clash. At CI's size
    (8 commits) only the first writer's staggered MERGE fits; 25 fit all four."""
    later = 5 + 6 * worker
    return (1, later) if later < COMMITS else (1,)


def kind_of(worker: int, i: int) -> str:
    """Commit i of a writer: a MERGE, else even ones append and odd ones CTAS."""
    return "merge" if i in merges(worker) else ("append", "ctas")[i % 2]


def spark_statement(worker: int, i: int) -> str:
    kind = kind_of(worker, i)
    if kind == "append":
        return (
            f"INSERT INTO main.appends SELECT {worker} AS writer, {i} AS seq, id AS v "
            f"FROM range(0, {3 + i})"
        )
    if kind == "merge":
        m = merges(worker).index(i)
        js = merge_source(m)
        k0 = key(worker, 0)
        return (
            f"MERGE INTO main.merged AS t USING (SELECT id AS k, {worker} AS writer, "
            f"id * 10 + {m + 1} AS v FROM range({k0 + js.start}, {k0 + js.stop})) AS s "
            "ON t.k = s.k WHEN MATCHED THEN UPDATE SET v = s.v "
            "WHEN NOT MATCHED THEN INSERT (k, writer, v) VALUES (s.k, s.writer, s.v)"
        )
    return (
        f"CREATE TABLE main.c_w{worker}_{i} AS "
        f"SELECT id, id * {worker + 1} + {i} AS v FROM range(0, {5 + i})"
    )


def duck_statement(n: int) -> str:
    if n % 2 == 0:  # 4 rows are inlined into the catalog, 30 go to a Parquet file
        rows = 4 if n % 4 == 0 else 30
        return f"INSERT INTO lake.main.appends SELECT {DUCK_WRITER}, {n}, range FROM range({rows})"
    return f"CREATE TABLE lake.main.d_{n} AS SELECT range AS id, range * 3 AS v FROM range({n})"


class _Collisions(logging.Handler):
    """Counts the lake's `DuckLake commit collided` retries (snapshot-id races)."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "commit collided" in record.getMessage():
            self.count += 1


def _spark_writer(
    metadata: str, worker: int, log_dir: str, start: Any, barrier: Any, results: Any
) -> None:
    """One writer process: its own SparkSession, COMMITS commits, conflicts re-run."""
    try:
        began = time.monotonic()
        os.environ["TZ"] = "UTC"
        time.tzset()
        from dbt.adapters.ducklake.spark.engine import CommitInfo
        from dbt.adapters.ducklake.spark.session import SessionConfig, get_session
        from dbt.adapters.ducklake.spark.sql import LakeSQL

        collisions = _Collisions()
        lake_log = logging.getLogger("dbt.adapters.ducklake.lake")
        lake_log.addHandler(collisions)
        lake_log.setLevel(logging.DEBUG)
        spark = get_session(
            SessionConfig(
                master="local[1]",
                conf={
                    "spark.ui.enabled": "false",
                    "spark.sql.shuffle.partitions": "1",
                    "spark.default.parallelism": "1",
                    "spark.driver.memory": "1g",
                },
                console_log=f"{log_dir}/spark-w{worker}.log",
            )
        )
        lake = Lake.open(metadata)
        seconds = {"start": time.monotonic() - began}
        start.wait(timeout=300)  # every session is up: start together, DuckDB too
        conflicts: list[str] = []
        for i in range(COMMITS):
            message = f"w{worker} {i} {kind_of(worker, i)}"
            sql = LakeSQL(spark, lake, commit=CommitInfo(author=f"w{worker}", message=message))
            statement = spark_statement(worker, i)
            attempt = 0
            step_began = time.monotonic()
            while True:
                try:
                    if i == merges(worker)[0] and attempt == 0:
                        # staged on one base by every writer, committed at once: 3 must lose
                        sql.execute("BEGIN")
                        sql.execute(statement)
                        barrier.wait(timeout=300)
                        sql.execute("COMMIT")
                    else:
                        sql.execute(statement)
                    break
                except CommitConflictError as exc:
                    conflicts.append(str(exc))
                    attempt += 1
                    if attempt > APP_RETRIES:
                        raise
            kind = kind_of(worker, i)
            seconds[kind] = seconds.get(kind, 0.0) + time.monotonic() - step_began
        report = {"conflicts": conflicts, "collisions": collisions.count, "seconds": seconds}
        results.put(("ok", worker, report, 0))
    except Exception:
        start.abort()  # the others fail fast instead of waiting for this one
        barrier.abort()
        results.put(("error", worker, traceback.format_exc(), 0))


def _duck_writer(attach: str, start: Any, stop: Any, results: Any) -> None:
    """DuckDB appends and creates its own tables until the Spark writers are done."""
    import duckdb

    try:
        con = duck.connect()
        duck.attach(con, attach)
        con.execute("SET ducklake_max_retry_count = 100")
        start.wait(timeout=300)
        done: list[int] = []
        retries = 0
        for n in range(DUCK_MAX_OPS):
            if stop.is_set() and n >= 4:
                break
            while True:
                try:
                    con.execute(duck_statement(n))
                    break
                except duckdb.Error as exc:  # a failed DuckLake commit committed nothing
                    if "conflict" not in str(exc).lower() or retries > 100:
                        raise
                    retries += 1
            done.append(n)
            time.sleep(1)
        results.put(("ok", DUCK_WRITER, done, retries))
    except Exception:
        start.abort()
        results.put(("error", DUCK_WRITER, traceback.format_exc(), 0))


def _setup(catalog: Catalog) -> None:
    """Our lake; DuckDB creates the two shared tables and the writers' initial keys."""
    Lake.open(catalog.metadata, data_path=catalog.data_path).close()
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    con.execute("CREATE TABLE lake.main.appends (writer INTEGER, seq INTEGER, v BIGINT)")
    con.execute("CREATE TABLE lake.main.merged (k BIGINT, writer INTEGER, v BIGINT)")
    initial = ", ".join(
        f"({key(w, j)}, {w}, 0)" for w in range(WRITERS) for j in range(INITIAL_KEYS)
    )
    con.execute(f"INSERT INTO lake.main.merged VALUES {initial}")
    con.close()


def _expected(duck_ops: list[int]) -> dict[str, list[tuple[int, ...]]]:
    """Every table's rows, sorted, from what each writer committed."""
    appends: list[tuple[int, ...]] = []
    merged = {key(w, j): (w, 0) for w in range(WRITERS) for j in range(INITIAL_KEYS)}
    tables: dict[str, list[tuple[int, ...]]] = {}
    for w in range(WRITERS):
        for i in range(COMMITS):
            kind = kind_of(w, i)
            if kind == "append":
                appends += [(w, i, v) for v in range(3 + i)]
            elif kind == "merge":
                m = merges(w).index(i)
                for j in merge_source(m):
                    merged[key(w, j)] = (w, merge_value(w, j, m))
            else:
                tables[f"c_w{w}_{i}"] = [(v, v * (w + 1) + i) for v in range(5 + i)]
    for n in duck_ops:
        if n % 2 == 0:
            appends += [(DUCK_WRITER, n, v) for v in range(4 if n % 4 == 0 else 30)]
        else:
            tables[f"d_{n}"] = [(v, v * 3) for v in range(n)]
    tables["appends"] = sorted(appends)
    tables["merged"] = sorted((k, w, v) for k, (w, v) in merged.items())
    return tables


def test_four_spark_writers_and_duckdb_commit_concurrently(
    pg_catalog: Catalog, tmp_path: Path
) -> None:
    _setup(pg_catalog)
    lake = Lake.open(pg_catalog.metadata)
    first = lake.latest_snapshot().snapshot_id
    began = time.monotonic()

    ctx = mp.get_context("spawn")
    start = ctx.Barrier(WRITERS + 1)
    barrier = ctx.Barrier(WRITERS)
    results = ctx.Queue()
    stop = ctx.Event()
    procs = [
        ctx.Process(
            target=_spark_writer,
            args=(pg_catalog.metadata, w, str(tmp_path), start, barrier, results),
        )
        for w in range(WRITERS)
    ]
    procs.append(
        ctx.Process(target=_duck_writer, args=(pg_catalog.duckdb_attach, start, stop, results))
    )
    for p in procs:
        p.start()
    outcomes: dict[int, tuple[Any, ...]] = {}
    failed = True
    try:
        while len(outcomes) < len(procs):
            status, worker, payload, count = results.get(timeout=400)
            assert status == "ok", payload
            outcomes[worker] = (payload, count)
            if all(w in outcomes for w in range(WRITERS)):
                stop.set()
        failed = False
    finally:
        stop.set()
        for p in procs:
            p.join(timeout=0 if failed else 60)
            if p.is_alive():
                p.kill()
    elapsed = time.monotonic() - began

    duck_ops, duck_retries = outcomes.pop(DUCK_WRITER)
    reports = [outcomes[w][0] for w in range(WRITERS)]
    conflicts = [c for r in reports for c in r["conflicts"]]
    collisions = sum(r["collisions"] for r in reports)
    print(
        f"\n{WRITERS}x{COMMITS} Spark commits + {len(duck_ops)} DuckDB commits in "
        f"{elapsed:.1f}s: {len(conflicts)} conflicts re-run, {collisions} snapshot-id "
        f"collisions retried by the lake, {duck_retries} DuckDB conflicts re-run"
    )
    print(f"  a conflict: {conflicts[0] if conflicts else None}")
    for w, r in enumerate(reports):
        print(f"  w{w} seconds: " + ", ".join(f"{k} {v:.1f}" for k, v in r["seconds"].items()))

    # the forced round: at least three first MERGEs lost, and every conflict names the table
    assert len(conflicts) >= WRITERS - 1, conflicts
    for message in conflicts:
        assert "main.merged" in message and "nothing was committed" in message, message
        assert re.search(r"[a-z_]+:\d", message) is None, message  # no table ids

    # every commit landed exactly once, in dense snapshot ids
    snaps = lake.snapshots()
    assert [s.snapshot_id for s in snaps] == list(range(len(snaps)))
    ours = [s.commit_message for s in snaps if s.author and s.author.startswith("w")]
    expected_messages = [
        f"w{w} {i} {kind_of(w, i)}" for w in range(WRITERS) for i in range(COMMITS)
    ]
    assert sorted(ours) == sorted(expected_messages)
    assert len(snaps) - 1 - first == WRITERS * COMMITS + len(duck_ops)

    # DuckDB reads every table with exactly the rows the writers committed
    expected = _expected(duck_ops)
    con = duck.connect()
    duck.attach(con, pg_catalog.duckdb_attach)
    names = {
        r[0]
        for r in con.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_catalog = 'lake' AND table_schema = 'main'"
        ).fetchall()
    }
    assert names == set(expected)
    for name, rows in expected.items():
        got = sorted(con.execute(f"SELECT * FROM lake.main.{name}").fetchall())
        assert got == rows, name
    per_writer = dict(
        con.execute("SELECT writer, count(*) FROM lake.main.appends GROUP BY writer").fetchall()
    )
    assert per_writer == {
        **{
            w: sum(3 + i for i in range(COMMITS) if kind_of(w, i) == "append")
            for w in range(WRITERS)
        },
        DUCK_WRITER: sum(4 if n % 4 == 0 else 30 for n in duck_ops if n % 2 == 0),
    }
    con.close()
    lake.close()
