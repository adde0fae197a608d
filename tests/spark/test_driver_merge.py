"""A MERGE whose source the driver holds, decided on the driver, leaves what DuckDB's
own MERGE leaves on a twin of the lake (or, for a form DuckDB does not run, what Spark's
path leaves): over files DuckDB or this engine wrote, with delete files, inlined
deletes, rows an UPDATE moved (stored row ids) and inlined rows. Forms the driver
cannot decide go to Spark and agree too."""

from __future__ import annotations

import logging
import shutil

import pytest

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark import driver_merge
from dbt.adapters.ducklake.spark.errors import MergeError
from dbt.adapters.ducklake.spark.sql import LakeSQL
from tests import duck
from tests.canon import canon_rows


def _rows(first: int, last: int, prefix: str, mod: int) -> str:
    return ", ".join(f"({i}, '{prefix}{i}', {i % mod})" for i in range(first, last))


# the target's history: two files, a delete file, inlined deletes, rows an UPDATE moved to
# a file of their own (stored row ids), inlined rows, a NULL key
HISTORY = [
    "CREATE TABLE t (k INTEGER, v VARCHAR, n INTEGER)",
    f"INSERT INTO t VALUES {_rows(0, 1000, 'v', 5)}",
    f"INSERT INTO t VALUES {_rows(1000, 2000, 'w', 3)}",
    "DELETE FROM t WHERE k % 7 = 0",
    "DELETE FROM t WHERE k IN (1, 2)",
    "UPDATE t SET n = n + 10 WHERE k BETWEEN 100 AND 150",
    "INSERT INTO t VALUES (5000, 'x', 1), (5001, 'y', 3), (NULL, 'nullkey', 1)",
]
# keys: a live file row, a deleted one, an inline-deleted one, moved rows, the second
# file, inlined rows, new keys (one twice), a NULL key
SOURCE = (
    "SELECT * FROM (VALUES (3, 'a', 1), (7, 'b', 3), (1, 'c', 4), (120, 'd', 1), "
    "(121, 'e', 5), (1500, 'f', 0), (5000, 'g', 4), (5001, 'h', 1), (9999, 'i', 2), "
    "(9998, 'j', 3), (9998, 'k', 1), (NULL, 'l', 1)) AS x(k, v, n)"
)
# (clauses, whether the driver decides them); DuckDB runs one UPDATE/DELETE action only
MERGES = [
    (
        "WHEN MATCHED AND s.n > 2 THEN DELETE WHEN MATCHED THEN UPDATE SET v = s.v, n = s.n "
        "WHEN NOT MATCHED THEN INSERT (k, v, n) VALUES (s.k, s.v, s.n)",
        True,
    ),
    (
        "WHEN MATCHED AND s.n > 2 THEN UPDATE SET v = s.v, n = s.n "
        "WHEN NOT MATCHED THEN INSERT (k, v, n) VALUES (s.k, s.v, s.n)",
        True,
    ),
    ("WHEN MATCHED THEN DELETE", True),
    ("WHEN NOT MATCHED AND s.n % 2 = 1 THEN INSERT (k, v, n) VALUES (s.k, 'new', 0)", True),
    ("WHEN MATCHED THEN UPDATE SET k = s.k, v = upper(s.v), n = s.n * 2", True),
    # an UPDATE and an INSERT asking for some values alike (collected once), some not
    (
        "WHEN MATCHED THEN UPDATE SET v = upper(s.v), n = s.n "
        "WHEN NOT MATCHED THEN INSERT (k, v, n) VALUES (s.k, s.v, s.n + 1)",
        True,
    ),
    # a value the target keeps, a value from the target: Spark's path
    (
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT (k, v, n) "
        "VALUES (s.k, s.v, s.n)",
        False,
    ),
    ("WHEN MATCHED THEN UPDATE SET v = s.v, n = t.n + s.n", False),
]


def _data(tmp_path) -> str:
    return str(tmp_path / "data") + "/"


def _twins(tmp_path, writer: str, spark) -> tuple[LakeSQL, object, object]:
    """(our SQL on lake A, DuckDB on A, DuckDB on B): B is a copy of A's catalog over
    the same data files, after HISTORY run by `writer`."""
    a, b, data = tmp_path / "a.sqlite", tmp_path / "b.sqlite", _data(tmp_path)
    con = duck.connect()
    duck.attach(con, f"sqlite:{a}", alias="lake", data_path=data)
    con.execute("USE lake")
    for statement in HISTORY if writer == "duckdb" else HISTORY[:0]:
        con.execute(statement)
    con.close()
    sql = LakeSQL(spark, Lake.open(f"sqlite:///{a}", data_path=data))
    for statement in HISTORY if writer == "ours" else HISTORY[:0]:
        sql.execute(statement)
    shutil.copy(a, b)
    on_a, on_b = duck.connect(), duck.connect()
    duck.attach(on_a, f"sqlite:{a}", alias="lake", data_path=data)
    duck.attach(on_b, f"sqlite:{b}", alias="lake", data_path=data)
    return sql, on_a, on_b


@pytest.mark.parametrize("writer", ["duckdb", "ours"])
@pytest.mark.parametrize(("clauses", "on_driver"), MERGES)
def test_a_small_merge_leaves_what_duckdb_leaves(
    spark, tmp_path, caplog, monkeypatch, writer: str, clauses: str, on_driver: bool
) -> None:
    sql, on_a, on_b = _twins(tmp_path, writer, spark)
    b_sql = LakeSQL(spark, Lake.open(f"sqlite:///{tmp_path}/b.sqlite", data_path=_data(tmp_path)))
    before = on_a.execute("SELECT max(rowid) FROM lake.t").fetchone()[0]
    merge = f"MERGE INTO t USING ({SOURCE}) s ON t.k = s.k {clauses}"
    with caplog.at_level(logging.INFO, logger="dbt.adapters.ducklake.spark"):
        sql.execute(merge)
    decided = any("decided on the driver" in r.getMessage() for r in caplog.records)
    assert decided is on_driver, caplog.text
    if clauses.count("WHEN MATCHED") > 1:  # Spark's path on the twin
        monkeypatch.setattr(driver_merge, "DRIVER_SOURCE_BYTES", -1)
        b_sql.execute(merge)
    else:
        on_b.execute(f"USE lake; {merge}")
    state = "SELECT rowid, k, v, n FROM lake.t"
    ours, theirs = on_a.execute(state).fetchall(), on_b.execute(state).fetchall()
    assert canon_rows([r[1:] for r in ours]) == canon_rows([r[1:] for r in theirs])
    # rows that were there keep their row ids, as DuckDB's keep theirs
    kept = [r for r in ours if r[0] <= before]
    assert canon_rows(kept) == canon_rows([r for r in theirs if r[0] <= before])
    changes = "SELECT change_type, k, v, n FROM lake.table_changes('t', {0}, {0})"
    last_a = on_a.execute("SELECT max(snapshot_id) FROM lake.snapshots()").fetchone()[0]
    last_b = on_b.execute("SELECT max(snapshot_id) FROM lake.snapshots()").fetchone()[0]
    assert canon_rows(on_a.execute(changes.format(last_a)).fetchall()) == canon_rows(
        on_b.execute(changes.format(last_b)).fetchall()
    )
    # and this engine reads what it wrote as DuckDB does
    assert canon_rows([tuple(r) for r in sql.query("SELECT k, v, n FROM t").collect()]) == (
        canon_rows([r[1:] for r in ours])
    )


def test_a_source_held_as_it_is_is_read_without_a_query(spark, tmp_path, monkeypatch) -> None:
    """apply_changes' form: a source the driver holds as it is (a view of a relation),
    plain values and `[NOT] s.flag` conditions: its columns are read from the relation
    (merge_source._read_here), and the MERGE leaves what Spark's path leaves."""
    import pyarrow as pa
    from pyspark.sql import types as T

    from dbt.adapters.ducklake.spark import merge_source

    sql, on_a, on_b = _twins(tmp_path, "ours", spark)
    b_sql = LakeSQL(spark, Lake.open(f"sqlite:///{tmp_path}/b.sqlite", data_path=_data(tmp_path)))
    schema = T.StructType(
        [
            T.StructField("k", T.IntegerType()),
            T.StructField("v", T.StringType()),
            T.StructField("n", T.IntegerType()),
            T.StructField("gone", T.BooleanType()),
        ]
    )
    rows = [(3, "a", 1, True), (4, "b", 2, False), (120, "c", None, None), (9999, "d", 4, False)]
    rows += [(9998, "e", 5, True), (None, "f", 6, False), (5000, None, 7, False)]
    table = pa.table(list(zip(*rows, strict=True)), names=schema.fieldNames())
    spark.createDataFrame(table, schema).createOrReplaceTempView("held_src")  # a relation
    merge = (
        "MERGE INTO t USING held_src AS s ON t.k = s.k WHEN MATCHED AND s.gone THEN DELETE "
        "WHEN MATCHED THEN UPDATE SET v = s.v, n = s.n "
        "WHEN NOT MATCHED AND NOT s.gone THEN INSERT (k, v, n) VALUES (s.k, s.v, s.n)"
    )
    answers: list[object] = []
    real = merge_source._read_here

    def spied(*args: object) -> object:
        answers.append(real(*args))  # type: ignore[arg-type]
        return answers[-1]

    monkeypatch.setattr(merge_source, "_read_here", spied)
    sql.execute(merge)
    assert len(answers) == 1 and isinstance(answers[0], tuple)
    monkeypatch.setattr(driver_merge, "DRIVER_SOURCE_BYTES", -1)  # Spark's path on the twin
    b_sql.execute(merge)
    state = "SELECT k, v, n FROM lake.t"
    ours, theirs = on_a.execute(state).fetchall(), on_b.execute(state).fetchall()
    assert canon_rows(ours) == canon_rows(theirs)
    assert (4, "b", 2) in ours and (9999, "d", 4) in ours and (3, "v3", 3) not in ours


@pytest.mark.parametrize("on_driver", [True, False])
def test_a_target_row_two_source_rows_take_fails_and_commits_nothing(
    spark, tmp_path, monkeypatch, on_driver: bool
) -> None:
    sql, on_a, _ = _twins(tmp_path, "duckdb", spark)
    if not on_driver:
        monkeypatch.setattr(driver_merge, "DRIVER_SOURCE_BYTES", -1)
    files = sorted(p.name for p in (tmp_path / "data").rglob("*.parquet"))
    last = sql.lake.latest_snapshot().snapshot_id
    source = "SELECT * FROM (VALUES (3, 'a', 1), (3, 'b', 2), (9999, 'c', 1)) AS x(k, v, n)"
    with pytest.raises(MergeError, match="matches more than one source row"):
        sql.execute(f"MERGE INTO t USING ({source}) s ON t.k = s.k WHEN MATCHED THEN DELETE")
    assert sql.lake.latest_snapshot().snapshot_id == last
    assert sorted(p.name for p in (tmp_path / "data").rglob("*.parquet")) == files
    assert on_a.execute("SELECT v FROM lake.t WHERE k = 3").fetchall() == [("v3",)]


def test_many_new_rows_are_written_here_from_the_row_groups_that_may_match(
    spark, tmp_path, caplog
) -> None:
    """1,000 source rows (500 updates, 500 inserts: over the inlining limit) over a
    20,000-row target in 1,000-row groups: the driver reads the key column of the group
    the keys' range may hit, writes the new rows as files here, and DuckDB's MERGE on a
    twin agrees."""
    a, b, data = tmp_path / "a.sqlite", tmp_path / "b.sqlite", _data(tmp_path)
    con = duck.connect()
    duck.attach(con, f"sqlite:{a}", alias="lake", data_path=data)
    con.execute("CALL lake.set_option('parquet_row_group_size', 1000)")
    con.execute(
        "CREATE TABLE lake.t AS SELECT CAST(i * 2 AS INTEGER) AS k, 'v' || i AS v, "
        "CAST(i % 5 AS INTEGER) AS n FROM range(20000) r(i) ORDER BY i"
    )
    con.close()
    shutil.copy(a, b)
    sql = LakeSQL(spark, Lake.open(f"sqlite:///{a}", data_path=data))
    # keys 10,000..10,999: the even ones are the target's (one row group), the odd new
    rows = ", ".join(f"({10000 + i}, 'n{i}', {i % 4})" for i in range(1000))
    merge = (
        "MERGE INTO t USING ({}) s ON t.k = s.k WHEN MATCHED THEN UPDATE SET v = s.v, n = s.n "
        "WHEN NOT MATCHED THEN INSERT (k, v, n) VALUES (s.k, s.v, s.n)"
    )
    with caplog.at_level(logging.INFO, logger="dbt.adapters.ducklake.spark"):
        sql.execute(merge.format(f"SELECT * FROM (VALUES {rows}) AS x(k, v, n)"))
    assert "decided on the driver" in caplog.text, caplog.text
    assert "file(s) for main.t on the driver" in caplog.text, caplog.text
    scans = dict(sql.last_scans)
    assert scans["main.t"].rows_read <= 3000, scans["main.t"]  # not the 20,000
    source = (
        "SELECT CAST(10000 + i AS INTEGER) AS k, 'n' || i AS v, i % 4 AS n FROM range(1000) r(i)"
    )
    on_a, on_b = duck.connect(), duck.connect()
    duck.attach(on_a, f"sqlite:{a}", alias="lake", data_path=data)
    duck.attach(on_b, f"sqlite:{b}", alias="lake", data_path=data)
    on_b.execute(f"USE lake; {merge.format(source)}")
    state = "SELECT rowid, k, v, n FROM lake.t"
    ours, theirs = on_a.execute(state).fetchall(), on_b.execute(state).fetchall()
    assert len(ours) == 20500
    assert canon_rows([r[1:] for r in ours]) == canon_rows([r[1:] for r in theirs])
    assert canon_rows([r for r in ours if r[0] < 20000]) == canon_rows(
        [r for r in theirs if r[0] < 20000]
    )
