"""Keyset (cursor) pagination on (timestamp, primary key), newest first, without COUNT(*).

The cursor is an opaque URL-safe token naming a direction and a position; each page is one
indexed range scan (``ts <= T AND (ts < T OR pk < P)``), so page 1000 costs what page 1 does.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from django.db.models import Field, Model, Q, QuerySet
from django.http import HttpRequest
from django_filters import FilterSet

from redteam.common.cursors import INVALID_CURSOR, MAX_CURSOR_CHARS, BadCursor, clean_cursor_value

__all__ = [
    "BadCursor",
    "KeysetPage",
    "ListPage",
    "encode_cursor",
    "filtered_list_page",
    "keyset_page",
    "page_size",
    "request_page",
]

M = TypeVar("M", bound=Model)

DEFAULT_PAGE_SIZE = 50
MAX_PAGE_SIZE = 200


@dataclass
class KeysetPage(Generic[M]):
    """One page of rows plus the cursors for its neighbours (None at either end)."""

    rows: list[M]
    next_cursor: str | None
    previous_cursor: str | None


def encode_cursor(direction: str, ts: datetime, pk: Any) -> str:
    """Opaque token for a position."""
    raw = json.dumps([direction, ts.isoformat(), str(pk)], separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(token: str) -> tuple[str, str, str]:
    """Split a token made by encode_cursor into its raw parts; BadCursor for anything else."""
    if len(token) > MAX_CURSOR_CHARS:
        raise BadCursor(INVALID_CURSOR)
    try:
        padded = token + "=" * (-len(token) % 4)
        parts = json.loads(base64.urlsafe_b64decode(padded.encode("ascii")).decode())
    except (ValueError, TypeError, binascii.Error, RecursionError) as exc:
        raise BadCursor(INVALID_CURSOR) from exc
    if not isinstance(parts, list) or len(parts) != 3 or parts[0] not in ("n", "p"):
        raise BadCursor(INVALID_CURSOR)
    direction, ts, pk = parts
    if not isinstance(ts, str) or not isinstance(pk, str):
        raise BadCursor(INVALID_CURSOR)
    return direction, ts, pk


def page_size(raw: str | None) -> int:
    """The requested page size, clamped to 1..MAX_PAGE_SIZE (default when absent or bad)."""
    try:
        value = int(raw) if raw else DEFAULT_PAGE_SIZE
    except ValueError:
        return DEFAULT_PAGE_SIZE
    return max(1, min(MAX_PAGE_SIZE, value))


def _field(qs: QuerySet[M], name: str) -> Field[Any, Any]:
    """The model field a cursor value is compared with."""
    field = qs.model._meta.get_field(name)
    assert isinstance(field, Field), name
    return field


def keyset_page(
    qs: QuerySet[M], *, ts_field: str, pk_field: str, cursor: str | None, size: int
) -> KeysetPage[M]:
    """Fetch one page (one query) ordered by ``ts_field`` then ``pk_field``, both descending.

    A cursor whose values no row could hold (BadCursor) is refused before any query.
    """
    ts: datetime | None = None
    pk: Any = None
    direction = "n"
    if cursor:
        direction, raw_ts, raw_pk = decode_cursor(cursor)
        ts = clean_cursor_value(_field(qs, ts_field), raw_ts)
        pk = clean_cursor_value(_field(qs, pk_field), raw_pk)
    if direction == "n":
        if ts is not None:
            # The plain bound lets the planner start the index scan at the cursor.
            qs = qs.filter(**{f"{ts_field}__lte": ts}).filter(
                Q(**{f"{ts_field}__lt": ts}) | Q(**{f"{pk_field}__lt": pk})
            )
        rows = list(qs.order_by(f"-{ts_field}", f"-{pk_field}")[: size + 1])
        has_more, has_before = len(rows) > size, ts is not None
        rows = rows[:size]
    else:
        qs = qs.filter(**{f"{ts_field}__gte": ts}).filter(
            Q(**{f"{ts_field}__gt": ts}) | Q(**{f"{pk_field}__gt": pk})
        )
        rows = list(qs.order_by(ts_field, pk_field)[: size + 1])
        has_before, has_more = len(rows) > size, True
        rows = rows[:size][::-1]
    if not rows:
        return KeysetPage(rows=[], next_cursor=None, previous_cursor=None)

    def position(row: M) -> tuple[datetime, Any]:
        return getattr(row, ts_field), getattr(row, pk_field)

    return KeysetPage(
        rows=rows,
        next_cursor=encode_cursor("n", *position(rows[-1])) if has_more else None,
        previous_cursor=encode_cursor("p", *position(rows[0])) if has_before else None,
    )


def request_page(
    request: HttpRequest, qs: QuerySet[M], *, ts_field: str, pk_field: str
) -> KeysetPage[M]:
    """One page of ``qs`` at the request's ``cursor`` and ``size`` (BadCursor when tampered)."""
    return keyset_page(
        qs,
        ts_field=ts_field,
        pk_field=pk_field,
        cursor=request.GET.get("cursor") or None,
        size=page_size(request.GET.get("size")),
    )


@dataclass
class ListPage(Generic[M]):
    """What a filtered list page shows: a page of rows, or none and a 400 with the reason."""

    rows: list[M]
    next_cursor: str | None = None
    previous_cursor: str | None = None
    cursor_error: str | None = None
    status: int = 200

    def context(self) -> dict[str, Any]:
        """The template variables every list page's table and pager read."""
        return {
            "rows": self.rows,
            "next_cursor": self.next_cursor,
            "previous_cursor": self.previous_cursor,
            "cursor_error": self.cursor_error,
        }


def filtered_list_page(
    request: HttpRequest, filterset: FilterSet, *, ts_field: str, pk_field: str
) -> ListPage[Any]:
    """The page of a list filtered from the URL: a 400 without rows for invalid filters, or for
    a tampered cursor (the template shows the form and a link to the first page)."""
    if not filterset.is_valid():
        return ListPage(rows=[], status=400)
    try:
        page = request_page(request, filterset.qs, ts_field=ts_field, pk_field=pk_field)
    except BadCursor as exc:
        return ListPage(rows=[], cursor_error=str(exc), status=400)
    return ListPage(page.rows, page.next_cursor, page.previous_cursor)
