"""Bad input fails clearly and changes nothing.

Each case is something a user can get wrong — a model reading a missing column, a name
the lake cannot spell, a config naming a missing column, an incompatible type change,
a duplicate MERGE key, a CALL with wrong arguments, an injection attempt through a
macro argument. For each one the test checks three things: dbt's error names the
model, relation or option and says what is accepted; the lake's latest snapshot is the
one it had before; DuckDB reads the same rows as before.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture, write_file
from dbt_common.exceptions import DbtRuntimeError

from dbt.adapters.ducklake.lake import Lake
from tests import duck

pytestmark = pytest.mark.usefixtures("without_json_artifacts")  # reads no dbt JSON artifact

BASE = """{{ config(materialized='table') }}
select cast(id as int) as id, concat('n', id) as name from range(3)
"""
VIEW = "select id, name from {{ ref('base') }}"
INC = """
{{ config(materialized='incremental', unique_key='id', on_schema_change='sync_all_columns') }}
select cast(id as int) as id, concat('i', id) as name from range(4)
"""
SEED = "id,label\n1,a\n2,b\n"
SNAPSHOT = """
{% snapshot snap %}
{{ config(unique_key='id', strategy='timestamp', updated_at='updated',
          target_schema=target.schema) }}
select id, name, cast('2026-01-01' as timestamp) as updated from {{ ref('base') }}
{% endsnapshot %}
"""
RUN_SQL = """
{% macro run_lake_sql(sql) %}
  {% do run_query(sql) %}
{% endmacro %}
"""


@dataclass
class Case:
    """One bad input: files to write (path under the project -> text), the dbt command,
    and fragments the error must contain (case-insensitive)."""

    name: str
    command: list[str]
    expect: list[str]
    files: dict[str, str] = field(default_factory=dict)
    # a regular file put where the table's folder under data_path would go
    blocker: str | None = None


def _model(name: str, sql: str) -> dict[str, str]:
    return {f"models/{name}.sql": sql}


def _table(config: str, sql: str = "select cast(id as int) as id from range(3)") -> str:
    return "{{ config(materialized='table'" + config + ") }}\n" + sql


def _op(sql: str) -> list[str]:
    return ["run-operation", "run_lake_sql", "--args", "{sql: " + _yaml(sql) + "}"]


def _yaml(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'


CASES = [
    # -- queries that do not resolve: Spark analyses them before anything commits
    Case(
        "view reads a missing column",
        ["run", "-s", "bad"],
        ["view", "bad", "`nope`", "cannot be resolved", "`id`", "`name`"],
        _model("bad", "select nope from {{ ref('base') }}"),
    ),
    Case(
        "view reads a missing table",
        ["run", "-s", "bad"],
        ["view", "bad", "no_such_table", "cannot be found"],
        _model("bad", "select * from {{ target.schema }}.no_such_table"),
    ),
    Case(
        "table reads a missing column",
        ["run", "-s", "bad"],
        ["model bad", "`nope`", "cannot be resolved", "`id`"],
        _model("bad", _table("", "select nope from {{ ref('base') }}")),
    ),
    Case(
        "table reads a missing table",
        ["run", "-s", "bad"],
        ["model bad", "no_such_table", "cannot be found"],
        _model("bad", _table("", "select * from {{ target.schema }}.no_such_table")),
    ),
    Case(
        "incremental run reads a missing column",
        ["run", "-s", "inc"],
        ["model inc", "`nope`", "cannot be resolved"],
        _model("inc", INC.replace("concat('i', id) as name", "nope as name")),
    ),
    # -- names the lake does not accept
    Case(
        "alias with a slash",
        ["run", "-s", "bad"],
        ["model.test.bad", "alias 'a/b'", "not accepted", "accepted: 1 to 128 characters"],
        _model("bad", _table(", alias='a/b'")),
    ),
    Case(
        "alias ..",
        ["run", "-s", "bad"],
        ["alias '..'", "not accepted", "'.'"],
        _model("bad", _table(", alias='..'")),
    ),
    Case(
        "alias with a quote",
        ["run", "-s", "bad"],
        ["alias", "not accepted", "'\"'"],
        _model("bad", _table(", alias='it\"s'")),
    ),
    Case(
        "alias of 300 characters",
        ["run", "-s", "bad"],
        ["alias", "it has 300 characters", "1 to 128 characters"],
        _model("bad", _table(", alias='" + "x" * 300 + "'")),
    ),
    Case(
        "schema with a slash",
        ["run", "-s", "bad"],
        ["schema", "x/y", "not accepted"],
        _model("bad", _table(", schema='x/y'")),
    ),
    Case(
        "unquoted alias with a dash",
        ["run", "-s", "bad"],
        ["alias 'a-b'", "needs quoting", "quoting:"],
        _model("bad", _table(", alias='a-b'")),
    ),
    # -- configs naming what is not there
    Case(
        "unique_key names a missing column",
        ["run", "-s", "inc"],
        ["model.test.inc", "unique_key names nope", "its columns: id, name"],
        _model("inc", INC.replace("unique_key='id'", "unique_key='nope'")),
    ),
    Case(
        "partition_by names a missing column",
        ["run", "-s", "bad"],
        ["bad", "partitioned by", "'nope' does not exist", "its columns: id"],
        _model("bad", _table(", partition_by=['nope']")),
    ),
    Case(
        "sorted_by names a missing column",
        ["run", "-s", "bad"],
        ["bad", "sorted by", "'nope' does not exist", "its columns: id"],
        _model("bad", _table(", sorted_by=['nope']")),
    ),
    Case(
        "bucket(0, id)",
        ["run", "-s", "bad"],
        ["bad", "partition_by", "bucket count", "at least 1"],
        _model("bad", _table(", partition_by=['bucket(0, id)']")),
    ),
    Case(
        "unknown partition transform",
        ["run", "-s", "bad"],
        ["bad", "partition_by", "week(id)", "accepted: col, year(col)"],
        _model("bad", _table(", partition_by=['week(id)']")),
    ),
    Case(
        "a typo in the SQL",
        ["run", "-s", "bad"],
        ["model bad", "syntax error", "'selec'", "== SQL =="],
        _model("bad", _table("", "selec 1 as id")),
    ),
    Case(
        "a model named after a reserved word",
        ["run", "-s", "select"],
        ["model select", "the reserved word 'select'", "alias"],
        _model("select", _table("")),
    ),
    Case(
        "a bad layout key in a model's hook",
        ["run", "-s", "bad"],
        ["model bad", "ducklake_set_sorted_by", "id; drop view view_ok"],
        _model(
            "bad",
            "{{ config(materialized='table', pre_hook=\"{{ ducklake_set_sorted_by("
            "ref('base'), ['id; drop view view_ok']) }}\") }}\nselect 1 as id",
        ),
    ),
    Case(
        "year() of a string column",
        ["run", "-s", "bad"],
        ["bad", "partition", "year()", "the column is VARCHAR", "takes DATE, TIMESTAMP"],
        _model(
            "bad",
            _table(", partition_by=['year(s)']", "select 1 as id, '2024-01-01' as s"),
        ),
    ),
    Case(
        "hour() of an integer column by the layout macro",
        [
            "run-operation",
            "ducklake_set_partitioned_by",
            "--args",
            "{relation: base, keys: ['hour(id)']}",
        ],
        ["base", "column 'id'", "hour()", "the column is INT32", "takes DATE, TIMESTAMP"],
    ),
    Case(
        "incompatible type change under on_schema_change",
        ["run", "-s", "inc"],
        ["inc", "cannot change column", ".inc.id' from int32 to varchar", "lossless"],
        _model("inc", INC.replace("cast(id as int) as id", "concat('k', id) as id")),
    ),
    Case(
        "on_schema_change not accepted",
        ["run", "-s", "inc"],
        ["inc", "on_schema_change 'explode'", "accepted: ignore, fail"],
        _model("inc", INC.replace("sync_all_columns", "explode")),
    ),
    Case(
        "on_schema_change fail on a new column",
        ["run", "-s", "inc"],
        ["inc", "out of sync"],
        _model(
            "inc",
            INC.replace("sync_all_columns", "fail").replace("as name", "as name, 1 as extra"),
        ),
    ),
    Case(
        "unwritable data_path",
        ["run", "-s", "blocked"],
        ["model blocked", "cannot write the data files", "exists"],
        _model("blocked", _table("", "select id from range(1000)")),
        blocker="blocked",
    ),
    # -- seeds and snapshots
    Case(
        "seed column_types names no type",
        ["seed", "-s", "bad_seed"],
        ["bad_seed", "notatype"],
        {
            "seeds/bad_seed.csv": SEED,
            "seeds/bad_seed.yml": "version: 2\nseeds:\n  - name: bad_seed\n"
            "    config:\n      column_types: {label: notatype}\n",
        },
    ),
    Case(
        "snapshot without its updated_at column",
        ["snapshot", "-s", "snap"],
        ["snap", "updated"],
        {"snapshots/snap.sql": SNAPSHOT.replace("as updated from", "as changed from")},
    ),
    # -- MERGE and CALL
    Case(
        "MERGE with duplicate source keys",
        ["run", "-s", "inc"],
        ["inc", "matches more than one source row"],
        _model("inc", INC.replace("from range(4)", "from range(4) union all select 1, 'dup'")),
    ),
    Case(
        "CALL with an unknown argument",
        _op("call ducklake_merge_adjacent_files('lake', 'base', bogus => 1)"),
        ["ducklake_merge_adjacent_files", "bogus", "accepted"],
    ),
    Case(
        "CALL of an unknown function",
        _op("call ducklake_explode('lake')"),
        ["unknown function", "ducklake_explode"],
    ),
    # -- a failing post-hook runs inside its node's transaction: nothing of the node
    #    (new rows, the hooks before it) is published
    Case(
        "failing post-hook of a table",
        ["run", "-s", "base"],
        ["model base", "no_such_column"],
        _model(
            "base",
            BASE.replace(
                "materialized='table'",
                "materialized='table', post_hook=['delete from {{ this }} where id = 0', "
                "'delete from {{ this }} where no_such_column = 1']",
            ).replace("range(3)", "range(50)"),
        ),
    ),
    Case(
        "failing post-hook of an incremental merge",
        ["run", "-s", "inc"],
        ["model inc", "no_such_table"],
        _model(
            "inc",
            INC.replace(
                "on_schema_change='sync_all_columns'",
                "on_schema_change='sync_all_columns', "
                "post_hook='insert into {{ this }} select * from no_such_table'",
            ).replace("concat('i', id)", "concat('j', id)"),
        ),
    ),
    Case(
        "failing post-hook of a view",
        ["run", "-s", "view_ok"],
        ["view_ok", "no_such_column"],
        _model(
            "view_ok",
            "{{ config(post_hook='select no_such_column from {{ this }}') }}\n"
            "select id, name, 1 as more from {{ ref('base') }}",
        ),
    ),
    Case(
        "failing post-hook of a seed",
        ["seed", "--full-refresh"],
        ["good_seed", "no_such_column"],
        {
            "seeds/good_seed.csv": "id,label\n7,z\n",
            "seeds/props.yml": "seeds:\n  - name: good_seed\n    config:\n      post_hook: "
            '"delete from {{ this }} where no_such_column = 1"\n',
        },
    ),
    Case(
        "failing post-hook of a snapshot",
        ["snapshot"],
        ["snap", "no_such_column"],
        {
            "snapshots/snap.sql": SNAPSHOT.replace(
                "target_schema=target.schema",
                "target_schema=target.schema, "
                "post_hook='delete from {{ this }} where no_such_column = 1'",
            )
        },
    ),
    # -- injection through macro arguments: quoted, never executed
    Case(
        "ducklake_at timestamp injection",
        ["run", "-s", "bad"],
        ["bad", "timestamp as of", "is not a timestamp", "2026-01-31 12:00:00"],
        _model(
            "bad",
            _table(
                "",
                "select * from {{ ducklake_at(ref('base'), timestamp=\"2026-01-01' "
                "union all select 9, 'x' from {{ ref('base') }} --\") }}",
            ),
        ),
    ),
    Case(
        "ducklake_set_option value injection",
        [
            "run-operation",
            "ducklake_set_option",
            "--args",
            '{option: target_file_size, value: "1MB\'); drop table base; --"}',
        ],
        ["option target_file_size takes a byte count", "1MB'); drop table base; --"],
    ),
    Case(
        "layout macro relation injection",
        [
            "run-operation",
            "ducklake_set_sorted_by",
            "--args",
            '{relation: "base set sorted by (id); drop view view_ok; alter table base", '
            "keys: [id]}",
        ],
        ["ducklake_set_sorted_by", "is not a table name", "drop view view_ok"],
    ),
    Case(
        "strategy changes over a view",
        ["snapshot", "-s", "snap_view"],
        ["snapshot snap_view", "is a view", "strategy 'timestamp' or 'check'"],
        {
            "snapshots/snap_view.sql": "{% snapshot snap_view %}\n"
            "{{ config(unique_key='id', strategy='changes', target_schema=target.schema) }}\n"
            "select * from {{ ref('view_ok') }}\n{% endsnapshot %}\n"
        },
    ),
    Case(
        "expire_snapshots versions that are not ids",
        ["run-operation", "ducklake_expire_snapshots", "--args", "{versions: ['abc']}"],
        ["ducklake_expire_snapshots", "versions takes snapshot ids", "'abc'"],
    ),
    Case(
        "CALL argument injection",
        [
            "run-operation",
            "ducklake_expire_snapshots",
            "--args",
            '{older_than: "1 day\'); drop table base; --"}',
        ],
        ["cannot read", "1 day'); drop table base; --", "as an interval"],
    ),
]


def _lake_rows(attach: str, schema: str, write_back: bool = False) -> dict[str, list[tuple]]:
    """Every table and view of `schema`, read by DuckDB's extension, sorted. With
    `write_back`, DuckDB also still writes each table (a partition spec it cannot
    compute fails its inserts): one row copied in, inside a transaction rolled back."""
    con = duck.connect()
    try:
        duck.attach(con, attach, alias="lake")
        names = con.execute(
            "SELECT table_name, table_type = 'BASE TABLE' FROM information_schema.tables "
            "WHERE table_catalog = 'lake' AND table_schema = ?",
            [schema],
        ).fetchall()
        rows = {
            n: sorted(con.execute(f'SELECT * FROM lake.{schema}."{n}"').fetchall())
            for n, _ in names
        }
        if write_back:
            tables = [n for n, is_table in names if is_table]
            assert tables
            for name in tables:
                con.execute("BEGIN")
                con.execute(
                    f'INSERT INTO lake.{schema}."{name}" FROM lake.{schema}."{name}" LIMIT 1'
                )
                con.execute("ROLLBACK")
        return rows
    finally:
        con.close()


def _read(path: str) -> str:
    with open(path) as f:
        return f.read()


class TestBadInputChangesNothing:
    @pytest.fixture(scope="class")
    def models(self):
        return {"base.sql": BASE, "view_ok.sql": VIEW, "inc.sql": INC}

    @pytest.fixture(scope="class")
    def seeds(self):
        return {"good_seed.csv": SEED}

    @pytest.fixture(scope="class")
    def macros(self):
        return {"run_lake_sql.sql": RUN_SQL}

    @pytest.fixture(scope="class")
    def built(self, project, dbt_profile_target):
        run_dbt(["build"])
        metadata = dbt_profile_target["metadata"]
        attach = "sqlite:" + metadata.removeprefix("sqlite:///")
        # every case must leave the lake as the build left it: its rows are read once
        return Lake.open(metadata), attach, _lake_rows(attach, project.test_schema)

    @pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
    def test_bad_input(self, project, built, case: Case) -> None:
        lake, attach, rows = built
        before = lake.latest_snapshot().snapshot_id
        blocker = None
        if case.blocker:
            folder = os.path.join(lake.data_path, project.test_schema)
            os.makedirs(folder, exist_ok=True)
            blocker = os.path.join(folder, case.blocker)
            write_file("not a folder", blocker)
        originals = {}
        for path, text in case.files.items():
            full = os.path.join(project.project_root, path)
            originals[full] = _read(full) if os.path.exists(full) else None
            write_file(text, full)
        try:
            _, output = run_dbt_and_capture(case.command, expect_pass=False)
        except DbtRuntimeError as exc:  # dbt raises what fails before any node runs
            output = str(exc)
        finally:
            if blocker is not None:
                os.remove(blocker)
            for full, text in originals.items():
                if text is None:
                    os.remove(full)
                else:
                    write_file(text, full)
        low = output.lower()
        missing = [e for e in case.expect if e.lower() not in low]
        assert not missing, f"{case.name}: {missing} not in:\n{output[-3000:]}"
        for noise in ("__ducklake_", "sqlglot", "Traceback", "JVM stacktrace", "at org.apache"):
            assert noise not in output, f"{case.name}: {noise!r} in:\n{output[-3000:]}"
        assert lake.latest_snapshot().snapshot_id == before, case.name
        assert _lake_rows(attach, project.test_schema, write_back=True) == rows, case.name


PROFILE = """
bad:
  target: t
  outputs:
    t:
      type: ducklake
      metadata: {metadata}
      schema: s
{extra}"""


def _debug(tmp_path, metadata: str, extra: str = "") -> str:
    """`dbt debug` in its own process (a profile of its own), output returned."""
    root = tmp_path / "project"
    root.mkdir(exist_ok=True)
    (root / "dbt_project.yml").write_text('name: bad\nversion: "1.0"\nprofile: bad\n')
    (root / "profiles.yml").write_text(PROFILE.format(metadata=metadata, extra=extra))
    dbt = str(Path(sys.executable).with_name("dbt"))
    done = subprocess.run(
        [dbt, "debug", "--project-dir", str(root), "--profiles-dir", str(root)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,  # relative paths in the profile are the project's, as when a user runs it
    )
    assert done.returncode != 0, done.stdout
    return done.stdout + done.stderr


def _dump(path: Path) -> list[str]:
    with sqlite3.connect(path) as conn:
        return list(conn.iterdump())


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow  # a dbt process per profile
def test_profiles_that_cannot_open_a_lake_change_nothing(tmp_path) -> None:
    """The catalog is opened (and refused) before Spark starts; the file is untouched."""
    # a SQLite database that holds something else, and no data_path to create a lake
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as conn:
        conn.execute("CREATE TABLE invoices (id INTEGER)")
    digest = _digest(other)
    out = _debug(tmp_path, f"sqlite:///{other}")
    assert "holds no DuckLake yet: data_path is required" in out, out
    assert _digest(other) == digest

    # a file that is not a database at all
    junk = tmp_path / "junk.sqlite"
    junk.write_text("these are not the catalog rows you are looking for\n" * 100)
    digest = _digest(junk)
    out = _debug(tmp_path, f"sqlite:///{junk}", f"      data_path: {tmp_path / 'data'}\n")
    assert str(junk) in out and "not a database" in out, out
    assert _digest(junk) == digest

    # a lake in a DuckLake version this adapter does not write
    lake_file = tmp_path / "old.sqlite"
    lake = Lake.open(f"sqlite:///{lake_file}", data_path=str(tmp_path / "old"))
    with sqlite3.connect(lake_file) as conn:
        conn.execute("UPDATE ducklake_metadata SET value = '0.3' WHERE key = 'version'")
    rows = _dump(lake_file)  # WAL mode: a reader may checkpoint, so compare rows, not bytes
    out = _debug(tmp_path, f"sqlite:///{lake_file}")
    assert "format version '0.3'" in out and "format 1.0 only" in out, out
    assert _dump(lake_file) == rows
    assert lake.latest_snapshot().snapshot_id == 0

    # a data_path other than the stored one: relative, from the project's folder
    lake = Lake.open(f"sqlite:///{tmp_path / 'moved.sqlite'}", data_path=str(tmp_path / "a"))
    rows = _dump(tmp_path / "moved.sqlite")
    out = _debug(tmp_path, f"sqlite:///{tmp_path / 'moved.sqlite'}", "      data_path: lake/data\n")
    stored, given = f"'{tmp_path / 'a'}/'", f"'{tmp_path / 'project' / 'lake' / 'data'}/'"
    assert stored in out and given in out and "override_data_path: true" in out, out
    assert _dump(tmp_path / "moved.sqlite") == rows
    assert not (tmp_path / "project" / "lake").exists()


RFC_4180_SEED = 'id,note\n1,"say ""hi"", then go"\n2,"line1\nline2"\n3,plain\n'


class TestSeedsReadAsRfc4180:
    """Quoted fields with doubled quotes and newlines load whole (dbt-postgres loads
    them so): they used to load cut at the first doubled quote, or fail."""

    @pytest.fixture(scope="class")
    def seeds(self):
        return {"quoted.csv": RFC_4180_SEED}

    def test_quoted_fields_load_whole(self, project, dbt_profile_target) -> None:
        assert len(run_dbt(["seed"])) == 1
        attach = "sqlite:" + dbt_profile_target["metadata"].removeprefix("sqlite:///")
        rows = _lake_rows(attach, project.test_schema)["quoted"]
        assert [(int(i), note) for i, note in rows] == [
            (1, 'say "hi", then go'),
            (2, "line1\nline2"),
            (3, "plain"),
        ]
