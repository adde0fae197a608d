"""DuckDB with the ducklake extension loaded by path (no downloads): the format's judge."""

from __future__ import annotations

import os

import duckdb
import duckdb_extension_ducklake
import duckdb_extension_postgres_scanner
import duckdb_extension_sqlite_scanner

_EXTENSIONS = (
    (duckdb_extension_ducklake, "ducklake"),
    (duckdb_extension_sqlite_scanner, "sqlite_scanner"),
    (duckdb_extension_postgres_scanner, "postgres_scanner"),
)


def extension_path(module: object, name: str) -> str:
    base = os.path.dirname(module.__file__)
    return os.path.join(base, "extensions", f"v{duckdb.__version__}", f"{name}.duckdb_extension")


def connect() -> duckdb.DuckDBPyConnection:
    con = duckdb.connect(
        config={
            "allow_unsigned_extensions": "true",
            "autoinstall_known_extensions": "false",
            "autoload_known_extensions": "false",
        }
    )
    for module, name in _EXTENSIONS:
        con.execute(f"LOAD '{extension_path(module, name)}'")
    con.execute("SET TimeZone = 'UTC'")
    return con


def connect_s3(secret: str) -> duckdb.DuckDBPyConnection:
    """`connect()` plus httpfs (from the duckdb-extension-httpfs wheel, by path) and an
    S3 secret (`CREATE SECRET (TYPE s3, …)`), for lakes whose data path is on S3."""
    import duckdb_extension_httpfs

    con = connect()
    con.execute(f"LOAD '{extension_path(duckdb_extension_httpfs, 'httpfs')}'")
    con.execute(secret)
    return con


def attach(
    con: duckdb.DuckDBPyConnection,
    lake_attach: str,
    alias: str = "lake",
    data_path: str | None = None,
    options: str = "",
) -> None:
    opts = [f"DATA_PATH '{data_path}'"] if data_path else []
    if options:
        opts.append(options)
    suffix = f" ({', '.join(opts)})" if opts else ""
    con.execute(f"ATTACH 'ducklake:{lake_attach}' AS {alias}{suffix}")
