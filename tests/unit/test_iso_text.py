"""Timestamps as DuckDB and users write them read alike on every supported Python
(3.10's fromisoformat refuses "Z", "+00" and fractions of other than 3 or 6 digits)."""

from __future__ import annotations

from datetime import datetime, time, timedelta, timezone

import pytest

from dbt.adapters.ducklake.lake.codec import _iso_for_310, iso_datetime, iso_time

UTC = timezone.utc


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2024-01-02 03:04:05", datetime(2024, 1, 2, 3, 4, 5)),
        ("2024-01-02T03:04", datetime(2024, 1, 2, 3, 4)),
        ("2024-01-02 03:04:05.1", datetime(2024, 1, 2, 3, 4, 5, 100000)),
        ("2024-01-02 03:04:05.12345", datetime(2024, 1, 2, 3, 4, 5, 123450)),
        ("2024-01-02 03:04:05+00", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
        ("2024-01-02 03:04:05Z", datetime(2024, 1, 2, 3, 4, 5, tzinfo=UTC)),
        (
            "2024-01-02 03:04:05.5-0530",
            datetime(2024, 1, 2, 3, 4, 5, 500000, tzinfo=timezone(-timedelta(hours=5, minutes=30))),
        ),
        (
            "2024-01-02 03:04:05.123+05:30",
            datetime(2024, 1, 2, 3, 4, 5, 123000, tzinfo=timezone(timedelta(hours=5, minutes=30))),
        ),
    ],
)
def test_timestamps_read_as_python_311_reads_them(text: str, expected: datetime) -> None:
    assert iso_datetime(text) == expected
    # the form 3.10 reads, whatever Python runs this test
    assert datetime.fromisoformat(_iso_for_310(text)) == expected


def test_times_and_errors() -> None:
    assert iso_time("12:30:01.5") == time(12, 30, 1, 500000)
    assert datetime.fromisoformat(_iso_for_310("2024-01-02 00:00:00.1234567")) == datetime(
        2024, 1, 2, 0, 0, 0, 123456
    )
    with pytest.raises(ValueError):
        iso_datetime("yesterday")
