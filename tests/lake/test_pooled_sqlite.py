"""SQLite catalog connections are pooled (lake/connect.py): a process without DuckDB
keeps its connection open between statements, still sees each commit DuckDB makes in
another process, and DuckDB, attached all along, sees each of ours. A process that has
DuckDB loaded closes every connection after use instead (two SQLite copies in one
process do not share locks). dbt's processes are the first kind, this test process the
second, so the pooled side runs in a child process."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import textwrap

from dbt.adapters.ducklake.lake import ColumnSpec, Lake
from tests import duck

CHILD = textwrap.dedent(
    """
    import json, sys
    from dbt.adapters.ducklake.lake import ColumnSpec, Lake

    lake = Lake.open(sys.argv[1])

    def say(**fields):
        print(json.dumps(fields), flush=True)

    def pooled():
        # connections open in the pool right now, and whether DuckDB is loaded here
        return {"idle": lake.engine.pool.checkedin(), "duckdb": "duckdb" in sys.modules}

    say(latest=lake.latest_snapshot().snapshot_id, **pooled())
    sys.stdin.readline()  # DuckDB committed in the parent meanwhile
    say(latest=lake.latest_snapshot().snapshot_id, **pooled())
    with lake.transaction(commit_message="ours, pooled") as tx:
        tx.create_table("main", "ours", [ColumnSpec("id", "int32")])
    say(latest=lake.latest_snapshot().snapshot_id, **pooled())
    """
)


def _line(child: subprocess.Popen[str]) -> dict[str, object]:
    line = child.stdout.readline() if child.stdout else ""
    assert line, child.stderr.read() if child.stderr else "the child said nothing"
    return dict(json.loads(line))


def test_pooled_connections_see_duckdb_and_duckdb_sees_them(sqlite_catalog) -> None:
    Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path).close()
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach)
    con.execute("CREATE TABLE lake.t (id INTEGER)")
    before = con.execute("SELECT max(snapshot_id) FROM ducklake_snapshots('lake')").fetchone()[0]

    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, sqlite_catalog.metadata],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        first = _line(child)
        assert first == {"latest": before, "idle": 1, "duckdb": False}  # kept open

        con.execute("INSERT INTO lake.t VALUES (1), (2)")  # DuckDB commits beside it
        duck_commit = con.execute(
            "SELECT max(snapshot_id) FROM ducklake_snapshots('lake')"
        ).fetchone()[0]
        assert child.stdin is not None
        child.stdin.write("go\n")
        child.stdin.flush()
        second = _line(child)
        assert second == {"latest": duck_commit, "idle": 1, "duckdb": False}

        third = _line(child)
        assert third["latest"] == duck_commit + 1
        assert third["idle"] >= 1  # still pooled after a write
        # DuckDB, attached since before the child started, sees the pooled commit
        seen = con.execute("SELECT max(snapshot_id) FROM ducklake_snapshots('lake')").fetchone()
        assert seen[0] == duck_commit + 1
        tables = con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE database_name = 'lake' ORDER BY 1"
        ).fetchall()
        assert tables == [("ours",), ("t",)]
    finally:
        child.kill()
        child.wait()


def test_a_process_with_duckdb_loaded_keeps_no_connection_open(sqlite_catalog) -> None:
    assert "duckdb" in sys.modules  # this test process loads it (tests.duck)
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    with lake.transaction(commit_message="ours") as tx:
        tx.create_table("main", "t", [ColumnSpec("id", "int32")])
    lake.latest_snapshot()
    assert lake.engine.pool.checkedout() == 0
    assert _open_files_under(sqlite_catalog.metadata) == []  # the catalog file closed
    lake.close()


def _open_files_under(metadata: str) -> list[str]:
    """This process's open files that are the catalog file (or its WAL and index)."""
    path = os.path.realpath(metadata.removeprefix("sqlite:///"))
    found = []
    for fd in os.listdir("/proc/self/fd"):
        with contextlib.suppress(OSError):
            target = os.readlink(f"/proc/self/fd/{fd}")
            if target.startswith(path):
                found.append(target)
    return found
