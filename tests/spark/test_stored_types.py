"""Files written before a type promotion read as DuckDB reads them, on every Spark line:
Spark 4 widens in its reader, Spark 3.5 reads each group of files with the types it was
written with and casts (spark/stored_types.py)."""

from __future__ import annotations

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.compat import reader_widens
from dbt.adapters.ducklake.spark.scan import scan_table
from dbt.adapters.ducklake.spark.stored_types import by_stored_types
from tests import duck
from tests.canon import canon_rows
from tests.conftest import Catalog


def test_files_before_a_promotion_read_as_duckdb_reads_them(spark, sqlite_catalog: Catalog) -> None:
    con = duck.connect()
    options = "DATA_INLINING_ROW_LIMIT 0"
    duck.attach(
        con, sqlite_catalog.duckdb_attach, data_path=sqlite_catalog.data_path, options=options
    )
    con.execute("USE lake")
    con.execute("CREATE TABLE t (id INTEGER, i INTEGER, f FLOAT, u UTINYINT, name VARCHAR)")
    con.execute("INSERT INTO t SELECT r, r * 1000, r / 4, r, 'old ' || r FROM range(0, 50) t(r)")
    con.execute("ALTER TABLE t ALTER i SET TYPE BIGINT")
    con.execute("ALTER TABLE t ALTER f SET TYPE DOUBLE")
    con.execute("INSERT INTO t VALUES (50, 9000000000, 0.1, 7, 'new'), (52, 1, 2, 3, 'x')")
    con.execute("ALTER TABLE t ALTER u SET TYPE INTEGER")
    con.execute("INSERT INTO t VALUES (51, -9000000000, 1e300, 100000, 'newer')")
    con.execute("DELETE FROM t WHERE id IN (3, 50)")
    lake = Lake.open(sqlite_catalog.metadata)
    cat = lake.catalog()
    table = cat.table("main", "t")
    files = cat.data_files(table)
    eras = by_stored_types(spark, cat, cat.columns(table.table_id), files)
    if reader_widens(spark):
        assert eras is None  # one read: Spark 4's reader widens
    else:
        # one group per set of stored types: INTEGER and FLOAT, then UTINYINT, then today's
        assert eras is not None and len(eras) == 3, eras
        written = sorted((tuple(c.type for c in cols[1:4]), len(group)) for cols, group in eras)
        assert written == [
            (("int32", "float32", "uint8"), 1),
            (("int64", "float64", "int32"), 1),
            (("int64", "float64", "uint8"), 1),
        ]
    df = scan_table(spark, lake, "main", "t")
    assert [f.dataType.simpleString() for f in df.schema.fields[1:4]] == ["bigint", "double", "int"]
    ours = [tuple(r) for r in df.collect()]
    theirs = con.execute("SELECT * FROM t").fetchall()
    assert len(ours) == 51
    assert canon_rows(ours) == canon_rows(theirs)
    con.close()
    lake.close()
