"""What the home page shows: the viewer's queues with their counts, claimed and skipped items,
and the runs that arrived lately.

Every read starts from `visible_to(scope)`, so another operation's queues, items and numbers
never reach the page. The work is bounded whatever is stored: at most MAX_QUEUES_COUNTED
queues are counted (scoring.queues.awaiting_counts: one query for all of them, each count
stopped at its bound), and the other sections are one query each with a row limit.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.urls import reverse
from django.utils import timezone

from memory.querysets import conversations_updated_since
from redteam.common.access import Scope
from scoring.models import ReviewClaim, ReviewQueue, ReviewSkip
from scoring.queues import awaiting_counts, bounded, visible_queues

if TYPE_CHECKING:
    from django.contrib.auth.models import User as AccountUser

MAX_QUEUES_COUNTED = 20
MAX_CLAIMS_SHOWN = 20
MAX_SKIPS_SHOWN = 20
MAX_OPERATIONS_SHOWN = 20
RECENT_HOURS = 24
# "Arrived lately" counts the latest this many conversations (a big push counts as "1,000+").
RECENT_WINDOW = 1000


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
    def shown(self) -> str:
        """The count as shown: it stops at scoring.queues.COUNT_BOUND ("1,000+")."""
        return bounded(self.count or 0)

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


def recent_runs(scope: Scope, now: datetime) -> tuple[list[dict[str, Any]], bool]:
    """Conversations with data that arrived in the last RECENT_HOURS, per visible operation,
    latest first, counted over the latest RECENT_WINDOW of them (one query: a walk of the
    updated_at index); True when more arrived than were counted."""
    since = now - timedelta(hours=RECENT_HOURS)
    latest = list(
        conversations_updated_since(scope, since).values_list(
            "operation_id", "operation__name", "updated_at"
        )[: RECENT_WINDOW + 1]
    )
    runs: dict[Any, dict[str, Any]] = {}
    for operation_id, name, updated_at in latest[:RECENT_WINDOW]:
        run = runs.setdefault(
            operation_id,
            {
                "operation_id": operation_id,
                "operation__name": name,
                "conversations": 0,
                "latest": updated_at,
            },
        )
        run["conversations"] += 1
    return list(runs.values())[:MAX_OPERATIONS_SHOWN], len(latest) > RECENT_WINDOW


def home_context(user: AccountUser, scope: Scope) -> dict[str, Any]:
    """Everything the home page shows for a viewer with a role."""
    now = timezone.now()
    counts, more = queue_counts(scope, user)
    runs, more_runs = recent_runs(scope, now)
    return {
        "queue_counts": counts,
        "more_queues": more,
        "claims": my_claims(user.pk, scope, now),
        "skips": my_skips(user.pk, scope),
        "recent_runs": runs,
        "recent_more": more_runs,
        "recent_window": f"{RECENT_WINDOW:,}",
        "recent_hours": RECENT_HOURS,
        "may_review": scope.records_any_verdicts(),
    }
