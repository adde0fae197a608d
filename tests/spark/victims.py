"""Which way DML stages its victims in a test: few are staged on the driver, many by
Spark tasks; small test tables would otherwise only ever take the driver's way."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from dbt.adapters.ducklake.spark import dml

WAYS = ("driver", "tasks")


@contextmanager
def victims_staged_by(way: str) -> Iterator[None]:
    """`driver`: the product's threshold; `tasks`: every count is too many for the driver
    (a table of inlined rows only still goes to the driver: its rows are there)."""
    assert way in WAYS, way
    saved = dml.FEW_VICTIMS
    dml.FEW_VICTIMS = saved if way == "driver" else -1
    try:
        yield
    finally:
        dml.FEW_VICTIMS = saved
