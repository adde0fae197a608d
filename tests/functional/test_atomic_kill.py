"""`publish: atomic` builds SIGKILLed at points spread over the build and the publish.

A small project (two seeds, a view, a table, an incremental MERGE model, two tests) is
built once, then rebuilt under `publish: atomic` in a `dbt build` subprocess (its own
process group: dbt, the JVM, Python workers) that is SIGKILLed at one of these points,
chosen in turn with seeded random delays (the seed is printed; DUCKLAKE_KILL_SEED
repeats a run):
- `start`: a random moment of the first seconds (JVM and dbt start, the catalog copy);
- `node`: when the k-th node line (START / OK / PASS) appears, plus up to 0.4 s;
- `publish`: after the last node's line, while dbt publishes, plus up to 0.3 s;
- `lock`: the moment the publish's catalog transaction holds the real catalog's write
  lock (SQLite: a `BEGIN IMMEDIATE` probe fails; PostgreSQL: the lake's advisory lock
  is held).
Each build targets the round of data the lake is not at, so "before" and "after" differ
in every relation. After each kill DuckDB must read the lake exactly as before the build
(same latest snapshot) or exactly as the fully built round (one new snapshot): never a
mix. Leftovers are then made old (the lake's `delete_older_than` is 1 second) and swept,
alternately by `delete_orphaned_files` and by the next build's staging: the staging copy
and every file it registered are gone, every file the real catalog knows is still there.
A last, undisturbed build succeeds (its staging sweeps the last kill's leftovers), and
after a last `delete_orphaned_files` the data path holds exactly the files the catalog
knows.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from dbt.adapters.factory import reset_adapters
from dbt.cli.main import dbtRunner

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.lake.maintenance import known_files
from dbt.adapters.ducklake.lake.stage_sweep import StageCopy, _registered, list_stages
from tests import duck
from tests.conftest import Catalog, _make_catalog
from tests.dbt_process import write_profile
from tests.sizes import full_size, size

# kills its own dbt processes; the checks are of state, not timing
pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("without_json_artifacts")]

KILL_POINTS = size("DUCKLAKE_KILL_POINTS", ci=2, full=12)  # per backend
# CI's budget holds one backend (tests/lake/test_stage_sweep.py sweeps PostgreSQL copies
# there); the full size kills on both
BACKENDS = ["sqlite"] + (
    [pytest.param("postgres", marks=pytest.mark.postgres)] if full_size() else []
)
MODES = ("lock", "node", "publish", "start")
SCHEMA = "k"
NODE_LINES = (" START ", " OK ", " PASS ")
_DBT = str(Path(sys.executable).with_name("dbt"))

MODELS = {
    "orders_v.sql": "{{ config(materialized='view') }}\n"
    "select order_id, customer_id, amount from {{ ref('orders') }} where amount <> 0",
    "customer_totals.sql": "{{ config(materialized='table') }}\n"
    "select c.customer_id, c.name, c.tier, coalesce(sum(o.amount), 0) as total "
    "from {{ ref('customers') }} c left join {{ ref('orders_v') }} o "
    "on o.customer_id = c.customer_id group by c.customer_id, c.name, c.tier",
    "orders_inc.sql": "{{ config(materialized='incremental', unique_key='order_id', "
    "incremental_strategy='merge') }}\n"
    "select order_id, customer_id, amount from {{ ref('orders') }}",
    "schema.yml": "version: 2\nmodels:\n  - name: orders_inc\n    columns:\n"
    "      - name: order_id\n        data_tests: [unique, not_null]\n",
}


def _orders(round_: int) -> list[tuple[int, int, int]]:
    """40 rows (more than DuckLake inlines); every amount differs between rounds."""
    return [(i, i % 3 + 1, 0 if i % 13 == round_ else i * 10 + round_) for i in range(1, 41)]


def _customers(round_: int) -> list[tuple[int, str, str]]:
    return [(c, n, "gold" if (c + round_) % 2 else "silver") for c, n in ((1, "ann"), (2, "bo"))]


def expected(round_: int) -> dict[str, list[tuple[Any, ...]]]:
    """Every relation as a complete build of `round_` leaves it (the oracle)."""
    orders, customers = _orders(round_), _customers(round_)
    view = [o for o in orders if o[2] != 0]
    totals = [(c, n, t, sum(o[2] for o in view if o[1] == c)) for c, n, t in customers]
    return {
        "orders": sorted(orders),
        "customers": sorted(customers),
        "orders_v": sorted(view),
        "customer_totals": sorted(totals),
        "orders_inc": sorted(orders),
    }


def _project(root: Path, catalog: Catalog) -> Path:
    (root / "models").mkdir(parents=True)
    (root / "seeds").mkdir()
    (root / "dbt_project.yml").write_text(
        'name: kill\nversion: "1.0"\nprofile: kill\n'
        "seeds:\n  kill:\n    orders:\n      +column_types: {amount: bigint}\n"
    )
    for name, text in MODELS.items():
        (root / "models" / name).write_text(text)
    write_profile(
        root,
        "kill",
        metadata=catalog.metadata,
        data_path=catalog.data_path,
        schema=SCHEMA,
        threads=2,
        publish="atomic",
    )
    return root


def _write_round(project: Path, round_: int) -> None:
    rows = ["order_id,customer_id,amount"] + [",".join(map(str, o)) for o in _orders(round_)]
    (project / "seeds" / "orders.csv").write_text("\n".join(rows) + "\n")
    rows = ["customer_id,name,tier"] + [",".join(map(str, c)) for c in _customers(round_)]
    (project / "seeds" / "customers.csv").write_text("\n".join(rows) + "\n")


def _build_here(project: Path, round_: int) -> None:
    """An undisturbed `dbt build` in this process (the suite's SparkSession)."""
    _write_round(project, round_)
    lines: list[str] = []
    args = ["build", "--project-dir", str(project), "--profiles-dir", str(project)]
    result = dbtRunner(callbacks=[lambda e: lines.append(e.info.msg)]).invoke(args)
    assert result.success, "\n".join(lines)


def read_lake(catalog: Catalog) -> tuple[int, dict[str, list[tuple[Any, ...]]]]:
    """The latest snapshot id and every relation, as DuckDB reads them in one snapshot."""
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    con.execute("BEGIN TRANSACTION")
    (snapshot,) = con.execute("SELECT max(snapshot_id) FROM lake.snapshots()").fetchone() or (0,)
    rows = {
        name: sorted(con.execute(f"SELECT * FROM lake.{SCHEMA}.{name}").fetchall())
        for name in expected(1)
    }
    con.execute("COMMIT")
    con.close()
    return int(snapshot), rows


class KilledBuild:
    """`dbt build` in its own process group, SIGKILLed at one point of `mode`."""

    def __init__(self, project: Path, catalog: Catalog, mode: str, rng: random.Random):
        self.catalog, self.mode, self.rng = catalog, mode, rng
        self.lines: list[str] = []
        self.node_lines = threading.Semaphore(0)
        self.proc = subprocess.Popen(
            [_DBT, "build", "--project-dir", str(project), "--profiles-dir", str(project)],
            cwd=project,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1", "TZ": "UTC"},
        )
        self.started = time.monotonic()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            if any(marker in line for marker in NODE_LINES):
                self.node_lines.release()

    def _wait_lines(self, count: int) -> bool:
        for _ in range(count):
            while not self.node_lines.acquire(timeout=0.05):
                if self.proc.poll() is not None:
                    return False
                assert time.monotonic() - self.started < 300, "".join(self.lines)
        return True

    def kill_at_point(self, node_lines: int) -> str:
        """Kill at a point of this build's mode; where it landed."""
        if self.mode == "start":
            time.sleep(self.rng.uniform(0.5, 8.0))
        elif self.mode == "node":
            self._wait_lines(self.rng.randint(1, node_lines - 1))
            time.sleep(self.rng.uniform(0, 0.4))
        else:  # after the last node's line: the publish
            self._wait_lines(node_lines)
            if self.mode == "publish":
                time.sleep(self.rng.uniform(0, 0.3))
            else:
                self._wait_for_the_write_lock()
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            landed = "killed"
        else:
            landed = "finished first"
        self.proc.wait(timeout=60)
        node_lines_seen = sum(any(m in line for m in NODE_LINES) for line in self.lines)
        return f"{landed} after {node_lines_seen} node line(s)"

    def _wait_for_the_write_lock(self) -> None:
        probe = _LockProbe(self.catalog)
        try:
            while self.proc.poll() is None and not probe.held():
                assert time.monotonic() - self.started < 300, "".join(self.lines)
                time.sleep(0.001)
        finally:
            probe.close()


class _LockProbe:
    """Whether another process holds the real catalog's write lock right now."""

    def __init__(self, catalog: Catalog):
        self.backend = catalog.backend
        if self.backend == "sqlite":
            path = catalog.metadata.removeprefix("sqlite:///")
            self.sqlite = sqlite3.connect(path, timeout=0, isolation_level=None)
        else:
            self.engine = sa.create_engine(catalog.metadata)
            self.pg = self.engine.connect()

    def held(self) -> bool:
        if self.backend == "sqlite":
            try:
                self.sqlite.execute("BEGIN IMMEDIATE")
            except sqlite3.OperationalError:  # database is locked: the publish writes
                return True
            self.sqlite.execute("ROLLBACK")
            return False
        found = self.pg.execute(
            sa.text(
                "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted "
                "AND pid <> pg_backend_pid() AND database = "
                "(SELECT oid FROM pg_database WHERE datname = current_database())"
            )
        ).first()
        self.pg.rollback()
        return found is not None

    def close(self) -> None:
        if self.backend == "sqlite":
            self.sqlite.close()
        else:
            self.pg.close()
            self.engine.dispose()


def _files_on_disk(catalog: Catalog) -> set[str]:
    return {
        os.path.normpath(p)
        for p in map(str, Path(catalog.data_path).rglob("*"))
        if os.path.isfile(p)
    }


def _known(lake: Lake) -> set[str]:
    with lake.connect() as conn:
        return known_files(lake, conn)


def _leftovers(lake: Lake) -> tuple[list[StageCopy], set[str]]:
    """The staging copies that exist and every file they registered."""
    copies = list_stages(lake)
    return copies, set().union(*(_registered(lake, c) for c in copies))


@pytest.fixture(params=BACKENDS)
def catalog(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Catalog]:
    yield from _make_catalog(request.param, tmp_path)


@pytest.fixture(autouse=True)
def _forget_this_modules_adapter() -> Iterator[None]:
    """dbt keeps one adapter per type in the process: the next test module gets its own."""
    yield
    reset_adapters()


def test_a_killed_atomic_build_publishes_all_or_nothing_and_is_swept(
    catalog: Catalog, tmp_path: Path, spark: Any
) -> None:
    from dbt.adapters.ducklake.spark.maintenance import delete_orphaned_files

    seed = int(os.environ.get("DUCKLAKE_KILL_SEED", "0")) or random.randrange(1, 10**6)
    print(f"DUCKLAKE_KILL_SEED={seed} DUCKLAKE_KILL_POINTS={KILL_POINTS} ({catalog.backend})")
    rng = random.Random(seed)
    began = time.monotonic()
    project = _project(tmp_path / "project", catalog)
    _build_here(project, 1)
    lake = Lake.open(catalog.metadata)
    with lake.transaction() as tx:  # leftovers are old after a second
        tx.set_option("delete_older_than", "1 second")
    node_lines = 2 * 5 + 2 * 2  # START and OK of 2 seeds, 3 models; START and PASS of 2 tests
    snapshot, state = read_lake(catalog)
    assert state == expected(1)
    round_, outcomes = 1, []
    for point in range(KILL_POINTS):
        mode = MODES[point % len(MODES)]
        target = 3 - round_
        _write_round(project, target)
        real_files = _known(lake)
        build = KilledBuild(project, catalog, mode, rng)
        landed = build.kill_at_point(node_lines)
        killed_at = time.monotonic()

        after, state = read_lake(catalog)
        published = after != snapshot
        if published:
            assert after == snapshot + 1, (mode, landed, "".join(build.lines))
            assert state == expected(target), (mode, landed)
            snapshot, round_ = after, target
        else:
            assert state == expected(round_), (mode, landed)
        outcomes.append(f"{point}: {mode} {landed}: {'published' if published else 'untouched'}")
        assert real_files <= _files_on_disk(catalog)  # nothing the lake reads went missing

        # the leftovers are made old (1 second), then swept
        copies, registered = _leftovers(lake)
        time.sleep(max(0.0, 1.2 - (time.monotonic() - killed_at)))
        if point % 2 == 0 and point != KILL_POINTS - 1:
            delete_orphaned_files(spark, lake, older_than=datetime.now(timezone.utc))
            assert list_stages(lake) == []
            assert _files_on_disk(catalog) == _known(lake), outcomes[-1]
        else:  # the next build's staging sweeps them, whatever becomes of that build
            outcomes[-1] += f" ({len(copies)} copy, {len(registered)} file(s) left)"
        assert _known(lake) <= _files_on_disk(catalog)
    print("\n".join(outcomes), f"\n{time.monotonic() - began:.1f}s for the kills")

    # a last, undisturbed build: it sweeps what is left and publishes one snapshot
    copies, registered = _leftovers(lake)
    before = _files_on_disk(catalog)
    time.sleep(1.2)
    _build_here(project, 3 - round_)
    after, state = read_lake(catalog)
    assert (after, state) == (snapshot + 1, expected(3 - round_))
    assert list_stages(lake) == []
    assert not (registered - _known(lake)) & _files_on_disk(catalog), "staged files stayed"
    assert _known(lake) <= _files_on_disk(catalog)
    assert before  # the lake had files to keep
    time.sleep(1.2)
    delete_orphaned_files(spark, lake, older_than=datetime.now(timezone.utc))
    assert _files_on_disk(catalog) == _known(lake)
    lake.close()
