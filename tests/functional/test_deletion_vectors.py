"""A dbt incremental MERGE and a DELETE post-hook on a model DuckDB has deleted from with
deletion vectors (`write_deletion_vectors`): the run merges over the vector, and DuckDB
reads the result exactly as this adapter does, and as the model's logic says."""

from __future__ import annotations

from collections import Counter

import pytest
from dbt.tests.util import run_dbt

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.scan import scan_table
from tests import duck
from tests.functional.conftest import lake_target

pytestmark = pytest.mark.usefixtures("without_json_artifacts")  # reads no dbt JSON artifact

MODEL = """
{{ config(
    materialized='incremental',
    unique_key='id',
    incremental_strategy='merge',
    post_hook="delete from {{ this }} where id % 50 = 1",
) }}
{% set phase = var('phase', 1) %}
select id, id * {{ phase }} as v
from range({{ 0 if phase == 1 else 500 }}, {{ 1000 if phase == 1 else 1500 }})
"""


def _expected() -> Counter[tuple[int, int]]:
    """Phase 1 ids 0..999 (v = id), DuckDB deletes id % 10 = 3, phase 2 merges ids
    500..1499 (v = 2 id, deleted ids come back), the post-hooks delete id % 50 = 1."""
    rows = {i: i for i in range(1000) if i % 10 != 3}
    rows.update({i: 2 * i for i in range(500, 1500)})
    return Counter((i, v) for i, v in rows.items() if i % 50 != 1)


class TestIncrementalMergeOverDeletionVectors:
    @pytest.fixture(scope="class")
    def models(self):
        return {"inc.sql": MODEL}

    def test_merge_and_post_hook_over_duckdb_vectors(
        self, project, dbt_profile_target, spark
    ) -> None:
        run_dbt(["run"])
        schema = project.test_schema
        con = duck.connect()
        sqlite = dbt_profile_target["metadata"].removeprefix("sqlite:///")
        duck.attach(con, f"sqlite:{sqlite}", options="DATA_INLINING_ROW_LIMIT 0")
        con.execute("CALL ducklake_set_option('lake', 'write_deletion_vectors', true)")
        con.execute(f"DELETE FROM lake.{schema}.inc WHERE id % 10 = 3")
        formats = con.execute(
            "SELECT DISTINCT format FROM __ducklake_metadata_lake.ducklake_delete_file "
            "WHERE end_snapshot IS NULL"
        ).fetchall()
        assert formats == [("puffin",)]
        con.close()

        run_dbt(["run", "--vars", "{phase: 2}"])

        con = duck.connect()
        duck.attach(con, f"sqlite:{sqlite}")
        theirs = Counter(con.execute(f"SELECT id, v FROM lake.{schema}.inc").fetchall())
        con.close()
        lake = Lake.open(dbt_profile_target["metadata"])
        ours = Counter(tuple(r) for r in scan_table(spark, lake, schema, "inc").collect())
        lake.close()
        assert theirs == ours
        assert ours == _expected()


class TestProfileWritesDeletionVectors:
    """`write_deletion_vectors: true` in the profile: where the lake sets no such
    option, this project's deletes are deletion vectors, which DuckDB reads the same."""

    @pytest.fixture(scope="class")
    def dbt_profile_target(self, tmp_path_factory):
        root = tmp_path_factory.mktemp("lake")
        return {
            **lake_target(f"sqlite:///{root}/metadata.sqlite", f"{root}/data"),
            "write_deletion_vectors": True,
        }

    @pytest.fixture(scope="class")
    def models(self):
        return {"inc.sql": MODEL}

    def test_deletes_are_vectors_duckdb_reads(self, project, dbt_profile_target, spark) -> None:
        run_dbt(["run"])
        run_dbt(["run", "--vars", "{phase: 2}"])
        schema = project.test_schema
        con = duck.connect()
        sqlite = dbt_profile_target["metadata"].removeprefix("sqlite:///")
        duck.attach(con, f"sqlite:{sqlite}")
        formats = con.execute(
            "SELECT DISTINCT format FROM __ducklake_metadata_lake.ducklake_delete_file"
        ).fetchall()
        assert formats == [("puffin",)], formats
        theirs = Counter(con.execute(f"SELECT id, v FROM lake.{schema}.inc").fetchall())
        con.close()
        lake = Lake.open(dbt_profile_target["metadata"])
        ours = Counter(tuple(r) for r in scan_table(spark, lake, schema, "inc").collect())
        lake.close()
        expected = {i: 2 * i if i >= 500 else i for i in range(1500)}
        assert theirs == ours == Counter((i, v) for i, v in expected.items() if i % 50 != 1)
