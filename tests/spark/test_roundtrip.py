"""Every Spark type round-trips both ways: Spark writes -> DuckDB reads the same values;
DuckDB writes -> this engine's scan returns the same values. Both catalog backends."""

from __future__ import annotations

import math
from datetime import date, datetime, timezone
from decimal import Decimal
from typing import Any

import pytest
from pyspark.sql import Row

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.engine import create_table_as
from dbt.adapters.ducklake.spark.errors import UnsupportedTypeError
from dbt.adapters.ducklake.spark.read_values import time_text
from dbt.adapters.ducklake.spark.scan import scan_table
from tests import duck
from tests.canon import canon_rows
from tests.conftest import Catalog

SPARK_TYPES = """
    `bool` boolean, `tiny` tinyint, `small` smallint, `int` int, `big` bigint,
    `f32` float, `f64` double, `dec` decimal(10,2), `wide` decimal(38,10),
    `str` string, `bin` binary, `d` date, `ts` timestamp, `ntz` timestamp_ntz,
    `ints` array<int>, `strs` array<string>,
    `st` struct<a: int, b: array<struct<c: string, n: double>>>,
    `m` map<string, int>, `mi` map<int, struct<x: string>>,
    `Weird "name"` string, `ünï cödé` int
"""


def _value(i: int) -> tuple[Any, ...]:
    special = [float("nan"), float("inf"), float("-inf"), 0.0, -1.5]
    f = special[i % len(special)] if i % 3 == 0 else i / 4
    return (
        i % 2 == 0 if i % 7 else None,
        i % 128 - 64,
        i * 100 - 5000,
        i * 1000 if i % 11 else None,
        i * 10**12 - 7,
        f,
        f * 3 if not math.isnan(f) else f,
        Decimal(f"{i}.25") if i % 5 else None,
        Decimal(f"{i}123456789.0123456789") if i % 4 else Decimal("-0.0000000001"),
        ["", "plain", 'it\'s "quoted", [x]', "ünïcødé ☃", None][i % 5],
        bytes([i % 256, 0, 255]) if i % 6 else b"",
        date(2024, 1, 1 + i % 28) if i % 9 else date(1, 1, 1),
        datetime(2024, 3, 1, i % 24, i % 60, 0, 123456, tzinfo=timezone.utc) if i % 8 else None,
        datetime(1999, 12, 31, 23, 59, 59, 999999) if i % 2 else datetime(2030, 1, 1),
        [i, None, -i] if i % 3 else [],
        ["a, b", None, "{c}"] if i % 4 else None,
        {"a": i, "b": [{"c": f"c{i}", "n": float(i)}, {"c": None, "n": None}]} if i % 5 else None,
        {"k": i, "j": None} if i % 2 else {},
        {i: {"x": "y"}} if i % 3 else None,
        f"w{i}",
        i,
    )


def _plain(value: Any) -> Any:
    if isinstance(value, Row):
        return {k: _plain(v) for k, v in value.asDict().items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, datetime) and value.tzinfo is None:
        return value
    return value


def _spark_rows(df) -> list[tuple[Any, ...]]:
    return [tuple(_plain(v) for v in r) for r in df.collect()]


def _fix_spark_timestamps(rows: list[tuple[Any, ...]], ts_index: int) -> list[tuple[Any, ...]]:
    """Spark returns TIMESTAMP values as naive UTC datetimes (session time zone UTC)."""
    out = []
    for r in rows:
        v = r[ts_index]
        out.append((*r[:ts_index], v.replace(tzinfo=timezone.utc) if v else v, *r[ts_index + 1 :]))
    return out


@pytest.mark.parametrize("rows", [40, 5], ids=["files", "inlined"])
def test_spark_writes_duckdb_reads_identical_values(spark, catalog: Catalog, rows: int) -> None:
    lake = Lake.open(catalog.metadata, data_path=catalog.data_path)
    df = spark.createDataFrame([_value(i) for i in range(rows)], SPARK_TYPES)
    snap = create_table_as(lake, "main", "all_types", df)
    assert snap is not None and len(snap.changes) == 2
    cat = lake.catalog()
    table = cat.table("main", "all_types")
    assert bool(cat.data_files(table)) == (rows > 10)
    assert bool(cat.inlined_rows(table.table_id)) == (rows <= 10)

    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach)
    theirs = con.execute("SELECT * FROM lake.main.all_types").fetchall()
    ours = _fix_spark_timestamps(_spark_rows(df), 12)
    assert canon_rows(theirs) == canon_rows(ours)
    described = con.execute("DESCRIBE lake.main.all_types").fetchall()
    assert [d[1] for d in described][:14] == [
        "BOOLEAN",
        "TINYINT",
        "SMALLINT",
        "INTEGER",
        "BIGINT",
        "FLOAT",
        "DOUBLE",
        "DECIMAL(10,2)",
        "DECIMAL(38,10)",
        "VARCHAR",
        "BLOB",
        "DATE",
        "TIMESTAMP WITH TIME ZONE",
        "TIMESTAMP",
    ]
    assert [d[0] for d in described][-2:] == ['Weird "name"', "ünï cödé"]
    # and our own scan agrees with both
    scanned = _fix_spark_timestamps(_spark_rows(scan_table(spark, lake, "main", "all_types")), 12)
    assert canon_rows(scanned) == canon_rows(theirs)
    con.close()


DUCK_TABLE = '''CREATE TABLE lake.main.d (
    b BOOLEAN, i8 TINYINT, i16 SMALLINT, i32 INTEGER, i64 BIGINT,
    u8 UTINYINT, u16 USMALLINT, u32 UINTEGER, u64 UBIGINT, f FLOAT, g DOUBLE,
    dc DECIMAL(18,4), s VARCHAR, bl BLOB, d DATE, ts TIMESTAMP, tz TIMESTAMPTZ,
    l INTEGER[], st STRUCT(a VARCHAR, b DOUBLE[]), m MAP(VARCHAR, BIGINT),
    "odd ""col""" VARCHAR, j JSON, u UUID, tm TIME, tns TIMESTAMP_NS, tms TIMESTAMP_MS,
    h HUGEINT)'''

DUCK_ROWS = """SELECT i % 2 = 0, (i % 100)::TINYINT, i::SMALLINT, i * 1000, i * 10000000000,
    (i % 200)::UTINYINT, i::USMALLINT, (i * 1000)::UINTEGER, (i * 1000000000000)::UBIGINT,
    CASE i % 4 WHEN 0 THEN 'nan'::FLOAT WHEN 1 THEN 'inf'::FLOAT ELSE i / 3 END,
    CASE i % 5 WHEN 0 THEN '-inf'::DOUBLE ELSE i / 7 END,
    (i / 3)::DECIMAL(18,4), CASE WHEN i % 6 = 0 THEN NULL ELSE 'v' || i || ' ☃,''x' END,
    ('\\x' || lpad(to_hex(i % 256), 2, '0'))::BLOB, DATE '2020-01-01' + i::INTEGER,
    TIMESTAMP '2021-06-01 10:00:00' + to_seconds(i),
    TIMESTAMPTZ '2022-01-01 00:00:00+00' + to_hours(i),
    CASE WHEN i % 3 = 0 THEN [] ELSE [i, NULL, -i] END,
    CASE WHEN i % 4 = 0 THEN NULL ELSE {'a': 'x' || i, 'b': [i / 2, NULL]} END,
    CASE WHEN i % 2 = 0 THEN MAP {} ELSE MAP {'k' || i: i} END,
    'odd' || i, '{"k": ' || i || '}', uuid(),
    TIME '10:11:12' + to_microseconds(i * 1001), TIMESTAMP_NS '2024-01-01 00:00:00' + to_seconds(i),
    TIMESTAMP_MS '2023-05-05 05:05:05.123' + to_milliseconds(i), (i * 1000000)::HUGEINT
    FROM range({lo}, {hi}) r(i)"""


def test_duckdb_writes_spark_scan_reads_identical_values(spark, catalog: Catalog) -> None:
    con = duck.connect()
    duck.attach(con, catalog.duckdb_attach, data_path=catalog.data_path)
    con.execute(DUCK_TABLE)
    con.execute(
        "INSERT INTO lake.main.d " + DUCK_ROWS.replace("{lo}", "0").replace("{hi}", "5")
    )  # inlined
    con.execute(
        "INSERT INTO lake.main.d " + DUCK_ROWS.replace("{lo}", "5").replace("{hi}", "60")
    )  # a file
    lake = Lake.open(catalog.metadata)
    df = scan_table(spark, lake, "main", "d")
    ours = _spark_rows(df)
    cols = [c for c in df.columns]
    theirs = con.execute("SELECT * FROM lake.main.d").fetchall()
    # DuckDB types Spark lacks come back as their documented Spark mapping
    mapped = []
    for r in theirs:
        row = list(r)
        row[cols.index("u64")] = Decimal(row[cols.index("u64")])
        row[cols.index("u")] = str(row[cols.index("u")])
        row[cols.index("tm")] = time_text(row[cols.index("tm")])
        row[cols.index("h")] = Decimal(row[cols.index("h")])
        mapped.append(tuple(row))
    ours = _fix_spark_timestamps(ours, cols.index("tz"))
    assert canon_rows(ours) == canon_rows(mapped)
    assert df.schema["u64"].dataType.simpleString() == "decimal(20,0)"
    assert df.schema["u8"].dataType.simpleString() == "smallint"
    assert df.schema["tm"].dataType.simpleString() == "string"
    con.execute("CREATE TABLE lake.main.iv (i INTERVAL)")
    con.execute("INSERT INTO lake.main.iv SELECT INTERVAL 1 DAY FROM range(20)")
    with pytest.raises(UnsupportedTypeError, match="interval values cannot be read"):
        scan_table(spark, Lake.open(catalog.metadata), "main", "iv")
    con.close()
