"""Run-operations that need only the catalog start no JVM: snapshot history, expiring
snapshots (dry run or not) and setting an option answer from the catalog alone; so does
`dbt source freshness` for a lake source without a `loaded_at_field`, from the time of
the last snapshot that changed the table.

Each runs as a user runs it, `dbt run-operation` in a fresh process, with `JAVA_HOME`
pointing nowhere: starting Spark there fails, as the model build of the same project
shows, so a run-operation that passes started none.
"""

from __future__ import annotations

import json
import subprocess
import time
from datetime import datetime
from pathlib import Path

from dbt.adapters.ducklake.lake import Lake
from tests import duck
from tests.conftest import Catalog
from tests.dbt_process import start_dbt, write_profile

NO_JAVA = {"JAVA_HOME": "/nonexistent/java-home"}


def _project(root: Path, catalog: Catalog) -> Path:
    project = root / "meta"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text('name: meta\nversion: "1.0"\nprofile: meta\n')
    (project / "models" / "needs_spark.sql").write_text("select 1 as id")
    write_profile(
        project,
        "meta",
        metadata=catalog.metadata,
        data_path=catalog.data_path,
        schema="main",
        spark_prestart=True,  # the default: run-operations must not prestart either
    )
    return project


def _run(project: Path, args: list[str]) -> tuple[int, str, float]:
    start = time.perf_counter()
    process = start_dbt(project, args, env=NO_JAVA)
    try:
        output, _ = process.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    return process.returncode, output, time.perf_counter() - start


def test_catalog_only_run_operations_start_no_jvm(sqlite_catalog: Catalog, tmp_path: Path) -> None:
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach, data_path=sqlite_catalog.data_path)
    con.execute("CREATE TABLE lake.main.t (id BIGINT)")
    for i in range(3):
        con.execute(f"INSERT INTO lake.main.t VALUES ({i})")
    con.close()
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    latest = lake.latest_snapshot().snapshot_id
    project = _project(tmp_path, sqlite_catalog)

    # every import the process makes is listed (`-X importtime`, on stderr)
    traced = {**NO_JAVA, "PYTHONPROFILEIMPORTTIME": "1"}
    start = time.perf_counter()
    process = start_dbt(project, ["run-operation", "ducklake_snapshots"], env=traced)
    output, _ = process.communicate(timeout=300)
    code, seconds = process.returncode, time.perf_counter() - start
    assert code == 0, output
    assert f" {latest}  " in output, output
    imported = {line.rsplit("|", 1)[-1].strip() for line in output.splitlines() if "|" in line}
    assert "dbt.adapters.ducklake.lake.reader" in imported  # the trace is there
    # the engine's libraries load only for statements (pyspark alone is ~0.15 s)
    heavy = {m.split(".")[0] for m in imported} & {"pyspark", "py4j", "sqlglot", "pyarrow"}
    assert not heavy, f"a catalog-only run-operation imported {sorted(heavy)}"
    # no background start either (prestart.py), which would fail quietly here
    assert "starting Spark in the background" not in (project / "logs" / "dbt.log").read_text()
    print(f"run-operation ducklake_snapshots: {seconds:.1f} s")

    expire = ["run-operation", "ducklake_expire_snapshots", "--args"]
    code, output, _ = _run(project, [*expire, "{versions: [1], dry_run: true}"])
    assert code == 0, output
    assert "ducklake_expire_snapshots: 1 row(s)" in output, output
    assert len(lake.snapshots()) == latest + 1  # a dry run expires nothing
    code, output, _ = _run(project, [*expire, "{versions: [1, 2]}"])
    assert code == 0, output
    assert "ducklake_expire_snapshots: 2 row(s)" in output, output
    assert [s.snapshot_id for s in lake.snapshots()] == [0, *range(3, latest + 1)]
    code, output, _ = _run(project, [*expire, "{versions: ['x']}"])
    assert code != 0 and "takes snapshot ids" in output, output

    option = "{option: target_file_size, value: 64MB, table_name: t}"
    code, output, _ = _run(project, ["run-operation", "ducklake_set_option", "--args", option])
    assert code == 0, output
    table_id = lake.catalog().table("main", "t").table_id
    assert lake.option("target_file_size", table_id=table_id) == "64MB"

    # the same environment cannot start Spark: a model build fails on it
    code, output, _ = _run(project, ["run"])
    assert code != 0 and "JAVA" in output.upper(), output
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach)
    assert con.execute("SELECT count(*) FROM lake.main.t").fetchone() == (3,)
    con.close()


SOURCES = """
sources:
  - name: lake
    schema: main
    config:
      freshness:
        warn_after: {count: 1, period: day}
    tables:
      - name: t
"""


def _max_loaded_at(project: Path) -> datetime:
    code, output, _ = _run(project, ["source", "freshness"])
    assert code == 0, output
    assert "PASS freshness of lake.t" in output, output
    results = json.loads((project / "target" / "sources.json").read_text())["results"]
    assert [r["unique_id"] for r in results] == ["source.meta.lake.t"]
    return datetime.fromisoformat(results[0]["max_loaded_at"])


def test_source_freshness_from_the_catalog(sqlite_catalog: Catalog, tmp_path: Path) -> None:
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach, data_path=sqlite_catalog.data_path)
    con.execute("CREATE TABLE lake.main.t (id BIGINT)")
    con.execute("INSERT INTO lake.main.t VALUES (1), (2)")
    con.execute("CALL ducklake_flush_inlined_data('lake')")  # moves rows, changes none
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    snapshots = lake.snapshots()
    assert "inlined_insert" in str(snapshots[-2].changes)
    assert "flush" in str(snapshots[-1].changes)
    project = _project(tmp_path, sqlite_catalog)
    (project / "models" / "sources.yml").write_text(SOURCES)
    assert _max_loaded_at(project) == snapshots[-2].snapshot_time

    con.execute("DELETE FROM lake.main.t WHERE id = 1")
    con.close()
    assert _max_loaded_at(project) == lake.latest_snapshot().snapshot_time
