"""Review queue pages: the viewer's queues, one queue's items, and walking it (next,
previous, skip). The walking itself (order, claims, skips, counts) is scoring.queues'; the
conversation page in queue mode and record-and-next are in scoring.views.

Every read starts from `visible_to(scope_for(request))`: a queue of an operation the viewer
is not a member of, or an archived one, is a 404; a queue's items are the viewer's
operations' only. Each page costs a constant number of queries whatever the queue's size
(tests/scoring/test_queues.py checks them at 3 and 30 items).
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, cast
from urllib.parse import urlencode

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from memory.models import AttackResult
from redteam.common.access import scope_for
from redteam.common.markdown import render_markdown
from redteam.common.replicas import primary_reads
from redteam.common.roles import viewer_required
from scoring.adjudication import may_adjudicate_somewhere
from scoring.human_label_views import download_links
from scoring.live import queue_live
from scoring.models import ReviewQueue
from scoring.queues import (
    QueueWalk,
    awaiting_counts,
    bounded,
    ensure_builtin_queues,
    filter_data,
    filter_query,
    queue_for,
    visible_queues,
)
from scoring.review import REVIEW_VIEWS, latest_human_verdicts, result_summary

if TYPE_CHECKING:
    from django.contrib.auth.models import User as AccountUser

# The queues page lists at most this many queues; a queue's page shows its items 50 at a time.
MAX_QUEUES_LISTED = 100
QUEUE_PAGE_SIZE = 50
MAX_QUEUE_PAGES = 1000
MAX_SKIP_REASON_CHARS = 500


def walk_for(request: HttpRequest, queue: ReviewQueue) -> QueueWalk:
    """The signed-in viewer walking `queue`."""
    return QueueWalk(queue, scope_for(request), cast("AccountUser", request.user))


def wrap_around(walk: QueueWalk, passed: AttackResult) -> AttackResult | None:
    """Past the end of a queue of unreviewed results, back to the first one still waiting
    (items come back when a claim is released or expires); other queues end there."""
    if walk.queue.review != "unreviewed":
        return None
    return walk.hand_out(None, exclude=passed.pk)


def step_to(request: HttpRequest, walk: QueueWalk, item: AttackResult | None) -> HttpResponse:
    """To the item's conversation in queue mode, or back to the queue when none is left."""
    if item is None:
        messages.info(request, "No further item in this queue is free right now.")
        return redirect("scoring:queue_detail", slug=walk.queue.slug)
    page = reverse("scoring:conversation_detail", args=[item.conversation_id])
    return redirect(f"{page}?{urlencode({'queue': walk.queue.slug})}")


@require_GET
@viewer_required
def review_queue(request: HttpRequest) -> HttpResponse:
    """The viewer's queues (built-in and named) with the number of items each holds.

    The former `?view=<unreviewed|disagree|reviewed>` links land on the built-in queue (or,
    with more filters, on the results list with the same filters and review state).
    """
    # Queries: session, user, memberships; the queues; every queue's count (one query).
    view = request.GET.get("view")
    if view is not None:
        if view not in REVIEW_VIEWS:
            return HttpResponseBadRequest("Unknown queue.")
        rest = request.GET.copy()
        for name in ("view", "cursor"):
            rest.pop(name, None)
        if any(v for values in rest.lists() for v in values[1]):
            rest.setlist("review", [view])
            return redirect(f"{reverse('scoring:attack_result_list')}?{rest.urlencode()}")
        return redirect("scoring:queue_detail", slug=view)
    scope = scope_for(request)
    queues = list(visible_queues(scope)[:MAX_QUEUES_LISTED])
    if not any(q.builtin for q in queues):
        ensure_builtin_queues()
        queues = list(visible_queues(scope)[:MAX_QUEUES_LISTED])
    counts = awaiting_counts(queues, scope, cast("AccountUser", request.user))
    context = {
        "queues": [
            {
                "queue": q,
                "awaiting": counts.get(q.pk),
                "awaiting_shown": bounded(counts.get(q.pk, 0)),
            }
            for q in queues
        ],
        "can_verdict": scope.records_any_verdicts(),
        "can_adjudicate": may_adjudicate_somewhere(scope),
    }
    return render(request, "scoring/review_queue.html", context)


@require_GET
@viewer_required
def queue_detail(request: HttpRequest, slug: str) -> HttpResponse:
    """One queue: its instructions, the viewer's progress, its items in queue order."""
    # Queries: session, user, memberships; the queue; its counts; the viewer's verdicts
    # today; one page of items (its never-skipped items, then, past their end, the skipped
    # ones: scoring.queues.QueueWalk.page); their latest human verdicts (+reviewer).
    scope = scope_for(request)
    walk = walk_for(request, queue_for(scope, slug))
    try:
        number = max(1, min(int(request.GET.get("page") or 1), MAX_QUEUE_PAGES))
    except ValueError:
        return HttpResponseBadRequest("Unknown page.")
    start = (number - 1) * QUEUE_PAGE_SIZE
    items = walk.page(start, QUEUE_PAGE_SIZE + 1)
    more = len(items) > QUEUE_PAGE_SIZE
    items = items[:QUEUE_PAGE_SIZE]
    humans = latest_human_verdicts((r.pk for r in items), scope)
    # New items since this page (static/js/live.js) start after the queue's first item never
    # skipped (none when its first item was skipped): on a later page one more query finds it.
    first = (items[0] if items else None) if number == 1 else walk.fresh().first()
    context = {
        "live": queue_live(walk, first),
        "queue": walk.queue,
        "view": walk.queue.slug,
        "walk_errors": walk.errors if not walk.valid else {},
        "progress": walk.progress(None),
        "rows": [result_summary(r, humans.get(r.pk)) for r in items],
        "page_number": number,
        "next_page": number + 1 if more and number < MAX_QUEUE_PAGES else None,
        "previous_page": number - 1 if number > 1 else None,
        "filter_chips": [
            (name, value) for name, values in filter_data(walk.queue).lists() for value in values
        ],
        "results_query": filter_query(walk.queue),
        # Every verdict-backed result of the queue's filter (not only its review view).
        "label_downloads": download_links(filter_data(walk.queue)) if walk.valid else [],
        "instructions": render_markdown(walk.queue.instructions) if walk.queue.instructions else "",
        "can_verdict": scope.records_any_verdicts(),
    }
    return render(request, "scoring/queue_detail.html", context)


@require_GET
@viewer_required
@primary_reads
def queue_step(request: HttpRequest, slug: str, direction: str) -> HttpResponse:
    """Hand the viewer the queue's next (or previous) item after `?from=<result id>`, or its
    first one: claimed on the way, never one another reviewer holds."""
    # Queries: session, user, memberships; the queue; the `from` result and its skip; per
    # candidate (a few at most): the candidate, its claim.
    scope = scope_for(request)
    walk = walk_for(request, queue_for(scope, slug))
    raw = request.GET.get("from")
    if not raw:
        return step_to(request, walk, walk.hand_out(None))
    try:
        from_id = uuid.UUID(raw)
    except ValueError:
        return HttpResponseBadRequest("Unknown item.")
    current = (
        AttackResult.objects.visible_to(scope)
        .filter(pk=from_id)
        .only("attack_result_id", "ingested_at", "conversation_id")
        .first()
    )
    if current is None:
        raise Http404("No such attack result.")
    forward = direction == "next"
    return step_to(request, walk, walk.hand_out(walk.key_of(current), forward=forward))


@require_POST
@viewer_required
def queue_skip(request: HttpRequest, slug: str, attack_result_id: uuid.UUID) -> HttpResponse:
    """Pass over an item (optional `reason`): it moves to the end of the queue, the viewer's
    claim ends, and the viewer goes on to the next free item."""
    scope = scope_for(request)
    walk = walk_for(request, queue_for(scope, slug))
    result = (
        AttackResult.objects.visible_to(scope)
        .filter(pk=attack_result_id)
        .only("attack_result_id", "ingested_at", "conversation_id", "operation_id")
        .first()
    )
    if result is None:
        raise Http404("No such attack result.")
    if not scope.may_record_verdicts(result.operation_id):
        raise PermissionDenied("Skipping needs the reviewer role in this operation.")
    key = walk.key_of(result)
    walk.skip(result, (request.POST.get("reason") or "")[:MAX_SKIP_REASON_CHARS])
    messages.info(request, "Skipped: it is now at the end of the queue.")
    return step_to(request, walk, walk.hand_out(key) or wrap_around(walk, result))
