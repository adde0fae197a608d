"""Spark writes: partition transforms and directories as DuckDB makes them, sort order,
Parquet options, inlining limits, INSERT INTO / OVERWRITE as one snapshot each, file
pruning, and no references to files of a failed write."""

from __future__ import annotations

import glob
import os

import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from dbt.adapters.ducklake.lake import ColumnSpec, Lake
from dbt.adapters.ducklake.spark.compat import CLIENT_IS_SPARK_4 as SPARK_4
from dbt.adapters.ducklake.spark.engine import CommitInfo, create_table_as, insert_into
from dbt.adapters.ducklake.spark.errors import UnsupportedTypeError
from dbt.adapters.ducklake.spark.notices import take_notices
from dbt.adapters.ducklake.spark.prune import Predicate
from dbt.adapters.ducklake.spark.scan import ScanMetrics, scan_table
from dbt.adapters.ducklake.spark.write_task import bucket
from tests import duck
from tests.conftest import Catalog

ROWS = """SELECT id, 'k' || (id % 7) AS k, CAST(id % 5 AS INT) AS n,
    TIMESTAMP '2024-01-30 22:00:00'
        + make_interval(0, 0, 0, CAST(id * 3 AS INT), CAST(id AS INT)) AS ts,
    DATE '2024-02-27' + CAST(id AS INT) AS d, CAST(id AS DECIMAL(10,2)) / 3 AS dec
    FROM range(0, 120) r(id)"""


def _duck(catalog: Catalog):
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    con.execute("USE lake")
    con.execute("SET ducklake_default_data_inlining_row_limit = 0")
    return con


def test_partitions_match_duckdbs_transforms_and_layout(spark, sqlite_catalog: Catalog) -> None:
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    spec = [
        ("ts", "year"),
        ("ts", "month"),
        ("d", "day"),
        ("ts", "hour"),
        ("k", "bucket(3)"),
        ("id", "bucket(5)"),
        ("n", "identity"),
    ]
    df = spark.sql(ROWS)
    create_table_as(lake, "main", "ours", df, partition_by=spec)
    con = _duck(sqlite_catalog)
    # DuckDB partitions an identical twin with the same spec
    con.execute("CREATE TABLE theirs AS SELECT * FROM ours LIMIT 0")
    con.execute(
        "ALTER TABLE theirs SET PARTITIONED BY (year(ts), month(ts), day(d), hour(ts), "
        "bucket(3, k), bucket(5, id), n)"
    )
    con.execute("INSERT INTO theirs SELECT * FROM ours")
    cat = lake.catalog()

    def layout(name: str) -> set[tuple[tuple[str | None, ...], str]]:
        files = cat.data_files(cat.table("main", name))
        return {(f.partition_values, f.stored_path.rsplit("/", 1)[0]) for f in files}

    cat = lake.catalog()
    assert layout("ours") == layout("theirs")
    # every row sits in the file of its partition: DuckDB's filter on a value agrees
    for i in (0, 17, 63, 119):
        assert con.execute(f"SELECT count(*) FROM ours WHERE id = {i}").fetchone() == (1,)
    assert con.execute("SELECT count(*), sum(id) FROM ours").fetchone() == (120, 7140)
    con.close()


def test_bucket_matches_iceberg_reference_values() -> None:
    # Iceberg spec examples: murmur3 of 34 -> 2017239379, of "iceberg" -> 1210000089
    from dbt.adapters.ducklake.spark.write_task import murmur3_32

    assert murmur3_32((34).to_bytes(8, "little")) == 2017239379
    assert murmur3_32(b"iceberg") == 1210000089
    assert bucket(34, 16) == 2017239379 % 16
    assert bucket(None, 4) is None


def test_sort_order_and_parquet_options_are_honoured(spark, sqlite_catalog: Catalog) -> None:
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    with lake.transaction() as tx:
        t = tx.create_table(
            "main",
            "t",
            [ColumnSpec("id", "int64"), ColumnSpec("v", "varchar")],
            sort_by=[("id", "DESC", "NULLS_LAST")],
        )
        tx.set_option("parquet_compression", "zstd", table=t)
        tx.set_option("parquet_row_group_size", "100", table=t)
        tx.set_option("target_file_size", "20KB", table=t)
    df = spark.range(0, 5000).select(F.col("id"), F.concat(F.lit("value-"), F.col("id")).alias("v"))
    take_notices()
    insert_into(lake, "main", "t", df.repartition(2))
    said = take_notices()
    files = lake.catalog().data_files(lake.catalog().table("main", "t"))
    assert len(files) > 2  # rolled at the target size
    # Spark 3.5's Parquet writer has no row count limit: the write says so
    assert any("parquet_row_group_size 100 is not applied" in n for n in said) != SPARK_4
    for f in files:
        meta = pq.read_metadata(f.path)
        assert meta.row_group(0).column(0).compression == "ZSTD"
        groups = [meta.row_group(i).num_rows for i in range(meta.num_row_groups)]
        assert all(n <= 100 for n in groups) or not SPARK_4, groups
        ids = pq.read_table(f.path).column("id").to_pylist()
        assert ids == sorted(ids, reverse=True)
    con = _duck(sqlite_catalog)
    assert con.execute("SELECT count(*), sum(id) FROM t").fetchone() == (5000, 12497500)
    con.close()


def test_files_roll_over_at_the_target_compressed_size(spark, sqlite_catalog: Catalog) -> None:
    """target_file_size counts Parquet bytes, as DuckDB's does: a new table's rows per
    file come from a written sample, later inserts from the table's own files. Each
    file but the last of each task is near the target, none far over it."""
    target = 256 * 1024
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    with lake.transaction() as tx:
        tx.set_option("target_file_size", "256KB")

    def rows(start: int):
        return spark.range(start, start + 400_000, numPartitions=2).select(
            F.col("id"), F.concat(F.lit("value-"), F.col("id")).alias("v")
        )

    def sizes_since(known: set[str]) -> list[int]:
        files = lake.catalog().data_files(lake.catalog().table("main", "t"))
        return sorted(f.file_size_bytes for f in files if f.path not in known)

    create_table_as(lake, "main", "t", rows(0))  # a new table: sized from a sample
    first = sizes_since(set())
    known = {f.path for f in lake.catalog().data_files(lake.catalog().table("main", "t"))}
    insert_into(lake, "main", "t", rows(400_000))  # sized from the table's files
    second = sizes_since(known)
    for sizes in (first, second):
        assert len(sizes) >= 6, sizes
        assert sizes[-1] <= 1.25 * target, sizes
        # the two smallest may be the last file of each of the two tasks
        assert all(s >= 0.6 * target for s in sizes[2:]), sizes
    con = _duck(sqlite_catalog)
    assert con.execute("SELECT count(*), count(DISTINCT v) FROM t").fetchone() == (800_000,) * 2
    con.close()


def test_inlining_limit_comes_from_the_lake(spark, catalog: Catalog) -> None:
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    with lake.transaction() as tx:
        tx.create_table("main", "t", [ColumnSpec("id", "int64")])
        tx.set_option("data_inlining_row_limit", "50")
    insert_into(lake, "main", "t", spark.range(0, 50))  # at the limit: inlined
    insert_into(lake, "main", "t", spark.range(50, 101))  # over it: a file
    # Spark estimates this LIMIT at 100 rows; it yields 5, which are inlined
    insert_into(lake, "main", "t", spark.range(200, 1000).where("id < 205").limit(100))
    cat = lake.catalog()
    t = cat.table("main", "t")
    assert len(cat.inlined_rows(t.table_id)) == 55
    assert sum(f.record_count for f in cat.data_files(t)) == 51
    kinds = [[c.kind for c in s.changes] for s in lake.snapshots()[-3:]]
    assert kinds == [["inlined_insert"], ["inserted_into_table"], ["inlined_insert"]]
    con = _duck(catalog)
    assert con.execute("SELECT count(*), sum(id) FROM t").fetchone() == (106, 5050 + 1010)
    con.close()


def test_insert_into_and_overwrite_are_one_snapshot_each(spark, catalog: Catalog) -> None:
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    info = CommitInfo(author="etl", message="load", extra_info={"run": 7})
    s1 = create_table_as(
        lake, "main", "t", spark.sql(ROWS), commit=info, partition_by=[("n", "identity")]
    )
    s2 = insert_into(lake, "main", "t", spark.sql(ROWS).where("id < 3"), commit=info)
    s3 = insert_into(
        lake,
        "main",
        "t",
        spark.sql(ROWS).where("n = 1"),
        overwrite=True,
        partitions_only=True,
        commit=CommitInfo(message="only n=1"),
    )
    assert s1 and s2 and s3
    assert [s.snapshot_id for s in lake.snapshots()[-3:]] == [
        s1.snapshot_id,
        s2.snapshot_id,
        s3.snapshot_id,
    ]
    con = _duck(catalog)
    # partition n=1 replaced by its 24 new rows; other partitions and the inlined rows stay
    assert con.execute("SELECT count(*) FROM t WHERE n = 1").fetchone() == (24,)
    assert con.execute("SELECT count(*) FROM t WHERE n <> 1").fetchone() == (96 + 2,)
    s4 = insert_into(lake, "main", "t", spark.sql(ROWS).where("id < 40"), overwrite=True)
    assert s4 is not None
    assert con.execute("SELECT count(*) FROM t").fetchone() == (40,)
    assert con.execute(f"SELECT count(*) FROM t AT (VERSION => {s2.snapshot_id})").fetchone() == (
        123,
    )
    snaps = {
        r[0]: r[1:]
        for r in con.execute(
            "SELECT snapshot_id, author, commit_message, commit_extra_info FROM snapshots()"
        ).fetchall()
    }
    assert snaps[s2.snapshot_id] == ("etl", "load", '{"run": 7}')
    con.close()


def test_pruning_reads_at_most_two_files(spark, sqlite_catalog: Catalog) -> None:
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    with lake.transaction() as tx:
        tx.create_table(
            "main",
            "p",
            [ColumnSpec("id", "int64"), ColumnSpec("part", "int32")],
            partition_by=[("part", "identity")],
            sort_by=[("id", "ASC", "NULLS_LAST")],
        )
    df = spark.range(0, 5000).select("id", (F.col("id") / 100).cast("int").alias("part"))
    insert_into(lake, "main", "p", df)
    files = lake.catalog().data_files(lake.catalog().table("main", "p"))
    assert len(files) == 50
    metrics = ScanMetrics()
    rows = (
        scan_table(
            spark, lake, "main", "p", predicates=[Predicate("id", "=", 1234)], metrics=metrics
        )
        .where("id = 1234")
        .collect()
    )
    assert [r.id for r in rows] == [1234]
    assert (metrics.files_total, metrics.files_read) == (50, 1)
    for p, expected in [
        (Predicate("part", "in", [3, 7]), 2),
        (Predicate("id", "between", (100, 199)), 1),
        (Predicate("id", "<", 100), 1),
        (Predicate("id", ">=", 4900), 1),
        (Predicate("id", "is_null"), 0),
    ]:
        m = ScanMetrics()
        scan_table(spark, lake, "main", "p", predicates=[p], metrics=m)
        assert m.files_read == expected, p


def test_failed_write_leaves_only_orphans(spark, sqlite_catalog: Catalog) -> None:
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    create_table_as(lake, "main", "t", spark.range(0, 100))
    before = lake.latest_snapshot()
    bad = spark.range(0, 100).select(
        F.when(F.col("id") == 77, F.raise_error(F.lit("boom"))).otherwise(F.col("id")).alias("id")
    )
    with pytest.raises(Exception, match="boom"):
        insert_into(lake, "main", "t", bad.repartition(2))
    assert lake.latest_snapshot() == before
    live = {f.path for f in lake.catalog().data_files(lake.catalog().table("main", "t"))}
    on_disk = set(glob.glob(os.path.join(lake.data_path, "main", "t", "*.parquet")))
    assert live <= on_disk  # anything else on disk is an orphan nobody references
    con = _duck(sqlite_catalog)
    assert con.execute("SELECT count(*) FROM t").fetchone() == (100,)
    con.close()


def test_sort_on_insert_false_leaves_files_unsorted(spark, sqlite_catalog: Catalog) -> None:
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    with lake.transaction() as tx:
        t = tx.create_table(
            "main", "t", [ColumnSpec("id", "int64")], sort_by=[("id", "DESC", "NULLS_LAST")]
        )
        tx.set_option("sort_on_insert", "false", table=t)
    insert_into(lake, "main", "t", spark.range(0, 300).coalesce(1))
    (f,) = lake.catalog().data_files(lake.catalog().table("main", "t"))
    assert pq.read_table(f.path).column("id").to_pylist() == list(range(300))


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("INTERVAL '1' DAY", "interval day"),
        ("INTERVAL '1' YEAR", "interval year"),
        ("NULL", "void"),
    ],
)
def test_spark_types_without_a_ducklake_equivalent_are_refused(
    spark, sqlite_catalog: Catalog, expression: str, message: str
) -> None:
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    df = spark.sql(f"SELECT 1 AS ok, {expression} AS bad")
    with pytest.raises(UnsupportedTypeError, match=f"column 'bad': Spark type {message}.*cast it"):
        create_table_as(lake, "main", "t", df)
    assert lake.catalog().find_table("main", "t") is None


def test_user_columns_named_like_engine_internals(spark, catalog: Catalog) -> None:
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    df = spark.sql(
        "SELECT id AS path, id AS fid, id AS row_id_start, id AS begin_snapshot, id AS pos, "
        "id AS rowid FROM range(0, 30)"
    )
    create_table_as(lake, "main", "t", df)
    con = _duck(catalog)
    con.execute("DELETE FROM t WHERE path < 5")
    rows = scan_table(spark, lake, "main", "t", lineage=True).collect()
    assert sorted(r.path for r in rows) == list(range(5, 30))
    assert len(rows[0]) == 8  # six user columns, then rowid and snapshot_id
    con.close()


def test_shuffling_query_is_computed_once_and_inlined_when_small(
    spark, sqlite_catalog: Catalog
) -> None:
    """An aggregate is written at once (a LIMIT first would compute it twice); when its
    result fits the inlining limit its files are read back, inlined and removed."""
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    seen = spark.sparkContext.accumulator(0)

    def count_row(value):  # hints would make it a pandas UDF
        seen.add(1)
        return value

    source = (
        spark.range(0, 5000).repartition(3).select(F.udf(count_row, "bigint")("id").alias("id"))
    )
    small = source.groupBy((F.col("id") % 4).alias("k")).agg(F.count("*").alias("c"))
    create_table_as(lake, "main", "small", small)
    assert seen.value == 5000  # the source was read once
    table = lake.catalog().table("main", "small")
    assert lake.catalog().data_files(table) == []
    inlined = lake.catalog().inlined_rows(table.table_id)
    assert sorted(tuple(r.values.values()) for r in inlined) == [(k, 1250) for k in range(4)]
    table_dir = os.path.join(lake.data_path, "main", "small")
    assert not glob.glob(os.path.join(table_dir, "**", "*.parquet"), recursive=True)
    big = source.groupBy((F.col("id") % 40).alias("k")).agg(F.count("*").alias("c"))
    create_table_as(lake, "main", "big", big)
    files = lake.catalog().data_files(lake.catalog().table("main", "big"))
    assert sum(f.record_count for f in files) == 40
    con = _duck(sqlite_catalog)
    assert con.execute("SELECT k, c FROM small ORDER BY k").fetchall() == [
        (k, 1250) for k in range(4)
    ]
    assert con.execute("SELECT count(*), sum(c) FROM big").fetchone() == (40, 5000)
    con.close()


def test_updated_rows_keep_their_ids_as_small_deltas(spark, sqlite_catalog: Catalog) -> None:
    """The new versions of updated rows carry their row ids; Spark's writer stores them
    with Parquet's v2 delta encoding (a fraction of PLAIN's bytes for spread ids), and
    DuckDB reads the rows and their ids as this engine does."""
    from dbt.adapters.ducklake.spark.sql import LakeSQL

    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    sql = LakeSQL(spark, lake)
    sql.execute("CREATE TABLE main.t AS SELECT id, 'v' AS s FROM range(0, 60000)")
    before = set(glob.glob(f"{sqlite_catalog.data_path}/main/t/*.parquet"))
    sql.execute("UPDATE main.t SET s = 'u' WHERE id % 40 = 7")
    written = set(glob.glob(f"{sqlite_catalog.data_path}/main/t/*.parquet")) - before
    new = [p for p in written if not p.endswith("-delete.parquet")]
    assert new
    for path in new:
        meta = pq.read_metadata(path)
        chunk = meta.row_group(0).column(meta.schema.names.index("_ducklake_internal_row_id"))
        assert "DELTA_BINARY_PACKED" in chunk.encodings, chunk.encodings
        assert chunk.total_compressed_size < meta.num_rows * 2, chunk.total_compressed_size
    ours = sorted(tuple(r) for r in sql.query("SELECT id, s FROM main.t WHERE s = 'u'").collect())
    con = _duck(sqlite_catalog)
    theirs = con.execute("SELECT id, s, rowid FROM t WHERE s = 'u' ORDER BY id").fetchall()
    con.close()
    lake.close()
    assert [(i, s) for i, s, _ in theirs] == ours and len(ours) == 1500
    assert all(rowid == i for i, _, rowid in theirs)  # the ids they had


def test_a_result_of_few_rows_is_collected_once_and_written_by_the_driver(
    spark, catalog: Catalog
) -> None:
    """A result Spark's plan bounds to a few rows (here `range`) costs one Spark job: its
    file is written by the driver with the tasks' Arrow writer, its stats equal the
    rows; one that turns out under the inlining limit is inlined as DuckDB inlines; a
    NOT NULL column still refuses a NULL and commits nothing; a failing row commits
    nothing. DuckDB reads every table as written."""
    from dbt.adapters.ducklake.spark.sql import LakeSQL

    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    sql = LakeSQL(spark, lake)
    sql.execute("CREATE TABLE h (id BIGINT NOT NULL, v VARCHAR, d DATE)")
    tracker = spark.sparkContext._jsc.sc().dagScheduler()
    jobs = tracker.numTotalJobs()
    sql.execute("INSERT INTO h SELECT id, concat('v', id), DATE '2024-01-01' FROM range(100)")
    assert tracker.numTotalJobs() - jobs == 1
    (written,) = lake.catalog().data_files(lake.catalog().table("main", "h"))
    assert written.record_count == 100
    assert "parquet-cpp" in pq.read_metadata(written.path).created_by
    # a bound over the inlining limit, a result under it: inlined, no file
    sql.execute("INSERT INTO h SELECT id + 1000, 'few', NULL FROM range(100) WHERE id < 3")
    table = lake.catalog().table("main", "h")
    assert len(lake.catalog().data_files(table)) == 1
    assert len(lake.catalog().inlined_rows(table.table_id)) == 3
    before = lake.latest_snapshot()
    with pytest.raises(Exception, match=r"(?i)not null"):
        sql.execute("INSERT INTO h SELECT CAST(NULL AS BIGINT), 'x', NULL FROM range(50)")
    with pytest.raises(Exception, match="boom"):
        sql.execute(
            "INSERT INTO h SELECT CASE WHEN id = 42 THEN raise_error('boom') ELSE id END, "
            "'x', NULL FROM range(50)"
        )
    assert lake.latest_snapshot() == before
    con = _duck(catalog)
    assert con.execute(
        "SELECT count(*), min(id), max(id), count(d), count(DISTINCT v) FROM h"
    ).fetchone() == (103, 0, 1002, 100, 101)
    assert con.execute("SELECT v FROM h WHERE id = 57").fetchone() == ("v57",)
    con.close()
