"""The CDC batch of a `changes` snapshot reads only what changed: on a 40-file source,
two updates, a delete and an insert read the two files they touched (plus inlined rows),
not the table; its versions and closes are exactly those changes."""

from __future__ import annotations

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.cdc import SnapshotColumns, Source, changes_batch
from dbt.adapters.ducklake.spark.sql import LakeSQL
from tests.conftest import Catalog


def test_a_run_reads_the_changed_files_only(spark, sqlite_catalog: Catalog) -> None:
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    sql = LakeSQL(spark, lake)
    sql.execute(
        "CREATE TABLE big AS SELECT CAST(id AS INT) AS id, concat('v', id) AS v "
        "FROM range(0, 40000, 1, 40)"
    )
    source = Source("main", "big", None)
    names = SnapshotColumns()
    first = changes_batch(spark, lake, source, "main", ["id"], None, names)
    assert first is not None and first.metrics.rows_read == 40000
    assert first.new_versions.count() == 40000
    consumed = first.source_snapshot

    sql.execute("UPDATE big SET v = 'changed' WHERE id IN (5, 6)")
    sql.execute("DELETE FROM big WHERE id = 2500")
    sql.execute("INSERT INTO big VALUES (50000, 'new'), (50001, 'new'), (50002, 'new')")

    batch = changes_batch(spark, lake, source, "main", ["id"], consumed, names)

    assert batch is not None and batch.closes is not None
    assert batch.metrics.files_read == 2  # the files holding ids 5, 6 and 2500
    assert batch.metrics.rows_read <= 2 * 1000 + 10  # of 40,000
    versions = sorted((r.id, r.v, r.dbt_valid_to) for r in batch.new_versions.collect())
    assert versions == [
        (5, "changed", None),
        (6, "changed", None),
        (50000, "new", None),
        (50001, "new", None),
        (50002, "new", None),
    ]
    closes = sorted(r.id for r in batch.closes.collect())
    assert closes == [5, 6, 2500, 50000, 50001, 50002]
    # nothing changed since: no batch at all
    assert changes_batch(spark, lake, source, "main", ["id"], batch.source_snapshot, names) is None

    # an update of the key itself ends the old key's version and starts the new key's
    sql.execute("UPDATE big SET id = 60000 WHERE id = 7")
    moved = changes_batch(spark, lake, source, "main", ["id"], batch.source_snapshot, names)
    assert moved is not None and moved.closes is not None
    assert [(r.id, r.v) for r in moved.new_versions.collect()] == [(60000, "v7")]
    assert sorted(r.id for r in moved.closes.collect()) == [7, 60000]
