"""`dbt clone`: each relation of a state becomes a view pinned by time travel to the
snapshot the clone ran at, here and in DuckDB; no data file is copied or shared, so
DuckDB's expire / cleanup / orphan maintenance never deletes a file a live table needs,
and a clone whose snapshot was expired fails naming it.

Not wired: BaseClonePossible (its clones must be tables: zero-copy table clones, which
DuckLake cannot make safely, see clone.sql) and BaseCloneSameTargetAndState (it expects
dbt to fail where dbt-core 1.11 only warns, WarnStateTargetEqual, for any adapter)."""

from __future__ import annotations

import json
import os
import shutil
from copy import deepcopy
from typing import Any

import pytest
from dbt.tests.adapter.dbt_clone.test_dbt_clone import (
    BaseCloneNotPossible,
    BaseCloneSameSourceAndTarget,
)
from dbt.tests.util import run_dbt

from dbt.adapters.ducklake.lake import Lake
from tests import duck


class _DropsOtherSchemas:
    """The suites create `<schema>_other` / `<schema>_seeds` schemas the fixture does not
    drop (PostgreSQL's own subclass drops them the same way)."""

    @pytest.fixture(autouse=True)
    def clean_up(self, project):
        yield
        with project.adapter.connection_named("__test"):
            for suffix in ("_other", "_seeds"):
                relation = project.adapter.Relation.create(
                    database=project.database, schema=project.test_schema + suffix
                )
                project.adapter.drop_schema(relation)


class TestCloneNotPossible(_DropsOtherSchemas, BaseCloneNotPossible):
    pass


class TestCloneSameSourceAndTarget(BaseCloneSameSourceAndTarget):
    pass


SEED = "id,name\n" + "".join(f"{i},n{i}\n" for i in range(1, 41))
TABLE = """{{ config(materialized='table') }}
select id, name, {{ var('v', 1) }} as v from {{ ref('people') }}"""
INC = """{{ config(materialized='incremental', unique_key='id') }}
select id, {{ var('v', 1) }} as v from {{ ref('people') }}"""
VIEW = "select id, v from {{ ref('t') }} where id % 2 = 0"


class TestCloneOfAProdTarget:
    """A prod target builds; `dbt clone --state` into a dev schema of the same lake; prod
    moves on (a MERGE, a rebuilt table, a reseed). The clones keep reading the prod
    state they were cloned from, here and in DuckDB; DuckDB expires every older snapshot
    and cleans up: prod reads whole, and each pinned clone fails naming its snapshot."""

    @pytest.fixture(scope="class")
    def seeds(self):
        return {"people.csv": SEED}

    @pytest.fixture(scope="class")
    def models(self):
        return {"t.sql": TABLE, "inc.sql": INC, "v.sql": VIEW}

    @pytest.fixture(scope="class")
    def profiles_config_update(self, dbt_profile_target, unique_schema):
        dev = deepcopy(dbt_profile_target)
        dev["schema"] = unique_schema + "_dev"
        prod = {**dbt_profile_target, "schema": unique_schema}
        return {"test": {"outputs": {"default": prod, "dev": dev}, "target": "default"}}

    def test_clone_reads_its_snapshot(self, project, dbt_profile_target, unique_schema) -> None:
        metadata = dbt_profile_target["metadata"]
        attach = "sqlite:" + metadata.removeprefix("sqlite:///")
        dev = unique_schema + "_dev"
        run_dbt(["build"])
        state = os.path.join(project.project_root, "state")
        os.makedirs(state, exist_ok=True)
        shutil.copyfile(
            os.path.join(project.project_root, "target", "manifest.json"),
            os.path.join(state, "manifest.json"),
        )
        lake = Lake.open(metadata)
        cloned_at = lake.latest_snapshot().snapshot_id
        files_before = _files(lake.data_path)
        results = run_dbt(["clone", "--state", "state", "--target", "dev"])
        assert len(results) == 4
        assert _files(lake.data_path) == files_before  # no data file copied
        clone_snaps = [
            s
            for s in lake.snapshots(since=cloned_at)
            if json.loads(s.commit_extra_info or "{}").get("materialization") == "clone"
        ]
        assert len(clone_snaps) == 4
        for snap in clone_snaps:
            assert snap.commit_message and snap.commit_message.startswith("dbt clone ")
            info = json.loads(snap.commit_extra_info or "{}")
            assert info["state"] == "state" and info["clone_of"].startswith(unique_schema + ".")
            if info["clone_of"] != f"{unique_schema}.v":  # a view clones unpinned
                assert cloned_at <= info["clone_snapshot"] < snap.snapshot_id

        # prod moves on
        run_dbt(["build", "--vars", "{v: 2}"])

        def read(con: Any, schema: str) -> dict[str, list[tuple[Any, ...]]]:
            return {
                name: sorted(con.execute(f"SELECT * FROM lake.{schema}.{name}").fetchall())
                for name in ("people", "t", "inc", "v")
            }

        con = duck.connect()
        duck.attach(con, attach)
        prod_now, clones = read(con, unique_schema), read(con, dev)
        assert {r[2] for r in prod_now["t"]} == {2}
        assert {r[2] for r in clones["t"]} == {1}
        assert {r[1] for r in clones["inc"]} == {1}
        # the cloned view reads prod's view, which reads prod's t as it is now
        assert clones["v"] == prod_now["v"]
        assert len(clones["people"]) == 40
        con.close()
        # the same through Spark
        spark_t = project.run_sql(f"select distinct v from {dev}.t", fetch="all")
        assert [tuple(r) for r in spark_t] == [(1,)]

        # DuckDB expires every snapshot but the latest and deletes what they alone held
        con = duck.connect()
        duck.attach(con, attach)
        con.execute("CALL ducklake_expire_snapshots('lake', older_than => now())")
        con.execute("CALL ducklake_cleanup_old_files('lake', cleanup_all => true)")
        con.execute("CALL ducklake_delete_orphaned_files('lake', cleanup_all => true)")
        assert read(con, unique_schema) == prod_now  # no file of a live table was deleted
        for name in ("t", "inc", "people"):
            with pytest.raises(Exception, match="snapshot"):
                con.execute(f"SELECT * FROM lake.{dev}.{name}").fetchall()
        con.close()
        with pytest.raises(Exception, match=r"snapshot \d+, which no longer exists \(expired"):
            project.run_sql(f"select * from {dev}.t", fetch="all")
        # and a fresh clone pins the current state again
        run_dbt(["clone", "--state", "state", "--target", "dev", "--full-refresh"])
        con = duck.connect()
        duck.attach(con, attach)
        assert read(con, dev) == prod_now
        con.close()


def _files(root: str) -> set[str]:
    return {os.path.join(d, f) for d, _, names in os.walk(root) for f in names}
