"""partition_by / sorted_by on dbt models: laid out in the snapshot that creates the
table, altered once when the config of an incremental model changes (never on an
unchanged run), refused before any SQL when invalid."""

from __future__ import annotations

from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file

from dbt.adapters.ducklake.lake import Lake
from tests import duck

pytestmark = pytest.mark.usefixtures("without_json_artifacts")  # reads no dbt JSON artifact

EVENTS = """
{{{{ config(materialized='incremental', incremental_strategy='append', {layout}) }}}}
select cast(id as int) as id, cast(id % 3 as int) as region,
       date_add(date '2024-01-30', cast(id % 5 as int)) as day
from range({start}, {start} + 300)
{{% if is_incremental() %}} where true {{% endif %}}
"""

TABLE = """
{{ config(materialized='table', partitioned_by=['region'], sort_by=['id desc']) }}
select cast(id as int) as id, cast(id % 2 as int) as region from range(0, 200)
"""


META = "__ducklake_metadata_lake"
Layout = tuple[list[tuple[str, str]], list[tuple[str, str]]]


def _layout(con: Any, table_id: int) -> Layout:
    """The table's current partition keys and sort keys, as DuckDB reads them."""
    parts = con.execute(
        f"SELECT c.column_name, p.transform FROM {META}.ducklake_partition_column p "
        f"JOIN {META}.ducklake_column c USING (table_id, column_id) "
        f"JOIN {META}.ducklake_partition_info i USING (partition_id, table_id) "
        f"WHERE table_id = {table_id} AND c.end_snapshot IS NULL AND i.end_snapshot IS NULL "
        "ORDER BY p.partition_key_index"
    ).fetchall()
    sort = con.execute(
        f"SELECT e.expression, e.sort_direction FROM {META}.ducklake_sort_expression e "
        f"JOIN {META}.ducklake_sort_info i USING (sort_id, table_id) "
        f"WHERE table_id = {table_id} AND i.end_snapshot IS NULL ORDER BY e.sort_key_index"
    ).fetchall()
    return parts, sort


def _events(layout: str, start: int) -> str:
    return EVENTS.format(layout=layout, start=start)


class TestLayoutConfigs:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "events.sql": _events("partition_by=['region'], sorted_by=['day desc']", 0),
            "laid_out.sql": TABLE,
        }

    def test_layout_from_creation_and_altered_once(self, project, dbt_profile_target) -> None:
        run_dbt(["run"])
        lake = Lake.open(dbt_profile_target["metadata"])
        con = duck.connect()
        path = dbt_profile_target["metadata"].removeprefix("sqlite:///")

        def spec(table: str) -> Layout:
            duck.attach(con, f"sqlite:{path}")
            try:
                return _layout(con, lake.catalog().table(project.test_schema, table).table_id)
            finally:
                con.execute("DETACH lake")

        assert spec("events") == ([("region", "identity")], [("day", "DESC")])
        assert spec("laid_out") == ([("region", "identity")], [("id", "DESC")])
        # one snapshot per model build, layout included
        built = [s for s in lake.snapshots() if s.commit_message]
        assert sorted(
            s.commit_message for s in built if "create schema" not in s.commit_message
        ) == [
            "dbt run model.test.events (incremental append create)",
            "dbt run model.test.laid_out (table)",
        ]

        # an unchanged config never alters the table
        before = lake.latest_snapshot().snapshot_id
        run_dbt(["run", "-s", "events"])
        new = lake.snapshots(since=before)
        assert [s.commit_message for s in new] == ["dbt run model.test.events (incremental append)"]

        # a changed config: one altered_table snapshot, then the data; old files still read
        write_file(
            _events("partition_by=['month(day)', 'region'], sorted_by=['id']", 1000),
            project.project_root,
            "models",
            "events.sql",
        )
        before = lake.latest_snapshot().snapshot_id
        run_dbt(["run", "-s", "events"])
        new = lake.snapshots(since=before)
        assert [s.commit_message for s in new] == [
            "dbt run model.test.events (incremental layout change)",
            "dbt run model.test.events (incremental append)",
        ]
        assert {c.kind for c in new[0].changes} == {"altered_table"}
        assert spec("events") == ([("day", "month"), ("region", "identity")], [("id", "ASC")])
        duck.attach(con, f"sqlite:{path}")
        values = con.execute(
            f"SELECT list(v.partition_value ORDER BY v.partition_key_index) "
            f"FROM {META}.ducklake_file_partition_value v JOIN {META}.ducklake_data_file f "
            f"USING (data_file_id) WHERE f.begin_snapshot = {new[1].snapshot_id} "
            "GROUP BY v.data_file_id"
        ).fetchall()
        assert sorted(v[0] for v in values) == sorted(
            [m, str(r)] for m in ("1", "2") for r in range(3)
        )
        rows = con.execute(
            f"SELECT count(*), count(DISTINCT id) FROM lake.{project.test_schema}.events"
        ).fetchone()
        assert rows == (900, 600)  # 2 runs of ids 0-299, one of 1000-1299
        con.close()

        # an invalid value is refused before any SQL runs on the lake
        write_file(
            _events("partition_by=['week(day)']", 0), project.project_root, "models", "events.sql"
        )
        before = lake.latest_snapshot().snapshot_id
        _, log = run_dbt_and_capture(["run", "-s", "events"], expect_pass=False)
        assert "config partition_by" in log and "accepted: col, year(col), month(col)" in log
        assert lake.latest_snapshot().snapshot_id == before


GROWING = """
{{{{ config(materialized='incremental', unique_key='id', on_schema_change='{mode}') }}}}
select cast(id as int) as id{extra} from range({start}, {start} + 20)
"""


DOCS = """
version: 2
models:
  - name: grows
    description: {what}
    config:
      persist_docs: {{relation: true, columns: true}}
    columns:
      - name: id
        description: the key
"""


class TestSchemaChangeIsPartOfTheBuildSnapshot:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "grows.sql": GROWING.format(mode="append_new_columns", extra="", start=0),
            "grows.yml": DOCS.format(what="first words"),
        }

    def test_on_schema_change_commits_with_the_data(self, project, dbt_profile_target) -> None:
        run_dbt(["run"])
        lake = Lake.open(dbt_profile_target["metadata"])
        write_file(
            GROWING.format(mode="append_new_columns", extra=", concat('n', id) as note", start=10),
            project.project_root,
            "models",
            "grows.sql",
        )
        write_file(DOCS.format(what="second words"), project.project_root, "models", "grows.yml")
        before = lake.latest_snapshot().snapshot_id
        run_dbt(["run"])
        new = lake.snapshots(since=before)
        assert [s.commit_message for s in new] == ["dbt run model.test.grows (incremental merge)"]
        kinds = {c.kind for c in new[0].changes}
        assert "altered_table" in kinds and kinds & {"inserted_into_table", "inlined_insert"}
        con = duck.connect()
        duck.attach(con, f"sqlite:{dbt_profile_target['metadata'].removeprefix('sqlite:///')}")
        rows = con.execute(
            f"SELECT id, note FROM lake.{project.test_schema}.grows ORDER BY id"
        ).fetchall()
        assert rows == [(i, None) for i in range(10)] + [(i, f"n{i}") for i in range(10, 30)]
        # the changed description was written in the same snapshot
        comment = con.execute(
            "SELECT comment FROM duckdb_tables() WHERE database_name = 'lake' "
            f"AND schema_name = '{project.test_schema}' AND table_name = 'grows'"
        ).fetchone()
        assert comment == ("second words",)
        con.close()

        # unchanged docs and columns: the next run changes rows only
        before = lake.latest_snapshot().snapshot_id
        run_dbt(["run"])
        new = lake.snapshots(since=before)
        assert len(new) == 1 and "altered_table" not in {c.kind for c in new[0].changes}


SNAPSHOT_SOURCES = """
sources:
  - name: raw
    schema: "{{ target.schema }}"
    tables:
      - name: accounts
"""

LAID_OUT_SNAPSHOT = """
{{% snapshot {name} %}}
{{{{ config(target_schema=target.schema, unique_key='id', strategy='{strategy}',
            {extra} partition_by=['region'], sorted_by=['id desc']) }}}}
select * from {{{{ source('raw', 'accounts') }}}}
{{% endsnapshot %}}
"""


class TestSnapshotLayout:
    """Snapshot nodes take the layout configs too: the SCD table is created partitioned
    and sorted, and a later run's new versions land in files with partition values."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"sources.yml": SNAPSHOT_SOURCES}

    @pytest.fixture(scope="class")
    def snapshots(self):
        return {
            "by_check.sql": LAID_OUT_SNAPSHOT.format(
                name="by_check", strategy="check", extra="check_cols='all',"
            ),
            "by_changes.sql": LAID_OUT_SNAPSHOT.format(
                name="by_changes", strategy="changes", extra=""
            ),
        }

    def test_snapshots_are_laid_out(self, project, dbt_profile_target) -> None:
        schema = project.test_schema
        lake = Lake.open(dbt_profile_target["metadata"])
        project.run_sql(
            f"create table {schema}.accounts as select cast(id as int) as id, "
            "cast(id % 3 as int) as region, concat('a', id) as name from range(0, 300)"
        )
        run_dbt(["snapshot"])
        project.run_sql(f"update {schema}.accounts set name = 'renamed' where id < 30")
        run_dbt(["snapshot"])

        con = duck.connect()
        duck.attach(con, f"sqlite:{dbt_profile_target['metadata'].removeprefix('sqlite:///')}")
        for name in ("by_check", "by_changes"):
            table_id = lake.catalog().table(schema, name).table_id
            assert _layout(con, table_id) == ([("region", "identity")], [("id", "DESC")])
            # every file, the first run's and the second's, holds one region
            per_file = con.execute(
                f"SELECT f.data_file_id, list(v.partition_value) "
                f"FROM {META}.ducklake_data_file f LEFT JOIN "
                f"{META}.ducklake_file_partition_value v USING (data_file_id) "
                f"WHERE f.table_id = {table_id} AND f.end_snapshot IS NULL "
                "GROUP BY f.data_file_id"
            ).fetchall()
            assert len(per_file) >= 6, (name, per_file)
            assert all(values in (["0"], ["1"], ["2"]) for _, values in per_file), per_file
            current = con.execute(
                f"SELECT count(*), count(*) FILTER (WHERE name = 'renamed') "
                f"FROM lake.{schema}.{name} WHERE dbt_valid_to IS NULL"
            ).fetchone()
            assert current == (300, 30), name
        con.close()
