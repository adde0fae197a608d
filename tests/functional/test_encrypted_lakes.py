"""dbt on encrypted lakes (DuckDB's `ENCRYPTED`), judged by DuckDB.

A profile with `encrypted: true` creates the lake encrypted. DuckDB then writes a source
table into it (Parquet and inlined rows, encrypted delete files, a column added with a
default); dbt builds an incremental MERGE model with a DELETE post-hook, a partitioned
table and a copy over it, twice, with DuckDB changing the source between the builds;
compaction, expire and cleanup run from run-operation. Every file carries its own key
and DuckDB's encrypted layout, and DuckDB reads every table at every snapshot as this
adapter does. That no key leaks into outputs, logs, the Spark event log or target/ is
checked by test_secrets_and_output.py, whose lake is encrypted.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from dbt.tests.util import run_dbt

from tests import duck
from tests.functional.conftest import catalog_target
from tests.spark.every_snapshot import assert_same_in_duckdb

INC = """
{{ config(
    materialized='incremental',
    unique_key='id',
    incremental_strategy='merge',
    post_hook="delete from {{ this }} where id % 50 = 1",
) }}
select id, s, k from {{ this.schema }}.src
{% if is_incremental() %} where id >= 2500 {% endif %}
"""
PART = """
{{ config(materialized='table', partitioned_by=['b']) }}
select id % 4 as b, id, s from {{ this.schema }}.src
"""
COPY = "{{ config(materialized='table') }} select * from {{ this.schema }}.src"
META = "__ducklake_metadata_lake"


def _check_files(con: duckdb.DuckDBPyConnection, data_path: str) -> None:
    """Every file the catalog lists has a 16-byte key, and on disk DuckDB's encrypted
    layout for Parquet files (deletion vectors stay plaintext)."""
    on_disk = {p.name: p for p in Path(data_path).rglob("ducklake-*")}
    rows = con.execute(
        f"SELECT path, encryption_key, 'parquet' FROM {META}.ducklake_data_file UNION ALL "
        f"SELECT path, encryption_key, format FROM {META}.ducklake_delete_file"
    ).fetchall()
    assert rows
    for path, key, fmt in rows:
        assert key and len(base64.b64decode(key)) == 16, (path, key)
        name = path.rsplit("/", 1)[-1]
        if name in on_disk:
            data = on_disk[name].read_bytes()
            assert (data[:4] == data[-4:] == b"PARE") == (fmt == "parquet"), (path, fmt)


def _attach(target: dict[str, Any]) -> duckdb.DuckDBPyConnection:
    con = duck.connect()
    con.execute(f"LOAD '{duck.extension_path(_httpfs(), 'httpfs')}'")  # DuckDB's AES
    duck.attach(con, target["duckdb_attach"], options="DATA_INLINING_ROW_LIMIT 5")
    con.execute("USE lake")
    return con


def _httpfs() -> Any:
    import duckdb_extension_httpfs

    return duckdb_extension_httpfs


class TestDbtOnAnEncryptedLake:
    # PostgreSQL under `./dev test --full` (CI's budget; the engine test covers its rows)
    @pytest.fixture(
        scope="class", params=["sqlite", pytest.param("postgres", marks=pytest.mark.full)]
    )
    def dbt_profile_target(self, request, tmp_path_factory) -> Iterator[dict[str, Any]]:
        yield from catalog_target(request.param, tmp_path_factory, encrypted=True)

    @pytest.fixture(scope="class")
    def models(self):
        return {"inc.sql": INC, "part.sql": PART, "copy.sql": COPY}

    def test_models_maintenance_and_duckdb_agree(
        self, project, dbt_profile_target, spark, tmp_path
    ) -> None:
        schema = project.test_schema
        con = _attach(dbt_profile_target)
        # the profile created the lake encrypted: DuckDB follows the catalog's setting
        encrypted = f"SELECT value FROM {META}.ducklake_metadata WHERE key = 'encrypted'"
        assert con.execute(encrypted).fetchall() == [("true",)]
        con.execute(f"CREATE SCHEMA IF NOT EXISTS {schema}")
        con.execute(
            f"CREATE TABLE {schema}.src AS SELECT range AS id, 's' || (range % 7) AS s "
            "FROM range(3000)"
        )
        con.execute(f"INSERT INTO {schema}.src VALUES (5000, 'inlined'), (5001, 'inlined')")
        con.execute(f"DELETE FROM {schema}.src WHERE id % 9 = 4")
        con.execute(f"ALTER TABLE {schema}.src ADD COLUMN k INTEGER DEFAULT 7")
        con.execute(f"UPDATE {schema}.src SET k = 1 WHERE id % 100 = 5")
        con.close()

        run_dbt(["run"])
        con = _attach(dbt_profile_target)
        con.execute(f"DELETE FROM {schema}.src WHERE id BETWEEN 2600 AND 2700")
        con.execute(f"UPDATE {schema}.src SET s = 'changed' WHERE id % 10 = 6")
        con.execute(f"INSERT INTO {schema}.src SELECT range, 'late', 2 FROM range(6000, 6500)")
        con.close()
        run_dbt(["run"])
        relation = f"{{relation: {schema}.inc}}"
        run_dbt(["run-operation", "ducklake_merge_adjacent_files", "--args", relation])
        run_dbt(
            [
                "run-operation",
                "ducklake_rewrite_data_files",
                "--args",
                f"{{relation: {schema}.inc, delete_threshold: 0}}",
            ]
        )

        con = _attach(dbt_profile_target)
        _check_files(con, dbt_profile_target["data_path"])
        metadata = dbt_profile_target["metadata"]
        counts = {
            name: assert_same_in_duckdb(spark, metadata, con, name, tmp_path / name, schema)
            for name in ("src", "inc", "part", "copy")
        }
        latest = {name: c[max(c)] for name, c in counts.items()}
        first = {i for i in range(3000) if i % 9 != 4} | {5000, 5001}
        src = (first - set(range(2600, 2701))) | set(range(6000, 6500))
        # the second build merges ids >= 2500 only: ids DuckDB deleted stay in `inc`
        inc = {i for i in first | src if i % 50 != 1}
        assert latest == {"src": len(src), "inc": len(inc), "part": len(src), "copy": len(src)}
        assert len(set(counts["inc"].values())) >= 2, counts["inc"]  # both builds seen in time
        con.close()

        run_dbt(["run-operation", "ducklake_expire_snapshots", "--args", "{older_than: '0 days'}"])
        run_dbt(["run-operation", "ducklake_cleanup_old_files", "--args", "{cleanup_all: true}"])
        con = _attach(dbt_profile_target)
        _check_files(con, dbt_profile_target["data_path"])
        assert con.execute(f"SELECT count(*) FROM {schema}.inc").fetchone() == (len(inc),)
        assert_same_in_duckdb(spark, metadata, con, "inc", tmp_path / "expired", schema)
        con.close()
