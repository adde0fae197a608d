"""Hooks and run-operation run lake SQL, and every snapshot they write carries the
profile's author and the invocation id of the dbt command that wrote it."""

from __future__ import annotations

import json

import pytest
from dbt.tests.util import run_dbt

from dbt.adapters.ducklake.lake import Lake
from tests import duck

MODEL = """
{{ config(
    materialized='table',
    pre_hook="insert into " ~ target.schema ~ ".audit values ('pre', '{{ this.name }}')",
    post_hook="insert into " ~ target.schema ~ ".audit values ('post', '{{ this.name }}')",
) }}
select 1 as id
"""

MACROS = """
{% macro record(what) %}
  {% do run_query("insert into " ~ target.schema ~ ".audit values ('" ~ what ~ "', 'op')") %}
{% endmacro %}
"""


class TestHooksAndOperationsCommit:
    @pytest.fixture(scope="class")
    def project_config_update(self):  # type: ignore[no-untyped-def]
        return {
            "on-run-start": [
                "create table if not exists {{ target.schema }}.audit (what string, node string)"
            ],
            "on-run-end": ["insert into {{ target.schema }}.audit values ('end', 'run')"],
        }

    @pytest.fixture(scope="class")
    def models(self):  # type: ignore[no-untyped-def]
        return {"m.sql": MODEL}

    @pytest.fixture(scope="class")
    def macros(self):  # type: ignore[no-untyped-def]
        return {"record.sql": MACROS}

    def test_hook_snapshots_name_the_run(self, project, dbt_profile_target) -> None:  # type: ignore[no-untyped-def]
        run_dbt(["run"])
        with open("target/run_results.json") as fp:
            run_id = json.load(fp)["metadata"]["invocation_id"]
        run_dbt(["run-operation", "record", "--args", "{what: manual}"])
        with open("target/run_results.json") as fp:
            op_id = json.load(fp)["metadata"]["invocation_id"]
        assert run_id != op_id

        lake = Lake.open(dbt_profile_target["metadata"])
        audit = lake.catalog().table(project.test_schema, "audit")
        con = duck.connect()
        duck.attach(con, f"sqlite:{dbt_profile_target['metadata'].removeprefix('sqlite:///')}")
        rows = con.execute(
            f"SELECT what, node FROM lake.{project.test_schema}.audit ORDER BY what"
        ).fetchall()
        assert rows == [("end", "run"), ("manual", "op"), ("post", "m"), ("pre", "m")]

        # the snapshots that created or inserted into the audit table, oldest first
        history = con.execute(
            "SELECT author, commit_message, commit_extra_info, changes FROM lake.snapshots() "
            "ORDER BY snapshot_id"
        ).fetchall()
        keys = {str(audit.table_id), f"{project.test_schema}.audit"}
        touching = [h for h in history if any(set(v) & keys for v in h[3].values())]
        assert len(touching) == 5  # create, pre, post, end, manual
        for author, message, extra, _ in touching:
            assert author == dbt_profile_target["author"]
            assert message and message.startswith("dbt ")
            info = json.loads(extra)
            assert info["target"] == "default" and info["dbt_version"] and info["adapter_version"]
        ids = [json.loads(h[2])["invocation_id"] for h in touching]
        assert ids == [run_id, run_id, run_id, run_id, op_id]
        assert touching[-1][1] == "dbt run-operation macro_record"
        con.close()
