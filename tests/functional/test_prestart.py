"""A dbt command that runs nodes starts Spark while dbt parses, and warms it on a
throwaway lake that leaves nothing behind; other commands and `spark_prestart: false`
leave the start to the first statement (test_metadata_without_jvm.py: run-operations
start none). Each command runs in a
fresh process, as a user runs it."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from pyspark.sql import SparkSession

from dbt.adapters.ducklake import prestart
from dbt.adapters.ducklake.credentials import DucklakeCredentials
from dbt.adapters.ducklake.spark.session import session_started
from tests import duck
from tests.conftest import Catalog
from tests.dbt_process import start_dbt, write_profile

STARTED = "starting Spark in the background while dbt parses"
WARMED = "Spark warmed in the background:"


def _dbt(project: Path, args: list[str]) -> str:
    # the warm-up's throwaway lake goes to the process's temporary folder: checked empty
    (project / "tmp").mkdir(exist_ok=True)
    process = start_dbt(project, args, env={"TMPDIR": str(project / "tmp")})
    try:
        output, _ = process.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    assert process.returncode == 0, output
    # dbt.log holds every invocation, each under a header line: this one's part
    return (project / "logs" / "dbt.log").read_text().split("\n=====")[-1]


def _project(root: Path, catalog: Catalog, **fields: object) -> Path:
    project = root / "pre"
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text('name: pre\nversion: "1.0"\nprofile: pre\n')
    (project / "models" / "numbers.sql").write_text(
        "select id, id * 2 as twice from (values (1), (2), (3)) as t(id)"
    )
    write_profile(
        project,
        "pre",
        metadata=catalog.metadata,
        data_path=catalog.data_path,
        schema="main",
        **fields,
    )
    return project


def test_a_run_starts_and_warms_spark_while_dbt_parses(
    sqlite_catalog: Catalog, tmp_path: Path
) -> None:
    project = _project(tmp_path, sqlite_catalog, spark_prestart=True)  # the default
    log = _dbt(project, ["run"])
    assert STARTED in log, log[-3000:]
    assert log.index(STARTED) < log.index("Found 1 model")
    # the warm-up gave way to the model's first statement, or finished before it
    assert WARMED in log, log[-3000:]
    assert not [p for p in (project / "tmp").iterdir() if p.name.startswith("ducklake-warm-up")]
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach, data_path=sqlite_catalog.data_path)
    assert con.execute("SELECT * FROM lake.main.numbers ORDER BY id").fetchall() == [
        (1, 2),
        (2, 4),
        (3, 6),
    ]
    # the warm-up's tables live in a throwaway lake: this one has only the model
    assert con.execute(
        "SELECT table_name FROM information_schema.tables WHERE table_catalog = 'lake'"
    ).fetchall() == [("numbers",)]
    con.close()


def test_only_commands_that_run_nodes_prestart(
    spark: SparkSession, monkeypatch: pytest.MonkeyPatch
) -> None:
    credentials = DucklakeCredentials(metadata="sqlite:///unused.sqlite", schema="main")
    for command in ("run-operation", "ls", "parse", "docs", "debug", "compile"):
        monkeypatch.setattr(prestart, "dbt_command", lambda c=command: c)
        assert prestart.prestart_spark(credentials) is None
    monkeypatch.setattr(prestart, "dbt_command", lambda: "build")
    credentials.spark_prestart = False
    assert prestart.prestart_spark(credentials) is None
    # this test process's session runs already: nothing to start
    credentials.spark_prestart = True
    assert session_started() and prestart.prestart_spark(credentials) is None
    assert "build" in prestart.NODE_COMMANDS
