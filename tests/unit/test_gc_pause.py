"""The cyclic collector is off inside `collection_paused` and as it was after, also
when the body raises."""

from __future__ import annotations

import gc

import pytest

from dbt.adapters.ducklake.spark.gc_pause import collection_paused


def test_paused_inside_and_resumed_after() -> None:
    assert gc.isenabled()
    with collection_paused():
        assert not gc.isenabled()
    assert gc.isenabled()

    @collection_paused()
    def boom() -> None:
        assert not gc.isenabled()
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        boom()
    assert gc.isenabled()


def test_left_off_when_it_was_off() -> None:
    gc.disable()
    try:
        with collection_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    finally:
        gc.enable()
