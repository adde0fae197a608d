"""Rows the driver holds are inlined unless a list or map holds DuckDB's infinity (a file
is written instead); a NULL in a NOT NULL column is refused before anything is staged."""

from __future__ import annotations

from datetime import date

import pytest

from dbt.adapters.ducklake.lake import Lake
from dbt.adapters.ducklake.lake.codec import Infinite
from dbt.adapters.ducklake.spark.engine import inlinable
from dbt.adapters.ducklake.spark.errors import NotNullViolation
from dbt.adapters.ducklake.spark.sql import LakeSQL


def test_infinity_inside_a_list_or_map_is_not_inlined(spark, tmp_path) -> None:
    lake = Lake.open(f"sqlite:///{tmp_path}/c.sqlite", data_path=f"{tmp_path}/data/")
    LakeSQL(spark, lake).execute(
        "CREATE TABLE t (k INT NOT NULL, d DATE, ds ARRAY<DATE>, m MAP<STRING, DATE>)"
    )
    table = lake.transaction().table("main", "t")
    plain = (1, date(2024, 1, 1), [date(2024, 1, 2), None], {"a": date(2024, 1, 3)})
    assert inlinable(table, [plain, (2, Infinite(False), [], {})])  # a top-level one inlines
    assert not inlinable(table, [plain, (3, None, [Infinite(True)], None)])
    assert not inlinable(table, [(4, None, None, {"b": Infinite(False)})])
    with pytest.raises(NotNullViolation):
        inlinable(table, [plain, (None, None, None, None)])
