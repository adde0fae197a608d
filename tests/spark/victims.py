"""Which way DML stages its victims in a test: few are staged on the driver, many by
Spark tasks; small test tables would otherwise only ever take the driver's way."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from dbt.adapters.ducklake.spark import dml, driver_merge

WAYS = ("driver", "tasks")


@contextmanager
def victims_staged_by(way: str) -> Iterator[None]:
    """`driver`: the product's thresholds; `tasks`: every count is too many for the
    driver (a table of inlined rows only still goes to the driver: its rows are there),
    and no MERGE source is small enough to be decided there."""
    assert way in WAYS, way
    saved = dml.FEW_VICTIMS, driver_merge.DRIVER_SOURCE_BYTES
    if way == "tasks":
        dml.FEW_VICTIMS, driver_merge.DRIVER_SOURCE_BYTES = -1, -1
    try:
        yield
    finally:
        dml.FEW_VICTIMS, driver_merge.DRIVER_SOURCE_BYTES = saved
