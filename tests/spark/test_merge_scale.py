"""A 1% MERGE (updates and inserts) into a 1,000,000-row table of 20 files is
merge-on-read: no data file is ended or rewritten, the new files are a small fraction of
the table's bytes (from catalog rows), and no table data reaches the driver — every
`collect()` during the MERGE is watched and returns only per-file facts."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.dml import FEW_VICTIMS
from dbt.adapters.ducklake.spark.engine import create_table_as
from dbt.adapters.ducklake.spark.sql import LakeSQL
from tests import duck
from tests.conftest import Catalog

try:  # the classic DataFrame's methods (Spark 4 moved them beside Connect's)
    from pyspark.sql.classic.dataframe import DataFrame
except ImportError:  # Spark 3.5
    from pyspark.sql.dataframe import DataFrame  # type: ignore[assignment]

ROWS = 1_000_000
FILES = 20
CHANGED = ROWS // 100  # half updates of existing keys, half new keys


@pytest.fixture
def collected(monkeypatch) -> Iterator[list[int]]:
    """Row counts of everything a DataFrame hands to the driver while the test runs
    (take / first / head go through collect)."""
    sizes: list[int] = []

    def watch(name: str) -> None:
        original = getattr(DataFrame, name)

        def watched(self, *args, **kwargs):
            result = original(self, *args, **kwargs)
            sizes.append(len(result) if name != "toArrow" else result.num_rows)
            return result

        monkeypatch.setattr(DataFrame, name, watched)

    for name in ("collect", "toPandas", "toArrow"):
        if hasattr(DataFrame, name):  # Spark 3.5 has no toArrow
            watch(name)

    def refuse(self, *args, **kwargs):
        raise AssertionError("toLocalIterator streams table rows to the driver")

    monkeypatch.setattr(DataFrame, "toLocalIterator", refuse)
    yield sizes


def _catalog_files(lake: Lake) -> list[tuple[int, int, int | None, int]]:
    with lake.connect() as conn:
        return [
            tuple(r)
            for r in conn.execute(
                sa.text(
                    "SELECT data_file_id, begin_snapshot, end_snapshot, file_size_bytes "
                    "FROM ducklake_data_file ORDER BY data_file_id"
                )
            )
        ]


def test_one_percent_merge_writes_only_what_changed(
    spark, sqlite_catalog: Catalog, collected: list[int]
) -> None:
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    table = spark.sql(
        f"SELECT id, concat('value-', id) AS v, CAST(id % 97 AS INT) AS n FROM range({ROWS})"
    ).repartitionByRange(FILES, "id")
    create_table_as(lake, "main", "t", table)
    before = _catalog_files(lake)
    assert len(before) == FILES
    table_bytes = sum(f[3] for f in before)
    base = lake.latest_snapshot().snapshot_id
    collected.clear()

    half = CHANGED // 2
    step = ROWS // half  # updated keys spread over every file
    spark.sql(
        f"SELECT id * {step} AS id, 'changed' AS v, -1 AS n FROM range({half}) "
        f"UNION ALL SELECT {ROWS} + id, 'new', 1 FROM range({half})"
    ).createOrReplaceTempView("changes")
    snap = LakeSQL(spark, lake).execute(
        "MERGE INTO t USING changes s ON t.id = s.id "
        "WHEN MATCHED THEN UPDATE SET v = s.v, n = s.n WHEN NOT MATCHED THEN INSERT *"
    )
    assert snap is not None and snap.snapshot_id == base + 1
    assert [c.kind for c in snap.changes] == ["inserted_into_table", "deleted_from_table"]
    assert snap == lake.latest_snapshot()  # what commit returns is what was stored

    after = _catalog_files(lake)
    old = {f[0]: f for f in before}
    for fid, begin, end, size in after:
        if fid in old:
            assert (begin, end, size) == old[fid][1:], f"data file {fid} was ended or rewritten"
    new_bytes = sum(f[3] for f in after if f[0] not in old)
    with lake.connect() as conn:
        delete_files, delete_bytes = conn.execute(
            sa.text(
                "SELECT count(*), sum(file_size_bytes) FROM ducklake_delete_file "
                "WHERE begin_snapshot = :s"
            ),
            {"s": snap.snapshot_id},
        ).one()
    assert delete_files == FILES  # each file had updated rows: one delete file each
    assert new_bytes + delete_bytes < 0.05 * table_bytes, (new_bytes, delete_bytes, table_bytes)
    # the driver saw per-file facts only, never the 10,000 changed rows (a change of
    # at most FEW_VICTIMS rows has its positions staged on the driver; this one is more)
    assert CHANGED // 2 > FEW_VICTIMS
    assert collected and max(collected) <= 2 * FILES + 1, collected

    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach)
    assert con.execute(
        "SELECT count(*), count(*) FILTER (v = 'changed'), count(*) FILTER (v = 'new'), "
        "min(rowid) FILTER (v = 'changed') FROM lake.main.t"
    ).fetchone() == (ROWS + half, half, half, 0)
    con.close()
