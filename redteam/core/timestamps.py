"""Timestamps as each PyRIT line writes them, for every export. Framework-free.

1.x is pydantic's JSON form (``Z``, microseconds only when non-zero); 0.13 is Python's
``datetime.isoformat()`` of an aware UTC datetime (``+00:00``, microseconds only when
non-zero). redteam/client.py keeps its own copy: users copy that file alone.
"""

from __future__ import annotations

from datetime import UTC, datetime


def timestamp_1x(value: datetime | None) -> str | None:
    """pydantic's JSON form of an aware UTC datetime: ``2026-11-22T02:54:03.565268Z``, and
    ``2026-11-22T03:00:00Z`` when there are no microseconds (pydantic leaves them out)."""
    if value is None:
        return None
    # isoformat, not strftime: strftime("%Y") drops the zero padding of years before 1000.
    return value.astimezone(UTC).replace(tzinfo=None).isoformat() + "Z"


def timestamp_013(value: datetime | None) -> str | None:
    """0.13's ``datetime.isoformat()`` of an aware UTC datetime (``+00:00``)."""
    if value is None:
        return None
    return value.astimezone(UTC).isoformat()


def pyrit_timestamp(value: datetime | None, shape: str) -> str | None:
    """The timestamp as the line named by `shape` ("1.x" or "0.13") writes it."""
    return timestamp_1x(value) if shape == "1.x" else timestamp_013(value)
