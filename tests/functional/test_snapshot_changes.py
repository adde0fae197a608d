"""Snapshots with strategy='changes' (CDC): between two runs the source row 1 is updated
twice, row 2 deleted, row 3 deleted and inserted again, row 4 added; the CDC snapshot
records every version, dated by the source snapshots, closes deletes exactly, and its
current rows agree with a `check` snapshot of the same source."""

from __future__ import annotations

import json

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from dbt.adapters.ducklake.lake import Lake
from tests import duck

SOURCES = """
sources:
  - name: shop
    schema: "{{ target.schema }}"
    tables:
      - name: customers
"""

CDC = """
{% snapshot customers_cdc %}
{{ config(target_schema=target.schema, unique_key='id', strategy='changes') }}
select * from {{ source('shop', 'customers') }}
{% endsnapshot %}
"""

CHECK = """
{% snapshot customers_check %}
{{ config(target_schema=target.schema, unique_key='id', strategy='check', check_cols='all',
          hard_deletes='invalidate') }}
select * from {{ source('shop', 'customers') }}
{% endsnapshot %}
"""

FILTERED = """
{% snapshot customers_filtered %}
{{ config(target_schema=target.schema, unique_key='id', strategy='changes') }}
select * from {{ source('shop', 'customers') }} where id > 1
{% endsnapshot %}
"""


class TestChangesSnapshot:
    @pytest.fixture(scope="class")
    def models(self):
        return {"sources.yml": SOURCES}

    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"customers_cdc.sql": CDC, "customers_check.sql": CHECK}

    def test_every_version_between_runs(self, project, dbt_profile_target) -> None:
        schema = project.test_schema
        lake = Lake.open(dbt_profile_target["metadata"])
        src = f"{schema}.customers"
        project.run_sql(
            f"create table {src} as select cast(id as int) as id, concat('c', id) as name "
            "from range(1, 4)"
        )
        run_dbt(["snapshot"])
        cdc = f"{schema}.customers_cdc"

        def rows(sql: str) -> list[tuple]:
            return sorted(tuple(r) for r in project.run_sql(sql, fetch="all"))

        first = rows(f"select id, name, dbt_valid_to from {cdc}")
        assert first == [(1, "c1", None), (2, "c2", None), (3, "c3", None)]

        def change(sql: str) -> int:
            project.run_sql(sql)
            return lake.latest_snapshot().snapshot_id

        s1 = change(f"update {src} set name = 'c1-a' where id = 1")
        s2 = change(f"update {src} set name = 'c1-b' where id = 1")
        s3 = change(f"delete from {src} where id = 2")
        s4 = change(f"delete from {src} where id = 3")
        s5 = change(f"insert into {src} values (3, 'c3-again'), (4, 'c4')")
        times = {s.snapshot_id: s.snapshot_time for s in lake.snapshots()}
        run_dbt(["snapshot"])

        history = rows(f"select id, name, dbt_valid_from, dbt_valid_to from {cdc}")
        by_key: dict[int, list[tuple]] = {}
        for r in history:
            by_key.setdefault(r[0], []).append(r[1:])
        for versions in by_key.values():
            versions.sort(key=lambda v: v[1])

        def at(snapshot: int):
            return times[snapshot]  # TIMESTAMP values come back aware, in UTC

        assert [(v[0], v[2]) for v in by_key[1]] == [
            ("c1", at(s1)),
            ("c1-a", at(s2)),
            ("c1-b", None),
        ]
        assert [v[1] for v in by_key[1]][1:] == [at(s1), at(s2)]
        assert [(v[0], v[2]) for v in by_key[2]] == [("c2", at(s3))]
        assert [(v[0], v[1], v[2]) for v in by_key[3]][1:] == [("c3-again", at(s5), None)]
        assert by_key[3][0][2] == at(s4)
        assert [(v[0], v[1], v[2]) for v in by_key[4]] == [("c4", at(s5), None)]

        # the current rows agree with the check strategy's
        current_cdc = rows(f"select id, name from {cdc} where dbt_valid_to is null")
        current_check = rows(
            f"select id, name from {schema}.customers_check where dbt_valid_to is null"
        )
        assert current_cdc == current_check == [(1, "c1-b"), (3, "c3-again"), (4, "c4")]
        # ... which saw only the last state of row 1
        check_1 = rows(f"select name from {schema}.customers_check where id = 1")
        assert check_1 == [("c1",), ("c1-b",)]

        # the run recorded the source snapshot it consumed; DuckDB reads the same table
        cdc_snaps = [
            s
            for s in lake.snapshots()
            if s.commit_extra_info and "cdc_source_snapshot" in s.commit_extra_info
        ]
        assert json.loads(cdc_snaps[-1].commit_extra_info)["cdc_source_snapshot"] >= s5
        con = duck.connect()
        duck.attach(con, f"sqlite:{dbt_profile_target['metadata'].removeprefix('sqlite:///')}")
        duck_rows = sorted(
            con.execute(f"SELECT id, name, dbt_valid_to FROM lake.{cdc}").fetchall(), key=repr
        )
        assert duck_rows == sorted(rows(f"select id, name, dbt_valid_to from {cdc}"), key=repr)
        con.close()

        # nothing changed in the source: the CDC snapshot writes nothing
        before = lake.latest_snapshot().snapshot_id
        _, log = run_dbt_and_capture(["snapshot", "-s", "customers_cdc"])
        assert "no change to the source" in log
        assert lake.latest_snapshot().snapshot_id == before


class TestChangesSnapshotRefusesFilters:
    @pytest.fixture(scope="class")
    def models(self):
        return {"sources.yml": SOURCES}

    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"customers_filtered.sql": FILTERED}

    def test_where_is_refused(self, project) -> None:
        project.run_sql(f"create table {project.test_schema}.customers as select 1 as id")
        _, log = run_dbt_and_capture(["snapshot"], expect_pass=False)
        assert "customers_filtered" in log and "WHERE" in log and "select * from" in log
