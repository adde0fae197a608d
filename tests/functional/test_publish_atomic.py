"""`publish: atomic` (write-audit-publish), judged by DuckDB on SQLite and PostgreSQL.

One project — two seeds, a view, a table, an incremental MERGE model with
`on_schema_change`, a check snapshot and tests, `threads: 4` — goes through:
1. a first atomic build (the lake is empty): one snapshot holds everything;
2. new data that fails a warn-severity test under `--warn-error`: nothing is published,
   the latest snapshot, every relation and the files on disk are as before;
3. the same build on fixed data, while a DuckDB process polls the lake every 200 ms:
   exactly one new snapshot, relations as a per_node build leaves them, and the poller
   only ever saw the state before or the state after;
4. another writer (DuckDB, from a Python model mid-build) inserts into an unrelated
   table: the publish succeeds and keeps both;
5. another writer deletes from the table the build merges into: the publish fails with
   a conflict naming that table, and nothing of the build is published.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dbt.adapters.factory import reset_adapters
from dbt.cli.main import dbtRunner

from dbt.adapters.ducklake.lake import Lake
from tests import duck
from tests.conftest import Catalog
from tests.dbt_process import write_profile

pytestmark = pytest.mark.usefixtures("without_json_artifacts")  # reads no dbt JSON artifact

SCHEMA = "wap"
RELATIONS = {  # relation -> columns compared (snapshots: not their timestamps)
    "orders": "*",
    "customers": "*",
    "orders_v": "*",
    "customer_totals": "*",
    "orders_inc": "*",
    "customers_snap": "customer_id, name, tier, dbt_valid_to IS NULL AS current",
}
OTHER = "other_writer_target"  # the unrelated table another writer inserts into


def _orders(count: int, changed: int, negative: int | None = None) -> str:
    """More rows than DuckLake inlines (10), so builds write Parquet files."""
    rows = ["order_id,customer_id,amount"]
    for i in range(1, count + 1):
        amount = -5 if i == negative else i * 10 + (1 if i <= changed else 0)
        rows.append(f"{i},{i % 3 + 1},{amount}")
    return "\n".join(rows) + "\n"


ORDERS = {
    1: _orders(30, 0),
    2: _orders(40, 5, negative=36),  # a negative amount: the warn-severity test fails
    3: _orders(40, 5),
}
CUSTOMERS = {
    1: "customer_id,name,tier\n1,ann,gold\n2,bob,silver\n3,cy,silver\n",
    2: "customer_id,name,tier\n1,ann,gold\n2,bob,gold\n3,cy,silver\n",
}

MODELS = {
    "orders_v.sql": "{{ config(materialized='view') }}\n"
    "select order_id, customer_id, amount from {{ ref('orders') }} where amount <> 0",
    "customer_totals.sql": "{{ config(materialized='table') }}\n"
    "select c.customer_id, c.name, coalesce(sum(o.amount), 0) as total "
    "from {{ ref('customers') }} c left join {{ ref('orders_v') }} o "
    "on o.customer_id = c.customer_id group by c.customer_id, c.name",
    "orders_inc.sql": "{{ config(materialized='incremental', unique_key='order_id', "
    "incremental_strategy='merge', on_schema_change='append_new_columns') }}\n"
    "select order_id, customer_id, amount"
    "{% if var('round') >= 2 %}, amount * 2 as doubled{% endif %} from {{ ref('orders') }}",
    "writer.py": '''
import os


def model(dbt, session):
    """Another writer commits to the real lake while this build runs."""
    dbt.config(materialized="table")
    action = os.environ.get("WAP_OTHER_WRITE", "")
    if action:
        from tests import duck

        kind, attach = action.split("|", 1)
        con = duck.connect()
        duck.attach(con, attach)
        if kind == "unrelated":
            con.execute("INSERT INTO lake.wap_other.other_writer_target VALUES (2)")
        else:
            con.execute("DELETE FROM lake.wap.orders_inc WHERE order_id = 1")
        con.close()
    return session.createDataFrame([(1,)], "x int")
''',
    "schema.yml": """
version: 2
models:
  - name: orders_inc
    columns:
      - name: order_id
        data_tests: [unique, not_null]
  - name: customer_totals
    data_tests:
      - dbt_utils_free_positive:
          config: {severity: warn}
""",
}
TESTS = {
    "generic/positive.sql": "{% test dbt_utils_free_positive(model) %}\n"
    "select * from {{ ref('orders') }} where amount < 0\n{% endtest %}\n",
}
SNAPSHOT = """
{% snapshot customers_snap %}
{{ config(target_schema='wap', unique_key='customer_id', strategy='check',
          check_cols=['name', 'tier']) }}
select * from {{ ref('customers') }}
{% endsnapshot %}
"""


def _project(root: Path, catalog: Catalog, publish: str) -> Path:
    root.mkdir(parents=True)
    for sub in ("models", "seeds", "snapshots", "tests/generic"):
        (root / sub).mkdir(parents=True, exist_ok=True)
    (root / "dbt_project.yml").write_text(
        'name: wap\nversion: "1.0"\nprofile: wap\nvars:\n  round: 1\n'
        "seeds:\n  wap:\n    orders:\n      +column_types: {amount: bigint}\n"
    )
    for name, text in MODELS.items():
        (root / "models" / name).write_text(text)
    for name, text in TESTS.items():
        (root / "tests" / name).write_text(text)
    (root / "snapshots" / "customers_snap.sql").write_text(SNAPSHOT)
    write_profile(
        root,
        "wap",
        metadata=catalog.metadata,
        data_path=catalog.data_path,
        schema=SCHEMA,
        threads=4,
        publish=publish,
        author="wap-test",
    )
    return root


def _data(project: Path, round_: int) -> None:
    (project / "seeds" / "orders.csv").write_text(ORDERS[round_])
    (project / "seeds" / "customers.csv").write_text(CUSTOMERS[min(round_, 2)])


def _build(project: Path, round_: int, *extra: str) -> tuple[bool, list[str]]:
    """`dbt build` in this process (the suite's SparkSession); dbt's log lines."""
    lines: list[str] = []
    _data(project, round_)
    result = dbtRunner(callbacks=[lambda e: lines.append(e.info.msg)]).invoke(
        [
            "build",
            *extra,
            "--vars",
            json.dumps({"round": round_}),
            "--project-dir",
            str(project),
            "--profiles-dir",
            str(project),
        ]
    )
    if result.exception is not None and not isinstance(result.exception, Exception):
        raise result.exception
    return bool(result.success), lines


def _show(project: Path, sql: str) -> list[tuple[Any, ...]]:
    """`dbt show --inline` (never staged: it reads the published lake)."""
    args = ["show", "--inline", sql, "--project-dir", str(project), "--profiles-dir", str(project)]
    result = dbtRunner().invoke([*args, "--vars", json.dumps({"round": 3})])
    assert result.success, result.exception
    return [tuple(row) for row in result.result.results[0].agate_table.rows]


def _read(catalog: Catalog) -> dict[str, list[tuple[Any, ...]]]:
    """Every relation as DuckDB reads it from a fresh attach (the latest snapshot), in
    one DuckDB transaction: one snapshot for every query."""
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    con.execute("BEGIN TRANSACTION")
    out = {"__snapshot__": con.execute("SELECT max(snapshot_id) FROM lake.snapshots()").fetchall()}
    for name, cols in RELATIONS.items():
        out[name] = sorted(con.execute(f"SELECT {cols} FROM lake.{SCHEMA}.{name}").fetchall())
    con.execute("COMMIT")
    con.close()
    return out


def _files(catalog: Catalog) -> set[str]:
    return {str(p) for p in Path(catalog.data_path).rglob("*") if p.is_file()}


@pytest.fixture(autouse=True)
def _forget_this_modules_adapter() -> Iterator[None]:
    """dbt keeps one adapter per type in the process, and dbt-tests-adapter's project
    fixture registers its own only when none is registered: a later test class on this
    worker would otherwise run its setup SQL with this module's profile (schema `wap`)."""
    yield
    reset_adapters()


@pytest.fixture(scope="module")
def per_node_states(tmp_path_factory) -> dict[int, dict[str, list[tuple[Any, ...]]]]:
    """What per_node builds of rounds 1 and 3 leave, as DuckDB reads it (the reference)."""
    root = tmp_path_factory.mktemp("per_node")
    path = str(root / "meta.sqlite")
    catalog = Catalog("sqlite", f"sqlite:///{path}", f"sqlite:{path}", str(root / "data") + "/")
    project = _project(root / "project", catalog, "per_node")
    states = {}
    for round_ in (1, 3):
        ok, lines = _build(project, round_)
        assert ok, "\n".join(lines)
        states[round_] = {k: v for k, v in _read(catalog).items() if k != "__snapshot__"}
    return states


class Poller:
    """A DuckDB process that reads the lake every 200 ms until stopped."""

    def __init__(self, catalog: Catalog, out: Path):
        self.out, self.stop = out, out.with_suffix(".stop")
        script = (
            "import json, sys, time\n"
            "from pathlib import Path\n"
            "from tests.functional.test_publish_atomic import _read\n"
            "from tests.conftest import Catalog\n"
            "cat = Catalog(*json.loads(sys.argv[1]))\n"
            "out, stop = Path(sys.argv[2]), Path(sys.argv[3])\n"
            "while not stop.exists():\n"
            "    with out.open('a') as f:\n"
            "        f.write(json.dumps(_read(cat), default=str) + '\\n')\n"
            "    time.sleep(0.2)\n"
        )
        args = json.dumps(
            [catalog.backend, catalog.metadata, catalog.duckdb_attach, catalog.data_path]
        )
        self.process = subprocess.Popen(
            [sys.executable, "-c", script, args, str(out), str(self.stop)],
            cwd=Path(__file__).parents[2],
        )

    def wait_for(self, polls: int) -> None:
        deadline = time.monotonic() + 60
        while len(self.states()) < polls:
            assert self.process.poll() is None, "the poller died"
            assert time.monotonic() < deadline, "the poller does not poll"
            time.sleep(0.1)

    def states(self) -> list[str]:
        return self.out.read_text().splitlines() if self.out.exists() else []

    def finish(self) -> list[str]:
        self.stop.touch()
        assert self.process.wait(timeout=60) == 0
        return self.states()


def _as_polled(state: dict[str, Any]) -> str:
    return json.dumps(state, default=str)


def _stage_leftovers(catalog: Catalog) -> list[str]:
    if catalog.backend == "sqlite":
        folder = Path(catalog.metadata.removeprefix("sqlite:///")).parent
        return [p.name for p in folder.iterdir() if ".stage-" in p.name]
    con = duck.connect()
    con.execute(f"ATTACH '{catalog.duckdb_attach.removeprefix('postgres:')}' AS pg (TYPE postgres)")
    rows = con.execute(
        "SELECT schema_name FROM pg.information_schema.schemata "
        "WHERE schema_name LIKE 'ducklake_stage_%'"
    ).fetchall()
    con.close()
    return [r[0] for r in rows]


@pytest.fixture
def project(catalog: Catalog, tmp_path: Path) -> Iterator[Path]:
    yield _project(tmp_path / "project", catalog, "atomic")
    os.environ.pop("WAP_OTHER_WRITE", None)


@pytest.mark.slow  # four builds and a polling DuckDB process: left out of --fast
def test_atomic_build_publishes_once_or_not_at_all(
    catalog: Catalog, project: Path, tmp_path: Path, per_node_states: dict[int, Any]
) -> None:
    # 1. from an empty lake: one snapshot with every node's changes
    ok, lines = _build(project, 1)
    assert ok, "\n".join(lines)
    first = _read(catalog)
    assert first["__snapshot__"] == [(1,)]
    assert {k: v for k, v in first.items() if k != "__snapshot__"} == per_node_states[1]
    assert _stage_leftovers(catalog) == []

    # 2. a warn-severity test fails under --warn-error: nothing is published
    files_before = _files(catalog)
    ok, lines = _build(project, 2, "--warn-error")
    assert not ok
    said = [line for line in lines if "nothing published" in line]
    assert said and "1 failed" in said[0], "\n".join(lines)
    assert "removed the" in said[0] and "removed the 0 " not in said[0]
    assert _read(catalog) == first
    assert _files(catalog) == files_before  # no new live files, none left behind
    assert _stage_leftovers(catalog) == []

    # 3. fixed data, with a DuckDB reader polling: one new snapshot, before or after only
    poller = Poller(catalog, tmp_path / "polls.jsonl")
    poller.wait_for(2)
    ok, lines = _build(project, 3)
    assert ok, "\n".join(lines)
    after = _read(catalog)
    seen = poller.finish()
    assert after["__snapshot__"] == [(2,)]
    assert {k: v for k, v in after.items() if k != "__snapshot__"} == per_node_states[3]
    assert set(seen) <= {_as_polled(first), _as_polled(after)}, "a reader saw a mixed state"
    assert _as_polled(first) in seen
    lake = Lake.open(catalog.metadata)
    published = lake.snapshots()[-1]
    extra = json.loads(published.commit_extra_info or "{}")
    assert published.commit_message == f"dbt build {extra['invocation_id']}"
    nodes = {n["unique_id"]: n["materialized"] for n in extra["nodes"]}
    assert nodes["model.wap.orders_inc"] == "incremental"
    assert nodes["snapshot.wap.customers_snap"] == "snapshot"
    assert nodes["model.wap.orders_v"] == "view"
    assert nodes["seed.wap.orders"] == "seed"
    assert any(uid.startswith("test.") for uid in nodes)
    # time travel by run: each atomic build is one snapshot
    first_run = json.loads(lake.snapshots()[-2].commit_extra_info or "{}")["invocation_id"]
    lake.close()
    for invocation, rows in ((first_run, 30), (extra["invocation_id"], 40)):
        at = f"{{{{ ducklake_at(ref('orders_inc'), invocation_id='{invocation}') }}}}"
        assert _show(project, f"select count(*) as n from {at}") == [(rows,)]


def test_other_writers_mid_build(catalog: Catalog, project: Path) -> None:
    ok, lines = _build(project, 1)
    assert ok, "\n".join(lines)
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    con.execute("CREATE SCHEMA lake.wap_other")
    con.execute(f"CREATE TABLE lake.wap_other.{OTHER} (x INTEGER)")
    con.execute(f"INSERT INTO lake.wap_other.{OTHER} VALUES (1)")
    con.close()
    before = _read(catalog)

    # 4. an unrelated table changes mid-build: the publish succeeds, both changes stay
    os.environ["WAP_OTHER_WRITE"] = f"unrelated|{catalog.duckdb_attach}"
    ok, lines = _build(project, 3)
    assert ok, "\n".join(lines)
    after = _read(catalog)
    assert after["__snapshot__"][0][0] == before["__snapshot__"][0][0] + 2
    assert after["orders_inc"] != before["orders_inc"]
    assert len(after["orders_inc"]) == 40
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    other = con.execute(f"SELECT x FROM lake.wap_other.{OTHER} ORDER BY x").fetchall()
    assert other == [(1,), (2,)]
    con.close()

    # 5. another writer deletes from the table this build merges into: a conflict
    os.environ["WAP_OTHER_WRITE"] = f"delete|{catalog.duckdb_attach}"
    ok, lines = _build(project, 3)
    assert not ok
    text = "\n".join(lines)
    assert "nothing published" in text and "conflict" in text, text
    assert "wap.orders_inc" in text, text
    final = _read(catalog)
    assert final["__snapshot__"][0][0] == after["__snapshot__"][0][0] + 1  # DuckDB's only
    assert [r for r in final["orders_inc"] if r[0] == 1] == []
    assert _stage_leftovers(catalog) == []


def test_a_failing_on_run_end_hook_publishes_nothing(
    sqlite_catalog: Catalog, tmp_path: Path
) -> None:
    """Hooks are part of the build: on-run-end runs against the copy, before the publish."""
    project = _project(tmp_path / "project", sqlite_catalog, "atomic")
    with (project / "dbt_project.yml").open("a") as f:
        f.write('on-run-end: ["select * from wap.no_such_table"]\n')
    ok, lines = _build(project, 1, "--select", "orders")
    assert not ok
    said = [line for line in lines if "nothing published" in line]
    assert said and "on-run-end" in said[0], "\n".join(lines)
    lake = Lake.open(sqlite_catalog.metadata)
    assert [s.snapshot_id for s in lake.snapshots()] == [0]
    lake.close()
