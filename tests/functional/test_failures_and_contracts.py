"""A model that fails — SQL error, contract mismatch, NOT NULL violation, killed Spark
job — leaves its table exactly as it was (same latest snapshot for it, same rows); an
enforced contract declares the columns and NOT NULL is checked at write."""

from __future__ import annotations

import threading
import time

import pytest
from dbt.tests.util import relation_from_name, run_dbt, write_file
from pyspark import SparkContext

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
    def models(self):
        return {"m.sql": GOOD, "schema.yml": SCHEMA_YML}

    def _state(self, project, lake: Lake):
        table = lake.catalog().table(project.test_schema, "m")
        names = {str(table.table_id), f"{project.test_schema}.m"}
        touched = [
            s.snapshot_id for s in lake.snapshots() if any(c.value in names for c in s.changes)
        ]
        rows = project.run_sql(
            f"select id, name from {relation_from_name(project.adapter, 'm')}", fetch="all"
        )
        return max(touched), sorted(tuple(r) for r in rows)

    def test_failures_leave_the_table_as_it_was(self, project, dbt_profile_target) -> None:
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

        # a Spark job killed while the build runs: the build fails, nothing is committed
        write_file(SLOW, project.project_root, "models", "m.sql")
        killer = threading.Thread(target=_cancel_first_job, daemon=True)
        killer.start()
        result = run_dbt(["run"], expect_pass=False)
        killer.join(timeout=60)
        assert "cancel" in result.results[0].message.lower()
        assert self._state(project, lake) == before


# about 10 s per partition: each row sleeps 50 ms inside the Spark job
SLOW = (
    "select cast(id as int) as id, "
    "concat('slow', reflect('java.lang.Thread', 'sleep', cast(50 as bigint))) as name "
    "from range(0, 400, 1, 2)"
)


def _cancel_first_job() -> None:
    """Wait for a job of the build that is still running after a second (the slow
    write, not a short probe before it), then kill every job."""
    sc = SparkContext._active_spark_context
    assert sc is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if sc.statusTracker().getActiveJobsIds():
            time.sleep(1.0)
            if sc.statusTracker().getActiveJobsIds():
                sc.cancelAllJobs()
                return
        time.sleep(0.1)
