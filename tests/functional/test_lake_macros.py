"""Lake features as dbt macros: time travel by snapshot or by the dbt run that wrote it
(`ducklake_at`), the change feed as a relation (`ducklake_table_changes`), the history
(`ducklake_snapshots`) and layout changes from run-operation."""

from __future__ import annotations

import json

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from dbt.adapters.ducklake.lake import Lake
from dbt.include.ducklake import NAMESPACE_PACKAGE_PATH
from tests import duck

ORDERS = """
{{ config(materialized='incremental', incremental_strategy='append') }}
select cast(id as int) as id, {{ var('batch') }} as batch
from range({{ var('batch') }} * 100, {{ var('batch') }} * 100 + 30)
"""

AS_OF_RUN = """
{{ config(materialized='table') }}
select * from {{ ducklake_at(ref('orders'), invocation_id=var('run_id', 'none')) }}
"""

AS_OF_VERSION = """
{{ config(materialized='table') }}
select * from {{ ducklake_at(ref('orders'), version=var('version', 0)) }}
"""

CHANGES = """
{{ config(materialized='table') }}
select change_type, id, batch
from {{ ducklake_table_changes(ref('orders'), var('from', 0), var('to', 0)) }}
"""


def _rows(project, table: str) -> list[tuple]:
    """A model's rows in the test schema, sorted."""
    return sorted(
        tuple(r)
        for r in project.run_sql(f"select * from {project.test_schema}.{table}", fetch="all")
    )


def _invocation() -> str:
    with open("target/run_results.json") as fp:
        return str(json.load(fp)["metadata"]["invocation_id"])


class TestLakeMacros:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "orders.sql": ORDERS,
            "as_of_run.sql": AS_OF_RUN,
            "as_of_version.sql": AS_OF_VERSION,
            "changes.sql": CHANGES,
        }

    def test_time_travel_changes_history_layout(self, project, dbt_profile_target) -> None:
        schema = project.test_schema
        lake = Lake.open(dbt_profile_target["metadata"])
        run_dbt(["run", "-s", "orders", "--vars", "{batch: 1}"])
        first_run = _invocation()
        first_snapshot = lake.latest_snapshot().snapshot_id
        run_dbt(["run", "-s", "orders", "--vars", "{batch: 2}"])
        second_snapshot = lake.latest_snapshot().snapshot_id
        run_dbt(["run", "-s", "orders", "--vars", "{batch: 3}"])

        first = [(i, 1) for i in range(100, 130)]
        run_dbt(["run", "-s", "as_of_run", "--vars", f"{{run_id: '{first_run}'}}"])
        assert _rows(project, "as_of_run") == first
        run_dbt(["run", "-s", "as_of_version", "--vars", f"{{version: {first_snapshot}}}"])
        assert _rows(project, "as_of_version") == first
        # the change feed of the second run only
        run_dbt(
            [
                "run",
                "-s",
                "changes",
                "--vars",
                f"{{from: {second_snapshot}, to: {second_snapshot}}}",
            ]
        )
        assert _rows(project, "changes") == [("insert", i, 2) for i in range(200, 230)]
        # an unknown run is a clear error
        _, log = run_dbt_and_capture(
            ["run", "-s", "as_of_run", "--vars", "{run_id: 'no-such-run'}"], expect_pass=False
        )
        assert "no snapshot of" in log and "no-such-run" in log

        # history of one relation, newest first, with messages and nodes
        _, log = run_dbt_and_capture(
            ["run-operation", "ducklake_snapshots", "--args", f"{{relation: {schema}.orders}}"]
        )
        history = [line for line in log.splitlines() if "model.test.orders" in line]
        assert len(history) == 3 and all("incremental append" in line for line in history)

        # layout from run-operation: one altered_table snapshot, seen by DuckDB
        before = lake.latest_snapshot().snapshot_id
        run_dbt(
            [
                "run-operation",
                "ducklake_set_partitioned_by",
                "--args",
                f"{{relation: {schema}.orders, keys: ['batch']}}",
            ]
        )
        new = lake.snapshots(since=before)
        assert len(new) == 1 and {c.kind for c in new[0].changes} == {"altered_table"}
        con = duck.connect()
        duck.attach(con, f"sqlite:{dbt_profile_target['metadata'].removeprefix('sqlite:///')}")
        spec = con.execute(
            "SELECT transform FROM __ducklake_metadata_lake.ducklake_partition_column"
        ).fetchall()
        assert spec == [("identity",)]
        con.close()
        _, log = run_dbt_and_capture(
            [
                "run-operation",
                "ducklake_set_sorted_by",
                "--args",
                f"{{relation: {schema}.orders, keys: ['id sideways']}}",
            ],
            expect_pass=False,
        )
        assert "accepted: col [ASC|DESC]" in log


NS_AS_OF = """
{{ config(materialized='table') }}
select * from {{ ducklake.at(ref('orders'), invocation_id=var('run_id', 'none')) }}
"""

NS_INSERTED = """
{{ config(materialized='table') }}
select id, batch from {{ ducklake.table_insertions(ref('orders'), var('from', 0), var('to', 0)) }}
"""


class TestDucklakeNamespace:
    """With the shipped `ducklake` package installed by `dbt deps`, the same macros read
    as `ducklake.at(...)` and `ducklake.table_insertions(...)` in model SQL."""

    @pytest.fixture(scope="class")
    def packages(self):
        return {"packages": [{"local": NAMESPACE_PACKAGE_PATH}]}

    @pytest.fixture(scope="class")
    def models(self):
        return {"orders.sql": ORDERS, "as_of.sql": NS_AS_OF, "inserted.sql": NS_INSERTED}

    def test_namespaced_time_travel_and_change_feed(self, project, dbt_profile_target) -> None:
        lake = Lake.open(dbt_profile_target["metadata"])
        run_dbt(["deps"])
        run_dbt(["run", "-s", "orders", "--vars", "{batch: 1}"])
        first_run = _invocation()
        run_dbt(["run", "-s", "orders", "--vars", "{batch: 2}"])
        second = lake.latest_snapshot().snapshot_id

        run_dbt(["run", "-s", "as_of", "--vars", f"{{run_id: '{first_run}'}}"])
        assert _rows(project, "as_of") == [(i, 1) for i in range(100, 130)]
        run_dbt(["run", "-s", "inserted", "--vars", f"{{from: {second}, to: {second}}}"])
        assert _rows(project, "inserted") == [(i, 2) for i in range(200, 230)]


SMALL = """
{{ config(materialized='incremental', incremental_strategy='append') }}
select cast(id as int) as id from range(0, 5)
"""


class TestSetOption:
    @pytest.fixture(scope="class")
    def models(self):
        return {"small.sql": SMALL}

    def test_options_at_each_scope(self, project, dbt_profile_target) -> None:
        schema = project.test_schema
        lake = Lake.open(dbt_profile_target["metadata"])
        run_dbt(["run"])  # 5 rows: inlined under the default limit of 10
        table = lake.catalog().table(schema, "small")
        assert lake.catalog().data_files(table) == []
        before = lake.latest_snapshot().snapshot_id
        for args in (
            "{option: parquet_compression, value: zstd}",
            f"{{option: target_file_size, value: 1000000, schema: {schema}}}",
            "{option: data_inlining_row_limit, value: 0, table_name: small}",
        ):
            run_dbt(["run-operation", "ducklake_set_option", "--args", args])
        assert lake.latest_snapshot().snapshot_id == before  # options are not versioned
        con = duck.connect()
        duck.attach(con, f"sqlite:{dbt_profile_target['metadata'].removeprefix('sqlite:///')}")
        options = {
            (r[0], r[1], r[2])
            for r in con.execute(
                "SELECT option_name, value, scope FROM lake.options() "
                "WHERE option_name IN ('parquet_compression', 'target_file_size', "
                "'data_inlining_row_limit')"
            ).fetchall()
        }
        assert options == {
            ("parquet_compression", "zstd", "GLOBAL"),
            ("target_file_size", "1000000", "SCHEMA"),
            ("data_inlining_row_limit", "0", "TABLE"),
        }
        con.close()
        run_dbt(["run"])  # the table now takes files, even for 5 rows
        files = lake.catalog().data_files(lake.catalog().table(schema, "small"))
        assert files and sum(f.record_count for f in files) == 5
        _, log = run_dbt_and_capture(
            ["run-operation", "ducklake_set_option", "--args", "{option: colour, value: red}"],
            expect_pass=False,
        )
        assert "unknown option 'colour'" in log and "data_inlining_row_limit" in log


EVENTS = """
{{ config(
    materialized='incremental',
    incremental_strategy='append',
    post_hook="{{ ducklake_merge_adjacent_files(this, every_n_builds=3) }}",
) }}
select cast(id as int) as id from range({{ var('batch') }} * 10, {{ var('batch') }} * 10 + 4)
"""


class TestMaintenanceMacros:
    """A post-hook compacts an incremental model every 3 builds; run-operation expires
    snapshots and cleans up the replaced files, and DuckDB reads the same rows after each
    step."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"events.sql": EVENTS}

    @pytest.fixture(scope="class")
    def project_config_update(self):
        return {"on-run-start": ["{{ ducklake_set_option('data_inlining_row_limit', 0) }}"]}

    def test_compaction_hook_and_run_operations(self, project, dbt_profile_target) -> None:
        schema = project.test_schema
        lake = Lake.open(dbt_profile_target["metadata"])
        sqlite_path = dbt_profile_target["metadata"].removeprefix("sqlite:///")

        def state() -> tuple[list[tuple], list[str]]:
            con = duck.connect()
            duck.attach(con, f"sqlite:{sqlite_path}")
            rows = sorted(con.execute(f"SELECT * FROM lake.{schema}.events").fetchall())
            changes = [
                r[0]
                for r in con.execute(
                    "SELECT changes_made FROM __ducklake_metadata_lake.ducklake_snapshot_changes "
                    "ORDER BY snapshot_id"
                ).fetchall()
            ]
            con.close()
            return rows, changes

        def files() -> int:
            cat = lake.catalog()
            return len(cat.data_files(cat.table(schema, "events")))

        for batch in (1, 2):
            run_dbt(["run", "--vars", f"{{batch: {batch}}}"])
        rows, changes = state()
        assert not any("merge_adjacent" in c for c in changes)
        assert files() >= 2
        run_dbt(["run", "--vars", "{batch: 3}"])  # the third build: compacted by the hook
        rows, changes = state()
        assert rows == [(b * 10 + i,) for b in (1, 2, 3) for i in range(4)]
        assert changes[-1].startswith("merge_adjacent:")
        assert files() == 1
        history = lake.snapshots()
        assert history[-1].commit_message and "events" in history[-1].commit_message
        run_dbt(["run", "--vars", "{batch: 4}"])  # one build since: no compaction
        assert not state()[1][-1].startswith("merge_adjacent:")

        # expire everything but the latest snapshot, then delete the replaced files
        _, log = run_dbt_and_capture(
            [
                "run-operation",
                "ducklake_expire_snapshots",
                "--args",
                "{older_than: '0 seconds', dry_run: true}",
            ]
        )
        assert "ducklake_expire_snapshots:" in log
        kept = len(lake.snapshots())
        assert kept > 2
        run_dbt(
            ["run-operation", "ducklake_expire_snapshots", "--args", "{older_than: '0 seconds'}"]
        )
        assert len(lake.snapshots()) == 1
        _, log = run_dbt_and_capture(
            ["run-operation", "ducklake_cleanup_old_files", "--args", "{cleanup_all: true}"]
        )
        assert "ducklake_cleanup_old_files:" in log and ".parquet" in log
        rows_after, _ = state()
        assert rows_after == [(b * 10 + i,) for b in (1, 2, 3, 4) for i in range(4)]
        run_dbt(["run-operation", "ducklake_checkpoint"])
        assert state()[0] == rows_after
        _, log = run_dbt_and_capture(
            ["run-operation", "ducklake_rewrite_data_files", "--args", "{delete_threshold: 2}"],
            expect_pass=False,
        )
        assert "between 0 and 1" in log
