"""TIMESTAMP_NTZ to and from microseconds, on every Spark line (Spark 3.5 builds it from
the day and the time of day): exact at the edges of DuckDB's range, whatever the
session's time zone."""

from __future__ import annotations

from datetime import datetime

from pyspark.sql import functions as F

from dbt.adapters.ducklake.spark.compat import micros_from_ntz, ntz_from_micros

MICROS = {
    0: datetime(1970, 1, 1),
    1: datetime(1970, 1, 1, 0, 0, 0, 1),
    -1: datetime(1969, 12, 31, 23, 59, 59, 999999),
    -86_400_000_001: datetime(1969, 12, 30, 23, 59, 59, 999999),
    1_700_000_000_123_456: datetime(2023, 11, 14, 22, 13, 20, 123456),
    1_710_054_000_000_000: datetime(2024, 3, 10, 7),  # a DST change in New York
    -62_135_596_800_000_000: datetime(1, 1, 1),
    253_402_300_799_999_999: datetime(9999, 12, 31, 23, 59, 59, 999999),
}


def test_ntz_and_micros_round_trip_in_any_session_time_zone(spark) -> None:
    zone = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", "America/New_York")
    try:
        df = spark.createDataFrame([(m,) for m in MICROS], "m long")
        out = df.select("m", ntz_from_micros(F.col("m")).alias("t"))
        rows = out.select("m", "t", micros_from_ntz(F.col("t")).alias("back")).collect()
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
    assert {r.m: r.t for r in rows} == MICROS
    assert all(r.back == r.m for r in rows), rows
