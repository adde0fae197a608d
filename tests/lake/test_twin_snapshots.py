"""The same changes made by DuckDB on one lake and by lake/ on a twin produce the same
snapshot rows: changes_made, schema_version, id counters and schema_versions entries."""

from __future__ import annotations

import sqlalchemy as sa

from dbt.adapters.ducklake.lake import ColumnSpec, Lake, parse_type
from tests import duck
from tests.conftest import Catalog
from tests.lakefiles import write_data_file, write_delete_file


def _ours(lake: Lake) -> None:
    def step(fn) -> None:
        with lake.transaction() as tx:
            fn(tx)

    step(lambda tx: tx.create_schema("s"))
    step(
        lambda tx: tx.create_table(
            "s", "t", [ColumnSpec("id", "int32"), parse_type("STRUCT(a INTEGER)", "st")]
        )
    )
    step(lambda tx: tx.insert_inlined(tx.table("s", "t"), [(1, {"a": 1}), (2, {"a": 2})]))
    step(
        lambda tx: tx.add_data_files(
            tx.table("s", "t"),
            [write_data_file(tx.table("s", "t"), [(i, None) for i in range(20)])],
        )
    )

    def delete(tx) -> None:
        t = tx.table("s", "t")
        (f,) = lake.catalog().data_files(lake.catalog().table("s", "t"))
        tx.add_delete_files(t, [write_delete_file(t, f, list(range(15)))])

    step(delete)
    step(lambda tx: tx.add_column(tx.table("s", "t"), ColumnSpec("extra", "int64")))
    step(lambda tx: tx.set_default(tx.table("s", "t"), "extra", "5"))
    step(lambda tx: tx.comment_on_table(tx.table("s", "t"), "c"))
    step(lambda tx: tx.set_partitioned_by(tx.table("s", "t"), [("id", "identity")]))
    step(lambda tx: tx.set_sorted_by(tx.table("s", "t"), [("id", "ASC", "NULLS_LAST")]))
    step(lambda tx: tx.create_view("s", "v", "SELECT 1 AS one"))
    step(lambda tx: tx.rename_table("s", "t", "t2"))
    step(lambda tx: tx.drop_view("s", "v"))
    step(lambda tx: tx.drop_table("s", "t2"))
    step(lambda tx: tx.drop_schema("s"))

    def two_tables(tx) -> None:
        tx.create_table("main", "a1", [ColumnSpec("x", "int32")])
        tx.create_table("main", "a2", [ColumnSpec("x", "int32")])

    step(two_tables)


DUCK = [
    "CREATE SCHEMA s",
    "CREATE TABLE s.t (id INTEGER, st STRUCT(a INTEGER))",
    "INSERT INTO s.t VALUES (1, {'a': 1}), (2, {'a': 2})",
    "INSERT INTO s.t SELECT i, NULL FROM range(20) r(i)",
    "DELETE FROM s.t WHERE st IS NULL AND id < 15",
    "ALTER TABLE s.t ADD COLUMN extra BIGINT",
    "ALTER TABLE s.t ALTER extra SET DEFAULT 5",
    "COMMENT ON TABLE s.t IS 'c'",
    "ALTER TABLE s.t SET PARTITIONED BY (id)",
    "ALTER TABLE s.t SET SORTED BY (id ASC)",
    "CREATE VIEW s.v AS SELECT 1 AS one",
    "ALTER TABLE s.t RENAME TO t2",
    "DROP VIEW s.v",
    "DROP TABLE s.t2",
    "DROP SCHEMA s",
    "BEGIN; CREATE TABLE a1 (x INTEGER); CREATE TABLE a2 (x INTEGER); COMMIT",
]


def _snapshot_rows(lake: Lake) -> list[tuple]:
    return [
        (
            s.snapshot_id,
            s.schema_version,
            s.next_catalog_id,
            s.next_file_id,
            sorted(str(c) for c in s.changes),
        )
        for s in lake.snapshots()
    ]


def _schema_versions(lake: Lake) -> list[tuple]:
    with lake.connect() as conn:
        return [
            tuple(r)
            for r in conn.execute(
                sa.text(
                    "SELECT begin_snapshot, schema_version FROM ducklake_schema_versions "
                    "ORDER BY begin_snapshot, table_id"
                )
            ).fetchall()
        ]


def test_same_changes_same_snapshot_rows(tmp_path) -> None:
    ours_cat = Catalog("sqlite", f"sqlite:///{tmp_path}/ours.sqlite", "", str(tmp_path / "o"))
    ours = Lake.open(ours_cat.metadata, data_path=ours_cat.data_path)
    _ours(ours)

    con = duck.connect()
    duck.attach(con, f"sqlite:{tmp_path}/duck.sqlite", data_path=str(tmp_path / "d"))
    con.execute("USE lake")
    for stmt in DUCK:
        con.execute(stmt)
    con.close()
    theirs = Lake.open(f"sqlite:///{tmp_path}/duck.sqlite")

    ours_rows, their_rows = _snapshot_rows(ours), _snapshot_rows(theirs)
    assert len(ours_rows) == len(their_rows) == len(DUCK) + 1
    for a, b in zip(ours_rows, their_rows, strict=True):
        assert a == b
    assert _schema_versions(ours) == _schema_versions(theirs)
