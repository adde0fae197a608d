"""TIMESTAMP values must not shift with the machine's time zone: PySpark hands them to
Python as naive local datetimes, which inlined rows and dbt's fetched results once took
for UTC."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from datetime import datetime, timezone

import pytest

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.spark.sql import LakeSQL
from dbt.adapters.ducklake.spark.types import python_rows
from tests import duck
from tests.conftest import Catalog


@pytest.fixture
def new_york() -> Iterator[None]:
    os.environ["TZ"] = "America/New_York"
    time.tzset()
    try:
        yield
    finally:
        os.environ["TZ"] = "UTC"
        time.tzset()


def test_inlined_and_fetched_timestamps_ignore_the_process_zone(
    spark, sqlite_catalog: Catalog, new_york: None
) -> None:
    assert time.localtime(0).tm_hour == 19  # the process really is in New York
    lake = Lake.open(sqlite_catalog.metadata, data_path=sqlite_catalog.data_path)
    sql = LakeSQL(spark, lake)
    sql.execute(
        "CREATE TABLE t AS SELECT TIMESTAMP '2024-01-01 12:00:00' AS ts, "
        "TIMESTAMP_NTZ '2024-01-01 12:00:00' AS ntz, "
        "named_struct('at', TIMESTAMP '2024-06-01 08:30:00') AS nested"
    )  # one row: inlined in the catalog
    noon_utc = datetime(2024, 1, 1, 12, tzinfo=timezone.utc)
    con = duck.connect()
    duck.attach(con, sqlite_catalog.duckdb_attach)
    row = con.execute("SELECT ts, ntz, nested.at FROM lake.t").fetchone()
    assert row == (
        noon_utc,
        datetime(2024, 1, 1, 12),
        datetime(2024, 6, 1, 8, 30, tzinfo=timezone.utc),
    )

    df = sql.execute("SELECT ts, ntz, nested FROM t")
    fetched = python_rows(df.collect(), df.schema)
    assert fetched == [
        (
            noon_utc,
            datetime(2024, 1, 1, 12),
            {"at": datetime(2024, 6, 1, 8, 30, tzinfo=timezone.utc)},
        )
    ]
