"""dbt models over a table DuckDB wrote with types Spark has no exact type for: a copy
reads as DuckDB reads it (maps in their order, DATE infinity, UUIDs and HUGEINT inside
structs), and where Spark keeps less (TIMESTAMP_NS to microseconds) the dbt output says
so once per model and column."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import duckdb
import pytest
from dbt.tests.util import run_dbt, run_dbt_and_capture

from tests import duck
from tests.functional.conftest import catalog_target
from tests.spark.test_type_matrix import CASES, Case, write_case

pytestmark = pytest.mark.usefixtures("without_json_artifacts")  # reads no dbt JSON artifact

COPY = "{{ config(materialized='table') }} select * from {{ target.schema }}.src"
SUMMARY = "select id, n from {{ target.schema }}.src where id >= 0"


def _differences(con: duckdb.DuckDBPyConnection, theirs: str, mine: str) -> tuple[list, list]:
    """(rows only in `theirs`, rows only in `mine`), multisets."""
    return (
        con.execute(f"({theirs}) EXCEPT ALL ({mine})").fetchall(),
        con.execute(f"({mine}) EXCEPT ALL ({theirs})").fetchall(),
    )


class TestModelsOverDuckDBTypes:
    @pytest.fixture(scope="class", params=["sqlite", "postgres"])
    def dbt_profile_target(self, request, tmp_path_factory) -> Iterator[dict[str, Any]]:
        yield from catalog_target(request.param, tmp_path_factory)

    @pytest.fixture(scope="class")
    def models(self):
        return {"copy_a.sql": COPY, "copy_b.sql": COPY, "summary.sql": SUMMARY}

    def test_copies_read_as_duckdb_reads_and_the_rule_is_said(
        self, project, dbt_profile_target
    ) -> None:
        schema = project.test_schema
        attach = dbt_profile_target["duckdb_attach"]
        con = duck.connect()
        duck.attach(con, attach, options="DATA_INLINING_ROW_LIMIT 0")
        con.execute(f"CREATE SCHEMA IF NOT EXISTS lake.{schema}")
        con.execute(
            f"CREATE TABLE lake.{schema}.src (id INTEGER, n TIMESTAMP_NS, d DATE, "
            "m MAP(VARCHAR, INTEGER), s STRUCT(u UUID, h HUGEINT))"
        )
        con.execute(
            f"INSERT INTO lake.{schema}.src VALUES "
            "(0, '2024-01-01 10:11:12.123456789', 'infinity', MAP {'z': 1, 'a': 2}, "
            "{'u': 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'h': 1152921504606846977}), "
            "(1, '2024-01-02 00:00:00', '-infinity', MAP {}, NULL), "
            "(2, NULL, '2024-02-29', NULL, {'u': NULL, 'h': -5})"
        )
        con.close()

        _, output = run_dbt_and_capture(["run"])

        for model in ("copy_a", "copy_b", "summary"):
            said = [
                line
                for line in output.splitlines()
                if f"model.test.{model}: {schema}.src.n is TIMESTAMP_NS" in line
            ]
            assert len(said) == 1, (model, output)
        assert "dropping the last three digits" in output

        con = duck.connect()
        duck.attach(con, attach)
        # the copies as DuckDB reads the source: maps in their order, infinities, UUIDs
        # and HUGEINT inside structs; TIMESTAMP_NS kept to the microsecond at or below
        theirs = (
            "SELECT id, make_timestamp(epoch_us(n)) AS n, d, m, CASE WHEN s IS NOT NULL "
            "THEN {'u': s.u::VARCHAR, 'h': s.h::DECIMAL(38, 0)} END AS s "
            f"FROM lake.{schema}.src"
        )
        for model in ("copy_a", "copy_b"):
            described = con.execute(f"DESCRIBE lake.{schema}.{model}").fetchall()
            assert [r[1] for r in described] == [
                "INTEGER",
                "TIMESTAMP",
                "DATE",
                "MAP(VARCHAR, INTEGER)",
                "STRUCT(u VARCHAR, h DECIMAL(38,0))",
            ], described
            assert _differences(con, theirs, f"FROM lake.{schema}.{model}") == ([], [])
            assert con.execute(
                f"SELECT m::VARCHAR, d::VARCHAR FROM lake.{schema}.{model} ORDER BY id"
            ).fetchall() == [("{z=1, a=2}", "infinity"), ("{}", "-infinity"), (None, "2024-02-29")]
        # a view stays DuckDB's: the full nanoseconds
        assert con.execute(f"SELECT n FROM lake.{schema}.summary WHERE id = 0").fetchone()[0] == (
            datetime(2024, 1, 1, 10, 11, 12, 123456)
        )
        assert con.execute(
            f"SELECT epoch_ns(n) % 1000 FROM lake.{schema}.summary WHERE id = 0"
        ).fetchone() == (789,)
        con.close()

        # a second run says it again (once per model per run)
        _, again = run_dbt_and_capture(["run", "--select", "summary"])
        assert again.count(f"{schema}.src.n is TIMESTAMP_NS") == 1, again
        run_dbt(["show", "--inline", f"select d from {schema}.copy_a order by id", "--limit", "3"])


def _tables() -> list[tuple[Case, str]]:
    return [
        (case, f"{prefix}_{case.name}")
        for prefix in ("f", "i")
        for case in CASES
        if prefix == "f" or case.inlined
    ]


class TestEveryTypeThroughADbtModel:
    """Every case of tests/spark/test_type_matrix.py, written by DuckDB (in files and
    inlined), copied by a dbt table model each: DuckDB reads every copy with the
    documented types and the rows of the source, under the documented rules."""

    @pytest.fixture(scope="class", params=["sqlite", "postgres"])
    def dbt_profile_target(self, request, tmp_path_factory) -> Iterator[dict[str, Any]]:
        yield from catalog_target(request.param, tmp_path_factory, threads=4)

    @pytest.fixture(scope="class")
    def models(self):
        return {
            f"c_{table}.sql": "{{ config(materialized='table') }} "
            f"select * from {{{{ target.schema }}}}.{table}"
            for _, table in _tables()
        }

    def test_every_copy_reads_as_duckdb_reads_its_source(self, project, dbt_profile_target) -> None:
        schema = project.test_schema
        attach = dbt_profile_target["duckdb_attach"]
        con = duck.connect()
        for prefix, limit in (("f", 0), ("i", 100)):
            duck.attach(con, attach, options=f"DATA_INLINING_ROW_LIMIT {limit}")
            con.execute(f"CREATE SCHEMA IF NOT EXISTS lake.{schema}")
            con.execute(f"USE lake.{schema}")
            for case, table in _tables():
                if table.startswith(prefix):
                    write_case(con, case, table)
            con.execute("USE memory")
            con.execute("DETACH lake")
        run_dbt(["run"])
        duck.attach(con, attach)
        con.execute(f"USE lake.{schema}")
        problems = []
        for case, table in _tables():
            described = con.execute(f"DESCRIBE c_{table}").fetchall()
            copied = ",".join(r[1] for r in described[1:])
            if copied != case.copied:
                problems.append((table, "DuckDB types of the copy", copied))
            theirs = f"SELECT {case.compared} FROM (SELECT {case.as_read} FROM {table})"
            mine = f"SELECT {case.compared} FROM c_{table}"
            if _differences(con, theirs, mine) != ([], []):
                problems.append((table, "rows", _differences(con, theirs, mine)))
        con.close()
        assert not problems, "\n".join(map(str, problems))
