"""Every DuckDB type whose values Spark has no type of its own for, written by DuckDB 1.5.5
(in Parquet files and inlined), read here and written back (CTAS, then a MERGE):

- the engine's rows equal DuckDB's (EXCEPT ALL both ways), under the documented rule
  where Spark keeps less (TIMESTAMP_NS to microseconds, with a notice);
- the Spark types are the documented ones, at the top level and nested alike;
- DuckDB reads the copy with the documented types and the same values (the MERGE,
  which rewrites every row, runs on SQLite only: the data path is the same on both
  catalogs).

One lake per catalog holds every case; a failure lists every case that differs."""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import duckdb
import pytest
from pyspark.sql import types as T

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.errors import UnsupportedTypeError
from dbt.adapters.ducklake.spark.notices import take_notices
from dbt.adapters.ducklake.spark.scan import scan_table
from dbt.adapters.ducklake.spark.sql import LakeSQL
from tests import duck
from tests.conftest import Catalog

# Spark 3.5 has no VARIANT type, and its Parquet library no GEOMETRY annotation
SPARK_HAS_VARIANT = hasattr(T, "VariantType")
# what Spark 3.5 refuses, by case: why (its nested reader refuses UUID annotations)
SPARK_4_CASES = {
    "variant": r"type variant needs Spark 4\.0 or later",
    "geometry": r"type geometry needs Spark 4\.0 or later",
    "nested_specials": r"a UUID inside a STRUCT, LIST or MAP needs Spark 4\.0 or later",
}

UUID = "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'"


class Case(NamedTuple):
    name: str
    columns: str  # DuckDB's column definitions after `id INTEGER`
    rows: list[str]  # DuckDB's VALUES rows after the id
    spark: str  # the Spark type of the columns as the scan returns them
    copied: str  # DuckDB's types of the engine's copy
    alters: tuple[str, ...] = ()  # DuckDB statements after the first rows (promotions)
    inlined: bool = True  # also as rows inlined in the catalog
    # what DuckDB's rows are compared with (for a type Spark keeps less of)
    as_read: str = "*"
    # what both sides are compared as, where DuckDB cannot compare the types themselves
    compared: str = "*"


CASES = [
    Case(
        "uuid",
        "u UUID",
        [UUID, "NULL", "'00000000-0000-0000-0000-000000000000'"],
        "u:string",
        "VARCHAR",
    ),
    Case(
        "time",
        "t TIME",
        ["'10:11:12.5'", "'00:00:00'", "NULL", "'23:59:59.999999'"],
        "t:string",
        "VARCHAR",
    ),
    Case(
        "hugeint",
        "h HUGEINT, uh UHUGEINT",
        [
            "0, 0",
            "-1, 1",
            "1152921504606846977, 1152921504606846977",  # 2^60 + 1: DuckDB keeps 2^60
            "-123456789012345678901234567890, 12345678901234567890123",
            "NULL, NULL",
        ],
        "h:decimal(38,0),uh:decimal(38,0)",
        "DECIMAL(38,0),DECIMAL(38,0)",
    ),
    Case(
        "ubigint",
        "u UBIGINT",
        ["0", "18446744073709551615", "9223372036854775808", "NULL"],
        "u:decimal(20,0)",
        "DECIMAL(20,0)",
    ),
    Case(
        "promoted_unsigned",
        "a USMALLINT, b UINTEGER, c UTINYINT",
        ["65535, 4294967295, 255", "NULL, 0, NULL"],
        "a:decimal(20,0),b:decimal(20,0),c:bigint",
        "DECIMAL(20,0),DECIMAL(20,0),BIGINT",
        alters=(
            "ALTER TABLE {t} ALTER a TYPE UBIGINT",
            "ALTER TABLE {t} ALTER b TYPE UBIGINT",
            "ALTER TABLE {t} ALTER c TYPE UINTEGER",
            "INSERT INTO {t} VALUES (100, 18446744073709551615, 18446744073709551615, 4294967295)",
        ),
    ),
    Case(
        "nested_specials",
        "s STRUCT(u UUID, t TIME, h HUGEINT, n TIMESTAMP_NS, b UBIGINT), l UUID[], "
        "m MAP(UUID, TIME)",
        [
            f"{{'u': {UUID}, 't': '01:02:03', 'h': -12345678901234567890, "
            "'n': '2024-01-01 10:11:12.123456', 'b': 18446744073709551615}, "
            f"[{UUID}, NULL], MAP {{{UUID}: '23:00:00'}}",
            "NULL, [], MAP {}",
            "{'u': NULL, 't': NULL, 'h': NULL, 'n': NULL, 'b': NULL}, NULL, NULL",
        ],
        "s:struct<u:string,t:string,h:decimal(38,0),n:timestamp_ntz,b:decimal(20,0)>,"
        "l:array<string>,m:map<string,string>",
        "STRUCT(u VARCHAR, t VARCHAR, h DECIMAL(38,0), n TIMESTAMP, b DECIMAL(20,0)),"
        "VARCHAR[],MAP(VARCHAR, VARCHAR)",
        # DuckDB cannot read its own inlined structs holding these: the inlined text
        # says CAST('…' AS UUID), which its reader does not parse (this engine does)
        inlined=False,
    ),
    Case(
        "infinities",
        "d DATE, ts TIMESTAMP, tz TIMESTAMPTZ",
        [
            "'infinity', 'infinity', 'infinity'",
            "'-infinity', '-infinity', '-infinity'",
            "'2024-02-29', '2024-02-29 10:00:00', '2024-02-29 10:00:00+00'",
            "NULL, NULL, NULL",
        ],
        "d:date,ts:timestamp_ntz,tz:timestamp",
        "DATE,TIMESTAMP,TIMESTAMP WITH TIME ZONE",
    ),
    Case(
        # DuckDB cannot read its own inlined nested infinity (CAST('infinity' AS DATE)
        # in the inlined text): Parquet files only
        "nested_infinities",
        "s STRUCT(d DATE), l TIMESTAMP[]",
        ["{'d': '-infinity'}, ['infinity', NULL, '2024-01-01']", "{'d': '2024-01-01'}, NULL"],
        "s:struct<d:date>,l:array<timestamp_ntz>",
        "STRUCT(d DATE),TIMESTAMP[]",
        inlined=False,
    ),
    Case(
        "map_order",
        "m MAP(VARCHAR, INTEGER), l MAP(INTEGER, VARCHAR)[], s STRUCT(m MAP(VARCHAR, DATE))",
        [
            "MAP {'z': 1, 'a': 2, 'm': 3}, [MAP {9: 'x', 1: 'y', 5: 'z'}], "
            "{'m': MAP {'late': '2024-12-31', 'early': '2020-01-01'}}",
            "MAP {}, [], NULL",
        ],
        "m:map<string,int>,l:array<map<int,string>>,s:struct<m:map<string,date>>",
        "MAP(VARCHAR, INTEGER),MAP(INTEGER, VARCHAR)[],STRUCT(m MAP(VARCHAR, DATE))",
    ),
    Case(
        # Spark's timestamps hold microseconds: the rule is to read the nearest
        # microsecond below and say so (checked below)
        "timestamp_ns",
        "n TIMESTAMP_NS",
        ["'2024-01-01 10:11:12.123456789'", "'1969-12-31 23:59:59.999999999'", "NULL"],
        "n:timestamp_ntz",
        "TIMESTAMP",
        # the microsecond at or below (DuckDB's own cast rounds toward zero)
        as_read="id, make_timestamp((epoch_ns(n) - ((epoch_ns(n) % 1000) + 1000) % 1000) "
        "// 1000) AS n",
    ),
    Case(
        # read into Spark's VARIANT; Spark writes integers at their narrowest width
        # (DuckDB's 42::INTEGER comes back an INT8 42, as a notice says: checked below),
        # so the values are compared as text
        "variant",
        "v VARIANT",
        [
            "42::VARIANT",
            "'x'::VARIANT",
            "{'a': 1, 'b': [1, 2]}::VARIANT",
            "NULL",
            "DATE '2024-02-29'::VARIANT",
            "1.50::DECIMAL(4, 2)::VARIANT",
            "[1.5, NULL]::VARIANT",
            "'null'::JSON::VARIANT",
        ],
        "v:variant",
        "VARIANT",
        inlined=False,  # DuckDB writes variants to Parquet only
        compared="id, v::VARCHAR AS v, v IS NULL AS missing",
    ),
    Case(
        # read as its well-known binary (WKB); written back as a BLOB of those bytes
        "geometry",
        "g GEOMETRY",
        ["'POINT(1 2)'", "NULL", "'LINESTRING(0 0, 1 1)'"],
        "g:binary",
        "BLOB",
        inlined=False,
        as_read="id, ST_AsWKB(g) AS g",
    ),
]


class Lakes(NamedTuple):
    con: duckdb.DuckDBPyConnection
    tables: list[tuple[Case, str]]


def write_case(con: duckdb.DuckDBPyConnection, case: Case, table: str) -> None:
    """DuckDB writes `case` as `table` in its current schema."""
    con.execute(f"CREATE TABLE {table} (id INTEGER, {case.columns})")
    values = ", ".join(f"({n}, {row})" for n, row in enumerate(case.rows))
    con.execute(f"INSERT INTO {table} VALUES {values}")
    for statement in case.alters:
        con.execute(statement.format(t=table))


def _write_cases(catalog: Catalog) -> Lakes:
    """Every case as a table of Parquet files (`f_<name>`) and, where DuckDB reads
    them, of inlined rows (`i_<name>`)."""
    con = duck.connect()
    tables = []
    for prefix, limit in (("f", 0), ("i", 100)):
        options = f"DATA_INLINING_ROW_LIMIT {limit}"
        duck.attach(con, catalog.duckdb_attach, data_path=catalog.data_path, options=options)
        con.execute("USE lake")
        for case in CASES:
            if prefix == "i" and not case.inlined:
                continue
            table = f"{prefix}_{case.name}"
            write_case(con, case, table)
            tables.append((case, table))
        con.execute("USE memory")
        con.execute("DETACH lake")
    duck.attach(con, catalog.duckdb_attach)
    con.execute("USE lake")
    return Lakes(con, tables)


def _differences(con: duckdb.DuckDBPyConnection, theirs: str, mine: str) -> object:
    """(rows only DuckDB reads, rows only in ours), or DuckDB's error."""
    try:
        return con.execute(
            f"SELECT (SELECT count(*) FROM ({theirs} EXCEPT ALL {mine})), "
            f"(SELECT count(*) FROM ({mine} EXCEPT ALL {theirs}))"
        ).fetchone()
    except duckdb.Error as exc:
        return f"{type(exc).__name__}: {exc}"


def test_every_special_type_reads_and_writes_back_as_duckdb_reads_it(
    spark, catalog: Catalog, tmp_path: Path
) -> None:
    lakes = _write_cases(catalog)
    con = lakes.con
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    sql = LakeSQL(spark, lake)
    problems: list[tuple[str, str, object]] = []
    take_notices()
    for case, table in lakes.tables:
        if case.name in SPARK_4_CASES and not SPARK_HAS_VARIANT:
            with pytest.raises(UnsupportedTypeError, match=SPARK_4_CASES[case.name]):
                scan_table(spark, lake, "main", table)
            continue
        scan = scan_table(spark, lake, "main", table)
        spark_types = ",".join(f"{f.name}:{f.dataType.simpleString()}" for f in scan.schema[1:])
        if spark_types != case.spark:
            problems.append((table, "Spark types", spark_types))
        out = tmp_path / table
        scan.write.parquet(str(out))
        theirs = f"(SELECT {case.compared} FROM (SELECT {case.as_read} FROM {table}))"
        mine = f"(SELECT {case.compared} FROM read_parquet('{out}/*.parquet'))"
        if _differences(con, theirs, mine) != (0, 0):
            problems.append((table, "rows read", _differences(con, theirs, mine)))
        # written back: a CTAS, then every row rewritten by a MERGE from the source
        copy = f"c_{table}"
        sql.execute(f"CREATE TABLE main.{copy} AS SELECT * FROM main.{table}")
        if catalog.backend == "sqlite":  # the same data path on both catalogs: once
            sql.execute(
                f"MERGE INTO main.{copy} tgt USING main.{table} src ON tgt.id = src.id "
                "WHEN MATCHED THEN UPDATE SET *"
            )
        described = con.execute(f"DESCRIBE {copy}").fetchall()
        copied = ",".join(r[1] for r in described[1:])
        if copied != case.copied:
            problems.append((table, "DuckDB types of the copy", copied))
        copy_rows = f"(SELECT {case.compared} FROM {copy})"
        if _differences(con, theirs, copy_rows) != (0, 0):
            problems.append((table, "rows written back", _differences(con, theirs, copy_rows)))
    notices = take_notices()
    con.close()
    lake.close()
    assert not problems, "\n".join(map(str, problems))
    # the TIMESTAMP_NS rule is said, naming the table and column, nested ones included
    said = " | ".join(notices)
    nested = ("main.f_nested_specials.s.n",) if SPARK_HAS_VARIANT else ()  # refused on 3.5
    for where in ("main.f_timestamp_ns.n", "main.i_timestamp_ns.n", *nested):
        assert f"{where} is TIMESTAMP_NS" in said, said
    assert "dropping the last three digits" in said, said
    if not SPARK_HAS_VARIANT:  # Spark 3.5: refused above, by name
        return
    # and the VARIANT rule: a copy's integers take Spark's narrowest width
    assert "main.f_variant.v is VARIANT: Spark writes the integers" in said, said
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    widths = con.execute(
        "SELECT variant_typeof(f.v), variant_typeof(c.v) FROM lake.main.f_variant f "
        "JOIN lake.main.c_f_variant c USING (id) WHERE id = 0"
    ).fetchone()
    assert widths == ("INT32", "INT8"), widths
    con.close()
