"""Python's cyclic garbage collector held off while the driver handles rows in bulk.

A MERGE decided on the driver, or a change-feed window read and ranked there, makes
tens of thousands of short-lived tuples and values. None of them form cycles, and all
die with the statement; but while they live, every young-generation pass promotes
them, and once enough reach the oldest generation Python walks every object of the
process: in a dbt run that is dbt's whole manifest, 0.11-0.15 s per full pass,
measured 1-2 times in each build of `bench/change_feed.py`'s feed model. Held off, the
rows are freed by their reference counts and no full pass comes due.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collection_paused"]


@contextmanager
def collection_paused() -> Iterator[None]:
    """No cyclic collection inside (usable as a decorator); collection resumes after,
    unless it was off already."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
