"""Bad input gets a clear error naming what is wrong, and commits nothing."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from dbt.adapters.ducklake.lake import (
    CatalogExistsError,
    CatalogNotFoundError,
    ColumnSpec,
    CommitMessageRequiredError,
    FormatVersionError,
    InvalidChangeError,
    Lake,
    MetadataConfigError,
    parse_type,
)
from tests import duck
from tests.conftest import Catalog
from tests.lakefiles import write_data_file


@pytest.mark.parametrize(
    ("metadata", "message"),
    [
        ("mysql://root@127.0.0.1/db", "unsupported scheme 'mysql'"),
        ("duckdb:catalog.ducklake", "unsupported catalog type 'duckdb'"),
        ("sqlite://", "in-memory SQLite catalog"),
        ("", "metadata is empty"),
    ],
)
def test_unknown_metadata_forms_are_refused(metadata: str, message: str) -> None:
    with pytest.raises(MetadataConfigError, match=message) as err:
        Lake.open(metadata, data_path="/tmp/x")
    if "unsupported" in message:
        assert "sqlite:///" in str(err.value)  # the accepted forms are listed


def test_unreachable_postgres_is_named() -> None:
    with pytest.raises(MetadataConfigError, match=r"cannot reach .*PostgreSQL.*127\.0\.0\.1:1"):
        Lake.open("postgresql://127.0.0.1:1/nope", data_path="/tmp/x")
    with pytest.raises(MetadataConfigError, match="cannot reach"):
        Lake.open("postgres:dbname=no_such_database_here host=127.0.0.1", data_path="/tmp/x")


def test_missing_sqlite_directory_and_missing_data_path(tmp_path) -> None:
    with pytest.raises(MetadataConfigError, match="does not exist"):
        Lake.open(str(tmp_path / "nope" / "m.sqlite"), data_path=str(tmp_path))
    with pytest.raises(MetadataConfigError, match="data_path is required"):
        Lake.open(str(tmp_path / "m.sqlite"))
    with pytest.raises(MetadataConfigError, match="metadata_schema"):
        Lake.open(str(tmp_path / "m.sqlite"), data_path=str(tmp_path), metadata_schema="x")
    # a data_path that is a regular file: refused before the catalog is created, and
    # when an existing lake stores one
    (tmp_path / "file").write_text("not a folder")
    with pytest.raises(
        MetadataConfigError, match=r"data_path '.*/file/' .* is a file, not a folder"
    ):
        Lake.open(str(tmp_path / "f.sqlite"), data_path=str(tmp_path / "file"))
    with pytest.raises(CatalogNotFoundError):
        Lake.open(str(tmp_path / "f.sqlite"), create=False)
    Lake.open(str(tmp_path / "n.sqlite"), data_path=str(tmp_path / "d")).close()
    if (tmp_path / "d").exists():
        (tmp_path / "d").rmdir()
    (tmp_path / "d").write_text("moved away, a file now")
    with pytest.raises(MetadataConfigError, match="is a file, not a folder"):
        Lake.open(str(tmp_path / "n.sqlite"))


def test_wrong_format_version_is_refused(catalog: Catalog) -> None:
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    with lake.engine.begin() as conn:
        conn.execute(sa.text("UPDATE ducklake_metadata SET value = '0.3' WHERE key = 'version'"))
    with pytest.raises(FormatVersionError, match=r"'0\.3'.*format 1\.0"):
        Lake.open(catalog.metadata)


def test_a_data_path_other_than_the_stored_one_is_refused_unless_overridden(
    tmp_path, monkeypatch
) -> None:
    """A profile's data_path that is not the lake's would record new files under the
    stored path while writing them elsewhere (DuckDB then fails to open them): refused,
    both paths named, unless overridden as DuckDB's OVERRIDE_DATA_PATH does."""
    stored, other = tmp_path / "a", tmp_path / "b"
    con = duck.connect()
    duck.attach(
        con,
        f"sqlite:{tmp_path}/m.sqlite",
        data_path=str(stored),
        options="DATA_INLINING_ROW_LIMIT 0",
    )
    con.execute("CREATE TABLE lake.t AS SELECT 1 AS x")
    con.close()
    metadata = f"sqlite:///{tmp_path}/m.sqlite"
    with pytest.raises(MetadataConfigError) as err:
        Lake.open(metadata, data_path=str(other))
    assert f"'{other}/'" in str(err.value) and f"'{stored}/'" in str(err.value), err.value
    assert "override_data_path: true" in str(err.value)
    # the stored folder however spelled: relative to the current folder, without the
    # slash, through a symlink
    monkeypatch.chdir(tmp_path)
    (tmp_path / "link").symlink_to(stored)
    for spelling in ("a", str(stored), "link/"):
        lake = Lake.open(metadata, data_path=spelling)
        assert lake.latest_snapshot().snapshot_id == 1
        lake.close()

    # the files moved to b: overridden, the lake reads and writes there, as DuckDB does
    stored.rename(other)
    lake = Lake.open(metadata, data_path=str(other), override_data_path=True)
    assert lake.data_path == f"{other}/"
    with lake.transaction() as tx:
        t = tx.table("main", "t")
        tx.add_data_files(t, [write_data_file(t, [(2,)])])
    lake.close()
    con = duck.connect()
    duck.attach(
        con, f"sqlite:{tmp_path}/m.sqlite", data_path=str(other), options="OVERRIDE_DATA_PATH true"
    )
    assert sorted(con.execute("FROM lake.t").fetchall()) == [(1,), (2,)]
    con.close()


def _lake_with_table(catalog: Catalog) -> Lake:
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    with lake.transaction() as tx:
        t = tx.create_table(
            "main",
            "t",
            [ColumnSpec("i", "int32"), ColumnSpec("v", "varchar"), ColumnSpec("f", "float64")],
        )
        tx.add_data_files(t, [write_data_file(t, [(1, None, 1.0), (2, "x", 2.0)])])
    return lake


@pytest.mark.parametrize(
    ("action", "error", "message"),
    [
        (
            lambda tx: tx.alter_column_type(tx.table("main", "t"), "i", "int16"),
            InvalidChangeError,
            "from int32 to int16.*int64",
        ),
        (
            lambda tx: tx.alter_column_type(tx.table("main", "t"), "v", "int64"),
            InvalidChangeError,
            "from varchar to int64",
        ),
        (
            lambda tx: tx.alter_column_type(tx.table("main", "t"), "f", "float32"),
            InvalidChangeError,
            "lossless promotions",
        ),
        (lambda tx: tx.create_schema("main"), CatalogExistsError, "schema 'main' already exists"),
        (
            lambda tx: tx.create_table("main", "t", [ColumnSpec("a", "int32")]),
            CatalogExistsError,
            "main.t already exists",
        ),
        (
            lambda tx: tx.create_table(
                "main", "u", [ColumnSpec("a", "int32"), ColumnSpec("A", "int64")]
            ),
            CatalogExistsError,
            "duplicate column name 'A'",
        ),
        (
            lambda tx: tx.add_column(tx.table("main", "t"), ColumnSpec("v", "int32")),
            CatalogExistsError,
            "column 'v' already exists",
        ),
        (
            lambda tx: tx.rename_column(tx.table("main", "t"), "i", "v"),
            CatalogExistsError,
            "'v' already exists",
        ),
        (lambda tx: tx.create_view("main", "t", "SELECT 1"), CatalogExistsError, "main.t"),
        (
            lambda tx: tx.drop_schema("main"),
            InvalidChangeError,
            "still contains staged_first, t .use cascade",
        ),
        (
            lambda tx: tx.set_nullable(tx.table("main", "t"), "v", False),
            InvalidChangeError,
            "has NULL values",
        ),
        (
            lambda tx: tx.set_partitioned_by(tx.table("main", "t"), [("i", "decade")]),
            InvalidChangeError,
            "accepted: identity, year",
        ),
        (lambda tx: tx.table("main", "nope"), CatalogNotFoundError, "main.nope does not exist"),
        (
            lambda tx: tx.drop_column(tx.table("main", "t"), "zz"),
            CatalogNotFoundError,
            "column 'zz' does not exist in table main.t",
        ),
        (
            lambda tx: tx.create_table("main", "w", [ColumnSpec("a", "decimal")]),
            InvalidChangeError,
            "unknown DuckLake type 'decimal'",
        ),
        (
            lambda tx: tx.create_table("main", "w", [parse_type("FANCYTYPE", "a")]),
            InvalidChangeError,
            "unknown type 'FANCYTYPE'",
        ),
    ],
)
def test_bad_changes_fail_before_anything_is_written(
    catalog: Catalog, action, error, message
) -> None:
    lake = _lake_with_table(catalog)
    before = lake.latest_snapshot()
    tx = lake.transaction(commit_message="bad")
    tx.create_table("main", "staged_first", [ColumnSpec("z", "int32")])
    with pytest.raises(error, match=message):
        action(tx)
    # the failed transaction is abandoned, never committed
    assert lake.latest_snapshot() == before
    assert lake.catalog().find_table("main", "staged_first") is None


def test_require_commit_message(catalog: Catalog) -> None:
    lake = _lake_with_table(catalog)
    with lake.transaction() as tx:
        tx.set_option("require_commit_message", True)
    before = lake.latest_snapshot()
    with (
        pytest.raises(CommitMessageRequiredError, match="requires a commit message"),
        lake.transaction() as tx,
    ):
        tx.create_table("main", "x", [ColumnSpec("a", "int32")])
    assert lake.latest_snapshot() == before
    with lake.transaction(commit_message="explained") as tx:
        tx.create_table("main", "x", [ColumnSpec("a", "int32")])
    assert lake.latest_snapshot().commit_message == "explained"
    # DuckDB honours the option we set
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    with pytest.raises(Exception, match="commit message"):
        con.execute("INSERT INTO lake.main.x VALUES (1)")
    con.close()


def test_options_resolve_table_over_schema_over_global(catalog: Catalog) -> None:
    lake = _lake_with_table(catalog)
    with lake.transaction() as tx:
        tx.set_option("target_file_size", "100")
        tx.set_option("target_file_size", "200", schema="main")
        tx.set_option("target_file_size", "300", table=tx.table("main", "t"))
        tx.set_option("target_file_size", "250", schema="main")  # replaces, not duplicates
    cat = lake.catalog()
    t = cat.table("main", "t")
    assert lake.option("target_file_size", schema_id=t.schema_id, table_id=t.table_id) == "300"
    assert lake.option("target_file_size", schema_id=t.schema_id, table_id=-1) == "250"
    assert lake.option("target_file_size") == "100"
    assert lake.option("parquet_compression", default="snappy") == "snappy"
    assert len([o for o in lake.options() if o[0] == "target_file_size"]) == 3
    # options alone make no snapshot, as in DuckDB
    assert lake.latest_snapshot().snapshot_id == 1
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    opts = con.execute(
        "SELECT option_name, value, scope FROM lake.options() "
        "WHERE option_name = 'target_file_size'"
    ).fetchall()
    assert {(o[1], o[2]) for o in opts} == {("100", "GLOBAL"), ("250", "SCHEMA"), ("300", "TABLE")}
    con.close()
