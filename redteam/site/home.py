"""What the home page shows: the viewer's queues with their counts, claimed and skipped items,
and the runs that arrived lately.

Every read starts from `visible_to(scope)`, so another operation's queues, items and numbers
never reach the page. The work is bounded whatever is stored: at most MAX_QUEUES_COUNTED
queues are counted (one query each), each count stops at COUNT_CAP, and the other sections
are one query each with a row limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db.models import Count, Max, QuerySet
from django.http import QueryDict
from django.urls import NoReverseMatch, reverse
from django.utils import timezone

from memory.filters import AttackResultFilterSet
from memory.models import AttackResult, Conversation
from redteam.common.access import Scope
from scoring.models import ReviewClaim, ReviewQueue, ReviewSkip
from scoring.review import REVIEW_VIEWS, for_review

MAX_QUEUES_COUNTED = 20
# A queue's count stops here ("1000+"): counting every unreviewed result of a large
# operation on each visit to the home page would cost more than the number is worth.
COUNT_CAP = 1000
MAX_CLAIMS_SHOWN = 20
MAX_SKIPS_SHOWN = 20
MAX_OPERATIONS_SHOWN = 20
RECENT_HOURS = 24


def queue_filter_data(queue: ReviewQueue) -> QueryDict:
    """A queue's saved filter as the query parameters the results list reads."""
    data = QueryDict(mutable=True)
    filters = queue.filters if isinstance(queue.filters, dict) else {}
    for name, values in filters.items():
        listed = values if isinstance(values, list) else [values]
        data.setlist(str(name), [str(v) for v in listed])
    return data


def queue_items(queue: ReviewQueue, scope: Scope) -> QuerySet[AttackResult] | None:
    """The visible results a queue holds (its filter, then its review restriction); None when
    the saved filter no longer validates (the page says so instead of a wider count)."""
    # The FilterSet narrows what it is given to the scope's operations (visible_to).
    filterset = AttackResultFilterSet(
        queue_filter_data(queue), queryset=AttackResult.objects.all(), scope=scope
    )
    if not filterset.is_valid():
        return None
    qs: QuerySet[AttackResult] = filterset.qs
    if queue.review in REVIEW_VIEWS:
        qs = for_review(qs, queue.review)
    return qs


def queue_url(queue: ReviewQueue) -> str:
    """Where a queue is worked: its own page; where that page is not installed, the
    built-in review view of the same name, else the results list with the queue's filter."""
    try:
        return reverse("scoring:queue_detail", kwargs={"slug": queue.slug})
    except NoReverseMatch:
        pass
    if queue.builtin and queue.slug in REVIEW_VIEWS:
        return f"{reverse('scoring:review_queue')}?view={queue.slug}"
    query = queue_filter_data(queue).urlencode()
    return reverse("scoring:attack_result_list") + (f"?{query}" if query else "")


@dataclass
class QueueCount:
    """One queue on the home page and how many of its items await review."""

    queue: ReviewQueue
    count: int | None
    capped: bool = False

    @property
    def url(self) -> str:
        """Where the queue is worked."""
        return queue_url(self.queue)

    @property
    def invalid(self) -> bool:
        """True when the queue's saved filter no longer validates."""
        return self.count is None


def count_items(queue: ReviewQueue, scope: Scope) -> QueueCount:
    """A queue's item count, stopping at COUNT_CAP (one query)."""
    items = queue_items(queue, scope)
    if items is None:
        return QueueCount(queue, None)
    n = items.order_by().values("pk")[: COUNT_CAP + 1].count()
    return QueueCount(queue, min(n, COUNT_CAP), capped=n > COUNT_CAP)


def visible_queues(scope: Scope) -> tuple[list[ReviewQueue], int]:
    """The first MAX_QUEUES_COUNTED live queues the viewer sees (built-ins first), and how
    many more there are (one query)."""
    rows = list(
        ReviewQueue.objects.visible_to(scope)
        .filter(archived=False)
        .order_by("-builtin", "name", "pk")
        .only("pk", "name", "slug", "operation_id", "filters", "review", "builtin")[
            : MAX_QUEUES_COUNTED + 1
        ]
    )
    more = 0
    if len(rows) > MAX_QUEUES_COUNTED:
        more = (
            ReviewQueue.objects.visible_to(scope).filter(archived=False).count()
            - MAX_QUEUES_COUNTED
        )
    return rows[:MAX_QUEUES_COUNTED], more


def queue_counts(scope: Scope) -> tuple[list[QueueCount], int]:
    """Each shown queue with its count, and the number of queues not shown."""
    queues, more = visible_queues(scope)
    return [count_items(q, scope) for q in queues], more


def my_claims(user_id: int, scope: Scope, now: datetime) -> list[ReviewClaim]:
    """The viewer's unexpired claims on results they still see, soonest to expire first."""
    return list(
        ReviewClaim.objects.filter(user_id=user_id, expires_at__gt=now)
        .filter(scope.q("attack_result__operation"))
        .select_related("attack_result", "queue")
        .only(
            "expires_at",
            "claimed_at",
            "attack_result__attack_result_id",
            "attack_result__conversation_id",
            "attack_result__objective",
            "attack_result__outcome",
            "queue__slug",
            "queue__name",
        )
        .order_by("expires_at", "pk")[:MAX_CLAIMS_SHOWN]
    )


def my_skips(user_id: int, scope: Scope) -> list[ReviewSkip]:
    """The viewer's latest skips of results they still see, in queues they still see."""
    visible_queues_q = ReviewQueue.objects.visible_to(scope).values("pk")
    return list(
        ReviewSkip.objects.filter(user_id=user_id, queue__in=visible_queues_q)
        .filter(scope.q("attack_result__operation"))
        .select_related("attack_result", "queue")
        .only(
            "reason",
            "skipped_at",
            "attack_result__attack_result_id",
            "attack_result__conversation_id",
            "attack_result__objective",
            "attack_result__outcome",
            "queue__slug",
            "queue__name",
        )
        .order_by("-skipped_at", "-pk")[:MAX_SKIPS_SHOWN]
    )


def recent_runs(scope: Scope, now: datetime) -> list[dict[str, Any]]:
    """Conversations with data that arrived in the last RECENT_HOURS, per visible operation,
    latest first (one grouped query)."""
    since = now - timedelta(hours=RECENT_HOURS)
    rows = (
        Conversation.objects.visible_to(scope)
        .filter(updated_at__gte=since, last_timestamp__isnull=False)
        .values("operation_id", "operation__name")
        .annotate(conversations=Count("pk"), latest=Max("updated_at"))
        .order_by("-latest", "operation_id")[:MAX_OPERATIONS_SHOWN]
    )
    return [dict(row) for row in rows]


def home_context(user_id: int, scope: Scope) -> dict[str, Any]:
    """Everything the home page shows for a viewer with a role."""
    now = timezone.now()
    counts, more = queue_counts(scope)
    return {
        "queue_counts": counts,
        "more_queues": more,
        "count_cap": COUNT_CAP,
        "claims": my_claims(user_id, scope, now),
        "skips": my_skips(user_id, scope),
        "recent_runs": recent_runs(scope, now),
        "recent_hours": RECENT_HOURS,
        "may_review": scope.records_any_verdicts(),
    }
