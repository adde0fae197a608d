"""A DuckLake feature DuckDB 1.5.5 writes that this project cannot read or write yet
(encrypted lakes) is refused before anything is read wrong or written: the error names
the table and the feature, and the lake stays as it was for DuckDB. (Reading and
writing encrypted lakes is issue 35; this pins the refusal until then.)"""

from __future__ import annotations

import os

import duckdb
import duckdb_extension_httpfs
import pytest

from dbt.adapters.ducklake.lake import Lake, UnsupportedFeatureError
from dbt.adapters.ducklake.spark.scan import scan_table
from dbt.adapters.ducklake.spark.sql import LakeSQL
from tests import duck
from tests.conftest import Catalog

# writes that put new Parquet files into the lake (refused in an encrypted lake only)
NEW_FILES = (
    "CREATE TABLE main.c AS SELECT id FROM range(0, 50)",
    "INSERT INTO main.t SELECT id, id AS v FROM range(1000, 1050)",
)
# writes that read the table's files
WRITES = (
    "DELETE FROM main.t WHERE id < 5",
    "UPDATE main.t SET v = 0 WHERE id = 7",
    "MERGE INTO main.t AS t USING (SELECT id, id AS v FROM range(90, 120)) AS s "
    "ON t.id = s.id WHEN MATCHED THEN UPDATE SET v = s.v "
    "WHEN NOT MATCHED THEN INSERT (id, v) VALUES (s.id, s.v)",
)


def _duckdb(catalog: Catalog, options: str) -> duckdb.DuckDBPyConnection:
    con = duck.connect()
    # DuckDB's Parquet encryption needs httpfs's crypto
    con.execute(f"LOAD '{duck.extension_path(duckdb_extension_httpfs, 'httpfs')}'")
    duck.attach(con, catalog.duckdb_attach, data_path=catalog.data_path, options=options)
    con.execute("USE lake")
    return con


def _state(con: duckdb.DuckDBPyConnection, data_path: str) -> tuple[object, ...]:
    """The latest snapshot, every table's rows as DuckDB reads them, the files on disk."""
    latest = con.execute("SELECT max(snapshot_id) FROM ducklake_snapshots('lake')").fetchone()
    tables = [r[0] for r in con.execute("SHOW TABLES").fetchall()]
    rows = {t: sorted(con.execute(f"SELECT * FROM {t}").fetchall()) for t in tables}
    files = sorted(os.path.join(d, n) for d, _, names in os.walk(data_path) for n in names)
    return latest, rows, files


def _refused_everywhere(spark, catalog: Catalog, feature: str, writes: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    lake = Lake.open(catalog.metadata)
    with pytest.raises(UnsupportedFeatureError, match=rf"table main\.t has {feature}"):
        scan_table(spark, lake, "main", "t")
    sql = LakeSQL(spark, lake)
    for statement in writes:
        try:
            sql.execute(statement)
        except UnsupportedFeatureError as refused:
            assert "nothing was" in str(refused) and "main." in str(refused), refused
        else:
            raise AssertionError(f"not refused: {statement}")
    lake.close()


def test_an_encrypted_lake_is_refused_and_left_as_it_was(spark, catalog: Catalog) -> None:
    con = _duckdb(catalog, "ENCRYPTED, DATA_INLINING_ROW_LIMIT 0")
    con.execute("CREATE TABLE t AS SELECT range AS id, range * 2 AS v FROM range(100)")
    keys = con.execute(
        "SELECT count(*), count(encryption_key) FROM __ducklake_metadata_lake.ducklake_data_file"
    ).fetchone()
    assert keys == (1, 1)  # DuckDB wrote an encrypted file with its key in the catalog
    before = _state(con, catalog.data_path)
    con.execute("USE memory")
    con.execute("DETACH lake")

    _refused_everywhere(spark, catalog, "encrypted files", (*NEW_FILES, *WRITES))

    duck.attach(con, catalog.duckdb_attach, options="ENCRYPTED")
    con.execute("USE lake")
    assert _state(con, catalog.data_path) == before
    con.close()
