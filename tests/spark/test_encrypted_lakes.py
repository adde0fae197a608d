"""Encrypted lakes (`ATTACH ... (ENCRYPTED)`), as DuckDB 1.5.5 writes them: every table
reads here at every snapshot exactly as DuckDB reads it (multi-page, dictionary, nested
columns, encrypted delete files, plaintext deletion vectors, schema evolution), a wrong
key fails naming the file, and every file written here is sealed as DuckDB seals it, so
DuckDB reads what this engine wrote at every snapshot."""

from __future__ import annotations

import base64
import re
import sqlite3
from pathlib import Path

import duckdb
import duckdb_extension_httpfs
import pytest
from py4j.protocol import Py4JJavaError

from dbt.adapters.ducklake.lake import Lake, UnsupportedFeatureError
from dbt.adapters.ducklake.spark import encrypted
from dbt.adapters.ducklake.spark.encrypted import key_id
from dbt.adapters.ducklake.spark.errors import spark_error_text
from dbt.adapters.ducklake.spark.scan import scan_table
from dbt.adapters.ducklake.spark.sql import LakeSQL
from tests import duck
from tests.conftest import Catalog
from tests.spark.every_snapshot import assert_same_in_duckdb


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
    # what dbt shows: Spark's line (Spark 3.5 names no error class), and why (the file
    # and the key)
    text = spark_error_text(failed.value)
    assert re.search(
        r"(FAILED_READ_FILE|IOException).*ducklake-[^ ]*\.parquet: AES-GCM authentication failed",
        text,
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


def _keys_and_layout(con: duckdb.DuckDBPyConnection, data_path: str) -> None:
    """Every file has a key (DuckDB refuses a file without one in an encrypted lake);
    Parquet files have DuckDB's encrypted layout, deletion vectors are plaintext, as
    DuckDB writes them."""
    rows = con.execute(
        "SELECT path, encryption_key, NULL FROM __ducklake_metadata_lake.ducklake_data_file "
        "UNION ALL SELECT path, encryption_key, format "
        "FROM __ducklake_metadata_lake.ducklake_delete_file"
    ).fetchall()
    on_disk = {p.name: p for p in Path(data_path).rglob("ducklake-*")}
    for name, key, fmt in rows:
        assert key and len(base64.b64decode(key)) == 16, (name, key)
        if name in on_disk:  # expired and cleaned files are gone
            data = on_disk[name].read_bytes()
            sealed = data[:4] == data[-4:] == b"PARE"
            assert sealed == (fmt != "puffin"), (name, data[:4], data[-4:])


# CI writes on SQLite (every file's key is checked there too); PostgreSQL's catalog rows
# are the same code and run under `./dev test --full`
@pytest.mark.parametrize(
    "catalog",
    ["sqlite", pytest.param("postgres", marks=[pytest.mark.postgres, pytest.mark.full])],
    indirect=True,
)
def test_writes_into_an_encrypted_lake_read_identically_in_duckdb(
    spark, catalog: Catalog, tmp_path: Path
) -> None:
    """CTAS, INSERT, DELETE (over DuckDB's encrypted delete files and our own), UPDATE,
    MERGE, deletion vectors, a flush of inlined rows and deletes, compaction, expire and
    cleanup, all written here into a lake DuckDB encrypted: every file sealed with its
    own key, and DuckDB reads every table at every snapshot as this engine does."""
    con = _duckdb(catalog, "ENCRYPTED, DATA_INLINING_ROW_LIMIT 10")
    con.execute(
        "CREATE TABLE t AS SELECT range AS id, 'v' || (range % 13) AS s, [range] AS l, "
        "{'a': range} AS st FROM range(3000)"
    )
    con.execute("DELETE FROM t WHERE id % 50 = 0")  # DuckDB's encrypted delete file
    con.execute("CREATE TABLE dv AS SELECT range AS id FROM range(2000)")
    con.execute(
        "CALL ducklake_set_option('lake', 'write_deletion_vectors', true, table_name => 'dv')"
    )
    con.execute("CREATE TABLE small (id INTEGER, s VARCHAR)")
    con.execute("INSERT INTO small VALUES (1, 'a'), (2, 'b')")  # inlined
    con.execute("USE memory")
    con.execute("DETACH lake")

    lake = Lake.open(catalog.metadata)
    sql = LakeSQL(spark, lake)
    for statement in (
        "CREATE TABLE main.c AS SELECT id, 'c' || id AS s FROM range(0, 500)",
        "INSERT INTO main.t SELECT id, 'new', array(id), named_struct('a', id) "
        "FROM range(5000, 5400)",
        "DELETE FROM main.t WHERE id % 7 = 1",  # merged with DuckDB's delete file
        "DELETE FROM main.t WHERE id BETWEEN 100 AND 199",  # merged with ours
        "UPDATE main.t SET s = 'u' WHERE id % 11 = 2",
        "MERGE INTO main.t AS t USING (SELECT id, 'm' AS s FROM range(2990, 3100)) AS s "
        "ON t.id = s.id WHEN MATCHED THEN UPDATE SET s = s.s "
        "WHEN NOT MATCHED THEN INSERT (id, s, l, st) VALUES (s.id, s.s, array(s.id), "
        "named_struct('a', s.id))",
        "DELETE FROM main.c WHERE id = 3",  # inlined positions of a file
        "DELETE FROM main.dv WHERE id % 10 = 1",
        "DELETE FROM main.dv WHERE id % 10 = 2",
        "INSERT INTO main.small VALUES (3, 'c')",
        "DELETE FROM main.small WHERE id = 1",
        "CALL ducklake_flush_inlined_data('lake')",
        "CALL ducklake_merge_adjacent_files('lake', 'c')",
        "CALL ducklake_rewrite_data_files('lake', 't', delete_threshold => 0)",
    ):
        sql.execute(statement)
    lake.close()

    duck.attach(con, catalog.duckdb_attach, options="ENCRYPTED")
    con.execute("USE lake")
    _keys_and_layout(con, catalog.data_path)
    # distinct row counts a table had over its snapshots: each write was seen in time
    for name, changes in {"t": 6, "c": 2, "dv": 3, "small": 3}.items():
        counts = assert_same_in_duckdb(spark, catalog.metadata, con, name, tmp_path / name)
        assert len(set(counts.values())) >= changes, (name, counts)
    latest = {n: con.execute(f"SELECT count(*) FROM {n}").fetchone()[0] for n in ("c", "small")}
    assert latest == {"c": 499, "small": 2}, latest

    sql = LakeSQL(spark, Lake.open(catalog.metadata))
    sql.execute("CALL ducklake_expire_snapshots('lake', older_than => now())")
    sql.execute("CALL ducklake_cleanup_old_files('lake', cleanup_all => true)")
    sql.lake.close()
    con.execute("USE memory")
    con.execute("DETACH lake")
    duck.attach(con, catalog.duckdb_attach, options="ENCRYPTED")
    con.execute("USE lake")
    _keys_and_layout(con, catalog.data_path)
    assert_same_in_duckdb(spark, catalog.metadata, con, "t", tmp_path / "after")
    con.close()


def test_without_the_jvm_classes_nothing_is_read_or_written(
    spark, sqlite_catalog: Catalog, monkeypatch
) -> None:
    """A session without the adapter's JVM classes (no Maven at setup) refuses every
    read and write of an encrypted lake's files, naming the table, before anything is
    written: the snapshot and the files stay as they were."""
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path, encrypted=True)
    with lake.transaction() as tx:
        tx.set_option("data_inlining_row_limit", "0")
    sql = LakeSQL(spark, lake)
    sql.execute("CREATE TABLE main.t AS SELECT id FROM range(100)")
    latest = lake.latest_snapshot().snapshot_id
    files = sorted(Path(sqlite_catalog.data_path).rglob("*"))
    monkeypatch.setitem(encrypted._checked, id(spark), False)
    for statement in (
        "CREATE TABLE main.c AS SELECT id FROM range(10)",
        "INSERT INTO main.t SELECT id FROM range(100, 110)",
        "DELETE FROM main.t WHERE id < 50",
        "SELECT count(*) FROM main.t",
    ):
        with pytest.raises(
            UnsupportedFeatureError,
            match=r"table main\.[ct] (is encrypted|has encrypted files).*: (writing its files|"
            r"reading them) needs the adapter's JVM classes.*Nothing was read or written",
        ):
            result = sql.execute(statement)
            if result is not None:
                result.collect()
    assert lake.latest_snapshot().snapshot_id == latest
    assert sorted(Path(sqlite_catalog.data_path).rglob("*")) == files
    lake.close()
