"""SIGKILL a writer at random moments inside CTAS, INSERT, MERGE, DELETE, compaction and
expire: after every kill DuckDB reads exactly the last committed snapshot and every live
file exists; at the end `ducklake_delete_orphaned_files` removes the dead writers' files
and nothing else.

The expected contents come from a plain DuckDB twin that replays the steps whose commit
reached the lake (each step commits as `crash step <n> <kind>`). Kills:
DUCKLAKE_CRASH_KILLS (6 in CI, on SQLite; 20 per backend under `./dev test --full`).
Each kill ends a writer JVM; the next writer starts while the current one runs, so a
kill costs its steps and the checks, not a Spark start."""

from __future__ import annotations

import os
import queue
import random
import signal
import statistics
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.sql import LakeSQL
from tests import duck
from tests.conftest import Catalog
from tests.sizes import size
from tests.spark.crash_writer import DATA_KINDS, KINDS, duck_sql

pytestmark = [pytest.mark.slow, pytest.mark.serial]

KILLS = size("DUCKLAKE_CRASH_KILLS", ci=6, full=20)
ROOT = Path(__file__).resolve().parents[2]
TABLES = ("t", "c")


class Writer:
    """One writer process in its own process group (Python driver, JVM, Python workers),
    started ahead of its steps: it warms up Spark, then waits for `run`."""

    def __init__(self, catalog: Catalog, log: Path):
        args = [sys.executable, "-m", "tests.spark.crash_writer"]
        args += [catalog.metadata, catalog.data_path, str(log)]
        self.proc = subprocess.Popen(
            args,
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(log.with_suffix(".stderr"), "wb"),  # noqa: SIM115 - the child owns it
            text=True,
            start_new_session=True,
            env={**os.environ, "TZ": "UTC"},
        )
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        threading.Thread(target=self._pump, daemon=True).start()

    def run(self, steps: list[tuple[int, str]], seen: int) -> None:
        """Hands the writer its steps; `expire` steps expire only snapshots below `seen`,
        the ones the test has read (it replays committed steps from snapshots)."""
        assert self.proc.stdin is not None
        line = " ".join(f"{n}:{k}:{seen}" if k == "expire" else f"{n}:{k}" for n, k in steps)
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.close()

    def dismiss(self) -> None:
        """Ends a writer that was never given steps."""
        self.run([], 0)
        self.finish()

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line.strip())
        self.lines.put(None)

    def next_line(self, timeout: float = 180) -> str | None:
        line = self.lines.get(timeout=timeout)
        if line is not None:
            self.seen.append(line)
        return line

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=60)
        while self.next_line(timeout=10) is not None:  # what it said before dying
            pass

    def finish(self) -> None:
        while self.next_line() is not None:
            pass
        assert self.proc.wait(timeout=60) == 0, self.seen

    def durations(self) -> dict[str, float]:
        return {ln.split()[2]: float(ln.split()[3]) for ln in self.seen if ln.startswith("done")}

    def interrupted(self) -> str:
        """The kind of step the kill landed in, or `between` steps."""
        started = [ln.split() for ln in self.seen if ln.startswith("start")]
        done = {ln.split()[1] for ln in self.seen if ln.startswith("done")}
        pending = [s for s in started if s[1] not in done]
        return pending[-1][2] if pending else "between"


class Twin:
    """Plain DuckDB tables replaying the committed steps, plus checks against the lake."""

    def __init__(self, catalog: Catalog, lake: Lake):
        self.catalog, self.lake = catalog, lake
        self.con = duck.connect()
        self.con.execute("ATTACH ':memory:' AS twin")
        self.seen_snapshot = -1
        self.applied: list[str] = []

    def catch_up(self) -> None:
        for snap in self.lake.snapshots(since=self.seen_snapshot):
            self.seen_snapshot = snap.snapshot_id
            words = (snap.commit_message or "").split()
            if words[:2] != ["crash", "step"]:
                continue
            number, kind = int(words[2]), words[3]
            self.applied.append(kind)
            for text in duck_sql(number, kind):
                self.con.execute("USE twin")
                self.con.execute(text)

    def check(self, when: str) -> None:
        """DuckDB reads every table as the twin has it; every live file exists."""
        duck.attach(self.con, self.catalog.duckdb_attach, alias="lake")
        try:
            for table in TABLES:
                if not self.con.execute(
                    "SELECT count(*) FROM duckdb_tables() "
                    "WHERE database_name = 'twin' AND table_name = ?",
                    [table],
                ).fetchone()[0]:
                    continue
                counts = self.con.execute(
                    f"SELECT (SELECT count(*) FROM lake.main.{table}),"
                    f" (SELECT count(*) FROM twin.{table}),"
                    f" (SELECT count(*) FROM (SELECT id, v FROM lake.main.{table}"
                    f"   EXCEPT ALL SELECT id, v FROM twin.{table})),"
                    f" (SELECT count(*) FROM (SELECT id, v FROM twin.{table}"
                    f"   EXCEPT ALL SELECT id, v FROM lake.main.{table}))"
                ).fetchone()
                assert counts[0] == counts[1] and counts[2:] == (0, 0), (when, table, counts)
                for data, delete in self.con.execute(
                    f"SELECT data_file, delete_file FROM ducklake_list_files('lake', '{table}')"
                ).fetchall():
                    for path in (data, delete):
                        assert path is None or os.path.exists(path), (when, table, path)
        finally:
            self.con.execute("USE memory")
            self.con.execute("DETACH lake")

    def referenced_files(self) -> set[str]:
        """Every file some remaining snapshot reads (time travel included)."""
        duck.attach(self.con, self.catalog.duckdb_attach, alias="lake")
        try:
            versions = [
                r[0]
                for r in self.con.execute("SELECT snapshot_id FROM lake.snapshots()").fetchall()
            ]
            found: set[str] = set()
            for version in versions:
                for table in TABLES:
                    try:
                        rows = self.con.execute(
                            f"SELECT data_file, delete_file FROM ducklake_list_files("
                            f"'lake', '{table}', snapshot_version => {version})"
                        ).fetchall()
                    except Exception as exc:  # the table does not exist at that version
                        if "does not exist" not in str(exc):
                            raise
                        continue
                    found |= {os.path.normpath(p) for r in rows for p in r if p}
            return found
        finally:
            self.con.execute("DETACH lake")


def missing_kinds(landed: list[tuple[str, str]]) -> list[str]:
    """The kinds of step no kill has landed inside yet."""
    return [k for k in KINDS if k not in {inside for _, inside in landed}]


def _files_and_folders(root: str) -> set[str]:
    return {os.path.join(d, n) for d, dirs, names in os.walk(root) for n in (*dirs, *names)}


def _wait_for_new_file(root: str, known: set[str], writer: Writer) -> None:
    """Until the writer creates a file or folder under `root`, or its step ends."""
    while writer.lines.empty() and _files_and_folders(root) <= known:
        time.sleep(0.005)


def _files(root: str) -> set[str]:
    return {
        os.path.normpath(os.path.join(d, n)) for d, _dirs, names in os.walk(root) for n in names
    }


# CI kills writers on SQLite; PostgreSQL's commit path (row locks, a server that goes
# away) is CI's in test_catalog_faults.py, and killed writers on it run under --full
@pytest.mark.parametrize(
    "catalog",
    ["sqlite", pytest.param("postgres", marks=[pytest.mark.postgres, pytest.mark.full])],
    indirect=True,
)
def test_sigkill_leaves_the_last_commit(spark, catalog: Catalog, tmp_path: Path) -> None:
    rng = random.Random(f"{catalog.backend}-{KILLS}")
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    twin = Twin(catalog, lake)
    # one unkilled run makes the tables and measures each kind of step
    calibration = [(0, "setup"), *((n, k) for n, k in enumerate(KINDS, start=1))]
    first = Writer(catalog, tmp_path / "writer-0.log")
    first.run(calibration, seen=0)
    spare = Writer(catalog, tmp_path / "writer-1.log")
    first.finish()
    twin.catch_up()
    twin.check("after calibration")
    took: dict[str, list[float]] = {k: [v] for k, v in first.durations().items()}

    number = len(calibration)
    landed: list[tuple[str, str]] = []  # (kind aimed at, kind interrupted)
    mid_write: set[str] = set()  # kinds a kill has aimed at while they wrote files
    attempt = 0
    # KILLS kills, and a few more (at most one per kind) while some kind has none inside
    while attempt < KILLS or (missing_kinds(landed) and attempt < KILLS + len(KINDS)):
        attempt += 1
        missing = missing_kinds(landed)
        target = missing[0] if missing else rng.choice(KINDS)
        steps = [
            (number + i, k)
            for i, k in enumerate(
                [*rng.sample(KINDS, rng.randint(0, 1)), target, rng.choice(KINDS)]
            )
        ]
        number += len(steps)
        writer = spare
        writer.run(steps, twin.seen_snapshot)
        spare = Writer(catalog, tmp_path / f"writer-{attempt + 1}.log")
        aim = next(n for n, k in steps if k == target)
        while (line := writer.next_line()) != f"start {aim} {target}":
            assert line is not None, ("writer ended early", writer.seen)
        if target in DATA_KINDS and (target not in mid_write or rng.random() < 0.5):
            # while files are being written: the moment the step's first file appears
            mid_write.add(target)
            _wait_for_new_file(catalog.data_path, _files_and_folders(catalog.data_path), writer)
            time.sleep(rng.uniform(0, 0.05))
        else:  # anywhere in the step: its shortest run so far bounds the moment
            time.sleep(rng.uniform(0, min(took[target]) * 0.95))
        writer.kill()
        for kind, secs in writer.durations().items():
            took.setdefault(kind, []).append(secs)
        landed.append((target, writer.interrupted()))
        twin.catch_up()
        twin.check(f"kill {attempt} in {landed[-1][1]}")

    spare.dismiss()
    inside = Counter(i for _, i in landed)
    print(
        f"{catalog.backend}: kills landed in {dict(inside)}; "
        f"steps committed: {dict(Counter(twin.applied))}; step seconds (median): "
        f"{ {k: round(statistics.median(v), 2) for k, v in took.items()} }"
    )
    assert set(KINDS) <= set(inside), inside  # a kill landed inside every kind of step
    assert {k for k in twin.applied if k in DATA_KINDS} == set(DATA_KINDS)

    # the dead writers' files go, and only they (files compaction scheduled for deletion
    # are removed first, so every file left is one a snapshot reads, or debris)
    sql = LakeSQL(spark, lake)
    sql.execute("CALL ducklake_cleanup_old_files('lake', cleanup_all => true)")
    referenced = twin.referenced_files()
    before = _files(catalog.data_path)
    assert referenced <= before
    debris = before - referenced
    assert debris, "no kill left files behind: the test did not reach a write"
    removed = sql.execute("CALL ducklake_delete_orphaned_files('lake', cleanup_all => true)")
    removed_paths = {os.path.normpath(r.path) for r in removed.collect()}
    print(f"{catalog.backend}: delete_orphaned_files removed {len(removed_paths)} files")
    after = _files(catalog.data_path)
    assert removed_paths <= debris
    assert after == referenced, sorted(after - referenced)[:5]
    twin.check("after delete_orphaned_files")


def test_orphan_deletion_keeps_a_live_writers_staging_folder(
    spark, sqlite_catalog: Catalog
) -> None:
    """Age decides: a dead writer's old staging folder goes whole, a fresh one stays."""
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    sql = LakeSQL(spark, lake)
    sql.execute("CREATE TABLE main.t AS SELECT id FROM range(0, 10)")
    root = Path(sqlite_catalog.data_path) / "main" / "t"
    kept = set(_files(sqlite_catalog.data_path))
    two_days_ago = time.time() - 2 * 86400
    for age, name in ((two_days_ago, "dead"), (None, "live")):
        scratch = root / f"ducklake-write-{name}" / "_temporary" / "0"
        scratch.mkdir(parents=True)
        for file in (scratch / "part-0.parquet", scratch / ".part-0.parquet.crc"):
            file.write_bytes(b"x")
        if age is not None:
            for path in (*scratch.iterdir(), scratch, scratch.parent, scratch.parent.parent):
                os.utime(path, (age, age))
    removed = sql.execute(
        "CALL ducklake_delete_orphaned_files('lake', older_than => now() - INTERVAL '1 day')"
    )
    assert sorted(Path(r.path).name for r in removed.collect()) == [
        ".part-0.parquet.crc",
        "part-0.parquet",
    ]
    assert not (root / "ducklake-write-dead").exists()
    assert _files(sqlite_catalog.data_path) == kept | {
        str(root / "ducklake-write-live" / "_temporary" / "0" / n)
        for n in ("part-0.parquet", ".part-0.parquet.crc")
    }
