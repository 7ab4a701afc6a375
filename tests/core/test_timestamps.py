"""redteam.core.timestamps: each PyRIT line's spelling, for every year a datetime can hold."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from redteam.core.timestamps import pyrit_timestamp, timestamp_013, timestamp_1x


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (datetime(2026, 11, 22, 2, 54, 3, 565268, tzinfo=UTC), "2026-11-22T02:54:03.565268Z"),
        (datetime(2026, 11, 22, 3, 0, tzinfo=UTC), "2026-11-22T03:00:00Z"),
        (datetime(28, 6, 27, 1, 2, 3, tzinfo=UTC), "0028-06-27T01:02:03Z"),
        (datetime(1, 1, 1, tzinfo=UTC), "0001-01-01T00:00:00Z"),
        (datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC), "9999-12-31T23:59:59.999999Z"),
        (
            datetime(2026, 1, 1, 2, 0, tzinfo=timezone(timedelta(hours=2))),
            "2026-01-01T00:00:00Z",
        ),
    ],
)
def test_1x_is_pydantics_spelling(value: datetime, expected: str) -> None:
    assert timestamp_1x(value) == expected
    assert pyrit_timestamp(value, "1.x") == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (datetime(2026, 11, 22, 3, 0, tzinfo=UTC), "2026-11-22T03:00:00+00:00"),
        (datetime(28, 6, 27, 1, 2, 3, 5, tzinfo=UTC), "0028-06-27T01:02:03.000005+00:00"),
    ],
)
def test_013_is_isoformat(value: datetime, expected: str) -> None:
    assert timestamp_013(value) == expected
    assert pyrit_timestamp(value, "0.13") == expected


def test_none_stays_none() -> None:
    assert timestamp_1x(None) is None
    assert timestamp_013(None) is None
