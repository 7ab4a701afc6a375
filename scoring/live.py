"""Live endpoints of the scoring pages (redteam.common.live): a running conversation, a
review queue and the dashboard ask whether anything arrived since they were rendered.

- A conversation page sends the piece count and the state of its attack results it showed;
  the answer says how many pieces arrived and whether a result arrived or changed (an
  attack finishing). Two queries after the session's: the conversation's summary row and its
  visible results (at most MAX_RESULTS_TRACKED + 1).
- A queue page sends its newest unskipped item; the answer counts the queue's items (its own
  saved filter and review restriction, scoring.queues) newer than it, bounded.
- The dashboard sends the newest result it counted (or its snapshot's watermark); the answer
  counts the visible results ingested after it, bounded.

Every lookup starts from `visible_to(scope_for(request))`: another operation's conversation
or queue is a 404, and no count includes another operation's rows.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import urlencode

from django.http import Http404, HttpRequest, JsonResponse
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.http import require_GET

from memory.models import AttackResult, Conversation
from redteam.common.access import Scope, scope_for
from redteam.common.live import (
    BadCursor,
    LivePage,
    Marker,
    count_answer,
    live_page,
    newer_than,
    read_marker,
)
from redteam.common.roles import viewer_required
from scoring.queues import SKIP_ANNOTATION, QueueWalk, queue_for

if TYPE_CHECKING:
    from django.contrib.auth.models import User as AccountUser

# A conversation page polls while its conversation changed on the server this recently (a
# running attack); an older one is left as it was rendered.
RUNNING_WINDOW = timedelta(hours=1)
# The results of one conversation whose state a page tracks (a hostile run may attach
# thousands; both sides read the same first ones by id).
MAX_RESULTS_TRACKED = 100
RESULT_STATE_FIELDS = (
    "attack_result_id",
    "outcome",
    "executed_turns",
    "last_score_id",
    "timestamp",
)
RESULTS_TS, RESULTS_PK = "ingested_at", "attack_result_id"
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


# ---------------------------------------------------------------------------------------------
# A running conversation
# ---------------------------------------------------------------------------------------------


def results_state(rows: Iterable[Sequence[Any]]) -> str:
    """A short digest of the results' (id, outcome, turns, last score): it changes when a
    result arrives or PyRIT's newer version of one replaces it."""
    ordered = sorted(rows, key=lambda row: str(row[0]))[: MAX_RESULTS_TRACKED + 1]
    text = "\n".join("|".join("" if v is None else str(v) for v in row[:4]) for row in ordered)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def conversation_live(
    request: HttpRequest, conversation: Conversation, results: Sequence[AttackResult]
) -> LivePage | None:
    """Polling for a conversation page (GET only) whose conversation is still changing."""
    updated = conversation.updated_at
    if request.method != "GET" or updated is None or updated < timezone.now() - RUNNING_WINDOW:
        return None
    rows = [tuple(getattr(r, name) for name in RESULT_STATE_FIELDS) for r in results]
    query = urlencode(
        {
            "pieces": conversation.piece_count,
            "results": min(len(rows), MAX_RESULTS_TRACKED + 1),
            "state": results_state(rows),
        }
    )
    return live_page(reverse("scoring:live_conversation", args=[conversation.pk]), query)


def _count_param(request: HttpRequest, name: str) -> int | None:
    """A count the page sent (0 when absent; None when it is not a count)."""
    raw = request.GET.get(name, "0")
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 12:
        return None
    return int(raw)


def _latest(rows: Sequence[Sequence[Any]]) -> Sequence[Any]:
    """The newest result by PyRIT's timestamp (results without one first), then by id."""
    return max(rows, key=lambda row: (row[4] is not None, row[4] or EPOCH, str(row[0])))


def _plural(n: int, noun: str) -> str:
    return f"{n} new {noun}{'' if n == 1 else 's'}"


@require_GET
@viewer_required
def live_conversation(request: HttpRequest, conversation_id: str) -> JsonResponse:
    """`?pieces=<count>&results=<count>&state=<digest>` as the page was rendered: what
    arrived since (404 unless the conversation is visible)."""
    # Queries: session, user, memberships; the conversation's summary; its visible results.
    scope = scope_for(request)
    # Without a baseline, everything counts as new.
    pieces_then = _count_param(request, "pieces")
    results_then = _count_param(request, "results")
    state_then = request.GET.get("state", "")
    conversation = (
        Conversation.objects.visible_to(scope)
        .filter(pk=conversation_id)
        .values("piece_count")
        .first()
    )
    if conversation is None:
        raise Http404("No such conversation.")
    if pieces_then is None or results_then is None:
        return JsonResponse({"error": "pieces and results are counts"}, status=400)
    rows = list(
        AttackResult.objects.visible_to(scope)
        .filter(conversation_id=conversation_id)
        .order_by("attack_result_id")
        .values_list(*RESULT_STATE_FIELDS)[: MAX_RESULTS_TRACKED + 1]
    )
    new_pieces = max(0, int(conversation["piece_count"]) - pieces_then)
    new_results = max(0, len(rows) - results_then)
    changed = results_state(rows) != state_then
    parts = []
    if new_pieces:
        parts.append(_plural(new_pieces, "piece"))
    if new_results:
        parts.append(_plural(new_results, "attack result"))
    elif changed:
        parts.append("an attack result changed")
    message = ""
    if parts:
        message = " and ".join(parts) + " since you opened this page"
    if changed and rows:
        message += f" (latest outcome: {_latest(rows)[1]})"
    return JsonResponse(
        {
            "pieces": new_pieces,
            "results": new_results,
            "results_changed": changed,
            "final": False,
            "message": message,
        }
    )


# ---------------------------------------------------------------------------------------------
# A review queue
# ---------------------------------------------------------------------------------------------


def queue_marker(first: AttackResult | None) -> Marker | None:
    """The newest unskipped item of the queue (`first`: its first item in queue order; None
    when the queue is empty or every item in it is skipped)."""
    if first is None or getattr(first, SKIP_ANNOTATION, None) is not None:
        return None
    return Marker(first.ingested_at, first.pk)


def queue_live(walk: QueueWalk, first: AttackResult | None) -> LivePage:
    """Polling for a queue page."""
    marker = queue_marker(first)
    query = urlencode({"since": marker.token()}) if marker is not None else ""
    return live_page(reverse("scoring:live_queue", args=[walk.queue.slug]), query)


@require_GET
@viewer_required
def live_queue(request: HttpRequest, slug: str) -> JsonResponse:
    """`?since=<marker>`: how many unskipped items of the queue are newer than the marker
    (404 for a queue the viewer cannot walk)."""
    # Queries: session, user, memberships; the queue; the bounded keyset lookup.
    scope = scope_for(request)
    walk = QueueWalk(queue_for(scope, slug), scope, cast("AccountUser", request.user))
    try:
        marker = read_marker(request.GET.get("since"), AttackResult, RESULTS_TS, RESULTS_PK)
    except BadCursor as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    waiting = walk.fresh()
    rows = newer_than(waiting, marker, RESULTS_TS, RESULTS_PK)
    return JsonResponse(count_answer(rows, "item", "items"))


# ---------------------------------------------------------------------------------------------
# The dashboard
# ---------------------------------------------------------------------------------------------


def dashboard_live(scope: Scope) -> LivePage:
    """Polling for the dashboard: results ingested after the newest visible one, which its
    counts (kept with every ingest) already hold. One query, the ingest-order index's head."""
    newest = (
        AttackResult.objects.visible_to(scope)
        .order_by(f"-{RESULTS_TS}", f"-{RESULTS_PK}")
        .values_list(RESULTS_TS, RESULTS_PK)
        .first()
    )
    # No result yet: every result that arrives is new.
    query = urlencode({"since": Marker(*newest).token()}) if newest is not None else ""
    return live_page(reverse("scoring:live_dashboard"), query)


@require_GET
@viewer_required
def live_dashboard(request: HttpRequest) -> JsonResponse:
    """`?since=<marker>`: how many visible attack results were ingested after the marker."""
    # Queries: session, user, memberships; the bounded keyset lookup.
    try:
        marker = read_marker(request.GET.get("since"), AttackResult, RESULTS_TS, RESULTS_PK)
    except BadCursor as exc:
        return JsonResponse({"error": str(exc)}, status=400)
    visible = AttackResult.objects.visible_to(scope_for(request))
    rows = newer_than(visible, marker, RESULTS_TS, RESULTS_PK)
    return JsonResponse(count_answer(rows, "attack result", "attack results"))
