"""What the home page shows: the viewer's queues with their counts, claimed and skipped items,
and the runs that arrived lately.

Every read starts from `visible_to(scope)`, so another operation's queues, items and numbers
never reach the page. The work is bounded whatever is stored: at most MAX_QUEUES_COUNTED
queues are counted (scoring.queues.awaiting_counts: one query for all of them), and the other
sections are one query each with a row limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.db.models import Count, Max
from django.urls import reverse
from django.utils import timezone

from memory.models import Conversation
from redteam.common.access import Scope
from scoring.models import ReviewClaim, ReviewQueue, ReviewSkip
from scoring.queues import awaiting_counts, visible_queues

if TYPE_CHECKING:
    from django.contrib.auth.models import User as AccountUser

MAX_QUEUES_COUNTED = 20
MAX_CLAIMS_SHOWN = 20
MAX_SKIPS_SHOWN = 20
MAX_OPERATIONS_SHOWN = 20
RECENT_HOURS = 24


@dataclass
class QueueCount:
    """One queue on the home page and how many of its items await review (None: its saved
    filter no longer validates)."""

    queue: ReviewQueue
    count: int | None

    @property
    def url(self) -> str:
        """Where the queue is worked."""
        return reverse("scoring:queue_detail", kwargs={"slug": self.queue.slug})

    @property
    def invalid(self) -> bool:
        """True when the queue's saved filter no longer validates."""
        return self.count is None


def queue_counts(scope: Scope, user: AccountUser) -> tuple[list[QueueCount], int]:
    """The first MAX_QUEUES_COUNTED live queues the viewer sees (built-ins first) with their
    counts, and how many more there are (two queries; three with more queues than shown)."""
    queues = list(visible_queues(scope)[: MAX_QUEUES_COUNTED + 1])
    more = 0
    if len(queues) > MAX_QUEUES_COUNTED:
        more = visible_queues(scope).count() - MAX_QUEUES_COUNTED
        queues = queues[:MAX_QUEUES_COUNTED]
    counts = awaiting_counts(queues, scope, user)
    return [QueueCount(q, counts.get(q.pk)) for q in queues], more


# What a held or skipped item shows: its result, conversation and queue.
ITEM_FIELDS = (
    "attack_result__attack_result_id",
    "attack_result__conversation_id",
    "attack_result__objective",
    "attack_result__outcome",
    "queue__slug",
    "queue__name",
)


def my_claims(user_id: int, scope: Scope, now: datetime) -> list[ReviewClaim]:
    """The viewer's unexpired claims on results they still see, soonest to expire first."""
    return list(
        ReviewClaim.objects.filter(user_id=user_id, expires_at__gt=now)
        .filter(scope.q("attack_result__operation"))
        .select_related("attack_result", "queue")
        .only("expires_at", "claimed_at", *ITEM_FIELDS)
        .order_by("expires_at", "pk")[:MAX_CLAIMS_SHOWN]
    )


def my_skips(user_id: int, scope: Scope) -> list[ReviewSkip]:
    """The viewer's latest skips of results they still see, in queues they still see."""
    visible_queues_q = ReviewQueue.objects.visible_to(scope).values("pk")
    return list(
        ReviewSkip.objects.filter(user_id=user_id, queue__in=visible_queues_q)
        .filter(scope.q("attack_result__operation"))
        .select_related("attack_result", "queue")
        .only("reason", "skipped_at", *ITEM_FIELDS)
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


def home_context(user: AccountUser, scope: Scope) -> dict[str, Any]:
    """Everything the home page shows for a viewer with a role."""
    now = timezone.now()
    counts, more = queue_counts(scope, user)
    return {
        "queue_counts": counts,
        "more_queues": more,
        "claims": my_claims(user.pk, scope, now),
        "skips": my_skips(user.pk, scope),
        "recent_runs": recent_runs(scope, now),
        "recent_hours": RECENT_HOURS,
        "may_review": scope.records_any_verdicts(),
    }
