"""Scans match rows to their files by the URI Spark reports, without per-row decoding;
files needing nothing per row are read as a plain Parquet scan."""

from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark import kept_rows, scan_deletes, scan_files
from dbt.adapters.ducklake.spark import scan as scan_module
from dbt.adapters.ducklake.spark.compat import CLIENT_IS_SPARK_4
from dbt.adapters.ducklake.spark.engine import create_table_as
from dbt.adapters.ducklake.spark.errors import ReservedColumnError
from dbt.adapters.ducklake.spark.scan import (
    ANTI_JOIN,
    IN_SCAN_JVM,
    IN_SCAN_READER,
    ScanMetrics,
    scan_table,
)
from dbt.adapters.ducklake.spark.scan_files import spark_uri
from dbt.adapters.ducklake.spark.sql import LakeSQL
from tests import duck
from tests.conftest import Catalog

# the JVM reader that skips deleted rows runs on Spark 4; Spark 3.5 filters by a JVM UDF
READER = CLIENT_IS_SPARK_4
IN_SCAN = IN_SCAN_READER if READER else IN_SCAN_JVM
IN_SCAN_MARK = "DuckLakeParquet" if READER else "ducklake_kept"

AWKWARD_NAMES = [
    "plain.parquet",
    "sp ace.parquet",
    "pl+us.parquet",
    "pct%41.parquet",
    "h#sh?.parquet",
    "a=b,c;d@e$f&g.parquet",
    "q'x(y)!~*.parquet",
    'dq"<>^`|.parquet',
]


def test_spark_uri_is_what_spark_reports(spark, tmp_path) -> None:
    folder = tmp_path / "k=v w%2F"
    folder.mkdir()
    paths = [str(folder / n) for n in AWKWARD_NAMES]
    for p in paths:
        pq.write_table(pa.table({"id": [1]}), p)
    reported = {r[0] for r in spark.read.parquet(*paths).select("_metadata.file_path").collect()}
    assert reported == {spark_uri(p) for p in paths}
    # relative paths resolve against the working directory, as Spark resolves them
    rel = os.path.relpath(paths[0])
    assert spark_uri(rel) == spark_uri(paths[0])
    assert spark_uri("/data/ünï.parquet") is None
    assert spark_uri("s3a://bucket/key.parquet") is None


@pytest.mark.parametrize("by_size", ["lookup", "join", False])
@pytest.mark.parametrize("value", ["a/b x%y", "ünïcode", "it's \\ done"])
def test_deletes_and_lineage_through_encoded_and_fallback_paths(
    spark, sqlite_catalog: Catalog, value: str, by_size: str | bool, monkeypatch
) -> None:
    """Partition directories need %-encoding (and non-ASCII falls back to per-row
    decoding): deletes and row ids still land on the right rows, as DuckDB reads them,
    whether rows find their file by size (a constant lookup for few files, a join for
    many) or by path."""
    monkeypatch.setattr(scan_files, "MATCH_BY_SIZE", bool(by_size))
    if by_size == "join":
        monkeypatch.setattr(scan_files, "HASHED_FILES", 0)
        monkeypatch.setattr(scan_files, "INLINE_FILES", 0)
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    df = (
        spark.range(40)
        .select("id", F.when(F.col("id") % 2 == 0, F.lit(value)).otherwise("plain").alias("p"))
        .repartition(2)
    )
    create_table_as(lake, "main", "t", df, partition_by=[("p", "identity")])
    sql = LakeSQL(spark, lake)
    sql.execute("DELETE FROM main.t WHERE id % 4 = 0 OR id = 7")
    ours = sorted(tuple(r) for r in scan_table(spark, lake, "main", "t", lineage=True).collect())
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach)
    theirs = sorted(con.execute("SELECT id, p, rowid, snapshot_id FROM lake.main.t").fetchall())
    assert ours == theirs
    assert len(ours) == 40 - 10 - 1


def test_per_file_work_only_where_needed(spark, sqlite_catalog: Catalog, monkeypatch) -> None:
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    df = spark.sql("SELECT id, id % 7 AS n FROM range(1000)").repartition(4)
    create_table_as(lake, "main", "t", df)
    plain = scan_table(spark, lake, "main", "t")
    plan = plain._jdf.queryExecution().executedPlan().toString()
    assert "Join" not in plan and "file_path" not in plan, plan
    # lineage asks for per-file constants: now rows are matched to files, by a lookup
    # on the file's size (few files) rather than a join
    lineage = scan_table(spark, lake, "main", "t", lineage=True)
    lineage_plan = lineage._jdf.queryExecution().executedPlan().toString()
    assert "file_size" in lineage_plan and "Join" not in lineage_plan, lineage_plan
    rowids = {r.id: r.rowid for r in lineage.collect()}
    assert sorted(rowids.values()) == list(range(1000))
    # deletes in one file: only that file's scan drops rows, in its reader (no join,
    # no job reading the deletes); the rest stay plain
    LakeSQL(spark, lake).execute("DELETE FROM main.t WHERE id = 5")
    metrics = ScanMetrics()
    after = scan_table(spark, lake, "main", "t", metrics=metrics)
    assert after.count() == 999 and after.where("id = 5").count() == 0
    scan_plan = after._jdf.queryExecution().executedPlan().toString()
    assert "Union" in scan_plan and IN_SCAN_MARK in scan_plan, scan_plan
    assert "Join" not in scan_plan and ("ducklake_kept" in scan_plan) == (not READER), scan_plan
    assert metrics.deletes_applied == [IN_SCAN]
    # lineage: the same reader drops them and keeps the positions that locate rows
    metrics = ScanMetrics()
    lineage = scan_table(spark, lake, "main", "t", lineage=True, positions=True, metrics=metrics)
    kept = {r.id: r.rowid for r in lineage.collect()}
    assert kept == {i: rowid for i, rowid in rowids.items() if i != 5}
    lineage_plan = lineage._jdf.queryExecution().executedPlan().toString()
    assert IN_SCAN_MARK in lineage_plan and "Join" not in lineage_plan, lineage_plan
    assert ("ducklake_kept" in lineage_plan) == (not READER), lineage_plan
    assert metrics.deletes_applied == [IN_SCAN]
    # where the reader cannot take the positions (a name-mapped file, a column named as
    # Spark's position field), the JVM filter drops deleted rows
    monkeypatch.setattr(scan_module, "_reader_options", lambda *args: None)
    metrics = ScanMetrics()
    filtered = scan_table(spark, lake, "main", "t", lineage=True, metrics=metrics)
    assert {r.id: r.rowid for r in filtered.collect()} == kept
    assert "ducklake_kept" in filtered._jdf.queryExecution().executedPlan().toString()
    assert metrics.deletes_applied == [IN_SCAN_JVM]
    monkeypatch.undo()
    # without the JVM filter (Spark Connect, no jar): that file is matched per row
    monkeypatch.setattr(kept_rows, "IN_SCAN", False)
    metrics = ScanMetrics()
    fallback = scan_table(spark, lake, "main", "t", metrics=metrics)
    assert fallback.count() == 999 and fallback.where("id = 5").count() == 0
    scan_plan = fallback._jdf.queryExecution().executedPlan().toString()
    assert "Union" in scan_plan and "Join" in scan_plan, scan_plan
    assert metrics.deletes_applied == [ANTI_JOIN]


def test_a_column_named_as_sparks_row_position_is_refused_where_rows_are_located(
    spark, sqlite_catalog: Catalog
) -> None:
    """Spark's Parquet reader fills `_tmp_metadata_row_index` with row positions: a table
    with a column of that name reads its values as data, and statements that locate
    rows in their files (here DELETE) fail naming the column, writing nothing."""
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    sql = LakeSQL(spark, lake)
    sql.execute("CREATE TABLE main.t (id BIGINT, _tmp_metadata_row_index BIGINT)")
    sql.execute("INSERT INTO main.t SELECT id, 1000 - id FROM range(3000)")
    before = lake.latest_snapshot().snapshot_id
    with pytest.raises(ReservedColumnError, match=r"_tmp_metadata_row_index.*rename the column"):
        sql.execute("DELETE FROM main.t WHERE id % 7 = 0")
    assert lake.latest_snapshot().snapshot_id == before
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach)
    theirs = sorted(con.execute("SELECT id, _tmp_metadata_row_index FROM lake.main.t").fetchall())
    ours = sorted(tuple(r) for r in scan_table(spark, lake, "main", "t").collect())
    assert ours == theirs and len(ours) == 3000 and ours[0] == (0, 1000)


def test_files_of_equal_size_are_told_apart_by_name(spark, sqlite_catalog: Catalog) -> None:
    """Files of the same size (same row count, similar values: common after MERGEs)
    cannot be told apart by size; the deletes reader keys them by size and name, so
    plain and lineage scans still drop deletes in the reader, as DuckDB reads them."""
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    sql = LakeSQL(spark, lake)
    sql.execute("CREATE TABLE main.t (id BIGINT, s VARCHAR)")
    for letter in "abc":
        sql.execute(f"INSERT INTO main.t SELECT id, '{letter}' FROM range(3000)")
    sizes = [
        f.file_size_bytes for f in lake.catalog().data_files(lake.catalog().table("main", "t"))
    ]
    assert len(sizes) == 3 and len(set(sizes)) == 1, sizes  # the case under test
    sql.execute("DELETE FROM main.t WHERE s = 'b' AND id % 3 = 0")
    sql.execute("DELETE FROM main.t WHERE s = 'c' AND id < 10")
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach)
    theirs = sorted(con.execute("SELECT id, s, rowid FROM lake.main.t").fetchall())
    assert len(theirs) == 9000 - 1000 - 10
    for lineage in (False, True):
        metrics = ScanMetrics()
        df = scan_table(spark, lake, "main", "t", lineage=lineage, metrics=metrics)
        plan = df._jdf.queryExecution().executedPlan().toString()
        assert ("DuckLakeParquet" in plan) == READER and "ducklake_kept" not in plan, plan
        # (Spark 3.5: the JVM filter keys files by size alone, so an anti-join)
        assert metrics.deletes_applied == [IN_SCAN_READER if READER else ANTI_JOIN]
        ours = sorted(
            tuple(r) for r in df.select("id", "s", *(["rowid"] if lineage else [])).collect()
        )
        assert ours == (theirs if lineage else sorted(r[:2] for r in theirs))


@pytest.mark.parametrize("reader", ["batches", "rows"])
def test_the_deletes_reader_keeps_every_kind_of_value(
    spark, sqlite_catalog: Catalog, reader: str
) -> None:
    """The JVM reader that skips deleted rows hands on Spark's columnar batches (vectors
    that renumber the kept rows) or, with the vectorized reader off, rows: strings, NULLs,
    structs and arrays of the kept rows come through unchanged either way, and a batch
    whose 4,096 rows are all deleted comes through empty."""
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    df = spark.sql(
        "SELECT id, CASE WHEN id % 5 = 0 THEN NULL ELSE concat('s', id) END AS s, "
        "named_struct('a', id, 'b', CAST(id AS STRING)) AS st, array(id, id + 1) AS xs "
        "FROM range(10000)"
    ).repartitionByRange(2, "id")
    create_table_as(lake, "main", "t", df)
    sql = LakeSQL(spark, lake)
    sql.execute("DELETE FROM main.t WHERE id < 4096 OR id % 3 = 0 OR id = 9998")
    sql.execute("DELETE FROM main.t WHERE id = 9999")  # one row: an inlined delete
    # batches reach the plan only with whole-stage code (test sessions run without it),
    # which reads them through the vector types the format declares
    batches = reader == "batches"
    settings = {
        "spark.sql.parquet.enableVectorizedReader": str(batches).lower(),
        "spark.sql.codegen.wholeStage": str(batches).lower(),
        "spark.sql.codegen.factoryMode": "FALLBACK" if batches else "NO_CODEGEN",
    }
    before = {k: spark.conf.get(k) for k in settings}
    for k, v in settings.items():
        spark.conf.set(k, v)
    try:
        metrics = ScanMetrics()
        scanned = scan_table(spark, lake, "main", "t", metrics=metrics)
        plan = scanned._jdf.queryExecution().executedPlan().toString()
        ours = sorted((r.id, r.s, (r.st.a, r.st.b), list(r.xs)) for r in scanned.collect())
    finally:
        for k, v in before.items():
            spark.conf.set(k, v)
    # (Spark 3.5 reads nested columns by rows: session.SPARK_3_DEFAULTS)
    assert IN_SCAN_MARK in plan and ("Batched: true" in plan) == (batches and READER), plan
    assert metrics.deletes_applied == [IN_SCAN]
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach)
    rows = con.execute("SELECT id, s, st, xs FROM lake.main.t").fetchall()
    theirs = sorted((i, s, (st["a"], st["b"]), xs) for i, s, st, xs in rows)
    assert ours == theirs
    assert [r[0] for r in ours] == [i for i in range(4096, 9998) if i % 3]


@pytest.mark.parametrize("how", ["masks", "anti-join", "jvm"])
def test_deletes_on_both_sides_of_every_64_row_run(
    spark, sqlite_catalog: Catalog, how: str, monkeypatch
) -> None:
    """The JVM filter tests one bit per row; without it, many deleted rows become one
    64-bit mask per run of 64 row numbers, few an anti-join on row numbers: positions at
    the edges of runs and words, in files whose lengths are not multiples of 64, with a
    delete file and inlined deletes together, read as DuckDB reads them every way."""
    masks = how == "masks"
    monkeypatch.setattr(scan_deletes, "FEW_DELETES", 0 if masks else 1 << 17)
    monkeypatch.setattr(kept_rows, "IN_SCAN", how == "jvm")
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    df = spark.sql("SELECT id, id * 3 AS v FROM range(1000)").repartitionByRange(3, "id")
    create_table_as(lake, "main", "t", df)
    sql = LakeSQL(spark, lake)
    sql.execute("DELETE FROM main.t WHERE id % 64 IN (0, 1, 62, 63) OR id IN (334, 665, 999)")
    sql.execute("DELETE FROM main.t WHERE id = 500")  # one row: an inlined delete
    scanned = scan_table(spark, lake, "main", "t")
    plan = scanned._jdf.queryExecution().executedPlan().toString()
    assert ("bit_or" in plan) == masks, plan
    # (Spark 3.5: the JVM filter where the data files differ in size, else the anti-join)
    assert ("DuckLakeParquet" in plan) == (how == "jvm" and READER), plan
    ours = sorted(tuple(r) for r in scanned.collect())
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach)
    theirs = sorted(con.execute("SELECT id, v FROM lake.main.t").fetchall())
    assert ours == theirs
    gone = {i for i in range(1000) if i % 64 in (0, 1, 62, 63)} | {334, 665, 999, 500}
    assert [r[0] for r in ours] == [i for i in range(1000) if i not in gone]


@pytest.mark.skipif(not READER, reason="the JVM reader runs on Spark 4")
@pytest.mark.parametrize("split", [False, True])
def test_the_deletes_reader_counts_positions_only_where_no_row_is_skipped(
    spark, sqlite_catalog: Catalog, split: bool
) -> None:
    """A read without pushed filters hands on every row of its row groups in order, so the
    reader counts positions: from 0 in a whole file, from each row group's first position
    (its footer says) in a file Spark splits between tasks. A filtered read, whose row
    groups statistics may skip, reads Spark's row index. All read as DuckDB reads them."""
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    with lake.transaction() as tx:
        tx.set_option("parquet_row_group_size", "1000")
    df = spark.sql("SELECT id, id * 3 AS v, concat('s', id) AS s FROM range(20000)")
    create_table_as(lake, "main", "t", df.coalesce(1))
    sql = LakeSQL(spark, lake)
    sql.execute("DELETE FROM main.t WHERE id % 7 = 1 OR id BETWEEN 5000 AND 6999")
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach)
    key = "spark.sql.files.maxPartitionBytes"
    before = spark.conf.get(key)
    spark.conf.set(key, "16k" if split else "128m")
    try:
        scanned = scan_table(spark, lake, "main", "t")
        assert (scanned.rdd.getNumPartitions() > 1) == split
        ours = sorted(tuple(r) for r in scanned.collect())
        late = scanned.where(F.col("id") >= 15500)
        plan = late._jdf.queryExecution().executedPlan().toString()
        ours_late = sorted(tuple(r) for r in late.collect())
    finally:
        spark.conf.set(key, before)
    assert "GreaterThanOrEqual" in plan, plan  # pushed: row groups before 15,000 skipped
    assert ours == sorted(con.execute("SELECT id, v, s FROM lake.main.t").fetchall())
    theirs_late = con.execute("SELECT id, v, s FROM lake.main.t WHERE id >= 15500").fetchall()
    assert ours_late == sorted(theirs_late)
    kept = [i for i in range(20000) if i % 7 != 1 and not 5000 <= i <= 6999]
    assert [r[0] for r in ours] == kept


@pytest.mark.parametrize("hashed_files", [128, 0])
def test_a_file_changed_outside_the_lake_fails_the_scan(
    spark, sqlite_catalog: Catalog, hashed_files: int, monkeypatch
) -> None:
    """Rows find their file by its size: a file whose size is not the catalog's fails
    the query rather than losing its rows, through the lookup and through the join."""
    monkeypatch.setattr(scan_files, "HASHED_FILES", hashed_files)
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    create_table_as(lake, "main", "t", spark.range(0, 200).repartitionByRange(2, "id"))
    first = lake.catalog().data_files(lake.catalog().table("main", "t"))[0].path
    stored = pq.read_table(first)
    pq.write_table(stored.slice(0, 10), first)  # same columns and field ids, fewer rows
    with pytest.raises(Exception, match="size differs from the size the DuckLake catalog"):
        scan_table(spark, lake, "main", "t", lineage=True).collect()


def test_many_files_are_listed_by_their_folder_only_when_it_holds_just_them(
    spark, sqlite_catalog: Catalog
) -> None:
    """A scan of a folder's every file lists the folder (one call) instead of each
    file; anything else in the folder, or a subfolder, sends it back to the file list."""
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    create_table_as(lake, "main", "t", spark.range(0, 700).repartition(70))
    files = lake.catalog().data_files(lake.catalog().table("main", "t"))
    assert len(files) == 70
    folder = os.path.dirname(files[0].path)

    def listed() -> str:
        df = scan_table(spark, lake, "main", "t")
        assert sorted(r.id for r in df.collect()) == list(range(700))
        plan = df._jdf.queryExecution().executedPlan().toString()
        return "folder" if "InMemoryFileIndex(1 paths)" in plan else "files"

    assert listed() == "folder"
    with open(os.path.join(folder, "notes.txt"), "w") as stray:
        stray.write("not a data file")
    assert listed() == "files"
    os.remove(os.path.join(folder, "notes.txt"))
    os.mkdir(os.path.join(folder, "ducklake-write-in-progress"))
    assert listed() == "files"


def test_file_sizes_find_their_slot_and_unknown_sizes_none(spark) -> None:
    """The constant table behind the size lookup: every size gets its own slot (sizes
    equal modulo small numbers included), a size no file has gets NULL."""
    sizes = [4096 * k for k in range(1, 41)] + [7, 4103]
    modulus = scan_files.perfect_modulus(sizes)
    assert modulus is not None and len({k % modulus for k in sizes}) == len(sizes)
    probe = spark.createDataFrame([(k,) for k in [*sizes, 8192 * 41, 5]], "size bigint")
    got = probe.select("size", scan_files.hashed_index("size", sizes, modulus).alias("i")).collect()
    expected = {k: i for i, k in enumerate(sizes, 2)}
    assert {r.size: r.i for r in got} == {**expected, 8192 * 41: None, 5: None}


def test_dotted_column_names_through_the_file_join(
    spark, sqlite_catalog: Catalog, monkeypatch
) -> None:
    """Over many files rows are joined to their file's constants; a column whose name
    holds a dot keeps its name and values through that join."""
    monkeypatch.setattr(scan_files, "HASHED_FILES", 0)
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    df = spark.range(30).select(F.col("id"), (F.col("id") * 2).alias("a.b")).repartition(3)
    create_table_as(lake, "main", "t", df)
    rows = scan_table(spark, lake, "main", "t", lineage=True).collect()
    assert rows[0].__fields__[:2] == ["id", "a.b"]
    assert sorted((r[0], r[1], r.rowid) for r in rows) == sorted(
        (r[0], r[0] * 2, r[2]) for r in rows
    )
    assert sorted(r.rowid for r in rows) == list(range(30))
