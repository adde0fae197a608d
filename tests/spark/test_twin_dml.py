"""Property: random histories of INSERT / DELETE / UPDATE / MERGE — keys with duplicates
and NULLs, every MERGE clause form — run here on one lake and by DuckDB on a twin give
identical contents at every snapshot. DuckDB runs the MERGE forms it supports itself;
for the others (several actions, NOT MATCHED BY SOURCE) a plain Spark query over temp
views is the oracle and the twin gets its result. On our lake, DuckDB reads the same rows
and row ids as this engine, UPDATE keeps row ids, and `table_changes` equals DuckDB's."""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.scan import scan_table
from dbt.adapters.ducklake.spark.sql import LakeSQL
from tests import duck
from tests.canon import canon_rows
from tests.spark.test_roundtrip import _spark_rows
from tests.spark.twins import BACKENDS, examples, fresh_root, our_catalog, twin_settings
from tests.spark.victims import WAYS, victims_staged_by

KEYS = 8  # few keys, so inserts repeat them

# MERGE forms DuckDB runs itself: (clauses, DuckDB's spelling when it differs)
DUCK_MERGES = [
    "WHEN MATCHED THEN UPDATE SET v = s.v, n = t.n + s.n WHEN NOT MATCHED THEN INSERT *",
    "WHEN MATCHED AND s.n > 2 THEN DELETE",
    "WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED AND s.n % 2 = 0 THEN INSERT *",
    "WHEN NOT MATCHED THEN INSERT (k, v, n) VALUES (s.k, 'new', 0)",
]
# forms only this engine runs; a Spark query over temp views `tgt` and `src` says the result
ORACLE_MERGES = [
    (
        "WHEN MATCHED AND s.n > 2 THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT *",
        """SELECT t.k, coalesce(m.v, t.v) AS v, t.n FROM tgt t
           LEFT JOIN src m ON t.k = m.k WHERE m.k IS NULL OR m.n <= 2
           UNION ALL SELECT s.k, s.v, s.n FROM src s
           WHERE NOT EXISTS (SELECT 1 FROM tgt t WHERE t.k = s.k)""",
    ),
    (
        "WHEN MATCHED THEN UPDATE SET n = s.n "
        "WHEN NOT MATCHED BY SOURCE AND t.n < 3 THEN DELETE "
        "WHEN NOT MATCHED BY SOURCE THEN UPDATE SET v = 'orphan'",
        """SELECT t.k, CASE WHEN m.k IS NULL THEN 'orphan' ELSE t.v END AS v,
                  coalesce(m.n, t.n) AS n
           FROM tgt t LEFT JOIN src m ON t.k = m.k
           WHERE m.k IS NOT NULL OR NOT (t.n < 3)""",
    ),
]

# every statement form once per history, in an order and with values hypothesis picks
FORMS = [
    ("insert", 3),
    ("insert", 30),
    ("delete", None),
    ("delete", None),
    ("update", None),
    ("update", None),
    *[("merge", i) for i in range(len(DUCK_MERGES))],
    *[("oracle", i) for i in range(len(ORACLE_MERGES))],
]


def _history(order: list[int], seeds: list[int]) -> list[tuple[str, int, int]]:
    steps = [("insert", 30, 1), ("insert", 3, 2)]
    for i, seed in zip(order, seeds, strict=True):
        kind, arg = FORMS[i]
        if arg is None:  # a key to DELETE / UPDATE by; -1 means the NULL key
            arg = seed % (KEYS + 1) - 1
        steps.append((kind, arg, seed))
    return steps


ops = st.builds(
    _history,
    st.permutations(range(len(FORMS))),
    st.lists(st.integers(0, 10**6), min_size=len(FORMS), max_size=len(FORMS)),
)


def _key(rng: random.Random) -> str:
    return "NULL" if rng.random() < 0.15 else str(rng.randrange(KEYS))


def _rows_sql(rng: random.Random, count: int) -> str:
    rows = [f"({_key(rng)}, 'v{rng.randrange(100)}', {rng.randrange(6)})" for _ in range(count)]
    return ", ".join(rows)


def _source(rng: random.Random) -> str:
    """A MERGE source: distinct non-NULL keys (a target row meets at most one source row)
    plus a NULL-keyed row, which never matches."""
    keys = rng.sample(range(KEYS + 3), 4)
    rows = [f"({k}, 's{k}', {rng.randrange(6)})" for k in keys] + ["(NULL, 'snull', 4)"]
    return f"SELECT * FROM (VALUES {', '.join(rows)}) AS x(k, v, n)"


def _where(arg: int) -> str:
    return "k IS NULL" if arg < 0 else f"k = {arg}"


def _apply(op, sql: LakeSQL, con, spark) -> str:
    kind, arg, seed = op
    rng = random.Random(seed)
    if kind == "insert":
        statement = f"INSERT INTO t VALUES {_rows_sql(rng, arg)}"
        sql.execute(statement)
        con.execute(statement)
    elif kind == "delete":
        statement = f"DELETE FROM t WHERE {_where(arg)} OR n = {rng.randrange(6)}"
        sql.execute(statement)
        con.execute(statement)
    elif kind == "update":
        before = _rowids(spark, sql)
        statement = f"UPDATE t SET v = concat(v, 'u'), n = n + 1 WHERE {_where(arg)}"
        sql.execute(statement)
        con.execute(statement)
        assert _rowids(spark, sql) == before, "UPDATE must keep row ids"
    elif kind == "merge":
        source = _source(rng)
        merge = f"MERGE INTO t USING ({source}) s ON t.k = s.k {DUCK_MERGES[arg]}"
        sql.execute(merge)
        con.execute(merge.replace("UPDATE SET *", "UPDATE SET v = s.v, n = s.n"))
    else:
        clauses, oracle = ORACLE_MERGES[arg]
        source = _source(rng)
        sql.query("SELECT * FROM t").createOrReplaceTempView("tgt")  # before the MERGE
        spark.sql(source).createOrReplaceTempView("src")
        expected = spark.sql(oracle).collect()  # tiny test tables
        sql.execute(f"MERGE INTO t USING ({source}) s ON t.k = s.k {clauses}")
        con.execute("BEGIN")
        con.execute("DELETE FROM t")
        if expected:
            values = ", ".join(
                "(" + ", ".join(_literal(x) for x in (r.k, r.v, r.n)) + ")" for r in expected
            )
            con.execute(f"INSERT INTO t VALUES {values}")
        con.execute("COMMIT")
    return kind


def _literal(value: object) -> str:
    if value is None:
        return "NULL"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return str(value)


def _rowids(spark, sql: LakeSQL) -> list[int]:
    lake = sql.lake
    return sorted(r.rowid for r in scan_table(spark, lake, "main", "t", lineage=True).collect())


@pytest.mark.slow  # hypothesis histories: left out of --fast
@pytest.mark.parametrize("backend", BACKENDS)
@twin_settings(max_examples=examples(1, 6))
@given(history=ops, way=st.sampled_from(WAYS))
def test_dml_twins_agree(spark, tmp_path, backend, history, way) -> None:
    root = fresh_root(tmp_path)
    with our_catalog(backend, root) as (metadata, attach), victims_staged_by(way):
        _run_twins(spark, root, metadata, attach, history)


def _run_twins(spark, root, metadata: str, attach: str, history) -> None:
    con = duck.connect()
    duck.attach(con, f"sqlite:{root}/duck.sqlite", alias="dl", data_path=str(root / "dd"))
    con.execute("USE dl")
    con.execute("CREATE TABLE t (k INTEGER, v VARCHAR, n INTEGER)")
    lake = Lake.open(metadata, data_path=str(root / "od"))
    sql = LakeSQL(spark, lake)
    sql.execute("CREATE TABLE t (k INT, v STRING, n INT)")
    theirs = Lake.open(f"sqlite:///{root}/duck.sqlite")
    steps = []
    for op in history:
        kind = _apply(op, sql, con, spark)
        steps.append(
            (kind, theirs.latest_snapshot().snapshot_id, lake.latest_snapshot().snapshot_id)
        )
    con.execute("USE memory")
    duck.attach(con, attach, alias="ol")
    for kind, their_snap, our_snap in steps:
        expected = canon_rows(
            con.execute(f"SELECT * FROM dl.t AT (VERSION => {their_snap})").fetchall()
        )
        on_ours = con.execute(f"SELECT rowid, * FROM ol.t AT (VERSION => {our_snap})").fetchall()
        assert canon_rows([r[1:] for r in on_ours]) == expected, (history, kind, our_snap)
        scanned = scan_table(spark, lake, "main", "t", at=our_snap, lineage=True)
        ours = _spark_rows(scanned.select("rowid", "k", "v", "n"))
        assert canon_rows(ours) == canon_rows(on_ours), (history, kind, our_snap)
        feed = f"table_changes('t', {our_snap}, {our_snap})"
        assert canon_rows(_spark_rows(sql.query(f"SELECT * FROM {feed}"))) == canon_rows(
            con.execute(f"SELECT * FROM ol.{feed}").fetchall()
        ), (history, kind, our_snap)
    last = lake.latest_snapshot().snapshot_id
    whole = f"table_changes('t', 1, {last})"
    assert canon_rows(_spark_rows(sql.query(f"SELECT * FROM {whole}"))) == canon_rows(
        con.execute(f"SELECT * FROM ol.{whole}").fetchall()
    )
    con.close()
