"""The change feed against DuckDB's: `table_changes` / `table_insertions` /
`table_deletions` on our lake equal DuckDB's on the same lake, and ours on a lake DuckDB
wrote equal DuckDB's there — for every single snapshot and for wider windows, through
inserts (files and inlined), inlined / file / partial deletes, updates (pre/post images),
MERGE, a column added mid-history and a file ended whole."""

from __future__ import annotations

import pytest

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.changes import table_changes
from dbt.adapters.ducklake.spark.errors import ChangeFeedError
from dbt.adapters.ducklake.spark.sql import LakeSQL
from tests import duck
from tests.canon import canon_rows
from tests.conftest import Catalog
from tests.spark.test_roundtrip import _spark_rows

# (ours: Spark SQL through LakeSQL, twin: DuckDB SQL); each is one snapshot
STEPS = [
    ("CREATE TABLE t (id BIGINT, v STRING)", "CREATE TABLE t (id BIGINT, v VARCHAR)"),
    (
        "INSERT INTO t SELECT id, concat('v', id) FROM range(0, 200)",
        "INSERT INTO t SELECT i, 'v' || i FROM range(0, 200) r(i)",
    ),
    (
        "INSERT INTO t VALUES (1000, 'a'), (1001, 'b')",
        "INSERT INTO t VALUES (1000, 'a'), (1001, 'b')",
    ),
    ("DELETE FROM t WHERE id IN (1, 2)", None),
    ("DELETE FROM t WHERE id BETWEEN 10 AND 50", None),
    ("DELETE FROM t WHERE id BETWEEN 60 AND 75", None),
    ("UPDATE t SET v = upper(v) WHERE id BETWEEN 100 AND 120", None),
    ("UPDATE t SET v = 'one' WHERE id = 150", None),
    ("DELETE FROM t WHERE id = 1000", None),
    ("ALTER TABLE t ADD COLUMN n INT", "ALTER TABLE t ADD COLUMN n INTEGER"),
    (
        "INSERT INTO t SELECT id, 'w', CAST(id AS INT) FROM range(300, 330)",
        "INSERT INTO t SELECT i, 'w', i::INTEGER FROM range(300, 330) r(i)",
    ),
    (
        "MERGE INTO t USING (SELECT id, 'm' AS v FROM range(195, 205)) s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT (id, v, n) VALUES (s.id, s.v, 7)",
        "MERGE INTO t USING (SELECT i AS id, 'm' AS v FROM range(195, 205) r(i)) s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT (id, v, n) VALUES (s.id, s.v, 7)",
    ),
    ("DELETE FROM t WHERE id >= 300 AND id < 330", None),
]


def _windows(first: int, last: int) -> list[tuple[int, int]]:
    single = [(s, s) for s in range(first, last + 1)]
    return [*single, (first, last), (first + 3, last - 2)]


def _compare(spark, sql: LakeSQL, con, alias: str, first: int, last: int) -> None:
    for lo, hi in _windows(first, last):
        # every window for table_changes; the wide ones for the two narrower feeds
        feeds = ("changes",) if lo == hi else ("changes", "insertions", "deletions")
        for feed in feeds:
            ours = _spark_rows(sql.query(f"SELECT * FROM table_{feed}('t', {lo}, {hi})"))
            theirs = con.execute(f"SELECT * FROM {alias}.table_{feed}('t', {lo}, {hi})").fetchall()
            assert canon_rows(ours) == canon_rows(theirs), (feed, lo, hi)


@pytest.mark.slow  # every window of a long history: left out of --fast
def test_change_feed_matches_duckdb(spark, catalog: Catalog, tmp_path) -> None:
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    ours = LakeSQL(spark, lake)
    twin_meta = tmp_path / "twin.sqlite"
    con = duck.connect()
    duck.attach(con, f"sqlite:{twin_meta}", alias="twin", data_path=str(tmp_path / "tw"))
    con.execute("USE twin")
    for spark_sql, duck_sql in STEPS:
        ours.execute(spark_sql)
        con.execute(duck_sql or spark_sql)
    con.execute("USE memory")
    con.execute("DETACH twin")
    duck.attach(con, catalog.duckdb_attach, alias="ours")
    duck.attach(con, f"sqlite:{twin_meta}", alias="twin")
    first = 1
    last = lake.latest_snapshot().snapshot_id
    assert last == len(STEPS)
    _compare(spark, ours, con, "ours", first, last)
    if catalog.backend == "sqlite":  # the twin is the same lake either way
        twin = LakeSQL(spark, Lake.open(f"sqlite:///{twin_meta}"))
        _compare(spark, twin, con, "twin", first, last)
    # updated rows appear as pre/post images under their own row id
    kinds = {
        r.change_type: r.n
        for r in ours.query(
            "SELECT change_type, count(*) AS n FROM table_changes('t', 7, 7) GROUP BY 1"
        ).collect()
    }
    assert kinds == {"update_preimage": 21, "update_postimage": 21}


def test_change_feed_bounds_by_time_and_errors(spark, sqlite_catalog: Catalog) -> None:
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    sql = LakeSQL(spark, lake)
    sql.execute("CREATE TABLE t (id BIGINT)")
    sql.execute("INSERT INTO t VALUES (1), (2)")
    second = lake.latest_snapshot()
    sql.execute("DELETE FROM t WHERE id = 1")
    third = lake.latest_snapshot()
    by_time = sql.query(
        f"SELECT snapshot_id, change_type, id FROM table_changes('main.t', "
        f"TIMESTAMP '{second.snapshot_time.isoformat()}', current_timestamp())"
    )
    assert sorted(tuple(r) for r in by_time.collect()) == [
        (second.snapshot_id, "insert", 1),
        (second.snapshot_id, "insert", 2),
        (third.snapshot_id, "delete", 1),
    ]
    with pytest.raises(ChangeFeedError, match="accepted changes, insertions, deletions"):
        table_changes(spark, lake, "main", "t", 1, 2, feed="updates")
    with pytest.raises(ChangeFeedError, match="is after end"):
        table_changes(spark, lake, "main", "t", 3, 2)
