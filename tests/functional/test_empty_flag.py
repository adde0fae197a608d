"""`--empty`: every materialization and schema-change path builds with refs and sources
read as zero rows, and the metadata macros dbt runs on a ref (alter, comment, truncate)
name the relation itself, not the empty subquery `--empty` renders it as."""

from __future__ import annotations

from typing import Any

import pytest
from dbt.tests.adapter.empty.test_empty import MetadataWithEmptyFlag
from dbt.tests.util import run_dbt

from dbt.adapters.ducklake.lake import Lake
from tests import duck


class TestMetadataWithEmptyFlag(MetadataWithEmptyFlag):
    pass


SEED = "id,name,amount\n" + "".join(f"{i},n{i},{i * 10}\n" for i in range(1, 31))
TABLE = "{{ config(materialized='table') }}\nselect * from {{ ref('s') }}"
VIEW = "select id, name from {{ ref('t') }}"
INC = """
{{ config(materialized='incremental', unique_key='id', on_schema_change='sync_all_columns') }}
select id, name{% if var('extra', false) %}, amount * 2 as doubled{% endif %}
from {{ ref('s') }}
{% if is_incremental() %}where id > (select coalesce(max(id), 0) - 5 from {{ this }}){% endif %}
"""
INC_APPEND = """
{{ config(materialized='incremental', incremental_strategy='append',
          on_schema_change='append_new_columns') }}
select id{% if var('extra', false) %}, name{% endif %} from {{ ref('s') }}
"""
PAST = "select * from {{ ducklake_at(ref('t'), version=var('version', 1)) }}"
SNAP = """
{% snapshot snap %}
{{ config(unique_key='id', strategy='check', check_cols='all', target_schema=target.schema) }}
select * from {{ ref('s') }}
{% endsnapshot %}
"""


class TestEmptyEveryMaterialization:
    """`dbt build --empty` after a full build: tables and views are rebuilt with their
    columns and no rows, incremental models take the schema change (sync and append) but
    no rows, snapshots change nothing, time travel through `ducklake_at` reads nothing;
    DuckDB reads every relation so."""

    @pytest.fixture(scope="class")
    def seeds(self):
        return {"s.csv": SEED}

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "t.sql": TABLE,
            "v.sql": VIEW,
            "inc.sql": INC,
            "inc_append.sql": INC_APPEND,
            "past.sql": PAST,
        }

    @pytest.fixture(scope="class")
    def snapshots(self):
        return {"snap.sql": SNAP}

    def test_build_empty(self, project, dbt_profile_target) -> None:
        run_dbt(["build", "--exclude", "past"])  # past reads t as the first build left it
        metadata = dbt_profile_target["metadata"]
        lake = Lake.open(metadata)
        version = lake.latest_snapshot().snapshot_id
        run_dbt(["build", "--empty", "--vars", f"{{extra: true, version: {version}}}"])
        con = duck.connect()
        duck.attach(con, "sqlite:" + metadata.removeprefix("sqlite:///"), alias="lake")
        schema = project.test_schema

        def read(sql: str) -> list[tuple[Any, ...]]:
            return con.execute(sql.replace("$", f"lake.{schema}.")).fetchall()

        # seeds are loaded whole: dbt's --empty reads refs and sources as zero rows
        assert read("SELECT count(*) FROM $s") == [(30,)]
        assert read("SELECT count(*) FROM $t") == [(0,)]
        assert read("SELECT count(*) FROM $v") == [(0,)]
        assert read("SELECT count(*) FROM $past") == [(0,)]
        assert read("SELECT count(*), count(doubled) FROM $inc") == [(30, 0)]
        assert read("SELECT count(*), count(name) FROM $inc_append") == [(30, 0)]
        assert read("SELECT count(*), count(*) FILTER (dbt_valid_to IS NULL) FROM $snap") == [
            (30, 30)
        ]
        columns = {
            table: [r[0] for r in read("DESCRIBE $" + table)]
            for table in ("t", "v", "inc", "inc_append", "past")
        }
        assert columns == {
            "t": ["id", "name", "amount"],
            "v": ["id", "name"],
            "inc": ["id", "name", "doubled"],
            "inc_append": ["id", "name"],
            "past": ["id", "name", "amount"],
        }
        con.close()
        # and a normal build afterwards fills them again
        run_dbt(["build", "--vars", f"{{extra: true, version: {version}}}"])
        con = duck.connect()
        duck.attach(con, "sqlite:" + metadata.removeprefix("sqlite:///"), alias="lake")
        assert read("SELECT count(*) FROM $t") == [(30,)]
        assert read("SELECT count(*), count(doubled) FROM $inc") == [(30, 5)]
        # the view over t as the first build left it: DuckDB reads it at that snapshot
        assert read("SELECT count(*), sum(amount) FROM $past") == [(30, 4650)]
        con.close()
