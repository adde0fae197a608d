"""The change feed of small windows, read on the driver (`driver_changes.py`), equals
Spark's reading of the same windows and DuckDB's `table_changes`: every plain type with
NULLs, NaN and infinities, columns promoted after their files were written (and inlined
FLOAT values read back as DOUBLE), updates by DuckDB and by us, inlined rows. Windows
the driver must not read (a column added after a file, more rows than its bound) go to
Spark, and still equal DuckDB's. Deletion vectors with rows changed again, DuckDB's and
ours, read as DuckDB reads them (test_deletion_vectors.py compares more of their feed)."""

from __future__ import annotations

from typing import Any

import pytest

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark import changes, driver_changes
from dbt.adapters.ducklake.spark.compat import builds_from_arrow
from dbt.adapters.ducklake.spark.sql import LakeSQL
from tests import duck
from tests.canon import canon_rows
from tests.conftest import Catalog
from tests.spark.test_roundtrip import _spark_rows

COLUMNS = (
    "id BIGINT, i8 TINYINT, i16 SMALLINT, i32 INTEGER, f32 FLOAT, f64 DOUBLE, b BOOLEAN, s VARCHAR"
)
# 300 rows: NULLs in every column but id, NaN and infinities, text beyond ASCII
ROWS = """SELECT i, (i % 200 - 100)::TINYINT, (i * 97 % 60000 - 30000)::SMALLINT,
  CASE WHEN i % 17 = 0 THEN NULL ELSE i * 1000003 END,
  CASE i % 50 WHEN 1 THEN 'nan'::FLOAT WHEN 2 THEN 'inf'::FLOAT ELSE i / 7 END,
  CASE i % 40 WHEN 3 THEN '-inf'::DOUBLE WHEN 4 THEN NULL ELSE i * 1.5 END,
  CASE WHEN i % 11 = 0 THEN NULL ELSE i % 2 = 0 END,
  CASE WHEN i % 13 = 0 THEN NULL ELSE 'ü' || i END
FROM range({lo}, {hi}) r(i)"""


def _attach(con: Any, catalog: Catalog, inlining: int) -> None:
    """(Re)attach the lake as `lake` with that inlining limit, and use it."""
    con.execute("USE memory")
    if con.execute(
        "SELECT count(*) FROM duckdb_databases() WHERE database_name = 'lake'"
    ).fetchone()[0]:
        con.execute("DETACH lake")
    duck.attach(
        con,
        catalog.duckdb_attach,
        data_path=catalog.data_path,
        options=f"DATA_INLINING_ROW_LIMIT {inlining}",
    )
    con.execute("USE lake")


class _Served:
    """Counts the windows the driver read (a wrapper of the real function)."""

    def __init__(self) -> None:
        self.driver = 0
        self.spark = 0
        self.real = changes.feed_on_driver

    def __call__(self, *args: Any) -> Any:
        out = self.real(*args)
        if out is None:
            self.spark += 1
        else:
            self.driver += 1
        return out


def _feeds(sql: LakeSQL, lo: int, hi: int) -> dict[str, list[Any]]:
    return {
        feed: canon_rows(_spark_rows(sql.query(f"SELECT * FROM table_{feed}('t', {lo}, {hi})")))
        for feed in ("changes", "insertions", "deletions")
    }


def _duckdb_feeds(con: Any, lo: int, hi: int) -> dict[str, list[Any]]:
    return {
        feed: canon_rows(con.execute(f"SELECT * FROM table_{feed}('t', {lo}, {hi})").fetchall())
        for feed in ("changes", "insertions", "deletions")
    }


def _compare_every_window(
    spark: Any,
    catalog: Catalog,
    con: Any | None,
    monkeypatch: pytest.MonkeyPatch,
    whole_as_singles: bool = False,
) -> tuple[_Served, int]:
    """Each single snapshot and the whole history: driver = Spark = DuckDB (`con`, or a
    new connection); which path read each feed when the driver may, and how many
    windows there were. `whole_as_singles`: the whole history equals DuckDB's single
    snapshots together (see the test of our vectors)."""
    if con is None:
        con = duck.connect()
        _attach(con, catalog, inlining=0)
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    sql = LakeSQL(spark, lake)
    served = _Served()
    monkeypatch.setattr(changes, "feed_on_driver", served)
    last = lake.latest_snapshot().snapshot_id
    windows = [(s, s) for s in range(2, last + 1)] + [(2, last)]
    singles: dict[str, list[Any]] = {}
    for lo, hi in windows:
        theirs = _duckdb_feeds(con, lo, hi)
        if whole_as_singles and lo != hi:
            theirs = {feed: canon_rows(rows) for feed, rows in singles.items()}
        for feed, rows in theirs.items():
            singles.setdefault(feed, []).extend(rows)
        assert _feeds(sql, lo, hi) == theirs, ("driver", lo, hi)
        with monkeypatch.context() as forced:
            forced.setattr(driver_changes, "DRIVER_FEED_ROWS", -1)
            forced.setattr(changes, "feed_on_driver", served.real)
            assert _feeds(sql, lo, hi) == theirs, ("spark", lo, hi)
    return served, len(windows)


def test_plain_types_promotions_and_vectors_read_alike_on_the_driver(
    spark, sqlite_catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    con = duck.connect()
    _attach(con, sqlite_catalog, inlining=0)
    con.execute(f"CREATE TABLE t ({COLUMNS})")
    con.execute(f"INSERT INTO t {ROWS.format(lo=0, hi=300)}")
    con.execute("UPDATE t SET s = upper(s), f64 = -f64 WHERE id % 9 = 1")
    con.execute("DELETE FROM t WHERE id % 7 = 2")
    _attach(con, sqlite_catalog, inlining=10)
    con.execute(f"INSERT INTO t {ROWS.format(lo=300, hi=303)}")  # inlined
    con.execute("DELETE FROM t WHERE id = 301")  # an inlined row ends
    _attach(con, sqlite_catalog, inlining=0)
    # promoted columns: the older files keep INTEGER and FLOAT
    con.execute("ALTER TABLE t ALTER COLUMN i32 SET TYPE BIGINT")
    con.execute("ALTER TABLE t ALTER COLUMN f32 SET TYPE DOUBLE")
    con.execute("DELETE FROM t WHERE id BETWEEN 40 AND 60")
    con.execute("UPDATE t SET i32 = i32 + 1, b = NOT b WHERE id % 5 = 0")  # some twice
    con.execute("USE memory")
    con.execute("DETACH lake")
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    ours = LakeSQL(spark, lake)
    ours.execute("UPDATE t SET s = concat(s, '!'), i8 = CAST(-i8 AS TINYINT) WHERE id % 4 = 3")
    ours.execute("DELETE FROM t WHERE id BETWEEN 200 AND 230")
    ours.execute("INSERT INTO t SELECT * FROM t WHERE id < 20")
    duck.attach(con, sqlite_catalog.duckdb_attach, data_path=sqlite_catalog.data_path)
    con.execute("USE lake")
    served, windows = _compare_every_window(spark, sqlite_catalog, con, monkeypatch)
    # the driver read every feed of every window (on Spark 4; Spark 3.5 builds no
    # LocalRelation from Arrow), and Spark read each once more
    on_driver = 3 * windows if builds_from_arrow(spark) else 0
    assert (served.driver, served.spark) == (on_driver, 3 * windows - on_driver)


def test_windows_the_driver_must_not_read_go_to_spark(
    spark, sqlite_catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    ours = LakeSQL(spark, lake)
    ours.execute("CREATE TABLE t (id BIGINT, v STRING)")
    ours.execute("INSERT INTO t SELECT id, concat('v', id) FROM range(0, 100)")
    ours.execute("ALTER TABLE t ADD COLUMN n INT")
    ours.execute("UPDATE t SET v = 'x' WHERE id < 10")  # the old file lacks n
    ours.execute("INSERT INTO t SELECT id, 'w', 1 FROM range(300, 500)")
    monkeypatch.setattr(driver_changes, "DRIVER_FEED_ROWS", 150)
    served, windows = _compare_every_window(spark, sqlite_catalog, None, monkeypatch)
    # windows 2..5 and 2-5: the driver read the first insert and the ALTER (no rows);
    # Spark the update (its old file lacks n), the 200-row insert and the whole history
    assert windows == 5
    on_driver = 3 * 2 if builds_from_arrow(spark) else 0
    assert (served.driver, served.spark) == (on_driver, 3 * windows - on_driver)


def test_a_few_changes_to_a_file_with_many_older_deletes_are_read_on_the_driver(
    spark, sqlite_catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A data file's one delete file holds every deletion since the file was written:
    the driver counts the window's own positions, not the file's."""
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    ours = LakeSQL(spark, lake)
    ours.execute("CREATE TABLE t (id BIGINT NOT NULL, v STRING)")
    ours.execute("INSERT INTO t SELECT id, concat('v', id) FROM range(0, 1000)")
    ours.execute("DELETE FROM t WHERE id % 2 = 0")  # 500 positions
    ours.execute("UPDATE t SET v = 'x' WHERE id IN (1, 3, 5, 7, 9)")  # 505 in one file
    monkeypatch.setattr(driver_changes, "DRIVER_FEED_ROWS", 100)
    served, windows = _compare_every_window(spark, sqlite_catalog, None, monkeypatch)
    # windows 2, 3, 4 and 2-4: only the update (5 + 5 rows) is small enough
    assert windows == 4
    on_driver = 3 if builds_from_arrow(spark) else 0
    assert (served.driver, served.spark) == (on_driver, 3 * windows - on_driver)


def test_duckdb_vectors_with_rows_changed_again_read_alike(
    spark, sqlite_catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DuckDB's deletion vectors are cumulative: a file's next vector replaces its
    catalog row, which re-stamps the file's older deletions with the new snapshot. A
    row id that snapshot only deleted (several times) reads as deletes; one it also
    inserted, as DuckDB pairs them: each deletion with each insertion. Every window
    reads as DuckDB reads it."""
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    con = duck.connect()
    _attach(con, sqlite_catalog, inlining=0)
    con.execute("CALL lake.set_option('write_deletion_vectors', true)")
    con.execute("CREATE TABLE t (id BIGINT, v VARCHAR, n INTEGER)")
    con.execute("INSERT INTO t SELECT i, 'v' || i, i % 10 FROM range(0, 400) r(i)")
    con.execute("UPDATE t SET n = n + 100 WHERE id % 10 = 1")
    con.execute("UPDATE t SET v = v || '!' WHERE id % 20 = 1")  # again: moved rows
    con.execute("DELETE FROM t WHERE id % 40 = 1")  # and their end
    con.execute("UPDATE t SET n = -n WHERE id < 50")  # the first file's rows again
    con.execute("DELETE FROM t WHERE id BETWEEN 100 AND 120")  # re-stamps rows 1, 21..
    # 51's first version (in 52's file) is re-stamped beside its second one's deletion
    con.execute("UPDATE t SET n = 7 WHERE id IN (51, 52)")
    twice = "SELECT count(*) FROM table_changes('t', 8, 8) WHERE rowid = 51 AND change_type = ?"
    assert [
        con.execute(twice, [k]).fetchone()[0] for k in ("update_preimage", "update_postimage")
    ] == [2, 2]
    served, windows = _compare_every_window(spark, sqlite_catalog, con, monkeypatch)
    assert windows == 8
    on_driver = 3 * windows if builds_from_arrow(spark) else 0
    assert (served.driver, served.spark) == (on_driver, 3 * windows - on_driver)
    # CDC snapshots apply each change once: the "events" feed, on either path
    bounds = (driver_changes.DRIVER_FEED_ROWS, -1)
    for lo, hi in ((8, 8), (2, 8)):
        once = f"SELECT DISTINCT * FROM table_changes('t', {lo}, {hi})"
        expected = canon_rows(con.execute(once).fetchall())
        for bound in bounds:
            monkeypatch.setattr(driver_changes, "DRIVER_FEED_ROWS", bound)
            events = changes.table_changes(spark, lake, "main", "t", lo, hi, feed="events")
            assert canon_rows(_spark_rows(events)) == expected, (lo, hi, bound)
    assert served.driver == on_driver + (2 if builds_from_arrow(spark) else 0)
    assert lake.latest_snapshot().snapshot_id == 8


def test_our_vectors_with_rows_changed_again_read_alike(
    spark, sqlite_catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same history written by us with deletion vectors: each snapshot's feed, read
    on the driver and by Spark, equals DuckDB's, and the whole history's is those
    together. (Our vectors end their file's older one in the catalog, as delete files
    do, so time travel keeps every deletion; DuckDB's feed of a window spanning several
    of them lists a file's older deletions again with each vector.)"""
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    ours = LakeSQL(spark, lake)
    ours.execute("CALL ducklake_set_option('lake', 'write_deletion_vectors', true)")
    ours.execute("CALL ducklake_set_option('lake', 'data_inlining_row_limit', 0)")
    ours.execute("CREATE TABLE t (id BIGINT, v STRING, n INT)")
    ours.execute("INSERT INTO t SELECT id, concat('v', id), CAST(id % 10 AS INT) FROM range(400)")
    ours.execute("UPDATE t SET n = n + 100 WHERE id % 10 = 1")
    ours.execute("UPDATE t SET v = concat(v, '!') WHERE id % 20 = 1")
    ours.execute("DELETE FROM t WHERE id % 40 = 1")
    ours.execute("UPDATE t SET n = -n WHERE id < 50")
    ours.execute("DELETE FROM t WHERE id BETWEEN 100 AND 120")
    ours.execute("UPDATE t SET n = 7 WHERE id IN (51, 52)")
    served, windows = _compare_every_window(spark, sqlite_catalog, None, monkeypatch, True)
    assert windows == lake.latest_snapshot().snapshot_id  # 2..8 and the whole
    on_driver = 3 * windows if builds_from_arrow(spark) else 0
    assert (served.driver, served.spark) == (on_driver, 3 * windows - on_driver)
