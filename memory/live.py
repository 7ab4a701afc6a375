"""The conversation list's live endpoint: how many conversations of the page's filter now
come before the newest one the page showed (redteam.common.live).

The list is ordered by last activity, so a conversation counts when it is new or when new
messages moved it to the top: exactly the rows a refresh would add above the page's first
row. One bounded keyset lookup on conv_recent_idx (conv_op_recent_idx when scoped) per poll.
"""

from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.urls import reverse
from django.views.decorators.http import require_GET

from memory.filters import ConversationFilterSet
from memory.models import Conversation
from memory.querysets import conversations_for_list
from redteam.common.access import scope_for
from redteam.common.live import (
    BadCursor,
    LivePage,
    Marker,
    count_answer,
    live_page,
    live_query,
    newer_than,
    read_marker,
)
from redteam.common.roles import viewer_required

TS_FIELD, PK_FIELD = "last_timestamp", "conversation_id"


def list_marker(rows: list[Conversation]) -> Marker | None:
    """The newest conversation a first page shows (None for an empty list)."""
    if not rows or rows[0].last_timestamp is None:
        return None
    return Marker(rows[0].last_timestamp, rows[0].conversation_id)


def conversation_list_live(request: HttpRequest, rows: list[Conversation]) -> LivePage | None:
    """Polling for the conversation list page: only its first page (new rows arrive at the
    top; a later page is history) and only a page that listed without error."""
    if request.GET.get("cursor"):
        return None
    return live_page(
        reverse("memory:live_conversations"), live_query(request.GET, list_marker(rows))
    )


@require_GET
@viewer_required
def live_conversations(request: HttpRequest) -> JsonResponse:
    """`?<the list's filters>&since=<marker>`: how many visible conversations of the filter
    are newer than the marker (all of them, up to the bound, without one)."""
    # Queries: session, user, memberships; the bounded keyset lookup.
    filterset = ConversationFilterSet(
        request.GET, queryset=conversations_for_list(scope_for(request)), request=request
    )
    if not filterset.is_valid():
        return JsonResponse(
            {"error": "invalid filters", "fields": sorted(filterset.errors)}, status=400
        )
    try:
        marker = read_marker(request.GET.get("since"), Conversation, TS_FIELD, PK_FIELD)
    except BadCursor as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    rows = newer_than(filterset.qs, marker, TS_FIELD, PK_FIELD)
    return JsonResponse(count_answer(rows, "conversation", "conversations"))
