"""dbt Python models on the adapter's SparkSession (SQLite and PostgreSQL catalogs):
their DataFrames are written by the same engine as SQL models, one snapshot per build,
and DuckDB reads them as it reads the same logic written in SQL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file

from dbt.adapters.ducklake.lake import Lake
from tests import duck
from tests.conftest import _make_catalog
from tests.functional.conftest import lake_target

CUSTOMERS = """
{{ config(materialized='table') }}
select cast(id as int) as customer_id, concat('c', id) as name from range(0, 6)
"""

ORDERS = """
{{ config(materialized='table') }}
select cast(id as int) as order_id, cast(id % 5 as int) as customer_id,
       cast(id * 1.5 as decimal(10, 2)) as amount
from range(0, 40)
"""

PY_JOIN = """
from pyspark.sql import functions as F


def model(dbt, session):
    dbt.config(materialized="table", commit_message="revenue per customer, in Python")
    orders = dbt.ref("orders")
    customers = dbt.ref("customers")
    joined = orders.join(customers, "customer_id")
    return joined.groupBy("customer_id", "name").agg(
        F.sum("amount").alias("revenue"), F.count("*").alias("orders")
    )
"""

SQL_JOIN = """
{{ config(materialized='table') }}
select o.customer_id, c.name, sum(o.amount) as revenue, count(*) as orders
from {{ ref('orders') }} o join {{ ref('customers') }} c on o.customer_id = c.customer_id
group by o.customer_id, c.name
"""

# a SQL model over a Python model, and a test on it
TOP = """
select customer_id, revenue from {{ ref('py_revenue') }} where revenue > 100
"""

SCHEMA = """
version: 2
models:
  - name: py_revenue
    columns:
      - name: customer_id
        data_tests: [not_null, unique]
"""

EVENTS = """
{{ config(materialized='table') }}
select cast(id as int) as id, {{ var('batch', 1) }} * 100 + cast(id as int) as v
from range(0, 10 * ({{ var('batch', 1) }} + 1))
"""

# dbt's documented incremental pattern: session.sql over dbt.this
PY_INCREMENTAL = """
def model(dbt, session):
    dbt.config(materialized="incremental", incremental_strategy="merge", unique_key="id")
    events = dbt.ref("events")
    if dbt.is_incremental:
        newest = session.sql(f"select max(id) as m from {dbt.this}").collect()[0]["m"]
        events = events.filter(events.id > newest - 5)
    return events
"""

SOURCES = """
version: 2
sources:
  - name: shop
    schema: "{{ target.schema }}"
    tables: [{name: customers}]
"""

# dbt.source, dbt.config.get and the append strategy
PY_APPEND = """
def model(dbt, session):
    dbt.config(materialized="incremental", incremental_strategy="append", min_id=2)
    customers = dbt.source("shop", "customers")
    # its own statement: dbt's parser finds config.get calls there, not inside a comparison
    min_id = dbt.config.get("min_id")
    return customers.filter(customers.customer_id >= min_id)
"""

PY_LAYOUT = """
import pandas as pd


def model(dbt, session):
    dbt.config(materialized="table", partition_by=["k"], sorted_by=["id desc"])
    rows = [(i, i % 3, f"r{i}") for i in range(30)]
    return pd.DataFrame(rows, columns=["id", "k", "label"])
"""


@pytest.fixture(scope="class", params=["sqlite", "postgres"])
def dbt_profile_target(request, tmp_path_factory) -> Iterator[dict[str, Any]]:
    catalogs = _make_catalog(request.param, tmp_path_factory.mktemp("lake"))
    catalog = next(catalogs)
    # duckdb_attach is not a profile field: the checks use it
    yield {
        **lake_target(catalog.metadata, catalog.data_path),
        "duckdb_attach": catalog.duckdb_attach,
    }
    next(catalogs, None)  # drops the PostgreSQL database


def _duck(target: dict[str, Any]) -> Any:
    con = duck.connect()
    duck.attach(con, target["duckdb_attach"])
    return con


def _rows(con: Any, sql: str) -> list[tuple[Any, ...]]:
    return sorted(con.execute(sql).fetchall())


class TestPythonModels:
    @pytest.fixture(scope="class")
    def models(self):
        return {
            "customers.sql": CUSTOMERS,
            "orders.sql": ORDERS,
            "py_revenue.py": PY_JOIN,
            "sql_revenue.sql": SQL_JOIN,
            "top_customers.sql": TOP,
            "schema.yml": SCHEMA,
            "events.sql": EVENTS,
            "py_events.py": PY_INCREMENTAL,
            "py_layout.py": PY_LAYOUT,
            "sources.yml": SOURCES,
            "py_append.py": PY_APPEND,
        }

    def test_python_models_build_like_sql_models(self, project, dbt_profile_target) -> None:
        schema = project.test_schema
        results = run_dbt(["build", "--exclude", "py_append"])  # its source is a model
        assert all(r.status in ("success", "pass") for r in results)
        lake = Lake.open(dbt_profile_target["metadata"])
        con = _duck(dbt_profile_target)

        # 1. a table joining two refs reads in DuckDB exactly as the same SQL model
        py = _rows(con, f"SELECT * FROM lake.{schema}.py_revenue")
        assert py and py == _rows(con, f"SELECT * FROM lake.{schema}.sql_revenue")
        assert [d[0:2] for d in con.execute(f"DESCRIBE lake.{schema}.py_revenue").fetchall()] == [
            d[0:2] for d in con.execute(f"DESCRIBE lake.{schema}.sql_revenue").fetchall()
        ]
        top = _rows(con, f"SELECT * FROM lake.{schema}.top_customers")
        assert top == [(c, r) for c, _, r, _ in py if r > 100]
        # one snapshot per Python model build, with the node's commit info
        by_node: dict[str, list[Any]] = {}
        for snap in lake.snapshots():
            node = json.loads(snap.commit_extra_info or "{}").get("unique_id")
            by_node.setdefault(node, []).append(snap)
        for node in ("py_revenue", "py_events", "py_layout"):
            assert len(by_node[f"model.test.{node}"]) == 1, node
        [revenue] = by_node["model.test.py_revenue"]
        assert revenue.commit_message == "revenue per customer, in Python"

        # 3. partition_by / sorted_by on a Python model returning pandas
        table_id = lake.catalog().table(schema, "py_layout").table_id
        meta = "__ducklake_metadata_lake"
        keys = con.execute(
            f"SELECT c.column_name, p.transform FROM {meta}.ducklake_partition_column p "
            f"JOIN {meta}.ducklake_column c USING (table_id, column_id) "
            f"WHERE table_id = {table_id} AND c.end_snapshot IS NULL"
        ).fetchall()
        assert keys == [("k", "identity")]
        sort = con.execute(
            f"SELECT expression, sort_direction FROM {meta}.ducklake_sort_expression "
            f"WHERE table_id = {table_id}"
        ).fetchall()
        assert sort == [("id", "DESC")]
        files = con.execute(
            f"SELECT count(*) FROM ducklake_list_files('lake', 'py_layout', schema => '{schema}')"
        ).fetchone()
        assert files == (3,)  # one file per partition value
        assert _rows(con, f"SELECT id, k, label FROM lake.{schema}.py_layout") == [
            (i, i % 3, f"r{i}") for i in range(30)
        ]

        # 2. incremental: dbt.is_incremental and dbt.this; one snapshot per run
        first = _rows(con, f"SELECT * FROM lake.{schema}.py_events")
        assert first == [(i, 100 + i) for i in range(20)]
        con.close()
        before = lake.latest_snapshot().snapshot_id
        run_dbt(["run", "--select", "events", "py_events", "--vars", "batch: 2"])
        new = [s.commit_message for s in lake.snapshots(since=before)]
        assert new == [
            "dbt run model.test.events (table)",
            "dbt run model.test.py_events (incremental merge)",
        ]
        con = _duck(dbt_profile_target)
        # rows past max(id) - 5 = 14 came from batch 2; the others kept batch 1's values
        assert _rows(con, f"SELECT * FROM lake.{schema}.py_events") == [
            (i, (200 if i > 14 else 100) + i) for i in range(30)
        ]
        con.close()

        # append, twice, rows from a source filtered by a config value
        for _ in range(2):
            run_dbt(["run", "--select", "py_append"])
        con = _duck(dbt_profile_target)
        assert _rows(con, f"SELECT * FROM lake.{schema}.py_append") == sorted(
            2 * [(i, f"c{i}") for i in range(2, 6)]
        )
        con.close()

        # Python models are in the docs catalog like any other
        run_dbt(["docs", "generate"])
        catalog = json.loads((Path(project.project_root) / "target" / "catalog.json").read_text())
        assert {"model.test.py_revenue", "model.test.py_events", "model.test.py_layout"} <= set(
            catalog["nodes"]
        )
        assert set(catalog["nodes"]["model.test.py_revenue"]["columns"]) == {
            "customer_id",
            "name",
            "revenue",
            "orders",
        }


RAISES = """
def model(dbt, session):
    orders = dbt.ref("orders")
    if orders.count() > 0:
        raise ValueError("orders are not allowed today")
    return orders
"""

NOT_A_FRAME = """
def model(dbt, session):
    dbt.ref("orders")
    return {"rows": 3}
"""

ANALYSIS_ERROR = """
def model(dbt, session):
    orders = dbt.ref("orders")
    return orders.select("no_such_column")
"""

NOT_A_TABLE = """
def model(dbt, session):
    dbt.config(materialized="{materialized}")
    return dbt.ref("orders")
"""


class TestPythonModelErrors:
    @pytest.fixture(scope="class")
    def models(self):
        return {"orders.sql": ORDERS, "bad.py": "def model(dbt, session):\n    return 1\n"}

    @pytest.mark.parametrize(
        ("body", "expected"),
        [
            (RAISES, ["bad.py:5", "ValueError: orders are not allowed today"]),
            (NOT_A_FRAME, ["returned builtins.dict", "must return a Spark DataFrame"]),
            (ANALYSIS_ERROR, ["bad.py:4", "no_such_column"]),
        ],
    )
    def test_a_failing_model_names_its_file_and_line_and_commits_nothing(
        self, project, dbt_profile_target, body: str, expected: list[str]
    ) -> None:
        run_dbt(["run", "--select", "orders"])
        lake = Lake.open(dbt_profile_target["metadata"])
        before = lake.latest_snapshot().snapshot_id
        write_file(body, project.project_root, "models", "bad.py")
        _, output = run_dbt_and_capture(["run", "--select", "bad"], expect_pass=False)
        for text in expected:
            assert text in output, output[-3000:]
        assert "Python model" in output and f"{project.test_schema}.bad" in output
        assert lake.latest_snapshot().snapshot_id == before
        assert lake.catalog().find_table(project.test_schema, "bad") is None

    def test_a_python_view_is_refused(self, project) -> None:
        write_file(
            NOT_A_TABLE.format(materialized="view"), project.project_root, "models", "bad.py"
        )
        _, output = run_dbt_and_capture(["run", "--select", "bad"], expect_pass=False)
        assert "only supports languages ['sql']; got \"python\"" in output
