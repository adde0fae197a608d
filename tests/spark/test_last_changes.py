"""apply_changes' last change per key, ranked on the driver when the feed's rows are
there, equals the ranking of the macro's window SQL, and leaves a LocalRelation for the
MERGE; rows Spark computes and keys of other types are left to the SQL."""

from __future__ import annotations

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import types as T

from dbt.adapters.ducklake.spark import last_changes
from dbt.adapters.ducklake.spark.compat import builds_from_arrow
from dbt.adapters.ducklake.spark.last_changes import rank_here

FEED = T.StructType(
    [
        T.StructField("snapshot_id", T.LongType()),
        T.StructField("rowid", T.LongType()),
        T.StructField("change_type", T.StringType()),
        T.StructField("k", T.IntegerType()),
        T.StructField("name", T.StringType()),
        T.StructField("v", T.DoubleType()),
    ]
)
# (snapshot_id, rowid, change_type, k, name, v): every case a key's changes can mix
ROWS = [
    # an update: pre- and postimage in one snapshot; the postimage wins
    (4, 1, "update_preimage", 1, "a", 1.0),
    (4, 1, "update_postimage", 1, "a", 2.0),
    # inserted, then deleted later: the delete wins
    (3, 2, "insert", 2, "b", 3.0),
    (5, 2, "delete", 2, "b", 3.0),
    # deleted and inserted again in one snapshot: the insert wins
    (6, 3, "delete", 3, "c", 4.0),
    (6, 9, "insert", 3, "c", 5.0),
    # two inserts of one key in one snapshot: the higher rowid wins
    (7, 10, "insert", 4, "d", 6.0),
    (7, 11, "insert", 4, "d", 7.0),
    # NULL in a key part: NULLs are one key, as in a window's partition
    (2, 12, "insert", 5, None, 8.0),
    (3, 13, "update_postimage", 5, None, 9.0),
    (3, 13, "update_preimage", 5, None, 8.0),
    (2, 14, "insert", None, None, 10.0),
    (8, 15, "delete", None, None, 10.0),
    # one key part differs: two keys
    (2, 16, "insert", 6, "x", 11.0),
    (2, 17, "insert", 6, "y", 12.0),
    # a change type that is no change type: removed is NULL, as `not (NULL in (...))`
    (9, 18, None, 7, "e", 13.0),
]
KEYS = ["k", "name"]


def _window_sql(feed: str, keys: list[str], by_rowid: bool) -> str:
    """apply_changes.sql's ranking, as its macro renders it."""
    adds = "change_type in ('insert', 'update_postimage')"
    return f"""
        select * from (
          select ducklake_feed.*, not ({adds}) as ducklake_removed,
            row_number() over (
              partition by {", ".join(keys)}
              order by snapshot_id desc, case when {adds} then 1 else 0 end desc
              {", rowid desc" if by_rowid else ""}) as ducklake_change_rank
          from {feed} as ducklake_feed
        ) as ranked
        where ducklake_change_rank = 1"""


def _held_feed(spark: SparkSession, name: str, rows: list[tuple], schema: T.StructType) -> None:
    """A feed as driver_changes hands it over: a LocalRelation from Arrow."""
    raw = pa.table({f.name: [r[i] for r in rows] for i, f in enumerate(schema.fields)})
    raw = raw.cast(pa.schema([(f.name, _ARROW[type(f.dataType)]) for f in schema.fields]))
    spark.createDataFrame(raw, schema).createOrReplaceTempView(name)


def _model(spark: SparkSession, name: str, sql: str) -> None:
    """A model's query over the feed: Spark folds its projection into the rows."""
    spark.sql(f"create or replace temporary view {name} as {sql}")


_ARROW = {T.LongType: pa.int64(), T.IntegerType: pa.int32(), T.StringType: pa.string()}
_ARROW[T.DoubleType] = pa.float64()


def _sorted(rows: list) -> list[tuple]:
    return sorted((tuple(r) for r in rows), key=repr)


@pytest.fixture(params=["jvm", "pyarrow"])
def ranker(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Both rankings: in the driver's JVM (the adapter's classes, which `./dev setup`
    builds) and, without them, with pyarrow. Yields whether each ranking took the JVM."""
    took: list[bool] = []
    in_jvm = last_changes._ranked_in_jvm

    def spy(*args: object) -> object:
        ranked = in_jvm(*args) if request.param == "jvm" else None  # type: ignore[arg-type]
        took.append(ranked is not None)
        return ranked

    monkeypatch.setattr(last_changes, "_ranked_in_jvm", spy)
    took_jvm = request.param == "jvm"
    yield took
    assert all(t is took_jvm for t in took)


def test_ranked_here_as_the_window_ranks(spark: SparkSession, ranker: list[bool]) -> None:
    _held_feed(spark, "lc_raw", ROWS, FEED)
    _model(
        spark, "lc_feed", "select snapshot_id, rowid, change_type, k, name, v * 2 as v2 from lc_raw"
    )
    expected = spark.sql(_window_sql("lc_feed", KEYS, by_rowid=True))
    done = rank_here(spark, "lc_feed", "lc_changes", KEYS)
    assert done is builds_from_arrow(spark)  # Spark 3.5 builds no LocalRelation from Arrow
    if not done:
        assert not spark.catalog.tableExists("lc_changes")
        return
    got = spark.table("lc_changes")
    assert got.schema == expected.schema
    assert _sorted(got.collect()) == _sorted(expected.collect())
    winners = {(r.k, r.name): (r.change_type, r.v2, r.ducklake_removed) for r in got.collect()}
    assert winners[(1, "a")] == ("update_postimage", 4.0, False)
    assert winners[(2, "b")] == ("delete", 6.0, True)
    assert winners[(3, "c")] == ("insert", 10.0, False)
    assert winners[(4, "d")] == ("insert", 14.0, False)
    assert winners[(5, None)] == ("update_postimage", 18.0, False)
    assert winners[(None, None)] == ("delete", 20.0, True)
    assert winners[(7, "e")] == (None, 26.0, None)
    assert len(winners) == 9
    # the MERGE finds its source on the driver: no Spark job reads it
    plan = got._jdf.queryExecution().optimizedPlan()
    assert plan.getClass().getSimpleName() == "LocalRelation"
    assert ranker == [True] or ranker == [False]


def test_one_key_without_rowid_and_no_rows(spark: SparkSession, ranker: list[bool]) -> None:
    """Without a rowid column the order stops at adds-before-removals; an empty window
    ranks to no rows."""
    rows = [r for r in ROWS if r[3] not in (4, None)]  # no tie that only rowid breaks
    no_rowid = T.StructType([f for f in FEED.fields if f.name != "rowid"])
    _held_feed(spark, "lc_plain_raw", [r[:1] + r[2:] for r in rows], no_rowid)
    _model(spark, "lc_plain", "select snapshot_id, change_type, k, v + 1 as v1 from lc_plain_raw")
    expected = spark.sql(_window_sql("lc_plain", ["k"], by_rowid=False))
    if rank_here(spark, "lc_plain", "lc_plain_changes", ["K"]):
        got = spark.table("lc_plain_changes")
        assert got.schema == expected.schema
        assert _sorted(got.collect()) == _sorted(expected.collect())
    _model(spark, "lc_none", "select * from lc_plain where k < 0")
    if rank_here(spark, "lc_none", "lc_none_changes", ["k"]):
        assert spark.table("lc_none_changes").count() == 0
        assert len(ranker) == 2


@pytest.mark.parametrize(
    ("feed_sql", "keys"),
    [
        # rows Spark computes: its window ranks them
        ("select id as snapshot_id, 'insert' as change_type, id as k from range(5)", ["k"]),
        # a key compared otherwise here (NaN, -0.0): Spark's window ranks them
        ("select snapshot_id, change_type, v as k from lc_raw", ["k"]),
        # a key the feed does not have
        ("select snapshot_id, change_type, k from lc_raw", ["nope"]),
        # text keys of a collation ('A' = 'a'): grouped as Spark's window groups them
        ("select snapshot_id, change_type, name collate UTF8_LCASE as k from lc_raw", ["k"]),
        # change types of a collation, a snapshot id not a BIGINT: left to Spark
        (
            "select snapshot_id, change_type collate UTF8_LCASE as change_type, k from lc_raw",
            ["k"],
        ),
        ("select cast(snapshot_id as int) as snapshot_id, change_type, k from lc_raw", ["k"]),
    ],
)
def test_left_to_the_sql(spark: SparkSession, feed_sql: str, keys: list[str]) -> None:
    _held_feed(spark, "lc_raw", ROWS, FEED)
    _model(spark, "lc_other", feed_sql)
    spark.catalog.dropTempView("lc_other_changes")
    assert not rank_here(spark, "lc_other", "lc_other_changes", keys)
    assert not spark.catalog.tableExists("lc_other_changes")
