"""Live pages: a page tells its reader that new rows arrived since it was rendered.

A page that can go stale while a campaign runs (the conversation list, a queue, the
dashboard, a running conversation) renders a *marker*: the position of the newest row it
shows in its own order (a timestamp and a primary key, as the list cursors carry them). The
page's script (static/js/live.js) asks a small JSON endpoint, every REDTEAM_LIVE_POLL_SECONDS,
how many rows of the same filter now lie beyond that marker; it never reloads by itself, it
offers a refresh.

Each poll is one keyset lookup on the list's own index, bounded to LIVE_LIMIT + 1 rows
("20+"): its cost does not grow with the table, only with what arrived (and never past the
bound). The rows counted are the caller's visible ones (the endpoints start from
`visible_to(scope)`), so an answer says nothing of other operations.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import Field, Model, Q, QuerySet
from django.http import QueryDict

from redteam.common.cursors import BadCursor, clean_cursor_value
from redteam.common.pagination import decode_cursor, encode_cursor

# Beyond this many new rows a page says "20+": the poll never reads more.
LIVE_LIMIT = 20
# Query parameters of a list page that do not select rows (its position, its page size).
POSITION_PARAMS = ("cursor", "size", "page", "since")


@dataclass(frozen=True)
class Marker:
    """The newest row a page showed, in its order: (timestamp, primary key). A marker
    without a key stands for "everything after this moment" (the dashboard's snapshot)."""

    ts: datetime
    pk: Any = None

    def token(self) -> str:
        """The opaque URL token for this position (a list cursor's encoding)."""
        return encode_cursor("n", self.ts, "" if self.pk is None else self.pk)


def read_marker(raw: str | None, model: type[Model], ts_field: str, pk_field: str) -> Marker | None:
    """The marker a page sent (None when it showed no row); BadCursor for anything this
    server did not issue."""
    if not raw:
        return None
    _direction, raw_ts, raw_pk = decode_cursor(raw)
    ts = clean_cursor_value(_field(model, ts_field), raw_ts)
    pk = None if raw_pk == "" else clean_cursor_value(_field(model, pk_field), raw_pk)
    return Marker(ts, pk)


def _field(model: type[Model], name: str) -> Field[Any, Any]:
    field = model._meta.get_field(name)
    assert isinstance(field, Field), name
    return field


def newer_than(qs: QuerySet[Any], marker: Marker | None, ts_field: str, pk_field: str) -> Any:
    """The rows of `qs` beyond `marker` in (ts, pk) descending order, newest first, at most
    LIVE_LIMIT + 1 of them (their primary keys)."""
    if marker is not None:
        # The plain bound lets the planner start the index scan at the marker; each arm of the
        # OR is bounded by the timestamp too, so a bitmap plan never reads rows by key alone.
        qs = qs.filter(**{f"{ts_field}__gte": marker.ts})
        if marker.pk is None:
            qs = qs.filter(**{f"{ts_field}__gt": marker.ts})
        else:
            qs = qs.filter(
                Q(**{f"{ts_field}__gt": marker.ts})
                | Q(**{ts_field: marker.ts, f"{pk_field}__gt": marker.pk})
            )
    return qs.order_by(f"-{ts_field}", f"-{pk_field}").values_list(pk_field, flat=True)[
        : LIVE_LIMIT + 1
    ]


def count_answer(rows: Any, singular: str, plural: str) -> dict[str, Any]:
    """The JSON answer for a count of new rows (one query: the bounded keyset lookup).

    `message` is what the page shows ("" when nothing is new); `final` tells the page to
    stop asking (past the bound there is nothing more to learn before a refresh).
    """
    found = len(list(rows))
    more = found > LIVE_LIMIT
    new = min(found, LIVE_LIMIT)
    shown = f"{LIVE_LIMIT}+" if more else str(new)
    noun = singular if new == 1 and not more else plural
    message = f"{shown} new {noun} since you opened this page" if new else ""
    return {"new": new, "more": more, "final": more, "message": message}


def live_query(params: QueryDict, marker: Marker | None) -> str:
    """A page's filters (its position left out) with its marker: the endpoint's query."""
    query = params.copy()
    for name in POSITION_PARAMS:
        query.pop(name, None)
    if marker is not None:
        query["since"] = marker.token()
    return query.urlencode()


def poll_seconds() -> int:
    """How often a live page asks (settings.REDTEAM_LIVE_POLL_SECONDS)."""
    return max(1, int(getattr(settings, "REDTEAM_LIVE_POLL_SECONDS", 12)))


@dataclass(frozen=True)
class LivePage:
    """What a page template needs to poll: the endpoint URL (with the page's marker) and
    the interval (templates/_live.html)."""

    url: str
    every: int


def live_page(path: str, query: str = "") -> LivePage:
    """The polling setup for a page whose endpoint is `path` (+ `query`)."""
    return LivePage(url=f"{path}?{query}" if query else path, every=poll_seconds())


__all__ = [
    "LIVE_LIMIT",
    "BadCursor",
    "LivePage",
    "Marker",
    "count_answer",
    "live_page",
    "live_query",
    "newer_than",
    "poll_seconds",
    "read_marker",
]
