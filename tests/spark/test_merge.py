"""MERGE INTO on Spark: equal to DuckDB's MERGE on a twin lake for the clause forms DuckDB
supports (one UPDATE/DELETE action), equal to an independent Python oracle for ordered
multi-action clauses; a target row matched twice is an error that commits nothing."""

from __future__ import annotations

import inspect
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from pyspark.sql import functions as F

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.lake.models import Column
from dbt.adapters.ducklake.spark import merge
from dbt.adapters.ducklake.spark.engine import create_table_as, insert_into
from dbt.adapters.ducklake.spark.merge import (
    Aliases,
    MergeError,
    When,
    _costly,
    _parsed,
    _target_columns_used,
    equal_keys,
    merge_into,
)
from dbt.adapters.ducklake.spark.scan import ScanMetrics, scan_table
from dbt.adapters.ducklake.spark.sql import LakeSQL
from tests import duck
from tests.canon import canon_rows
from tests.conftest import Catalog
from tests.spark.test_roundtrip import _spark_rows
from tests.spark.victims import WAYS, victims_staged_by

SOURCE = "SELECT i AS id, 'new' || i AS v, CAST(i % 3 AS INT) AS n FROM range({lo}, {hi}) r(i)"

DUCK_CASES = [
    (
        "MERGE INTO t USING src AS s ON t.id = s.id "
        "WHEN MATCHED AND s.n > 0 THEN UPDATE SET v = s.v, n = t.n + 100 "
        "WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v, s.n)",
        [
            When("matched", "update", "s.n > 0", {"v": "s.v", "n": "t.n + 100"}),
            When("not_matched", "insert", None, {"id": "s.id", "v": "s.v", "n": "s.n"}),
        ],
        (90, 130),
    ),
    (
        "MERGE INTO t USING src AS s ON t.id = s.id WHEN MATCHED THEN DELETE "
        "WHEN NOT MATCHED AND s.n > 0 THEN INSERT *",
        [When("matched", "delete"), When("not_matched", "insert", "s.n > 0")],
        (120, 140),
    ),
    (
        "MERGE INTO t USING src AS s ON t.id = s.id "
        "WHEN NOT MATCHED BY SOURCE AND t.id < 20 THEN DELETE WHEN NOT MATCHED THEN INSERT *",
        [When("not_matched_by_source", "delete", "t.id < 20"), When("not_matched", "insert")],
        (50, 150),
    ),
    (
        "MERGE INTO t USING src AS s ON t.id = s.id WHEN MATCHED THEN UPDATE SET *",
        [When("matched", "update")],
        (140, 160),
    ),
]


def _twins(spark, catalog: Catalog, tmp_path):
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach, alias="ours")
    duck.attach(con, f"sqlite:{tmp_path}/twin.sqlite", alias="twin", data_path=str(tmp_path / "tw"))
    con.execute("CREATE TABLE ours.main.t (id BIGINT, v VARCHAR, n INTEGER)")
    con.execute("CREATE TABLE twin.main.t (id BIGINT, v VARCHAR, n INTEGER)")
    con.execute(
        "INSERT INTO twin.main.t SELECT i, 'v' || i, (i % 5)::INTEGER FROM range(0, 100) r(i)"
    )
    insert_into(
        lake,
        "main",
        "t",
        spark.sql("SELECT id, concat('v', id), CAST(id % 5 AS INT) FROM range(0, 100)").coalesce(1),
    )
    return lake, con


def test_merge_matches_duckdb(spark, catalog: Catalog, tmp_path) -> None:
    lake, con = _twins(spark, catalog, tmp_path)
    for duck_sql, clauses, (lo, hi) in DUCK_CASES:
        sql = SOURCE.replace("{lo}", str(lo)).replace("{hi}", str(hi))
        con.execute(f"CREATE OR REPLACE TEMP TABLE src AS {sql}")
        con.execute("USE twin")
        con.execute(duck_sql)
        merge_into(spark, lake, "main", "t", spark.sql(sql), "t.id = s.id", clauses)
        expected = con.execute("SELECT * FROM twin.main.t").fetchall()
        ours = con.execute("SELECT * FROM ours.main.t").fetchall()
        assert canon_rows(ours) == canon_rows(expected), duck_sql
        scanned = _spark_rows(scan_table(spark, lake, "main", "t"))
        assert canon_rows(scanned) == canon_rows(expected)
        # updated rows keep their row ids, as in DuckDB
        kept = "SELECT rowid, id FROM {}.main.t WHERE id < 100"
        assert canon_rows(con.execute(kept.format("ours")).fetchall()) == canon_rows(
            con.execute(kept.format("twin")).fetchall()
        )
    con.close()


def _oracle(target: list[tuple], source: list[tuple]) -> list[tuple]:
    """Ordered clauses of the multi-action merge below, in plain Python."""
    src = {r[0]: r for r in source}
    out = []
    for tid, tv, tn in target:
        s = src.get(tid)
        if s is not None:
            if s[2] == 0:
                continue  # WHEN MATCHED AND s.n = 0 THEN DELETE
            out.append((tid, s[1], tn + 100))  # WHEN MATCHED THEN UPDATE
        elif tid < 20:
            continue  # NOT MATCHED BY SOURCE AND t.id < 20: DELETE
        elif tid < 40:
            out.append((tid, "orphan", tn))  # NOT MATCHED BY SOURCE AND t.id < 40: UPDATE
        else:
            out.append((tid, tv, tn))
    target_ids = {r[0] for r in target}
    out += [s for k, s in src.items() if k not in target_ids and s[2] > 0]  # INSERT *
    return out


@pytest.mark.parametrize("way", WAYS)
def test_multi_action_merge_matches_an_oracle(
    spark, sqlite_catalog: Catalog, tmp_path, way: str
) -> None:
    with victims_staged_by(way):
        _multi_action_merge_matches_an_oracle(spark, sqlite_catalog, tmp_path)


def _multi_action_merge_matches_an_oracle(spark, sqlite_catalog: Catalog, tmp_path) -> None:
    lake, con = _twins(spark, sqlite_catalog, tmp_path)
    sql = SOURCE.replace("{lo}", "60").replace("{hi}", "130")
    before = _spark_rows(scan_table(spark, lake, "main", "t"))
    merge_into(
        spark,
        lake,
        "main",
        "t",
        spark.sql(sql),
        "t.id = s.id",
        [
            When("matched", "delete", "s.n = 0"),
            When("matched", "update", None, {"v": "s.v", "n": "t.n + 100"}),
            When("not_matched", "insert", "s.n > 0"),
            When("not_matched_by_source", "delete", "t.id < 20"),
            When("not_matched_by_source", "update", "t.id < 40", {"v": "'orphan'"}),
        ],
    )
    expected = _oracle(before, _spark_rows(spark.sql(sql)))
    assert canon_rows(con.execute("SELECT * FROM ours.main.t").fetchall()) == canon_rows(expected)
    assert canon_rows(_spark_rows(scan_table(spark, lake, "main", "t"))) == canon_rows(expected)

    last = lake.latest_snapshot()
    dup = spark.sql("SELECT id, 'x' AS v, 1 AS n FROM range(45, 47) UNION ALL SELECT 45, 'y', 2")
    for clauses in (
        [When("matched", "update", None, {"v": "s.v"})],
        [When("matched", "delete", "s.n = 1"), When("matched", "update", None, {"v": "s.v"})],
    ):
        with pytest.raises(MergeError, match=r"target row \d+ matches more than one source row"):
            merge_into(spark, lake, "main", "t", dup, "t.id = s.id", clauses)
    assert lake.latest_snapshot() == last
    with pytest.raises(MergeError, match="cannot INSERT; accepted: UPDATE, DELETE"):
        When("matched", "insert")
    con.close()


def test_the_target_scan_reads_only_the_columns_the_merge_uses() -> None:
    """A MERGE that sets every column reads just its keys; a column an UPDATE leaves
    as it was, or that a condition or value names, is read too."""
    columns = [
        Column(i, n, "int64", True, i, None, None, None, None, None, 1)
        for i, n in enumerate(["id", "v", "n", "extra"], 1)
    ]
    set_all = [When("matched", "update"), When("not_matched", "insert")]
    assert _target_columns_used("t.id = s.id", set_all, columns) == ["id"]
    partial = [
        When("matched", "update", "t.n > 0", {"v": "s.new_v"}),
        When("not_matched", "insert", None, {"id": "s.id", "v": "s.new_v"}),
    ]
    # n is named by the condition; n, extra and id are kept by the partial update
    assert _target_columns_used("t.id = s.id", partial, columns) == ["id", "n", "extra"]
    deleting = [When("matched", "delete", "`extra` IS NULL")]
    assert _target_columns_used("t.id = s.id", deleting, columns) == ["id", "extra"]
    # a source column named like a target column reads nothing from the target
    by_source = [
        When("matched", "update", "src.n > 0", {"v": "src.v", "n": "src . `n`", "extra": "1"})
    ]
    assert _target_columns_used("t.id = src.id", by_source, columns, "src") == ["id"]
    assert _target_columns_used("t.id = src.id", by_source, columns, "s") == ["id", "v", "n"]


def test_merge_keys_are_read_from_the_parsed_on_condition() -> None:
    """Key pairs are the `t.a = s.b` conjuncts of the whole ON tree: extra conditions,
    literals holding `or` and parenthesised ORs keep them; a top-level OR, `<=>` and
    struct fields give none."""
    ts = Aliases("t", "s")
    cases = {
        "t.id = s.id": [("id", "id")],
        "s.k = t.id AND t.v <> 'a or b' AND (t.n > 0 OR t.n < -5)": [("id", "k")],
        "((t.a = s.a)) and T.b = S.b": [("a", "a"), ("b", "b")],
        "t.id = s.id OR t.id = s.id + 1": [],
        "t.id <=> s.id": [],
        "t.addr.zip = s.zip": [],
        "t.id = s.id + 1 AND t.id = 3": [],
    }
    for on, pairs in cases.items():
        assert equal_keys(_parsed(on), ts) == pairs, on
    assert _parsed("t.id = = s.id") is None  # unreadable: no keys, nothing pruned


def _ids_in_four_files(spark, catalog: Catalog) -> Lake:
    """A lake whose table `t` holds ids 0-3999 in four files of ascending key ranges."""
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    create_table_as(
        lake,
        "main",
        "t",
        spark.sql("SELECT id, 'v' AS v FROM range(4000)")
        .repartitionByRange(4, "id")
        .sortWithinPartitions("id"),
    )
    return lake


def test_merge_prunes_the_target_by_its_keys_whatever_else_on_says(
    spark, sqlite_catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A SQL MERGE reads only the target files the source keys' range can match, also
    when ON adds conditions or a literal that holds `or`; a top-level OR reads all."""
    monkeypatch.setattr(merge, "PRUNE_FROM_ROWS", 1)  # 4,000 rows: prune them all the same
    lake = _ids_in_four_files(spark, sqlite_catalog)
    sql = LakeSQL(spark, lake)
    source = "(SELECT id, 'x' AS v FROM range(10, 20))"
    cases = [  # ON, files read, ids updated
        ("t.id = s.id", 1, set(range(10, 20))),
        ("t.id = s.id AND t.v <> 'a or b'", 1, set(range(10, 20))),
        ("(s.id = t.id) AND (t.id < 15 OR t.id > 17)", 1, {10, 11, 12, 13, 14, 18, 19}),
        ("t.id = s.id OR t.id = s.id + 2000", 4, set(range(10, 20)) | set(range(2010, 2020))),
    ]
    con = duck.connect()
    for i, (on, files, ids) in enumerate(cases):
        tag = f"m{i}"
        sql.execute(
            f"MERGE INTO t USING {source} AS s ON {on} WHEN MATCHED THEN UPDATE SET v = '{tag}'"
        )
        scans = dict(sql.last_scans)
        assert (scans["main.t"].files_total, scans["main.t"].files_read) == (4, files), on
        duck.attach(con, sqlite_catalog.duckdb_attach)
        got = con.execute(f"SELECT id FROM lake.t WHERE v = '{tag}'").fetchall()
        assert {r[0] for r in got} == ids, on
        con.execute("DETACH lake")
    con.close()


def test_merge_skips_the_row_groups_its_key_range_rules_out(
    spark, sqlite_catalog: Catalog, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The source keys' range also filters the target scan, so Parquet skips the row
    groups of a key-ordered file that the range rules out. The rows read stay located
    in their file (positions after skipped row groups and after DuckDB's deletes), so
    the MERGE equals DuckDB's on a twin lake, row ids included."""
    monkeypatch.setattr(merge, "PRUNE_FROM_ROWS", 1)
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach, alias="ours")
    duck.attach(con, f"sqlite:{tmp_path}/twin.sqlite", alias="twin", data_path=str(tmp_path / "tw"))
    for lake_name in ("ours", "twin"):
        con.execute(f"CALL {lake_name}.set_option('parquet_row_group_size', 1000)")
        con.execute(
            f"CREATE TABLE {lake_name}.main.t AS "
            "SELECT i AS id, 'v' || i AS v FROM range(10000) r(i) ORDER BY i"
        )
        con.execute(f"DELETE FROM {lake_name}.main.t WHERE id IN (1200, 5003, 5011)")
    files = _data_files(sqlite_catalog.data_path)
    assert len(files) == 1 and pq.ParquetFile(files[0]).metadata.num_row_groups >= 5
    source = "SELECT i AS id, 'new' || i AS v FROM range(4990, 5020) r(i)"
    con.execute("USE twin")
    con.execute(
        f"MERGE INTO t USING ({source}) AS s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT VALUES (s.id, s.v)"
    )
    con.execute("USE memory")
    stages = _stages_from(spark)
    LakeSQL(spark, lake).execute(
        f"MERGE INTO t USING ({source}) AS s ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
        "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)"
    )
    # 10,000 rows without skipping; a 1,000-row group or two (DuckDB may round the size)
    assert _input_rows(spark, stages()) < 5000
    # inserted rows take new row ids in either lake's write order: compared without
    rows = "SELECT id, v, CASE WHEN id IN (5003, 5011) THEN NULL ELSE rowid END FROM {}.main.t"
    ours = con.execute(rows.format("ours")).fetchall()
    assert canon_rows(ours) == canon_rows(con.execute(rows.format("twin")).fetchall())
    assert len(ours) == 9999 and {"new5003", "new4990", "v5020"} <= {r[1] for r in ours}
    con.close()


def _data_files(data_path: str) -> list[str]:
    return [str(p) for p in Path(data_path).rglob("*.parquet") if "delete" not in p.name]


def _stages_from(spark):
    """A function giving the ids of the stages run since this call."""
    scheduler = spark.sparkContext._jsc.sc().dagScheduler()
    first = scheduler.numTotalJobs()

    def stages() -> list[int]:
        tracker = spark.sparkContext.statusTracker()
        return [
            stage
            for job in range(first, scheduler.numTotalJobs())
            if (info := tracker.getJobInfo(job)) is not None
            for stage in info.stageIds
        ]

    return stages


def _input_rows(spark, stages: list[int]) -> int:
    """Rows the stages read from files (Spark's input metrics)."""
    store = spark.sparkContext._jsc.sc().statusStore()
    return sum(int(store.lastStageAttempt(stage).inputRecords()) for stage in stages)


def test_a_small_target_is_read_whole_without_a_job_over_the_source(
    spark, sqlite_catalog: Catalog
) -> None:
    """Under `PRUNE_FROM_ROWS` target rows, finding the source's key range would cost a
    job that saves less than it costs: every target file is read, none is skipped, and
    the MERGE still changes exactly the matched rows."""
    lake = _ids_in_four_files(spark, sqlite_catalog)
    assert merge.PRUNE_FROM_ROWS > 4000
    sql = LakeSQL(spark, lake)
    jobs = spark.sparkContext._jsc.sc().dagScheduler().numTotalJobs()
    sql.execute(
        "MERGE INTO t USING (SELECT id, 'x' AS v FROM range(10, 20)) AS s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v"
    )
    scans = dict(sql.last_scans)
    assert (scans["main.t"].files_total, scans["main.t"].files_read) == (4, 4)
    statuses = spark.sparkContext.statusTracker()
    sites = [
        statuses.getStageInfo(stage).name
        for job in range(jobs, spark.sparkContext._jsc.sc().dagScheduler().numTotalJobs())
        if (info := statuses.getJobInfo(job)) is not None
        for stage in info.stageIds
        if statuses.getStageInfo(stage) is not None
    ]
    lines, first = inspect.getsourcelines(merge._key_ranges)
    key_job = next(first + i for i, line in enumerate(lines) if ".collect()" in line)
    assert sites and not any(s.endswith(f"merge.py:{key_job}") for s in sites), sites
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach)
    got = con.execute("SELECT id FROM lake.t WHERE v = 'x' ORDER BY id").fetchall()
    assert [r[0] for r in got] == list(range(10, 20))
    con.close()


def test_a_row_matched_twice_leaves_no_delete_files_behind(spark, sqlite_catalog: Catalog) -> None:
    """Delete files are written inside the job that finds the repeat: the files other
    data files got are removed again, and the catalog is untouched."""
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    create_table_as(
        lake,
        "main",
        "t",
        spark.sql("SELECT id, concat('v', id) AS v, CAST(id % 5 AS INT) AS n FROM range(3000)")
        .repartitionByRange(3, "id")
        .sortWithinPartitions("id"),
    )
    with lake.catalog().session() as cat:
        assert len(cat.table_state("main", "t").data_files) == 3

    def on_disk() -> set[str]:
        return {str(p) for p in Path(sqlite_catalog.data_path).rglob("*")}

    before, last = on_disk(), lake.latest_snapshot()
    # 100 updates in each file (over the inlining limit: delete files), one key twice
    updates = "SELECT id * 10 AS id, 'x' AS v, 1 AS n FROM range(0, 300)"
    source = spark.sql(updates + " UNION ALL SELECT 2990, 'y', 2")
    with pytest.raises(MergeError, match="target row 2990 matches more than one source row"):
        merge_into(spark, lake, "main", "t", source, "t.id = s.id", [When("matched", "update")])
    assert lake.latest_snapshot() == last
    assert on_disk() == before
    # the same MERGE without the repeat commits, with a delete file per data file
    merge_into(
        spark, lake, "main", "t", spark.sql(updates), "t.id = s.id", [When("matched", "update")]
    )
    with lake.catalog().session() as cat:
        files = cat.table_state("main", "t").data_files
    assert sum(f.delete_file is not None for f in files) == 3


def test_a_source_that_reads_files_or_shuffles_is_computed_once(spark, tmp_path) -> None:
    """MERGE reads its source up to three times; one that reads files or shuffles (a dbt
    model's query) is kept after the first, a constant one is simply recomputed."""
    spark.range(100).write.parquet(str(tmp_path / "src"))
    assert _costly(spark.read.parquet(str(tmp_path / "src")))
    assert _costly(spark.range(100).groupBy((F.col("id") % 7).alias("k")).count())
    assert not _costly(spark.sql("SELECT id, 'x' AS v FROM range(100)"))


def test_a_small_merge_writes_one_file_per_kind(spark, sqlite_catalog: Catalog) -> None:
    """Each write task makes its own files: the updated and the inserted rows of a small
    MERGE are written by one task each, not one per shuffle partition."""
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    create_table_as(
        lake,
        "main",
        "t",
        spark.sql("SELECT id, concat('v', id) AS v FROM range(3000)").repartitionByRange(3, "id"),
    )
    source = spark.sql(
        "SELECT id * 20 AS id, 'x' AS v FROM range(150) "
        "UNION ALL SELECT 5000 + id, 'new' FROM range(150)"
    )
    # the shuffle's partitions stay as many as configured (2), as they would at scale
    spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")
    try:
        snap = merge_into(
            spark,
            lake,
            "main",
            "t",
            source,
            "t.id = s.id",
            [When("matched", "update"), When("not_matched", "insert")],
        )
    finally:
        spark.conf.unset("spark.sql.adaptive.coalescePartitions.enabled")
    assert snap is not None
    with lake.catalog().session() as cat:
        files = cat.table_state("main", "t").data_files
    added = [f for f in files if f.begin_snapshot == snap.snapshot_id]
    assert sorted(f.record_count for f in added) == [150, 150]
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach)
    assert con.execute(
        "SELECT count(*), count(*) FILTER (v = 'x') FROM lake.main.t"
    ).fetchone() == (
        3150,
        150,
    )
    con.close()


@pytest.mark.parametrize(
    ("on", "expected"),
    # ON's equal keys alone narrow the target (the join applies the rest); no keys: ON
    [("t.id = s.id", 100), ("t.id = s.id AND t.v <> s.v", 100), ("t.id < s.id", 990)],
)
def test_rows_a_kept_source_matches_are_found_with_its_kept_rows(
    spark, on: str, expected: int
) -> None:
    """A source that reads files or shuffles (a dbt model's) is kept after its first
    read. The target rows it matches are then found with the kept rows: planned with
    their true (small) size, so the source is not computed again and the target not
    shuffled. Spark plans a DataFrame named in SQL text without its cached rows, so
    this must not go through SQL text."""
    target = spark.range(1000).select("id", F.lit("old").alias("v"))
    shuffled = spark.range(0, 1000, 10).select("id", F.lit("new").alias("v")).repartition(3)
    source = merge._Source(shuffled)
    source.reused()  # its first read keeps it
    assert source.kept
    plan = merge._Plan(
        on,
        [When("matched", "delete")],
        Aliases("t", "s"),
        tuple(equal_keys(_parsed(on), Aliases("t", "s"))),
        ScanMetrics(),
    )
    try:
        matched = merge._matching(spark, target, source, plan)
        assert "InMemoryRelation" in matched._jdf.queryExecution().withCachedData().toString()
        assert matched.count() == expected
    finally:
        source.df.unpersist()
