"""Two `dbt run`s of two different projects, each with `threads: 8`, at the same time on
one lake (one PostgreSQL metadata database, one data_path, a schema each): both succeed
and DuckDB reads every relation of both with exactly the expected rows.

The lake does not exist before: the runs' first connections race to create it. Two
rounds: the first creates everything, the second (a new `batch` var) replaces the
tables and views and merges into the incremental models while the other project does
the same, as two scheduled jobs sharing a lake would.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import pytest

from dbt.adapters.ducklake.lake import Lake
from tests import duck
from tests.conftest import Catalog
from tests.dbt_process import start_dbt, write_profile

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.slow,
    pytest.mark.usefixtures("without_json_artifacts"),
]

PROJECTS = {"one": 1, "two": 2}  # project name (also its schema) -> tag in its rows
BASE_ROWS = 60
STEPS = (2, 3, 4)


def _models(tag: int) -> dict[str, str]:
    """Ten models: tables, views over them, an aggregate and a merge incremental."""
    models = {
        "base.sql": (
            "{{ config(materialized='table') }}\n"
            "select cast(id as int) as id, cast(id % 5 as int) as grp, "
            f"{tag} * {{{{ var('batch') }}}} as tag from range(0, {BASE_ROWS})"
        ),
        "base_view.sql": "select id, grp, tag from {{ ref('base') }} where grp < 3",
        "agg.sql": (
            "{{ config(materialized='table') }}\n"
            "select grp, count(*) as n, sum(id) as total from {{ ref('base_view') }} group by grp"
        ),
        "inc.sql": (
            "{{ config(materialized='incremental', unique_key='id', "
            "incremental_strategy='merge') }}\n"
            "select id, grp * 10 + {{ var('batch') }} as v from {{ ref('base') }} "
            "where id < 30 * {{ var('batch') }}"
        ),
    }
    for k in STEPS:
        models[f"t{k}.sql"] = (
            "{{ config(materialized='table') }}\n"
            f"select id, id * {k} as v from {{{{ ref('base') }}}} where id % {k} = 0"
        )
        models[f"v{k}.sql"] = f"select id, v + 1 as v from {{{{ ref('t{k}') }}}}"
    return models


def _expected(tag: int, batch: int) -> dict[str, list[tuple[int, ...]]]:
    ids = range(BASE_ROWS)
    out: dict[str, list[tuple[int, ...]]] = {
        "base": [(i, i % 5, tag * batch) for i in ids],
        "base_view": [(i, i % 5, tag * batch) for i in ids if i % 5 < 3],
        "agg": [
            (g, sum(1 for i in ids if i % 5 == g), sum(i for i in ids if i % 5 == g))
            for g in range(3)
        ],
        "inc": [(i, (i % 5) * 10 + batch) for i in ids if i < 30 * batch],
    }
    for k in STEPS:
        out[f"t{k}"] = [(i, i * k) for i in ids if i % k == 0]
        out[f"v{k}"] = [(i, i * k + 1) for i in ids if i % k == 0]
    return {name: sorted(rows) for name, rows in out.items()}


def _project(root: Path, name: str, catalog: Catalog) -> Path:
    project = root / name
    (project / "models").mkdir(parents=True)
    (project / "dbt_project.yml").write_text(
        f'name: {name}\nversion: "1.0"\nprofile: {name}\nvars:\n  batch: 1\n'
    )
    for file, sql in _models(PROJECTS[name]).items():
        (project / "models" / file).write_text(sql)
    write_profile(
        project,
        name,
        metadata=catalog.metadata,
        data_path=catalog.data_path,
        schema=name,
        threads=8,
        author=name,
        spark_conf={"spark.default.parallelism": "2"},
    )
    return project


def _start_run(project: Path, batch: int) -> subprocess.Popen[str]:
    return start_dbt(project, ["run", "--vars", json.dumps({"batch": batch})])


def test_two_projects_run_at_once_on_one_lake(pg_catalog: Catalog, tmp_path: Path) -> None:
    # no lake yet: the two runs' first connections race to create it
    projects = {name: _project(tmp_path, name, pg_catalog) for name in PROJECTS}
    con = duck.connect()
    for batch in (1, 2):
        began = time.monotonic()
        runs = {name: _start_run(project, batch) for name, project in projects.items()}
        outputs = {name: run.communicate(timeout=300)[0] for name, run in runs.items()}
        print(f"\nround {batch}: both dbt runs took {time.monotonic() - began:.1f}s")
        for name, run in runs.items():
            assert run.returncode == 0, outputs[name]
            assert "PASS=10 WARN=0 ERROR=0 SKIP=0" in outputs[name], outputs[name]
            # Spark's own warehouse goes to a throwaway folder, not the project
            assert not (projects[name] / "spark-warehouse").exists(), name

        duck.attach(con, pg_catalog.duckdb_attach)  # a fresh attach sees the latest snapshot
        for name, tag in PROJECTS.items():
            for relation, rows in _expected(tag, batch).items():
                got = sorted(con.execute(f"SELECT * FROM lake.{name}.{relation}").fetchall())
                assert got == rows, (name, relation, batch)
        con.execute("DETACH lake")

    lake = Lake.open(pg_catalog.metadata)
    snaps = lake.snapshots()
    assert [s.snapshot_id for s in snaps] == list(range(len(snaps)))
    for name in PROJECTS:  # the schema once, then each model build one snapshot
        kinds = [{c.kind for c in s.changes} for s in snaps if s.author == name]
        assert kinds.count({"created_schema"}) == 1, (name, kinds)
        assert len(kinds) == 1 + 2 * len(_models(PROJECTS[name])), (name, kinds)
    lake.close()
