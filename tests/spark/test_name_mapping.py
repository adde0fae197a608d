"""Files written without field ids and registered with a name mapping (DuckDB's
`ducklake_add_data_files`) are read by name, then follow renames and defaults."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.scan import scan_table
from tests import duck
from tests.canon import canon_rows
from tests.conftest import Catalog
from tests.spark.test_roundtrip import _spark_rows


def test_name_mapped_files_read_like_duckdb(spark, catalog: Catalog, tmp_path) -> None:
    external = str(tmp_path / "external.parquet")
    pq.write_table(
        pa.table(
            {
                "ID": pa.array([1, 2, 3], pa.int32()),
                "name": ["a", None, "c"],
                "st": [{"x": 1, "y": "p"}, None, {"x": 3, "y": None}],
                "ignored": [9, 9, 9],
            }
        ),
        external,
    )
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach, data_path=catalog.data_path)
    con.execute("USE lake")
    con.execute("CREATE TABLE t (id BIGINT, name VARCHAR, st STRUCT(x BIGINT, y VARCHAR))")
    con.execute("SET ducklake_default_data_inlining_row_limit = 0")
    con.execute("INSERT INTO t VALUES (10, 'own', {'x': 10, 'y': 'z'})")
    con.execute(
        f"CALL ducklake_add_data_files('lake', 't', '{external}', ignore_extra_columns => true)"
    )
    con.execute("ALTER TABLE t RENAME name TO nm")
    con.execute("ALTER TABLE t ADD COLUMN flag INTEGER DEFAULT 5")
    con.execute("DELETE FROM t WHERE id = 2")
    lake = Lake.open(catalog.metadata)
    cat = lake.catalog()
    files = cat.data_files(cat.table("main", "t"))
    mapped = [f for f in files if f.mapping_id is not None]
    assert len(mapped) == 1
    names = {m.source_name for m in cat.name_mappings([mapped[0].mapping_id])[mapped[0].mapping_id]}
    assert names == {"ID", "name", "st", "x", "y"}
    expected = con.execute("SELECT * FROM t").fetchall()
    assert canon_rows(_spark_rows(scan_table(spark, lake, "main", "t"))) == canon_rows(expected)
    assert len(expected) == 3
    con.close()
