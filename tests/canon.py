"""Canonical forms so rows from DuckDB and from lake/ compare exactly."""

from __future__ import annotations

import math
from datetime import datetime, timezone
from decimal import Decimal
from typing import Any


def canon(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {"key", "value"} and isinstance(value.get("key"), list):
            return (
                "map",
                tuple(
                    sorted(
                        (canon(k), canon(v))
                        for k, v in zip(value["key"], value["value"], strict=True)
                    )
                ),
            )
        return tuple((k, canon(v)) for k, v in value.items())
    if isinstance(value, list | tuple):
        return tuple(canon(v) for v in value)
    if isinstance(value, float) and math.isnan(value):
        return "NaN"
    if isinstance(value, datetime) and value.tzinfo is not None:
        return value.astimezone(timezone.utc)
    if isinstance(value, Decimal):
        return value.normalize()
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    return value


def canon_rows(rows: Any) -> list[Any]:
    return sorted((canon(tuple(r)) for r in rows), key=repr)
