"""A profile that leaves `spark_keep_alive` unset keeps its local driver JVM between dbt
commands: the first command starts it and says so on dbt's console, later commands of
the same settings attach to it, from other projects too, whose relative paths resolve
against their own folder, not the first project's; DuckDB reads every lake as written;
`python -m dbt.adapters.ducklake.spark.resident --stop` stops it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from dbt.adapters.ducklake.spark import class_archive
from dbt.adapters.ducklake.spark.resident import running
from tests import duck
from tests.dbt_process import start_dbt

pytestmark = pytest.mark.slow  # it starts a kept driver JVM of its own

MODEL = """{{ config(materialized='incremental', incremental_strategy='append') }}
select id, '{{ project_name }}' as project from range(1000) as t(id)
"""
STARTED = "Started a Spark driver JVM that later dbt commands of this profile reuse"


def _project(root: Path, name: str) -> Path:
    """A project whose profile gives relative metadata and data paths and no
    spark_keep_alive (the sample project's shape)."""
    (root / "models").mkdir(parents=True)
    (root / "dbt_project.yml").write_text(f'name: {name}\nversion: "1.0"\nprofile: p\n')
    (root / "models" / "rows.sql").write_text(MODEL)
    target = {
        "type": "ducklake",
        "metadata": "sqlite:///lake/metadata.sqlite",
        "data_path": "lake/data",
        "schema": "s",
        "threads": 1,
        "spark_master": "local[2]",
        "spark_conf": {"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"},
    }
    profile = {"p": {"target": "t", "outputs": {"t": target}}}
    (root / "profiles.yml").write_text(yaml.safe_dump(profile))
    return root


def _run(project: Path, env: dict[str, str]) -> str:
    proc = start_dbt(project, ["run"], env)
    out, _ = proc.communicate(timeout=600)
    assert proc.returncode == 0, out[-4000:]
    return out


def _lake_rows(project: Path) -> list[tuple]:
    con = duck.connect()
    duck.attach(con, f"sqlite:{project}/lake/metadata.sqlite", options="READ_ONLY")
    rows = con.execute("SELECT project, count(*) FROM lake.s.rows GROUP BY project").fetchall()
    files = con.execute(
        "SELECT data_file FROM ducklake_list_files('lake', 'rows', schema => 's')"
    ).fetchall()
    return [*rows, *[(Path(path).is_relative_to(project / "lake" / "data"),) for (path,) in files]]


def test_the_default_keeps_one_jvm_for_the_next_commands_of_any_project(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    # the user's JVM class archives, linked in: an empty folder would dump them first
    archives = class_archive.cache_folder()
    archives.mkdir(parents=True, exist_ok=True)
    (cache / "dbt-ducklake").mkdir(parents=True)
    (cache / "dbt-ducklake" / archives.name).symlink_to(archives, target_is_directory=True)
    env = {"XDG_CACHE_HOME": str(cache)}
    folder = cache / "dbt-ducklake" / "resident"
    keeper = 0
    first, other = _project(tmp_path / "first", "first"), _project(tmp_path / "other", "other")
    try:
        out = _run(first, env)
        assert STARTED in out, out[-3000:]
        (state_file,) = folder.glob("*.json")
        keeper = json.loads(state_file.read_text())["pid"]

        out = _run(other, env)  # another project, in another folder
        assert STARTED not in out, out[-3000:]
        assert list(folder.glob("*.json")) == [state_file], "one keeper serves both"
        assert running(keeper)
        attached = state_file.with_suffix(".clients").read_text().split()
        assert len(attached) == 2 and len(set(attached)) == 2, attached

        # each lake's files sit under its own project's data path, and read back
        assert _lake_rows(first) == [("first", 1000), (True,)]
        assert _lake_rows(other) == [("other", 1000), (True,)]
    finally:
        stop = [sys.executable, "-m", "dbt.adapters.ducklake.spark.resident", "--stop"]
        subprocess.run(stop, env={**os.environ, **env}, check=True, timeout=60)
    assert keeper
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and running(keeper):
        time.sleep(0.5)
    assert not running(keeper), "--stop stops the kept driver"
