"""Incremental models fed by their upstreams' change feeds, exactly once
(`ducklake_changes_since_last_build` + incremental_strategy='apply_changes').

Between builds the upstreams change through dbt and through DuckDB: inserts, updates
and deletes, inlined and in files, a compaction in the middle. After every round the
downstream models equal a full recompute; a build that fails after reading the feed
leaves the next one the same window; a replaced upstream and an expired window give
errors that say to run --full-refresh.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from dbt.adapters.ducklake.change_windows import CONSUMED
from dbt.adapters.ducklake.lake import Lake
from tests import duck
from tests.functional.conftest import catalog_target

pytestmark = pytest.mark.usefixtures("without_json_artifacts")  # reads no dbt JSON artifact

ORDERS = """
{{ config(materialized='incremental', incremental_strategy='merge', unique_key='id') }}
select cast(id as int) as id, status, cast(amount as int) as amount
from values {{ var('orders', "(1, 'new', 10), (2, 'new', 20), (3, 'paid', 30)") }}
  as t(id, status, amount)
"""

# a filter, a projection and a lookup in one row-wise model
OPEN_ORDERS = """
{{ config(materialized='incremental', incremental_strategy='apply_changes', unique_key='id') }}
select c.snapshot_id, c.change_type, c.id, upper(c.status) as status,
       c.amount * 2 as doubled, l.label
from {{ ducklake_changes_since_last_build(ref('orders')) }} as c
left join {{ ref('labels') }} as l on l.status = c.status
where c.status <> 'void' {% if var('boom', false) %} and assert_true(c.id < 0) is null {% endif %}
"""

# a filter and a projection of one feed: when its window is read on the driver, the last
# change per key is ranked there and the MERGE decided there (spark/last_changes.py)
AMOUNTS = """
{{ config(materialized='incremental', incremental_strategy='apply_changes', unique_key='id') }}
select snapshot_id, change_type, id, amount + 1 as amount1
from {{ ducklake_changes_since_last_build(ref('orders')) }}
where status <> 'void'
"""

LABELS = """
{{ config(materialized='table') }}
select * from values ('new', 'N'), ('paid', 'P'), ('late', 'L') as t(status, label)
"""

# two upstreams, each with its own position; `returns` is DuckDB's
EVENTS = """
{{ config(materialized='incremental', incremental_strategy='apply_changes',
          unique_key=['kind', 'id']) }}
select snapshot_id, change_type, 'order' as kind, id, status
from {{ ducklake.changes_since_last_build(ref('orders')) }}
union all
select snapshot_id, change_type, 'return' as kind, id, reason as status
from {{ ducklake.changes_since_last_build(source('shop', 'returns')) }}
"""

NO_FEED_COLUMNS = """
{{ config(materialized='incremental', incremental_strategy='apply_changes', unique_key='id') }}
select id, status from {{ ducklake_changes_since_last_build(ref('orders')) }}
"""

# on_schema_change compares the model's data columns (not the feed's) with the table
WIDENING = """
{{ config(materialized='incremental', incremental_strategy='apply_changes', unique_key='id',
          on_schema_change=var('on_change', 'append_new_columns')) }}
select snapshot_id, change_type, id, amount{% if var('wide', false) %}, status{% endif %}
from {{ ducklake_changes_since_last_build(ref('orders')) }}
"""

SOURCES = """
sources:
  - name: shop
    schema: "{{ target.schema }}"
    tables:
      - name: returns
"""

RECOMPUTE = {
    "open_orders": (
        "select o.id, upper(o.status), o.amount * 2, l.label from {s}.orders o "
        "left join {s}.labels l on l.status = o.status where o.status <> 'void'"
    ),
    "amounts": "select id, amount + 1 from {s}.orders where status <> 'void'",
    "events": (
        "select 'order', id, status from {s}.orders "
        "union all select 'return', id, reason from {s}.returns"
    ),
}
STORED = {
    "open_orders": "select id, status, doubled, label from {s}.open_orders",
    "amounts": "select id, amount1 from {s}.amounts",
    "events": "select kind, id, status from {s}.events",
}


class TestChangeFeedModels:
    @pytest.fixture(scope="class", params=["sqlite", "postgres"])
    def dbt_profile_target(self, request, tmp_path_factory) -> Iterator[dict[str, Any]]:
        yield from catalog_target(request.param, tmp_path_factory)

    @pytest.fixture(scope="class")
    def packages(self):
        from dbt.include.ducklake import NAMESPACE_PACKAGE_PATH

        return {"packages": [{"local": NAMESPACE_PACKAGE_PATH}]}

    @pytest.fixture(scope="class")
    def models(self):
        return {
            "orders.sql": ORDERS,
            "labels.sql": LABELS,
            "open_orders.sql": OPEN_ORDERS,
            "amounts.sql": AMOUNTS,
            "events.sql": EVENTS,
            "no_feed_columns.sql": NO_FEED_COLUMNS,
            "sources.yml": SOURCES,
        }

    def test_every_round_equals_a_full_recompute(
        self, project, dbt_profile_target, monkeypatch
    ) -> None:
        schema = project.test_schema
        ranked = _spy_ranking(monkeypatch)
        lake = Lake.open(dbt_profile_target["metadata"])
        attach = dbt_profile_target["duckdb_attach"]

        def duckdb(*statements: str) -> None:
            con = duck.connect()
            duck.attach(con, attach)
            for statement in statements:
                con.execute(statement.replace("{s}", f"lake.{schema}"))
            con.close()

        def rows(sql: str) -> list[tuple]:
            found = project.run_sql(sql.replace("{s}", schema), fetch="all")
            return sorted((tuple(r) for r in found), key=repr)

        def check(round_name: str) -> None:
            for model, recompute in RECOMPUTE.items():
                assert rows(STORED[model]) == rows(recompute), (round_name, model)
            # DuckDB reads what the builds wrote
            con = duck.connect()
            duck.attach(con, attach)
            for model in RECOMPUTE:
                theirs = con.execute(STORED[model].replace("{s}", f"lake.{schema}")).fetchall()
                assert sorted(theirs, key=repr) == rows(STORED[model]), (round_name, model)
            con.close()

        def build(*extra: str) -> None:
            run_dbt(["run", "-s", "open_orders", "amounts", "events", *extra])

        run_dbt(["deps"])
        duckdb(
            "CREATE TABLE {s}.returns (id INTEGER, reason VARCHAR)",
            "INSERT INTO {s}.returns VALUES (1, 'broken'), (2, 'late')",
        )
        run_dbt(["run", "-s", "orders", "labels"])
        build()  # the first build: every row as an insert
        check("first build")

        # round 2: dbt merges (an update, a new row), DuckDB updates, deletes and
        # inserts (inlined), and our engine appends rows in a file
        run_dbt(["run", "-s", "orders", "--vars", "{orders: \"(1, 'paid', 11), (4, 'new', 40)\"}"])
        duckdb(
            "UPDATE {s}.orders SET status = 'void' WHERE id = 2",
            "DELETE FROM {s}.orders WHERE id = 3",
            "INSERT INTO {s}.orders VALUES (5, 'late', 50)",
            "UPDATE {s}.returns SET reason = 'lost' WHERE id = 2",
            "INSERT INTO {s}.returns VALUES (3, 'none')",
        )
        project.run_sql(
            f"insert into {schema}.orders select cast(id as int), 'new', cast(id as int) "
            "from range(100, 400)"
        )
        build()
        check("round 2")

        # round 3: changes on both sides of a compaction
        project.run_sql(f"update {schema}.orders set status = 'late' where id between 100 and 120")
        project.run_sql(f"delete from {schema}.orders where id between 200 and 210")
        project.run_sql(
            f"insert into {schema}.orders select cast(id as int), 'paid', 1 from range(400, 500)"
        )
        duckdb(
            "CALL ducklake_flush_inlined_data('lake')",
            "CALL ducklake_merge_adjacent_files('lake')",
            "UPDATE {s}.orders SET amount = amount + 1 WHERE id % 7 = 0",
            "DELETE FROM {s}.returns WHERE id = 1",
        )
        build()
        check("round 3")

        # round 4: a build that fails after reading the feed consumes nothing
        project.run_sql(f"delete from {schema}.orders where id between 300 and 350")
        project.run_sql(f"update {schema}.orders set status = 'void' where id = 5")
        consumed_before = _consumed(lake, schema, "open_orders")
        before = rows(STORED["open_orders"])
        failed = run_dbt(["run", "-s", "open_orders", "--vars", "{boom: true}"], expect_pass=False)
        assert failed[0].status == "error"
        assert rows(STORED["open_orders"]) == before
        assert _consumed(lake, schema, "open_orders") == consumed_before
        build()
        check("after a failed build")
        assert _consumed(lake, schema, "open_orders") > consumed_before

        # nothing changed upstream: the next build applies nothing and stays equal
        build()
        check("no change")
        # the small windows of `amounts` were ranked on the driver; the lookup's by
        # Spark (but for an empty window, which Spark folds into no rows)
        assert True in ranked["amounts"]
        assert False in ranked["open_orders"]

        # the upstream replaced: the feed cannot say what happened
        project.run_sql(
            f"create or replace table {schema}.orders as "
            f"select * from {schema}.orders where id < 150"
        )
        _, log = run_dbt_and_capture(["run", "-s", "open_orders"], expect_pass=False)
        assert f"{schema}.orders was replaced" in log and "--full-refresh" in log
        build("--full-refresh")
        check("full refresh after a replacement")

        # a snapshot of the window expired: the error says to rebuild
        project.run_sql(f"delete from {schema}.orders where id = 1")
        gone = lake.latest_snapshot().snapshot_id
        project.run_sql(f"delete from {schema}.orders where id = 4")
        duckdb(f"CALL ducklake_expire_snapshots('lake', versions => [{gone}])")
        _, log = run_dbt_and_capture(["run", "-s", "open_orders"], expect_pass=False)
        assert f"snapshot(s) {gone} were expired" in log and "--full-refresh" in log
        build("--full-refresh")
        check("full refresh after a window expired")

        # the snapshots holding the model's record expired too: also an error, not a
        # silent full read
        project.run_sql(f"delete from {schema}.orders where id = 101")
        duckdb("CALL ducklake_expire_snapshots('lake', older_than => now())")
        _, log = run_dbt_and_capture(["run", "-s", "open_orders"], expect_pass=False)
        assert "recorded which upstream changes it consumed were expired" in log
        build("--full-refresh")
        check("full refresh after the record expired")

        # the strategy needs the feed's columns, and says so before writing anything
        before = lake.latest_snapshot().snapshot_id
        _, log = run_dbt_and_capture(["run", "-s", "no_feed_columns"], expect_pass=False)
        assert "needs the change feed's change_type and snapshot_id columns" in log
        assert lake.latest_snapshot().snapshot_id == before


class TestChangeFeedUnderAtomicPublish:
    """`publish: atomic`: the models build into a staging copy whose snapshot ids are
    not the lake's; the published snapshot carries the positions in the lake's ids."""

    @pytest.fixture(scope="class")
    def models(self):
        return {"orders.sql": ORDERS, "labels.sql": LABELS, "open_orders.sql": OPEN_ORDERS}

    def test_positions_survive_the_publish(self, project, dbt_profile_target) -> None:
        schema = project.test_schema
        lake = Lake.open(dbt_profile_target["metadata"])
        atomic = ["--vars", "{ducklake_publish: atomic}"]

        def equal() -> None:
            stored = project.run_sql(STORED["open_orders"].replace("{s}", schema), fetch="all")
            full = project.run_sql(RECOMPUTE["open_orders"].replace("{s}", schema), fetch="all")
            assert sorted(map(tuple, stored), key=repr) == sorted(map(tuple, full), key=repr)

        run_dbt(["run", *atomic])
        equal()
        published = lake.latest_snapshot().snapshot_id
        # the upstream changed in the build itself: the position is the published snapshot
        assert _consumed(lake, schema, "open_orders") == published
        # changed outside the build: the next atomic build reads exactly that window
        project.run_sql(f"update {schema}.orders set status = 'void' where id = 1")
        project.run_sql(f"insert into {schema}.orders values (7, 'late', 70)")
        outside = lake.latest_snapshot().snapshot_id
        run_dbt(["run", "-s", "open_orders", *atomic])
        equal()
        assert _consumed(lake, schema, "open_orders") == outside
        # both: a change outside, then the build's own merge of the upstream
        project.run_sql(f"delete from {schema}.orders where id = 2")
        both = "{ducklake_publish: atomic, orders: \"(3, 'late', 33)\"}"
        run_dbt(["run", "--vars", both])
        equal()
        assert _consumed(lake, schema, "open_orders") == lake.latest_snapshot().snapshot_id


class TestChangeFeedSchemaChanges:
    @pytest.fixture(scope="class")
    def models(self):
        return {"orders.sql": ORDERS, "widening.sql": WIDENING}

    def test_columns_compared_without_the_feed_columns(self, project) -> None:
        schema = project.test_schema
        run_dbt(["run"])
        project.run_sql(f"update {schema}.orders set amount = 11 where id = 1")
        run_dbt(["run", "-s", "widening", "--vars", "{wide: true}"])
        stored = project.run_sql(f"select id, amount, status from {schema}.widening", fetch="all")
        # the appended column is filled for the rows the window changed
        assert sorted(map(tuple, stored)) == [(1, 11, "new"), (2, 20, None), (3, 30, None)]
        _, out = run_dbt_and_capture(
            ["run", "-s", "widening", "--vars", "{on_change: fail}"], expect_pass=False
        )
        assert "out of sync" in out


def _consumed(lake: Lake, schema: str, model: str) -> int:
    """The orders snapshot the newest build of `model` consumed."""
    for snapshot in reversed(lake.table_history(schema, model)):
        extra = snapshot.extra_info
        record = extra.get(CONSUMED, {}) if isinstance(extra, dict) else {}
        if f"{schema}.{model}" in record:
            return int(record[f"{schema}.{model}"][f"{schema}.orders"][1])
    raise AssertionError(f"no build of {model} recorded what it consumed")


def _spy_ranking(monkeypatch) -> dict[str, set[bool]]:
    """Per model: whether apply_changes ranked its feed on the driver, each build."""
    from dbt.adapters.ducklake.spark import last_changes

    seen: dict[str, set[bool]] = {}
    real = last_changes.rank_here

    def spied(spark: Any, feed_view: str, view: str, keys: Any) -> bool:
        done = real(spark, feed_view, view, keys)
        seen.setdefault(view.split("__dbt_tmp")[0], set()).add(done)
        return done

    monkeypatch.setattr(last_changes, "rank_here", spied)
    return seen
