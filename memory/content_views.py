"""Pages for scored loose content: text a score was taken over that is no conversation turn.

Loose content is stored once for every operation; a viewer sees the content scored by a
score of their operations, with those scores only (ScorableContent.objects.visible_to).
"""

from __future__ import annotations

import uuid
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_GET

from memory.models import ScorableContent, Score
from memory.presenters import ScoreView, TreesOnce
from redteam.common.access import scope_for
from redteam.common.pagination import BadCursor, request_page
from redteam.common.roles import viewer_required
from redteam.core.textview import display_text

MAX_SCORES_SHOWN = 200
PREVIEW_CHARS = 300


@require_GET
@viewer_required
def scored_content_list(request: HttpRequest) -> HttpResponse:
    """Scored loose content of the viewer's operations, newest first, keyset-paginated."""
    # Queries: session, user, memberships, one page.
    visible = ScorableContent.objects.visible_to(scope_for(request))
    try:
        page = request_page(request, visible, ts_field="first_seen_at", pk_field="id")
    except BadCursor as exc:
        # A link to the first page, as a 400.
        error = {"rows": [], "cursor_error": str(exc)}
        return render(request, "memory/scored_content_list.html", error, status=400)
    rows = [{"c": c, "preview": display_text(c.value, limit=PREVIEW_CHARS)} for c in page.rows]
    context: dict[str, Any] = {
        "rows": rows,
        "next_cursor": page.next_cursor,
        "previous_cursor": page.previous_cursor,
    }
    return render(request, "memory/scored_content_list.html", context)


@require_GET
@viewer_required
def scored_content_detail(request: HttpRequest, content_id: uuid.UUID) -> HttpResponse:
    """One piece of scored loose content with every visible score taken over it (404 when no
    score of the viewer's operations scored it)."""
    # Queries: session, user, memberships; the content; its scores (+scorers, their dumps).
    scope = scope_for(request)
    content = ScorableContent.objects.visible_to(scope).filter(pk=content_id).first()
    if content is None:
        raise Http404("No such scored content.")
    scores = list(
        Score.objects.visible_to(scope)
        .filter(loose_content=content)
        .select_related("scorer_identifier", "scorer_dump", "reviewer")
        .order_by("-timestamp", "-id")[:MAX_SCORES_SHOWN]
    )
    tree_once = TreesOnce()
    views = [ScoreView(s, tree_once(s.scorer_dump)) for s in scores]
    context = {
        "content": content,
        "text": display_text(content.value),
        "scores": views,
        "limit": MAX_SCORES_SHOWN,
    }
    return render(request, "memory/scored_content_detail.html", context)
