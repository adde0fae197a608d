"""Catalog faults mid-build: a PostgreSQL catalog whose connections die while `dbt build`
runs.

One small project — a seed, a table, a view, a Python incremental MERGE model (more
rows than DuckLake inlines, so its commits write Parquet and delete files), a table over
it and a test, `threads: 1` — is built in a dbt subprocess, round after round with a new
`batch` var. In each round the build stops at a gate inside the incremental model (the
model waits for a file the test writes), so every fault lands at a known point:

- `between`: while the build waits at the gate, after the seed, table and view
  committed and before the model writes anything; its pooled connections are idle;
- `commit_start`: the model's commit waits for the catalog's advisory write lock,
  which the test holds;
- `commit_mid`: the commit has written its snapshot row and waits to insert its data
  files (the test holds `ducklake_data_file` in SHARE mode);
- `commit_end`: the commit has written every row but its `ducklake_snapshot_changes`
  row, the last one (the test holds that table in SHARE mode).

The fault is `pg_terminate_backend` on every connection of the build to the test's own
database (the catalog's), or a restart of the PostgreSQL server; each round cuts the
build twice, between nodes and in one commit point (they take turns from round to
round). The adapter retries a commit whose connection was lost (`lake/commit.py`), so
every faulted build succeeds, with no traceback, and leaves exactly the relations an
undisturbed build leaves, one snapshot per node (none twice); DuckDB reads every
relation, every table at every snapshot is what a whole build of some round left (no
snapshot half-applied), every file the catalog names exists; and a re-run of `dbt
build` converges to the same relations.

Sizes (`DUCKLAKE_FAULT_POINTS`): in CI one round per fault kind and no re-run (each
faulted build is itself compared with an undisturbed one), at full size every commit
point twice with `pg_terminate_backend` and once or more with a restart, each test
then a re-run.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import duckdb
import psycopg
import pytest

from dbt.adapters.ducklake.lake import CatalogNotFoundError, Lake
from tests import duck
from tests.conftest import PG_DSN, Catalog
from tests.dbt_process import start_dbt, write_profile
from tests.sizes import full_size, size

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.usefixtures("without_json_artifacts"),
]

SCHEMA = "faults"
PG_CLUSTER = ("15", "main")  # the server PG_DSN reaches (./dev postgres)
SEED_ROWS = 60
COMMIT_POINTS = ("commit_end", "commit_mid", "commit_start")
TABLES = ("orders", "base", "inc", "agg")  # read at every snapshot
VIEWS = ("base_v",)  # read at the latest

MODELS = {
    "base.sql": "{{ config(materialized='table') }}\n"
    "select id, grp, amount * {{ var('batch') }} as amount, {{ var('batch') }} as batch "
    "from {{ ref('orders') }} where id <= 20 + 5 * {{ var('batch') }}",
    "base_v.sql": "{{ config(materialized='view') }}\n"
    "select id, grp, amount, batch from {{ ref('base') }} where grp < 2",
    "inc.py": '''
import os
import time
from pathlib import Path


def model(dbt, session):
    """A MERGE incremental model with a gate: the test's fault happens while it waits."""
    dbt.config(materialized="incremental", unique_key="id", incremental_strategy="merge")
    gate = os.environ.get("FAULT_GATE")
    if gate:
        (Path(gate) / "paused").write_text(str(os.getpid()))
        deadline = time.monotonic() + 120
        while not (Path(gate) / "go").exists():
            if time.monotonic() > deadline:
                raise RuntimeError("the test never opened the gate")
            time.sleep(0.05)
    base = dbt.ref("base_v")
    return base.selectExpr("id", "grp", "amount + 1 as v", "batch")
''',
    "agg.sql": "{{ config(materialized='table') }}\n"
    "select grp, count(*) as n, sum(v) as total, max(batch) as batch "
    "from {{ ref('inc') }} group by grp",
    "schema.yml": """
version: 2
models:
  - name: inc
    columns:
      - name: id
        data_tests: [unique]
""",
}

Rows = list[tuple[Any, ...]]


def _expected(batch: int) -> dict[str, Rows]:
    """Every relation after a whole build of round `batch` (the source ids only grow
    from round to round, so the MERGE leaves exactly the latest round's rows)."""
    orders = [(i, i % 3, i * 10) for i in range(1, SEED_ROWS + 1)]
    base = [(i, g, a * batch, batch) for i, g, a in orders if i <= 20 + 5 * batch]
    base_v = [r for r in base if r[1] < 2]
    inc = [(i, g, a + 1, b) for i, g, a, b in base_v]
    agg = [
        (g, len(vs), sum(vs), batch) for g in (0, 1) for vs in [[r[2] for r in inc if r[1] == g]]
    ]
    out: dict[str, Rows] = {
        "orders": orders,
        "base": base,
        "base_v": base_v,
        "inc": inc,
        "agg": agg,
    }
    return {name: sorted(rows) for name, rows in out.items()}


def _project(root: Path, catalog: Catalog) -> Path:
    (root / "models").mkdir(parents=True)
    (root / "seeds").mkdir()
    (root / "dbt_project.yml").write_text(
        'name: faults\nversion: "1.0"\nprofile: faults\nvars:\n  batch: 1\n'
    )
    for name, text in MODELS.items():
        (root / "models" / name).write_text(text)
    seed = ["id,grp,amount"] + [f"{i},{i % 3},{i * 10}" for i in range(1, SEED_ROWS + 1)]
    (root / "seeds" / "orders.csv").write_text("\n".join(seed) + "\n")
    write_profile(
        root,
        "faults",
        metadata=catalog.metadata,
        data_path=catalog.data_path,
        schema=SCHEMA,
        author="faults",
        spark_conf={"spark.default.parallelism": "2"},
    )
    return root


def _start_build(project: Path, batch: int, gate: Path | None) -> subprocess.Popen[str]:
    env = {"FAULT_GATE": str(gate)} if gate is not None else {}
    return start_dbt(project, ["build", "--vars", json.dumps({"batch": batch})], env)


def _finish(build: subprocess.Popen[str]) -> tuple[int, str]:
    try:
        output = build.communicate(timeout=300)[0]
    except subprocess.TimeoutExpired:
        build.kill()
        output = build.communicate()[0]
        pytest.fail(f"dbt build hung after the fault:\n{output}")
    return build.returncode, output


# -- PostgreSQL ------------------------------------------------------------------------
def _dbname(catalog: Catalog) -> str:
    return catalog.metadata.rsplit("/", 1)[1]


def _connect(catalog: Catalog) -> psycopg.Connection:
    return psycopg.connect(f"host=127.0.0.1 port=5432 dbname={_dbname(catalog)}")


def terminate(catalog: Catalog, spare: int | None, victims: set[int]) -> None:
    """`pg_terminate_backend` on every other connection to the test's database: the
    build's (nothing else is connected to it while a build runs), `victims` among them."""
    with _connect(catalog) as conn:
        killed = conn.execute(
            "SELECT pid, pg_terminate_backend(pid) FROM pg_stat_activity "
            "WHERE datname = %s AND pid <> pg_backend_pid() AND pid <> %s",
            (_dbname(catalog), spare if spare is not None else 0),
        ).fetchall()
    assert killed and all(ok for _, ok in killed), killed  # the build had connections
    assert victims <= {pid for pid, _ in killed}, (victims, killed)


def wait_for_postgres(catalog: Catalog, timeout: float = 60.0) -> None:
    wait_for_server(f"host=127.0.0.1 port=5432 dbname={_dbname(catalog)}", timeout)


def wait_for_server(dsn: str = PG_DSN, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with psycopg.connect(dsn, connect_timeout=5) as conn:
                conn.execute("SELECT 1")
            return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def restart(catalog: Catalog, spare: int | None, victims: set[int]) -> None:
    """Restart the PostgreSQL server (fast shutdown: every connection is cut, the
    `victims` too) and wait until it accepts connections again."""
    _pg_ctl("restart")
    wait_for_postgres(catalog)


def _pg_ctl(action: str) -> None:
    subprocess.run(
        ["pg_ctlcluster", "--skip-systemctl-redirect", *PG_CLUSTER, action],
        check=True,
        capture_output=True,
        timeout=120,
    )


def ensure_postgres() -> None:
    """PostgreSQL up again, whatever happened to the test (the next tests need it)."""
    try:
        wait_for_server(timeout=10)
    except psycopg.OperationalError:
        _pg_ctl("start")
        wait_for_server(timeout=120)


Fault = Callable[[Catalog, int | None, set[int]], None]


@contextmanager
def _holding(catalog: Catalog, point: str) -> Iterator[psycopg.Connection]:
    """A connection holding what the build's next commit waits for at `point`."""
    conn = _connect(catalog)
    try:
        if point == "commit_start":
            lake = Lake.open(catalog.metadata)
            key = lake._lock_key  # the advisory lock every writer's transaction takes
            lake.close()
            conn.execute("SELECT pg_advisory_lock(%s)", (key,))
        else:
            table = "ducklake_data_file" if point == "commit_mid" else "ducklake_snapshot_changes"
            conn.execute(f"LOCK TABLE {table} IN SHARE MODE")  # reads pass, inserts wait
        yield conn
    finally:
        try:
            conn.rollback()
            conn.close()
        except psycopg.Error:
            pass  # a restart cut it already


def _wait_for_blocked(catalog: Catalog, holder: int, build: subprocess.Popen[str]) -> set[int]:
    """The build's connections waiting for a lock the holder holds, once there is one."""
    deadline = time.monotonic() + 120
    with _connect(catalog) as conn:
        conn.autocommit = True
        while True:
            waiting = conn.execute(
                "SELECT pid FROM pg_stat_activity WHERE datname = %s AND %s = ANY("
                "pg_blocking_pids(pid))",
                (_dbname(catalog), holder),
            ).fetchall()
            if waiting:
                return {pid for (pid,) in waiting}
            assert build.poll() is None, "the build ended without reaching the commit"
            assert time.monotonic() < deadline, "the commit never waited for the lock"
            time.sleep(0.05)


def faulted_build(
    project: Path, catalog: Catalog, batch: int, point: str, fault: Fault, gate: Path
) -> tuple[int, str]:
    """A build cut twice: between nodes (at the gate), then in its next commit at
    `point`."""
    gate.mkdir()
    build = _start_build(project, batch, gate)
    deadline = time.monotonic() + 240
    while not (gate / "paused").exists():
        if build.poll() is not None:
            pytest.fail(f"the build ended before the gate:\n{build.communicate()[0]}")
        assert time.monotonic() < deadline, "the build never reached the gate"
        time.sleep(0.05)
    fault(catalog, None, set())  # between nodes: the build's pooled connections are idle
    with _holding(catalog, point) as holder:
        holder_pid = holder.info.backend_pid
        (gate / "go").touch()
        committing = _wait_for_blocked(catalog, holder_pid, build)
        fault(catalog, holder_pid, committing)  # the commit waits for the holder
    return _finish(build)


# -- what DuckDB reads -----------------------------------------------------------------
def _latest(catalog: Catalog) -> dict[str, Rows | None]:
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    out: dict[str, Rows | None] = {}
    for name in (*TABLES, *VIEWS):
        try:
            out[name] = sorted(con.execute(f"SELECT * FROM lake.{SCHEMA}.{name}").fetchall())
        except duckdb.CatalogException:
            out[name] = None
    con.close()
    return out


def check_lake(catalog: Catalog, batches: list[int], since: int) -> None:
    """Every snapshot readable and whole: each table at each snapshot after `since`
    (the earlier ones were checked already) holds what a whole build of one of
    `batches` leaves (or does not exist yet), every file the catalog names is on disk,
    and the latest relations are some whole build's."""
    allowed = {name: [_expected(b)[name] for b in batches] for name in (*TABLES, *VIEWS)}
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    snaps = con.execute(
        "SELECT snapshot_id, changes FROM ducklake_snapshots('lake') ORDER BY snapshot_id"
    ).fetchall()
    assert [s for s, _ in snaps] == list(range(len(snaps))), snaps
    assert all(changes for _, changes in snaps), snaps  # each one's changes recorded
    for at, changes in snaps[since + 1 :]:
        for name in TABLES:
            try:
                rows = con.execute(
                    f"SELECT * FROM lake.{SCHEMA}.{name} AT (VERSION => {at})"
                ).fetchall()
            except duckdb.CatalogException:
                continue  # not created yet at this snapshot
            assert sorted(rows) in allowed[name], (name, at, changes, sorted(rows))
    con.close()
    for name, latest in _latest(catalog).items():
        assert latest is None or latest in allowed[name], (name, latest)
    missing = [path for path in _catalog_files(catalog) if not Path(path).is_file()]
    assert not missing, missing


def _catalog_files(catalog: Catalog) -> list[str]:
    """Every data and delete file the catalog names, as an absolute path."""
    located = """SELECT DISTINCT s.path, s.path_is_relative, t.path, t.path_is_relative,
                        f.path, f.path_is_relative
                 FROM {files} f JOIN ducklake_table t USING (table_id)
                 JOIN ducklake_schema s USING (schema_id)"""
    with _connect(catalog) as conn:
        rows = [
            row
            for files in ("ducklake_data_file", "ducklake_delete_file")
            for row in conn.execute(located.format(files=files)).fetchall()
        ]
    assert rows, "the catalog names no file: the builds wrote Parquet files"
    out = []
    for schema, schema_rel, table, table_rel, file, file_rel in rows:
        base = catalog.data_path + schema if schema_rel else schema
        base = base + table if table_rel else table
        out.append(base + file if file_rel else file)
    return out


def _nodes_committed(catalog: Catalog, after: int) -> list[str]:
    """The nodes the snapshots after `after` name, in order (a commit retried after a
    fault must not land twice)."""
    lake = Lake.open(catalog.metadata)
    extras = [json.loads(s.commit_extra_info or "{}") for s in lake.snapshots(since=after)]
    lake.close()
    ids = [e.get("unique_id", "") for e in extras]
    return [i for i in ids if i.startswith(("seed.", "model."))]  # not the schema's


NODES = ["seed.faults.orders", *(f"model.faults.{m}" for m in ("base", "base_v", "inc", "agg"))]


def _latest_snapshot(catalog: Catalog) -> int:
    """The latest snapshot's id; -1 before the first build created the lake."""
    try:
        lake = Lake.open(catalog.metadata, create=False)
    except CatalogNotFoundError:
        return -1
    latest = lake.latest_snapshot().snapshot_id
    lake.close()
    return latest


def _build_checked(catalog: Catalog, batch: int, run: Callable[[], str]) -> None:
    """Run a build (`run` returns its output): it succeeds, leaves exactly what an
    undisturbed build leaves, one snapshot per node, and a whole lake."""
    after = _latest_snapshot(catalog)
    output = run()
    assert "Traceback" not in output, output
    assert "Completed successfully" in output, output
    assert _latest(catalog) == _expected(batch), output
    assert _nodes_committed(catalog, after) == NODES, output
    check_lake(catalog, list(range(1, batch + 1)), after)


def faulted(
    project: Path, catalog: Catalog, batch: int, point: str, fault: Fault, tmp: Path
) -> None:
    """Round `batch`: a build cut between nodes and in a commit at `point`."""
    began = time.monotonic()

    def run() -> str:
        code, output = faulted_build(project, catalog, batch, point, fault, tmp / f"gate{batch}")
        assert code == 0, output  # the lost commit was retried
        return output

    _build_checked(catalog, batch, run)
    print(
        f"\nround {batch} ({fault.__name__} between nodes and at {point}): "
        f"{time.monotonic() - began:.1f}s"
    )


def rerun(project: Path, catalog: Catalog, batch: int) -> None:
    """A plain `dbt build` again: it converges to what an undisturbed build leaves."""

    def run() -> str:
        code, output = _finish(_start_build(project, batch, None))
        assert code == 0, output
        return output

    _build_checked(catalog, batch, run)


def test_terminated_catalog_connections(pg_catalog: Catalog, tmp_path: Path) -> None:
    project = _project(tmp_path / "project", pg_catalog)
    rounds = size("DUCKLAKE_FAULT_POINTS", ci=1, full=2 * len(COMMIT_POINTS))
    for n in range(rounds):
        point = COMMIT_POINTS[n % len(COMMIT_POINTS)]
        faulted(project, pg_catalog, n + 1, point, terminate, tmp_path)
    if full_size():  # CI: each faulted build is already checked against an undisturbed one
        rerun(project, pg_catalog, rounds)


@pytest.mark.serial  # a restart cuts every other test's PostgreSQL connections
def test_catalog_server_restarted(pg_catalog: Catalog, tmp_path: Path) -> None:
    project = _project(tmp_path / "project", pg_catalog)
    rounds = size("DUCKLAKE_FAULT_POINTS", ci=1, full=len(COMMIT_POINTS) + 1)
    try:
        for n in range(rounds):
            point = COMMIT_POINTS[(n + 1) % len(COMMIT_POINTS)]
            faulted(project, pg_catalog, n + 1, point, restart, tmp_path)
        if full_size():  # CI: each faulted build is checked against an undisturbed one
            rerun(project, pg_catalog, rounds)
    finally:
        ensure_postgres()
