"""The Spark scan of a DuckDB-written history equals DuckDB at every snapshot, row ids
included: deletes, partial delete files, flushed and merged partial files, inlined
rows and deletes, renamed/added (with defaults)/dropped/promoted columns, partitions."""

from __future__ import annotations

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.scan import scan_table
from tests import duck
from tests.canon import canon_rows
from tests.conftest import Catalog
from tests.lake.test_read_interop import HISTORY
from tests.spark.test_roundtrip import _fix_spark_timestamps, _spark_rows


def test_scan_equals_duckdb_at_every_snapshot(spark, sqlite_catalog: Catalog) -> None:
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach, data_path=sqlite_catalog.data_path)
    con.execute("USE lake")
    lake = Lake.open(sqlite_catalog.metadata)
    snapshots = []
    for stmt in HISTORY:
        con.execute(stmt)
        snapshots.append(lake.latest_snapshot().snapshot_id)
    checked = 0
    for snap in sorted(set(snapshots)):
        for table in lake.catalog(snap).tables("s"):
            df = scan_table(spark, lake, "s", table.name, at=snap, lineage=True)
            cols = df.columns
            ours = _spark_rows(df)
            if "ts" in cols:
                ours = _fix_spark_timestamps(ours, cols.index("ts"))
            theirs = con.execute(
                f"SELECT *, rowid FROM s.{table.name} AT (VERSION => {snap})"
            ).fetchall()
            # ours: columns..., rowid, snapshot_id; DuckDB: columns..., rowid
            assert canon_rows(r[:-1] for r in ours) == canon_rows(theirs), (snap, table.name)
            checked += 1
    assert checked > 40
    con.close()
