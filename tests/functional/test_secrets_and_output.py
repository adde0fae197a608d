"""Secrets stay secret and dbt's output stays dbt's, as a user sees them: dbt runs in its
own process (its own JVM), with a password in the metadata URL (PostgreSQL's trust
auth accepts any), another in a libpq string, and secret Spark settings. The lake is
encrypted (`encrypted: true`): the files' keys, which only the catalog may hold, are
secrets too.

Every output and every file the runs leave — stdout, stderr, logs/dbt.log, Spark's
console log, Spark's event log (what the Spark UI shows), target/, the lake's files —
and every row of the catalog database are searched for the secrets. Spark's console
goes to logs/spark.log unless `--debug` asks for everything.
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from tests.conftest import Catalog

PASSWORD = "S3cret@Pw"  # written %40-encoded in the URL; drivers see it decoded
LIBPQ_PASSWORD = "S3cretLibpq"
CONF_SECRET = "S3cretKeyValue"
CONF_TOKEN = "S3cretTokenValue"
SECRETS = ("S3cret", "%40Pw")

PROJECT = """
name: secrets
version: "1.0"
profile: secrets
"""
MODELS = {
    "ok_view.sql": "select 1 as id, 'a' as v",
    "ok_table.sql": "{{ config(materialized='table') }} select * from {{ ref('ok_view') }}",
    "bad.sql": "{{ config(materialized='table') }} select nope from {{ ref('ok_view') }}",
    # reads an encrypted table (keys in read options), writes sealed files and deletes
    "ok_merge.sql": "{{ config(materialized='incremental', unique_key='id', "
    "incremental_strategy='merge', post_hook='delete from {{ this }} where id % 3 = 0') }} "
    "select id, v from {{ ref('ok_table') }} union all select id, 'b' from range(2, 42)",
}
DBT_LINE = re.compile(r"^(\x1b\[[0-9;]*m)*\d\d:\d\d:\d\d(\.\d+)? ")


def _profiles(root: Path, database: str) -> str:
    common = f"""
      data_path: {root / "data"}
      encrypted: true
      schema: s
      threads: 2
      spark_master: local[1]
      spark_keep_alive: 0
      spark_conf:
        spark.ui.enabled: "false"
        spark.sql.shuffle.partitions: "2"
        spark.hadoop.fs.s3a.secret.key: {CONF_SECRET}
        spark.custom.auth.token: {CONF_TOKEN}
        spark.eventLog.enabled: "true"
        spark.eventLog.dir: {root / "events"}
        spark.eventLog.compress: "false"
"""
    return f"""
secrets:
  target: up
  outputs:
    up:
      type: ducklake
      metadata: postgresql+psycopg://postgres:S3cret%40Pw@127.0.0.1:5432/{database}
{common}
    down:
      type: ducklake
      metadata: postgresql+psycopg://alice:S3cret%40Pw@127.0.0.1:5999/nodb
{common}
    libpq_down:
      type: ducklake
      metadata: "postgres:dbname=nodb host=127.0.0.1 port=5999 user=alice password={LIBPQ_PASSWORD}"
{common}
"""


def _dbt(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    dbt = str(Path(sys.executable).with_name("dbt"))
    return subprocess.run(
        [dbt, *args, "--project-dir", str(root), "--profiles-dir", str(root)],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"},
    )


def _leaks(text: str, keys: list[str] = ()) -> list[str]:
    """The secrets in `text`; a file key counts in base64 (with or without padding) or
    in hex."""
    found = [s for s in (*SECRETS, LIBPQ_PASSWORD, CONF_SECRET, CONF_TOKEN) if s in text]
    for key in keys:
        forms = (key, key.rstrip("="), base64.b64decode(key).hex())
        found += [f"file key {key[:4]}…" for f in forms[:1] if any(f in text for f in forms)]
    return found


def _file_keys(database: str) -> list[str]:
    """The encryption keys of every file in the lake (the catalog is their one home)."""
    with psycopg.connect(f"host=127.0.0.1 port=5432 dbname={database}") as conn:
        rows = conn.execute(
            "SELECT encryption_key FROM ducklake_data_file UNION ALL "
            "SELECT encryption_key FROM ducklake_delete_file"
        ).fetchall()
    assert all(key for (key,) in rows), rows
    return [key for (key,) in rows]


def _catalog_text(database: str) -> str:
    """Every row of every table in the catalog database, as text."""
    with psycopg.connect(f"host=127.0.0.1 port=5432 dbname={database}") as conn:
        tables = [
            r[0]
            for r in conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            ).fetchall()
        ]
        assert "ducklake_snapshot_changes" in tables
        return "\n".join(
            str(conn.execute(f"SELECT string_agg(t::text, E'\\n') FROM \"{t}\" t").fetchone()[0])
            for t in tables
        )


@pytest.mark.slow  # dbt processes and a profile per secret: left out of --fast
def test_no_secret_in_any_output_or_file(pg_catalog: Catalog, tmp_path: Path) -> None:
    root = tmp_path / "project"
    (root / "models").mkdir(parents=True)
    (root / "events").mkdir()
    (root / "dbt_project.yml").write_text(PROJECT)
    for name, sql in MODELS.items():
        (root / "models" / name).write_text(sql)
    database = pg_catalog.metadata.rsplit("/", 1)[1]
    (root / "profiles.yml").write_text(_profiles(root, database))

    outputs: dict[str, str] = {}
    # a failing connect: URL and libpq forms; the lake is opened before Spark starts
    for target in ("down", "libpq_down"):
        debug = _dbt(root, "debug", "--target", target)
        assert debug.returncode != 0
        assert "could not open the lake" in debug.stdout and "***" in debug.stdout, debug.stdout
        outputs[f"debug {target}"] = debug.stdout + debug.stderr

    # metadata-only work reads the catalog and starts no Spark (no application logged)
    history = _dbt(root, "run-operation", "ducklake_snapshots")
    assert history.returncode == 0, history.stdout + history.stderr
    assert list((root / "events").iterdir()) == []
    outputs["run-operation"] = history.stdout + history.stderr

    # a run with one failing model
    run = _dbt(root, "run")
    outputs["run"] = run.stdout + run.stderr
    assert run.returncode == 1, outputs["run"]
    assert "PASS=3" in run.stdout and "ERROR=1" in run.stdout, run.stdout

    # quiet by default: dbt's lines, the error summary on one line, Spark's console in a file
    assert run.stderr == "", run.stderr
    lines = [line for line in run.stdout.splitlines() if line.strip()]
    others = [line for line in lines if not DBT_LINE.match(line)]
    # dbt indents the lines of a failure's message under its header
    assert all(line.startswith("  ") for line in others), others
    error_at = next(i for i, line in enumerate(lines) if "Database Error in model bad" in line)
    message = lines[error_at + 1 : error_at + 3]
    assert "`nope` cannot be resolved" in message[0], lines
    assert "compiled code at" in message[1], lines  # the message was one line
    for noise in ("log4j", "WARN ", "SQLQueryContextLogger", "Traceback", "__ducklake_"):
        assert noise not in run.stdout, noise
    spark_log = (root / "logs" / "spark.log").read_text()
    assert "log4j" in spark_log and "WARN" in spark_log

    # --debug shows everything, Spark's console included
    verbose = _dbt(root, "--debug", "run", "-s", "ok_view")
    outputs["run --debug"] = verbose.stdout + verbose.stderr
    assert verbose.returncode == 0, outputs["run --debug"]
    assert "log4j" in outputs["run --debug"]

    keys = _file_keys(database)
    assert len(keys) >= 2, keys  # ok_merge's file (past the inlining limit), its deletes
    leaked = {name: _leaks(text, keys) for name, text in outputs.items() if _leaks(text, keys)}
    assert not leaked, leaked

    # every file the runs produced, the Spark event log (the UI's record) included
    files = [p for p in root.rglob("*") if p.is_file() and p.name != "profiles.yml"]
    event_logs = [p for p in files if p.relative_to(root).parts[0] == "events"]
    assert event_logs, "Spark wrote no event log"
    assert (root / "logs" / "dbt.log").exists() and (root / "target").is_dir()
    for path in files:
        text = path.read_bytes().decode("utf-8", errors="replace")
        assert not _leaks(text, keys), (path, _leaks(text, keys))
    events = "".join(p.read_text(errors="replace") for p in event_logs)
    assert '"spark.app.name":"dbt-ducklake"' in events.replace(" ", "")
    assert "spark.hadoop.fs.s3a.secret.key" in events and "redacted" in events

    # and the catalog: commit info, options, paths
    catalog = _catalog_text(database)
    assert "ok_table" in catalog
    assert not _leaks(catalog), _leaks(catalog)
