"""Encrypted lakes (`ATTACH ... (ENCRYPTED)`), as DuckDB 1.5.5 writes them: every table
reads here at every snapshot exactly as DuckDB reads it (multi-page, dictionary, nested
columns, encrypted delete files, plaintext deletion vectors, schema evolution), a wrong
key fails naming the file, and writes, not supported yet, are refused before anything
is written, leaving the lake as it was for DuckDB."""

from __future__ import annotations

import os
import re
import sqlite3
from pathlib import Path

import duckdb
import duckdb_extension_httpfs
import pytest
from py4j.protocol import Py4JJavaError

from dbt.adapters.ducklake.lake import Lake, UnsupportedFeatureError
from dbt.adapters.ducklake.spark.encrypted import key_id
from dbt.adapters.ducklake.spark.errors import spark_error_text
from dbt.adapters.ducklake.spark.scan import scan_table
from dbt.adapters.ducklake.spark.sql import LakeSQL
from tests import duck
from tests.conftest import Catalog
from tests.spark.every_snapshot import assert_same_in_duckdb

# writes that put new Parquet files into the lake (refused in an encrypted lake only)
NEW_FILES = (
    "CREATE TABLE main.c AS SELECT id FROM range(0, 50)",
    "INSERT INTO main.t (id, s) SELECT id, 'new' FROM range(1000, 1050)",
)
# writes that read the table's files
WRITES = (
    "DELETE FROM main.t WHERE id < 5",
    "UPDATE main.t SET s = 'x' WHERE id = 7",
    "MERGE INTO main.t AS t USING (SELECT id, 'm' AS s FROM range(90, 120)) AS s "
    "ON t.id = s.id WHEN MATCHED THEN UPDATE SET s = s.s "
    "WHEN NOT MATCHED THEN INSERT (id, s) VALUES (s.id, s.s)",
)


def _duckdb(
    catalog: Catalog, options: str = "ENCRYPTED, DATA_INLINING_ROW_LIMIT 0"
) -> duckdb.DuckDBPyConnection:
    con = duck.connect()
    # DuckDB's Parquet encryption needs httpfs's crypto
    con.execute(f"LOAD '{duck.extension_path(duckdb_extension_httpfs, 'httpfs')}'")
    duck.attach(con, catalog.duckdb_attach, data_path=catalog.data_path, options=options)
    con.execute("USE lake")
    return con


def _build(con: duckdb.DuckDBPyConnection) -> None:
    """`t`: 150k rows in two row groups with several pages per column chunk (dictionary
    strings, a list, a struct), deletes in encrypted Parquet delete files, a column added
    with a default, an UPDATE; `dv`: deletion vectors, which DuckDB keeps in plaintext."""
    con.execute(
        "CREATE TABLE t AS SELECT range AS id, 'name' || (range % 997) AS s, "
        "[range, range + 1] AS l, {'a': range, 'b': 'x' || (range % 3)} AS st "
        "FROM range(150000)"
    )
    con.execute("DELETE FROM t WHERE id % 7 = 0")
    con.execute("ALTER TABLE t ADD COLUMN k INTEGER DEFAULT 5")
    con.execute(
        "INSERT INTO t SELECT range, 'late', [range], {'a': 0, 'b': 'y'}, 1 "
        "FROM range(200000, 200100)"
    )
    con.execute("DELETE FROM t WHERE id BETWEEN 1000 AND 1999 OR id = 200050")
    con.execute("UPDATE t SET s = 'updated' WHERE id % 1000 = 3")
    con.execute("CREATE TABLE dv AS SELECT range AS id, range * 2 AS v FROM range(5000)")
    con.execute(
        "CALL ducklake_set_option('lake', 'write_deletion_vectors', true, table_name => 'dv')"
    )
    con.execute("DELETE FROM dv WHERE id % 10 = 3")


def _files(con: duckdb.DuckDBPyConnection) -> list[tuple[object, ...]]:
    return con.execute(
        "SELECT 'data', NULL, encryption_key IS NOT NULL "
        "FROM __ducklake_metadata_lake.ducklake_data_file "
        "UNION ALL SELECT 'delete', format, encryption_key IS NOT NULL "
        "FROM __ducklake_metadata_lake.ducklake_delete_file"
    ).fetchall()


def test_duckdb_encrypted_lake_reads_identically_at_every_snapshot(
    spark, catalog: Catalog, tmp_path: Path
) -> None:
    con = _duckdb(catalog)
    _build(con)
    files = _files(con)
    # every data file and delete file carries a key; the vector's file is plaintext anyway
    assert all(keyed for _, _, keyed in files), files
    assert {(kind, fmt) for kind, fmt, _ in files} == {
        ("data", None),
        ("delete", "parquet"),
        ("delete", "puffin"),
    }
    for path in Path(catalog.data_path, "main", "t").glob("*.parquet"):
        assert path.read_bytes()[-4:] == b"PARE", path  # encrypted footers
    t = assert_same_in_duckdb(spark, catalog.metadata, con, "t", tmp_path)
    # 150k, less the 21,429 multiples of 7, plus 100 late rows, less 857 more and one late
    assert t[max(t)] == 150000 - 21429 + 100 - 857 - 1, t
    assert len(set(t.values())) >= 4, t  # the deletes and the insert are seen in time
    dv = assert_same_in_duckdb(spark, catalog.metadata, con, "dv", tmp_path)
    assert dv[max(dv)] == 4500, dv
    con.close()


def test_a_wrong_key_fails_naming_the_file(spark, sqlite_catalog: Catalog, tmp_path: Path) -> None:
    con = _duckdb(sqlite_catalog)
    con.execute("CREATE TABLE t AS SELECT range AS id FROM range(100)")
    con.close()
    db = sqlite3.connect(sqlite_catalog.metadata.removeprefix("sqlite:///"))
    db.execute("UPDATE ducklake_data_file SET encryption_key = 'AAAAAAAAAAAAAAAAAAAAAA=='")
    db.commit()
    db.close()
    lake = Lake.open(sqlite_catalog.metadata)
    with pytest.raises(Py4JJavaError) as failed:
        scan_table(spark, lake, "main", "t").collect()
    # what dbt shows: Spark's line, and why (the file and the key)
    text = spark_error_text(failed.value)
    assert re.search(
        r"FAILED_READ_FILE.*ducklake-[^ ]*\.parquet: AES-GCM authentication failed", text
    ), text
    lake.close()


@pytest.mark.parametrize("name", ["plain.parquet", "with space %41 é.parquet"])
def test_the_key_of_a_file_is_found_under_the_uri_spark_opens(
    spark, tmp_path: Path, name: str
) -> None:
    """The driver names each key by a hash of the file's path; the task's file system
    hashes the URI Spark opens: they agree for spaces, escapes and non-ASCII names."""
    jvm = spark.sparkContext._jvm
    for path in (str(tmp_path / name), f"s3a://bucket/dir/{name}"):
        uri = jvm.org.apache.hadoop.fs.Path(path).toUri()
        assert jvm.ducklake.jvm.KeyedFileSystem.idOf(uri) == key_id(path), path


def _state(con: duckdb.DuckDBPyConnection, data_path: str) -> tuple[object, ...]:
    """The latest snapshot, every table's rows as DuckDB reads them, the files on disk."""
    latest = con.execute("SELECT max(snapshot_id) FROM ducklake_snapshots('lake')").fetchone()
    tables = [r[0] for r in con.execute("SHOW TABLES").fetchall()]
    rows = {t: sorted(con.execute(f"SELECT * FROM {t}").fetchall()) for t in tables}
    files = sorted(os.path.join(d, n) for d, _, names in os.walk(data_path) for n in names)
    return latest, rows, files


def test_writes_into_an_encrypted_lake_are_refused_and_change_nothing(
    spark, catalog: Catalog
) -> None:
    con = _duckdb(catalog)
    con.execute("CREATE TABLE t AS SELECT range AS id, 'v' || range AS s FROM range(100)")
    before = _state(con, catalog.data_path)
    con.execute("USE memory")
    con.execute("DETACH lake")

    lake = Lake.open(catalog.metadata)
    assert scan_table(spark, lake, "main", "t").count() == 100  # reads work
    sql = LakeSQL(spark, lake)
    for statement in (*NEW_FILES, *WRITES):
        with pytest.raises(
            UnsupportedFeatureError, match=r"main\.. is in an encrypted lake.*nothing was written"
        ):
            sql.execute(statement)
    lake.close()

    duck.attach(con, catalog.duckdb_attach, options="ENCRYPTED")
    con.execute("USE lake")
    assert _state(con, catalog.data_path) == before
    con.close()
