"""A model that fails leaves its table exactly as it was (same latest snapshot for it,
same rows); an enforced contract declares the columns and NOT NULL is checked at write."""

from __future__ import annotations

import pytest
from dbt.tests.util import relation_from_name, run_dbt, write_file

from dbt.adapters.ducklake.lake import Lake

GOOD = "select cast(id as int) as id, concat('n', id) as name from range(3)"
SCHEMA_YML = """
version: 2
models:
  - name: m
    config:
      materialized: table
      contract: {enforced: true}
    columns:
      - name: id
        data_type: int
        constraints: [{type: not_null}]
      - name: name
        data_type: string
"""


class TestFailedBuildsChangeNothing:
    @pytest.fixture(scope="class")
    def models(self):  # type: ignore[no-untyped-def]
        return {"m.sql": GOOD, "schema.yml": SCHEMA_YML}

    def _state(self, project, lake: Lake):  # type: ignore[no-untyped-def]
        table = lake.catalog().table(project.test_schema, "m")
        touched = [s.snapshot_id for s in lake.snapshots() if str(table.table_id) in str(s.changes)]
        rows = project.run_sql(
            f"select id, name from {relation_from_name(project.adapter, 'm')}", fetch="all"
        )
        return max(touched), sorted(tuple(r) for r in rows)

    def test_failures_leave_the_table_as_it_was(self, project, dbt_profile_target) -> None:  # type: ignore[no-untyped-def]
        run_dbt(["run"])
        lake = Lake.open(dbt_profile_target["metadata"])

        before = self._state(project, lake)
        assert before[1] == [(0, "n0"), (1, "n1"), (2, "n2")]
        columns = lake.catalog().columns(lake.catalog().table(project.test_schema, "m").table_id)
        assert [(c.name, c.nullable) for c in columns] == [("id", False), ("name", True)]

        # NOT NULL violated at write: the build fails, nothing is committed
        write_file(
            "select cast(case when id = 1 then null else id end as int) as id, "
            "concat('x', id) as name from range(3)",
            project.project_root,
            "models",
            "m.sql",
        )
        result = run_dbt(["run"], expect_pass=False)
        assert "NOT NULL constraint failed" in result.results[0].message
        assert self._state(project, lake) == before

        # a SQL error: same
        write_file("select id, name from no_such_table", project.project_root, "models", "m.sql")
        run_dbt(["run"], expect_pass=False)
        assert self._state(project, lake) == before

        # contract names/types mismatch: refused before any SQL runs on the lake
        write_file("select 'a' as id, 'b' as name", project.project_root, "models", "m.sql")
        result = run_dbt(["run"], expect_pass=False)
        assert "contract" in result.results[0].message.lower()
        assert self._state(project, lake) == before
