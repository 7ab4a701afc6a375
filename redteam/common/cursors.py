"""Cursor tokens are client input: one check for the values they carry, used by every list.

A cursor names a position in an ordering (a timestamp and, on the pages, a primary key). The
server only ever hands out positions of real rows, so anything else (a pk of the wrong type, a
NUL, a date PostgreSQL cannot store, an oversized token) is a tampered cursor: a 400, never a
database error.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from django.core.exceptions import ValidationError
from django.db.models import Field

# A token this server issues is well under 200 characters; anything much longer is refused
# before it is decoded, so decoding never costs more than a few microseconds.
MAX_CURSOR_CHARS = 1000
INVALID_CURSOR = "Invalid cursor: use the next/previous links a list answered with."


class BadCursor(ValueError):
    """The cursor parameter is not one this server issued."""


def clean_cursor_value(field: Field[Any, Any], raw: Any) -> Any:
    """`raw` converted to `field`'s Python type, or BadCursor if no row could hold it."""
    if not isinstance(raw, str) or "\x00" in raw or len(raw) > MAX_CURSOR_CHARS:
        raise BadCursor(INVALID_CURSOR)
    try:
        value = field.to_python(raw)
    except (ValidationError, ValueError, TypeError, OverflowError):
        raise BadCursor(INVALID_CURSOR) from None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise BadCursor(INVALID_CURSOR)
        try:
            # Compared in UTC: PostgreSQL refuses offsets Python accepts, and a date at the
            # edge of the calendar can overflow when converted.
            return value.astimezone(UTC)
        except OverflowError:
            raise BadCursor(INVALID_CURSOR) from None
    max_length = getattr(field, "max_length", None)
    if isinstance(value, str) and max_length is not None and len(value) > max_length:
        raise BadCursor(INVALID_CURSOR)
    return value
