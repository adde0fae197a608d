"""Hooks and run-operation run lake SQL, and every snapshot they write carries the
profile's author and the invocation id of the dbt command that wrote it."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from dbt.adapters.ducklake.lake import Lake
from tests import duck
from tests.functional.conftest import catalog_target

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
    def project_config_update(self):
        return {
            "on-run-start": [
                "create table if not exists {{ target.schema }}.audit (what string, node string)"
            ],
            "on-run-end": ["insert into {{ target.schema }}.audit values ('end', 'run')"],
        }

    @pytest.fixture(scope="class")
    def models(self):
        return {"m.sql": MODEL}

    @pytest.fixture(scope="class")
    def macros(self):
        return {"record.sql": MACROS}

    def test_hook_snapshots_name_the_run(self, project, dbt_profile_target) -> None:
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


# -- hooks inside and outside the node's transaction -------------------------------------
TX_TABLE = """
{{ config(
    materialized='table',
    pre_hook=[before_begin("insert into " ~ target.schema ~ ".audit values ('before_begin', 't')")],
    post_hook=[
        "delete from {{ this }} where id = 2",
        "insert into " ~ target.schema ~ ".audit "
            ~ "select 'post saw', cast(count(*) as string) from {{ this }}",
        after_commit("insert into " ~ target.schema ~ ".audit values ('after_commit', 't')"),
    ],
) }}
select cast(id as int) as id from range({{ var('rows', 40) }})
"""
TX_INC = """
{{ config(
    materialized='incremental', unique_key='id',
    post_hook=[
        "delete from {{ this }} where id % 10 = 3",
        "{{ ducklake_merge_adjacent_files(this) }}",
        "{% if var('fail', false) %}delete from {{ this }} where no_such_column = 1{% endif %}",
    ],
) }}
select cast(id as int) as id, {{ var('v', 1) }} as v from range({{ var('rows', 40) }})
"""


SMALL = """
{{ config(
    materialized='table',
    post_hook=[
        "alter table {{ this }} add columns (extra int)",
        "alter table {{ this }} rename column name to label",
        "update {{ this }} set extra = id * 2 where id > 1",
    ],
) }}
select cast(id as int) as id, concat('n', id) as name from range(1, 4)
"""


def _data_files(root: str) -> set[str]:
    return {
        os.path.relpath(os.path.join(d, f), root)
        for d, _, files in os.walk(root)
        for f in files
        if f.endswith(".parquet")
    }


class _AuditTable:
    """An `audit` table the hooks write to, created when each run starts."""

    @pytest.fixture(scope="class")
    def project_config_update(self):
        create = "create table if not exists {{ target.schema }}.audit (what string, node string)"
        return {"on-run-start": [create]}


class TestPostHooksInTheNodeTransaction(_AuditTable):
    """Post-hooks run inside the node's transaction: they see what the node wrote, commit
    with it as one snapshot, and a failing one publishes nothing of the node (and leaves
    no file behind); before_begin / after_commit hooks run outside it."""

    @pytest.fixture(scope="class", params=["sqlite", "postgres"])
    def dbt_profile_target(self, request, tmp_path_factory) -> Iterator[dict[str, Any]]:
        """SQLite copies the catalog as a file, PostgreSQL as a schema."""
        yield from catalog_target(request.param, tmp_path_factory)

    @pytest.fixture(scope="class")
    def models(self):
        return {"t.sql": TX_TABLE, "inc.sql": TX_INC, "small.sql": SMALL}

    def test_post_hooks_commit_with_their_node(self, project, dbt_profile_target) -> None:
        metadata, attach = dbt_profile_target["metadata"], dbt_profile_target["duckdb_attach"]
        schema = project.test_schema
        run_dbt(["run"])
        lake = Lake.open(metadata)
        con = duck.connect()
        duck.attach(con, attach, alias="lake")
        t_ids = [
            r[0] for r in con.execute(f"SELECT id FROM lake.{schema}.t ORDER BY id").fetchall()
        ]
        assert t_ids == [i for i in range(40) if i != 2]
        audit = con.execute(f"SELECT what, node FROM lake.{schema}.audit ORDER BY what").fetchall()
        # the post-hook read the table as the node and the hook before it left it
        assert audit == [("after_commit", "t"), ("before_begin", "t"), ("post saw", "39")]
        inc = con.execute(f"SELECT count(*), sum(v) FROM lake.{schema}.inc").fetchone()
        assert inc == (36, 36)
        # rows inlined by the node, then a new column and a rename by its post-hooks, all
        # one snapshot: the rows move into the new layout
        small = con.execute(f"SELECT * FROM lake.{schema}.small ORDER BY id").fetchall()
        assert small == [(1, "n1", None), (2, "n2", 4), (3, "n3", 6)]
        assert [d[0] for d in con.description] == ["id", "label", "extra"]
        assert len(lake.table_history(schema, "small")) == 1
        con.close()
        # the node, its delete and its insert into audit: one snapshot, the node's
        (node_snap,) = lake.table_history(schema, "t")
        assert node_snap.commit_message.endswith("(table)")
        assert json.loads(node_snap.commit_extra_info)["unique_id"] == "model.test.t"
        assert node_snap.snapshot_id in [s.snapshot_id for s in lake.table_history(schema, "audit")]

        # a failing post-hook: the incremental run's MERGE, delete and compaction are
        # not published, and the files it wrote are removed
        before = lake.latest_snapshot().snapshot_id
        files = _data_files(lake.data_path)
        _, output = run_dbt_and_capture(
            ["run", "-s", "inc", "--vars", "{fail: true, v: 2, rows: 60}"], expect_pass=False
        )
        assert "no_such_column" in output and "inc" in output
        assert "Traceback" not in output
        assert lake.latest_snapshot().snapshot_id == before
        assert _data_files(lake.data_path) == files
        con = duck.connect()
        duck.attach(con, attach, alias="lake")
        assert con.execute(f"SELECT count(*), sum(v) FROM lake.{schema}.inc").fetchone() == (36, 36)
        con.execute("BEGIN")
        con.execute(f"INSERT INTO lake.{schema}.inc VALUES (1000, 1)")
        con.execute("ROLLBACK")
        con.close()

        # the same run without the failure: one snapshot for the MERGE and the delete,
        # then the compaction the post-hook asked for, after the publish
        _, output = run_dbt_and_capture(["run", "-s", "inc", "--vars", "{v: 2, rows: 60}"])
        deferred = output.index("ducklake_merge_adjacent_files: runs once the node is published")
        compacted = re.search(r"ducklake_merge_adjacent_files: (\d+) row\(s\)", output)
        assert compacted is not None and compacted.start() > deferred
        after = lake.snapshots(since=before)
        assert len(after) == (2 if int(compacted.group(1)) else 1), after
        assert after[0].commit_message.endswith("(incremental merge)")
        con = duck.connect()
        duck.attach(con, attach, alias="lake")
        got = con.execute(f"SELECT count(*), sum(v) FROM lake.{schema}.inc").fetchone()
        assert got == (54, 108)
        con.close()


def _outside(kind: str, node: str) -> str:
    """before_begin and after_commit hooks (and the dict form) that audit `node`."""
    audit = "insert into {{ target.schema }}.audit values ('%s', '" + node + "')"
    failing = "{% if var('fail', false) %}insert into no_such_table values (1){% endif %}"
    return (
        "{{ config(materialized='"
        + kind
        + "', "
        + ("unique_key='id', " if kind == "incremental" else "")
        + 'pre_hook=[before_begin("'
        + audit % "before"
        + '")], '
        + 'post_hook=[after_commit("'
        + audit % "after"
        + '"), '
        + '{"sql": "'
        + failing
        + '", "transaction": false}]) }}\n'
    )


OUTSIDE_SNAPSHOT = """
{% snapshot os %}
{% set audit = "insert into " ~ target.schema ~ ".audit values " %}
{{ config(unique_key='id', strategy='check', check_cols='all', target_schema=target.schema,
          pre_hook=[before_begin(audit ~ "('before', 'os')")],
          post_hook=[after_commit(audit ~ "('after', 'os')")]) }}
select cast(id as int) as id from range(3)
{% endsnapshot %}
"""


class TestHooksOutsideTheTransaction(_AuditTable):
    """`transaction: false` hooks (before_begin, after_commit, the dict form) run once,
    each its own snapshot, before and after the node's own for table, view, incremental
    and snapshot nodes; a failing one fails its node."""

    @pytest.fixture(scope="class")
    def models(self):
        body = "select cast(id as int) as id from range(3)"
        return {
            f"o{k[0]}.sql": _outside(k, f"o{k[0]}") + body for k in ("table", "view", "incremental")
        }

    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"os.sql": OUTSIDE_SNAPSHOT}

    def test_outside_hooks_run_around_their_node(self, project, dbt_profile_target) -> None:
        metadata = dbt_profile_target["metadata"]
        schema = project.test_schema
        run_dbt(["build"])
        lake = Lake.open(metadata)
        con = duck.connect()
        duck.attach(con, "sqlite:" + metadata.removeprefix("sqlite:///"), alias="lake")
        latest = lake.latest_snapshot().snapshot_id
        changes = con.execute(
            f"SELECT what, node, snapshot_id FROM ducklake_table_changes('lake', '{schema}', "
            f"'audit', 0, {latest})"
        ).fetchall()
        con.close()
        seen = {(what, node): snap for what, node, snap in changes}
        assert len(changes) == len(seen) == 8  # once each, before and after, four nodes
        for node in ("ot", "ov", "oi", "os"):
            (built,) = lake.table_history(schema, node)
            assert seen[("before", node)] < built.snapshot_id < seen[("after", node)], node

        _, output = run_dbt_and_capture(
            ["run", "-s", "ov", "--vars", "{fail: true}"], expect_pass=False
        )
        assert "no_such_table" in output and "ov" in output and "Traceback" not in output
