"""Property: random histories of inserts (small ones get inlined, large ones become files),
column add / rename / drop / promote, and partition and sort changes, applied to twin
lakes — one by DuckDB alone, one by this engine — leave equal contents at every
snapshot, whether DuckDB or this scan reads them."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dbt.adapters.ducklake.lake import ColumnSpec, Lake
from dbt.adapters.ducklake.spark.engine import insert_into
from dbt.adapters.ducklake.spark.scan import scan_table
from tests import duck
from tests.canon import canon_rows
from tests.spark.test_roundtrip import _spark_rows
from tests.spark.twins import BACKENDS, examples, fresh_root, our_catalog, twin_settings

SQL_TYPES = {"int32": "INTEGER", "int64": "BIGINT", "varchar": "VARCHAR", "float64": "DOUBLE"}
SPARK_TYPES = {"int32": "int", "int64": "bigint", "varchar": "string", "float64": "double"}
ARROW = {"int32": pa.int32(), "int64": pa.int64(), "varchar": pa.string(), "float64": pa.float64()}


@dataclass
class Model:
    columns: list[tuple[str, str]] = field(
        default_factory=lambda: [("id", "int64"), ("a", "int32"), ("s", "varchar")]
    )
    next_id: int = 0
    counter: int = 0
    partitioned: str | None = None


def _value(type_name: str, rng: random.Random) -> object:
    if rng.random() < 0.15:
        return None
    if type_name == "int32":
        return rng.randint(-1000, 1000)
    if type_name == "int64":
        return rng.randint(-(10**12), 10**12)
    if type_name == "float64":
        return rng.choice([0.5, -2.25, 1e10, rng.random()])
    return rng.choice(["", "x", "ü, 'q'", "long " * 3]) + str(rng.randint(0, 9))


ops = st.lists(
    st.one_of(
        st.tuples(st.just("insert"), st.sampled_from([2, 25]), st.integers(0, 10**6)),
        st.tuples(st.just("add"), st.sampled_from(["int32", "varchar", "float64"]), st.none()),
        st.tuples(st.just("rename"), st.none(), st.none()),
        st.tuples(st.just("drop"), st.none(), st.none()),
        st.tuples(st.just("promote"), st.none(), st.none()),
        st.tuples(st.just("partition"), st.sampled_from(["a", "bucket", "reset"]), st.none()),
        st.tuples(st.just("sort"), st.sampled_from(["id", "reset"]), st.none()),
    ),
    min_size=3,
    max_size=6,
).map(lambda xs: [("insert", 25, 1), *xs, ("insert", 2, 2)])


def _apply(op, model: Model, con, lake: Lake, spark) -> bool:
    """Apply one operation to both lakes; False when it does not apply to this model."""
    kind, arg, seed = op
    names = [n for n, _ in model.columns]
    others = [n for n in names if n != "id"]
    if kind == "insert":
        rng = random.Random(seed)
        rows = []
        for _ in range(arg):
            rows.append(tuple([model.next_id] + [_value(t, rng) for _, t in model.columns[1:]]))
            model.next_id += 1
        table = pa.table(
            {n: pa.array([r[i] for r in rows], ARROW[t]) for i, (n, t) in enumerate(model.columns)}
        )
        con.register("src", table)
        con.execute("INSERT INTO dl.main.t SELECT * FROM src")
        con.unregister("src")
        ddl = ", ".join(f"`{n}` {SPARK_TYPES[t]}" for n, t in model.columns)
        insert_into(lake, "main", "t", spark.createDataFrame(rows, ddl))
        return True
    with lake.transaction() as tx:
        t = tx.table("main", "t")
        model.counter += 1
        if kind == "add":
            name = f"c{model.counter}"
            con.execute(f"ALTER TABLE dl.main.t ADD COLUMN {name} {SQL_TYPES[arg]}")
            tx.add_column(t, ColumnSpec(name, arg))
            model.columns.append((name, arg))
        elif kind == "rename" and others:
            old = others[0]
            new = f"r{model.counter}"
            con.execute(f"ALTER TABLE dl.main.t RENAME {old} TO {new}")
            tx.rename_column(t, old, new)
            model.columns = [(new if n == old else n, ty) for n, ty in model.columns]
            if model.partitioned == old:
                model.partitioned = new
        elif kind == "drop" and len(others) > 1 and others[-1] != model.partitioned:
            victim = others[-1]
            con.execute(f"ALTER TABLE dl.main.t DROP COLUMN {victim}")
            tx.drop_column(t, victim)
            model.columns = [(n, ty) for n, ty in model.columns if n != victim]
        elif kind == "promote" and any(ty == "int32" for _, ty in model.columns):
            name = next(n for n, ty in model.columns if ty == "int32")
            con.execute(f"ALTER TABLE dl.main.t ALTER {name} SET TYPE BIGINT")
            tx.alter_column_type(t, name, "int64")
            model.columns = [(n, "int64" if n == name else ty) for n, ty in model.columns]
        elif kind == "partition":
            if arg == "reset":
                con.execute("ALTER TABLE dl.main.t RESET PARTITIONED BY")
                tx.reset_partitioned_by(t)
                model.partitioned = None
            elif arg == "bucket":
                con.execute("ALTER TABLE dl.main.t SET PARTITIONED BY (bucket(4, id))")
                tx.set_partitioned_by(t, [("id", "bucket(4)")])
                model.partitioned = None
            else:
                col = others[0] if others else None
                if col is None:
                    return False
                con.execute(f"ALTER TABLE dl.main.t SET PARTITIONED BY ({col})")
                tx.set_partitioned_by(t, [(col, "identity")])
                model.partitioned = col
        elif kind == "sort":
            if arg == "reset":
                con.execute("ALTER TABLE dl.main.t RESET SORTED BY")
                tx.reset_sorted_by(t)
            else:
                con.execute("ALTER TABLE dl.main.t SET SORTED BY (id DESC NULLS LAST)")
                tx.set_sorted_by(t, [("id", "DESC", "NULLS_LAST")])
        else:
            model.counter -= 1
            return False
    return True


@pytest.mark.slow  # hypothesis histories: left out of --fast
@pytest.mark.parametrize("backend", BACKENDS)
@twin_settings(max_examples=examples(4, 18))
@given(history=ops)
def test_twin_lakes_agree_at_every_snapshot(spark, tmp_path, backend, history) -> None:
    root = fresh_root(tmp_path)
    with our_catalog(backend, root) as (metadata, attach):
        _run_twins(spark, root, metadata, attach, history)


def _run_twins(spark, root, metadata: str, attach: str, history) -> None:
    con = duck.connect()
    duck.attach(con, f"sqlite:{root}/duck.sqlite", alias="dl", data_path=str(root / "dd"))
    con.execute("CREATE TABLE dl.main.t (id BIGINT, a INTEGER, s VARCHAR)")
    lake = Lake.open(metadata, data_path=str(root / "od"))
    with lake.transaction() as tx:
        tx.create_table(
            "main",
            "t",
            [ColumnSpec("id", "int64"), ColumnSpec("a", "int32"), ColumnSpec("s", "varchar")],
        )
    theirs = Lake.open(f"sqlite:///{root}/duck.sqlite")
    model = Model()
    steps: list[tuple[int, int]] = []
    for op in history:
        if _apply(op, model, con, lake, spark):
            steps.append((theirs.latest_snapshot().snapshot_id, lake.latest_snapshot().snapshot_id))
    duck.attach(con, attach, alias="ol")
    for their_snap, our_snap in steps:
        duck_on_duck = con.execute(f"SELECT * FROM dl.main.t AT (VERSION => {their_snap})")
        expected = canon_rows(duck_on_duck.fetchall())
        duck_on_ours = con.execute(f"SELECT * FROM ol.main.t AT (VERSION => {our_snap})")
        assert canon_rows(duck_on_ours.fetchall()) == expected, (history, our_snap)
        ours_scan = _spark_rows(scan_table(spark, lake, "main", "t", at=our_snap))
        assert canon_rows(ours_scan) == expected, (history, our_snap)
        their_scan = _spark_rows(scan_table(spark, theirs, "main", "t", at=their_snap))
        assert canon_rows(their_scan) == expected, (history, their_snap)
    con.close()
