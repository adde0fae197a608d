"""dbt on encrypted lakes (DuckDB's `ENCRYPTED`), judged by DuckDB.

A profile with `encrypted: true` creates the lake encrypted. DuckDB then writes a source
table into it (Parquet and inlined rows, encrypted delete files, a column added with a
default); dbt builds an incremental MERGE model with a DELETE post-hook, a partitioned
table and a copy over it, twice, with DuckDB changing the source between the builds;
compaction, expire and cleanup run from run-operation. Every file carries its own key
and DuckDB's encrypted layout, and DuckDB reads every table at every snapshot as this
adapter does. A second test runs dbt in its own process and searches every output, log,
Spark event log and target file for the keys the catalog holds.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import duckdb
import pytest
from dbt.tests.util import run_dbt

from tests import duck
from tests.conftest import Catalog
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


def _keys(con: duckdb.DuckDBPyConnection) -> list[str]:
    """The keys of every file the catalog lists, each checked on disk: 16 bytes, and
    DuckDB's encrypted layout for Parquet files (deletion vectors stay plaintext)."""
    rows = con.execute(
        f"SELECT path, encryption_key, 'parquet' FROM {META}.ducklake_data_file UNION ALL "
        f"SELECT path, encryption_key, format FROM {META}.ducklake_delete_file"
    ).fetchall()
    return [key for _path, key, _fmt in rows]


def _check_files(con: duckdb.DuckDBPyConnection, data_path: str) -> None:
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
    @pytest.fixture(scope="class", params=["sqlite", "postgres"])
    def dbt_profile_target(self, request, tmp_path_factory) -> Iterator[dict[str, Any]]:  # type: ignore[no-untyped-def]
        yield from catalog_target(request.param, tmp_path_factory, encrypted=True)

    @pytest.fixture(scope="class")
    def models(self):  # type: ignore[no-untyped-def]
        return {"inc.sql": INC, "part.sql": PART, "copy.sql": COPY}

    def test_models_maintenance_and_duckdb_agree(  # type: ignore[no-untyped-def]
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


PROJECT = """
name: sealed
version: "1.0"
profile: sealed
"""
PROFILE = """
sealed:
  target: dev
  outputs:
    dev:
      type: ducklake
      metadata: {metadata}
      data_path: {data_path}
      encrypted: true
      schema: s
      threads: 2
      spark_master: local[1]
      spark_conf:
        spark.ui.enabled: "false"
        spark.sql.shuffle.partitions: "2"
        spark.eventLog.enabled: "true"
        spark.eventLog.dir: {events}
        spark.eventLog.compress: "false"
"""


def _dbt(root: Path, *args: str) -> str:
    dbt = str(Path(sys.executable).with_name("dbt"))
    done = subprocess.run(
        [dbt, *args, "--project-dir", str(root), "--profiles-dir", str(root)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


@pytest.mark.slow  # dbt in its own processes
def test_no_key_in_any_output_log_event_log_or_target(
    sqlite_catalog: Catalog, tmp_path: Path
) -> None:
    root = tmp_path / "project"
    (root / "models").mkdir(parents=True)
    (root / "events").mkdir()
    (root / "dbt_project.yml").write_text(PROJECT)
    (root / "models" / "t.sql").write_text(
        "{{ config(materialized='table', partitioned_by=['b']) }} "
        "select id, id % 3 as b, 'x' as s, 1 as k from range(0, 2000)"
    )
    # every build merges all of t: new files, delete files, the post-hook's deletes
    inc = INC.replace("{{ this.schema }}.src", "{{ ref('t') }}").replace("where id >= 2500", "")
    (root / "models" / "inc.sql").write_text(inc)
    (root / "profiles.yml").write_text(
        PROFILE.format(
            metadata=sqlite_catalog.metadata,
            data_path=sqlite_catalog.data_path,
            events=root / "events",
        )
    )
    outputs = [_dbt(root, "run"), _dbt(root, "--debug", "run"), _dbt(root, "debug")]

    con = duck.connect()
    con.execute(f"LOAD '{duck.extension_path(_httpfs(), 'httpfs')}'")
    duck.attach(con, sqlite_catalog.duckdb_attach)
    keys = _keys(con)
    assert con.execute("SELECT count(*) FROM lake.s.inc").fetchone() == (1960,)
    con.close()
    assert len(keys) >= 4 and all(keys), keys  # partitioned files, MERGE's files and deletes
    files = [p for p in root.rglob("*") if p.is_file()]
    assert any(p.relative_to(root).parts[0] == "events" for p in files)
    assert (root / "logs" / "dbt.log").exists() and (root / "target").is_dir()
    texts = {"outputs": "\n".join(outputs)}
    texts.update({str(p): p.read_bytes().decode("utf-8", errors="replace") for p in files})
    for key in keys:
        forms = {key, key.rstrip("="), base64.b64decode(key).hex()}
        leaked = [name for name, text in texts.items() if any(f in text for f in forms)]
        assert not leaked, (key, leaked)
