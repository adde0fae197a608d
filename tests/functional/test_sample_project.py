"""sample_project end to end: `dbt build` (4 threads) on the embedded default, then
DuckDB's extension reads every model as Spark does, every built node left exactly one
snapshot with its commit info, and a second build after new orders arrive passes with
the incremental model taking only the new and changed orders, and the CDC snapshot
recording the changed order's old and new versions."""

from __future__ import annotations

import json
import shutil
from datetime import datetime, timezone
from pathlib import Path

import pytest
from dbt.adapters.factory import reset_adapters
from dbt.cli.main import dbtRunner, dbtRunnerResult

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.sql import LakeSQL
from dbt.adapters.ducklake.spark.types import python_rows
from tests import duck
from tests.canon import canon_rows
from tests.spark.test_roundtrip import _spark_rows

SAMPLE = Path(__file__).resolve().parents[2] / "sample_project"
RELATIONS = [
    "shop.customers",
    "shop.orders",
    "shop.stg_customers",
    "shop.stg_orders",
    "shop.customer_revenue",
    "shop.orders_incremental",
    "shop.daily_revenue",
    "shop.customer_segments",
    "shop_history.customers_snapshot",
    "shop_history.orders_history",
]


def _utc(rows: list) -> list:
    """Spark hands TIMESTAMP WITH TIME ZONE out as naive UTC (session zone UTC)."""
    return [
        tuple(
            v.replace(tzinfo=timezone.utc) if isinstance(v, datetime) and v.tzinfo is None else v
            for v in r
        )
        for r in rows
    ]


def _info(snapshot) -> dict:
    extra = snapshot.extra_info
    return extra if isinstance(extra, dict) else json.loads(extra)


def _dbt(project: Path, *command: str) -> dbtRunnerResult:
    """Run dbt on the copied project. dbt leaves its adapter registered after an invoke,
    and dbt-tests' `adapter` fixture keeps an already registered one: reset, so the next
    test class opens its own lake rather than this one."""
    try:
        return dbtRunner().invoke(
            [*command, "--project-dir", str(project), "--profiles-dir", str(project)]
        )
    finally:
        reset_adapters()


def _build(project: Path) -> None:
    result = _dbt(project, "build")
    assert result.success, result.exception


@pytest.mark.slow  # the whole sample project, twice: left out of --fast
def test_sample_project_builds_and_reads_the_same_in_duckdb(spark, tmp_path, monkeypatch) -> None:
    project = tmp_path / "shop"
    shutil.copytree(SAMPLE, project, ignore=shutil.ignore_patterns("lake", "target", "logs"))
    monkeypatch.chdir(project)  # the profile's lake paths are relative, as for a user
    _build(project)

    lake = Lake.open("sqlite:///lake/metadata.sqlite")
    # as the README says: the sample's rows are all inlined in the catalog, no Parquet
    assert not list((project / "lake").rglob("*.parquet"))
    snapshots = lake.snapshots()
    built = [_info(s)["unique_id"] for s in snapshots if s.commit_message]
    nodes = [u for u in built if u.split(".")[0] in ("seed", "model", "snapshot")]
    assert sorted(nodes) == sorted(set(nodes)) and len(nodes) == len(RELATIONS), built
    for s in snapshots[1:]:
        assert s.author and s.commit_message, s
        info = _info(s)
        assert {"invocation_id", "unique_id", "materialization", "target"} <= set(info)

    # default messages name the command that ran: seeds and snapshots under build too
    default = [
        (_info(s)["unique_id"].split(".")[0], s.commit_message)
        for s in snapshots[1:]
        if s.commit_message.startswith("dbt ") and "." in _info(s)["unique_id"]
    ]
    assert {kind for kind, _ in default} == {"seed", "model", "snapshot"}, default
    assert all(m.startswith("dbt build ") for _, m in default), default

    con = duck.connect()
    duck.attach(con, f"sqlite:{project}/lake/metadata.sqlite", alias="lake")
    sql = LakeSQL(spark, lake, default_schema="shop")
    for name in RELATIONS:
        theirs = con.execute(f"SELECT * FROM lake.{name}").fetchall()
        ours = _spark_rows(sql.query(f"SELECT * FROM {name}"))
        assert canon_rows(_utc(ours)) == canon_rows(_utc(theirs)), name
    # daily_revenue is laid out from the snapshot that creates it (partition_by, sorted_by)
    meta = "__ducklake_metadata_lake"
    daily = lake.catalog().table("shop", "daily_revenue").table_id
    assert con.execute(
        f"SELECT c.column_name, p.transform FROM {meta}.ducklake_partition_column p "
        f"JOIN {meta}.ducklake_column c USING (table_id, column_id) WHERE table_id = {daily}"
    ).fetchall() == [("order_date", "month")]
    assert con.execute(
        f"SELECT expression, sort_direction FROM {meta}.ducklake_sort_expression "
        f"WHERE table_id = {daily}"
    ).fetchall() == [("order_date", "ASC")]
    con.close()

    # dbt docs generate: every relation in the catalog, tables with row counts
    docs = _dbt(project, "docs", "generate")
    assert docs.success, docs.exception
    catalog = json.loads((project / "target" / "catalog.json").read_text())
    found = {
        f"{n['metadata']['schema']}.{n['metadata']['name']}": n
        for group in ("nodes", "sources")
        for n in catalog[group].values()
    }
    assert set(found) == set(RELATIONS)
    assert found["shop.customer_revenue"]["stats"]["rows"]["value"] == len(
        sql.query("SELECT * FROM shop.customer_revenue").collect()
    )
    assert found["shop.stg_orders"]["metadata"]["type"] == "VIEW"
    assert found["shop.daily_revenue"]["metadata"]["comment"].startswith("Revenue per day")

    # new orders arrive; a placed order ships
    orders = project / "seeds" / "orders.csv"
    text = orders.read_text().replace(
        "1005,4,230.00,2026-01-07 08:05:00,placed", "1005,4,230.00,2026-01-07 08:05:00,shipped"
    )
    orders.write_text(text + "1009,3,55.00,2026-01-11 10:00:00,placed\n")
    # and a customer moves up a tier (the README's second edit, in the same build)
    customers = project / "seeds" / "customers.csv"
    customers.write_text(customers.read_text().replace("4,Dana,US,bronze", "4,Dana,US,silver"))
    before = lake.latest_snapshot().snapshot_id
    _build(project)
    table = lake.catalog().table("shop", "orders_incremental")
    tid = str(table.table_id)
    commits = [s for s in lake.snapshots(since=before) if any(c.value == tid for c in s.changes)]
    assert len(commits) == 1, [(s.commit_message, s.changes) for s in commits]
    changes = sql.query(
        f"SELECT change_type, order_id, status FROM table_changes('shop.orders_incremental', "
        f"{commits[0].snapshot_id}, {commits[0].snapshot_id})"
    )
    rows = {(r.change_type, r.order_id, r.status) for r in changes.collect()}
    assert ("insert", 1009, "placed") in rows
    assert ("update_postimage", 1005, "shipped") in rows
    assert not any(t == "insert" and oid != 1009 for t, oid, _ in rows), rows

    # the CDC snapshot closed 1005's placed version at that commit and added the new ones
    history = sql.query(
        "SELECT order_id, status, dbt_valid_to IS NULL AS current FROM "
        "shop_history.orders_history WHERE order_id IN (1005, 1009)"
    )
    assert sorted(tuple(r) for r in history.collect()) == [
        (1005, "placed", False),
        (1005, "shipped", True),
        (1009, "placed", True),
    ]
    closed = sql.query("SELECT max(dbt_valid_to) AS closed FROM shop_history.orders_history")
    [(closed_at,)] = python_rows(closed.collect(), closed.schema)  # aware UTC, whatever TZ
    assert closed_at == commits[0].snapshot_time

    # the `check` snapshot of customers moved on: Dana's bronze version closed
    dana = sql.query(
        "SELECT tier, dbt_valid_to IS NULL AS current FROM shop_history.customers_snapshot "
        "WHERE customer_id = 4"
    )
    assert sorted(tuple(r) for r in dana.collect()) == [("bronze", False), ("silver", True)]
