"""Walking a review queue: its items in order, the viewer's place in it, claims and skips.

A queue's items are the attack results of the viewer's operations that pass the queue's saved
filter (memory.filters.AttackResultFilterSet, the results list's own) and its review
restriction (scoring.review.for_review), in the results list's order: newest ingested first.
Items someone skipped in this queue move to the end, earliest skip first.

Opening an item claims it for REVIEW_CLAIM_MINUTES: while the claim holds, "next" never hands
the item to another reviewer. A claim is one row per attack result (ReviewClaim, unique on the
result); it is taken with a conditional UPDATE (only when it is the viewer's own or expired)
or an INSERT that the unique constraint refuses when another reviewer got there first, so two
reviewers racing for one item on PostgreSQL cannot both win.

Every read here is one query whatever the number of items (counts are aggregates, steps are
one ordered LIMIT 1), so a queue of thousands costs what a queue of three does.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import (
    Case,
    Count,
    Exists,
    F,
    Max,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Sum,
    Value,
    When,
)
from django.http import Http404, QueryDict
from django.utils import timezone

from memory.filters import AttackResultFilterSet
from memory.models import AttackResult
from memory.querysets import attack_results_for_list
from redteam.common.access import Scope
from scoring.models import ReviewClaim, ReviewQueue, ReviewSkip
from scoring.review import REVIEW_VIEWS, awaiting_review, for_review, human_verdicts

if TYPE_CHECKING:
    from django.contrib.auth.models import User as AccountUser

# Tries at handing out the next item when other reviewers keep claiming the candidates.
CLAIM_ATTEMPTS = 5
SKIP_ANNOTATION = "queue_skipped_at"


def claim_duration() -> timedelta:
    """How long opening an item holds it (settings.REVIEW_CLAIM_MINUTES)."""
    return timedelta(minutes=settings.REVIEW_CLAIM_MINUTES)


# The built-in queues (made by migration scoring 0009; remade here if the rows are gone, e.g.
# after a flush, since the former review views' links lead to them).
BUILTIN_QUEUES = (
    ("unreviewed", "Unreviewed", "Results without a human verdict yet, newest first."),
    ("disagree", "Disagreements", "Results whose human verdict contradicts the automated outcome."),
    ("reviewed", "Reviewed", "Results with a human verdict, to re-check or correct."),
)


def ensure_builtin_queues() -> None:
    """Create the built-in queues that are missing (a name already taken is left alone)."""
    for slug, name, instructions in BUILTIN_QUEUES:
        try:
            with transaction.atomic():
                ReviewQueue.objects.get_or_create(
                    slug=slug,
                    defaults={
                        "name": name,
                        "instructions": instructions,
                        "review": slug,
                        "filters": {},
                        "builtin": True,
                    },
                )
        except IntegrityError:
            continue


def visible_queues(scope: Scope) -> QuerySet[ReviewQueue]:
    """The queues a viewer may walk: team-wide ones and their operations', not archived."""
    return ReviewQueue.objects.visible_to(scope).filter(archived=False).order_by("-builtin", "name")


def queue_for(scope: Scope, slug: str) -> ReviewQueue:
    """The walkable queue named by `slug` (404 when unknown, not visible, or archived)."""
    queue = visible_queues(scope).filter(slug=slug).first()
    if queue is None and slug in REVIEW_VIEWS:
        ensure_builtin_queues()
        queue = visible_queues(scope).filter(slug=slug).first()
    if queue is None:
        raise Http404("No such review queue.")
    return queue


def filter_data(queue: ReviewQueue) -> QueryDict:
    """The queue's saved filter as the results list's query parameters."""
    data = QueryDict(mutable=True)
    saved = queue.filters if isinstance(queue.filters, dict) else {}
    for name, values in saved.items():
        if isinstance(values, list):
            data.setlist(str(name), [str(v) for v in values if v is not None])
        elif values is not None:
            data.setlist(str(name), [str(values)])
    return data


def filter_query(queue: ReviewQueue) -> str:
    """The saved filter as a results-list query string (with the review restriction)."""
    data = filter_data(queue)
    if queue.review in REVIEW_VIEWS:
        data.setlist("review", [queue.review])
    return data.urlencode()


@dataclass(frozen=True)
class Hold:
    """Who holds an item after a claim attempt: the viewer (`mine`), another reviewer
    (`holder`, until `expires_at`), or nobody (a claim released mid-race)."""

    mine: bool
    holder: str = ""
    expires_at: datetime | None = None


@dataclass(frozen=True)
class Progress:
    """The viewer's place in a queue: "k of N, M left, you: X today"."""

    position: int | None  # None: the current item is not (or no longer) in the queue
    total: int
    left: int
    today: int
    held_by_others: int
    skipped: int


# The place of an item in queue order: (its latest skip in this queue, ingested_at, pk).
Key = tuple[datetime | None, datetime, Any]


class QueueWalk:
    """One viewer walking one queue at one moment."""

    def __init__(
        self, queue: ReviewQueue, scope: Scope, user: AccountUser, now: datetime | None = None
    ) -> None:
        self.queue = queue
        self.scope = scope
        self.user = user
        self.now = now or timezone.now()
        self.filterset = AttackResultFilterSet(
            filter_data(queue), queryset=attack_results_for_list(scope), scope=scope
        )

    # --- the items ---------------------------------------------------------------------

    @property
    def valid(self) -> bool:
        """False when the saved filter no longer validates (the queue then has no items)."""
        return bool(self.filterset.is_valid())

    @property
    def errors(self) -> dict[str, Any]:
        """The saved filter's validation errors, by parameter."""
        return dict(self.filterset.errors)

    def items(self) -> QuerySet[AttackResult]:
        """The queue's items in queue order, each annotated with its latest skip here."""
        if not self.valid:
            return AttackResult.objects.none()
        qs: QuerySet[AttackResult] = self.filterset.qs
        if self.queue.review in REVIEW_VIEWS:
            qs = for_review(qs, self.queue.review, self.user.pk)
        last_skip = (
            ReviewSkip.objects.filter(queue=self.queue, attack_result=OuterRef("pk"))
            .order_by("-skipped_at")
            .values("skipped_at")[:1]
        )
        return qs.annotate(**{SKIP_ANNOTATION: Subquery(last_skip)}).order_by(
            F(SKIP_ANNOTATION).asc(nulls_first=True), "-ingested_at", "-attack_result_id"
        )

    def held_by_others(self) -> Exists:
        """Exists-expression: another reviewer holds an unexpired claim on the item."""
        return Exists(
            ReviewClaim.objects.filter(
                attack_result=OuterRef("pk"), expires_at__gt=self.now
            ).exclude(user=self.user)
        )

    def available(self) -> QuerySet[AttackResult]:
        """The items "next" may hand to the viewer: not held by another reviewer."""
        return self.items().filter(~self.held_by_others())

    # --- order ---------------------------------------------------------------------------

    def key_of(self, result: AttackResult) -> Key:
        """The place of a result in queue order (one query: its latest skip here)."""
        skipped = ReviewSkip.objects.filter(queue=self.queue, attack_result=result).aggregate(
            last=Max("skipped_at")
        )["last"]
        return (skipped, result.ingested_at, result.pk)

    @staticmethod
    def _before(key: Key) -> Q:
        """Items that come before `key` in queue order."""
        skipped, at, pk = key
        newer = Q(ingested_at__gt=at) | Q(ingested_at=at, attack_result_id__gt=pk)
        if skipped is None:
            return Q(**{f"{SKIP_ANNOTATION}__isnull": True}) & newer
        return (
            Q(**{f"{SKIP_ANNOTATION}__isnull": True})
            | Q(**{f"{SKIP_ANNOTATION}__lt": skipped})
            | (Q(**{SKIP_ANNOTATION: skipped}) & newer)
        )

    @staticmethod
    def _after(key: Key) -> Q:
        """Items that come after `key` in queue order."""
        skipped, at, pk = key
        older = Q(ingested_at__lt=at) | Q(ingested_at=at, attack_result_id__lt=pk)
        if skipped is None:
            return Q(**{f"{SKIP_ANNOTATION}__isnull": False}) | (
                Q(**{f"{SKIP_ANNOTATION}__isnull": True}) & older
            )
        return Q(**{f"{SKIP_ANNOTATION}__gt": skipped}) | (Q(**{SKIP_ANNOTATION: skipped}) & older)

    def item_of_conversation(self, conversation_id: str) -> Key | None:
        """The place of the conversation's first result in this queue, if any (one query)."""
        row = (
            self.items()
            .filter(conversation_id=conversation_id)
            .values_list(SKIP_ANNOTATION, "ingested_at", "attack_result_id")
            .first()
        )
        return (row[0], row[1], row[2]) if row else None

    # --- progress ------------------------------------------------------------------------

    def progress(self, key: Key | None) -> Progress:
        """k of N, M left, X today (two queries: the queue's counts, the viewer's verdicts).

        Left: the items no other reviewer holds that still wait for a verdict (in a queue of
        reviewed or disagreeing results, every such item: they wait to be re-checked).
        """
        # Every condition is an annotation the sums read: the aggregate wraps the annotated
        # items in a subquery (the skip annotation is one), where outer references resolve.
        left = Q(~self.held_by_others())
        if self.queue.review in ("", "unreviewed"):
            left &= awaiting_review(self.user.pk)
        flags: dict[str, Q] = {
            "left": left,
            "held": Q(self.held_by_others()),
            "skipped": Q(**{f"{SKIP_ANNOTATION}__isnull": False}),
        }
        if key is not None:
            flags["before"] = self._before(key)
            flags["here"] = Q(attack_result_id=key[2])
        annotated = (
            self.items()
            .order_by()
            .annotate(
                _one=Value(1),
                **{
                    f"_{name}": Case(When(condition, then=Value(1)), default=Value(0))
                    for name, condition in flags.items()
                },
            )
        )
        sums = {"total": Sum("_one"), **{name: Sum(f"_{name}") for name in flags}}
        row = {name: int(value or 0) for name, value in annotated.aggregate(**sums).items()}
        position = row["before"] + 1 if key is not None and row["here"] else None
        return Progress(
            position=position,
            total=row["total"],
            left=row["left"],
            today=self.verdicts_today(),
            held_by_others=row["held"],
            skipped=row["skipped"],
        )

    def verdicts_today(self) -> int:
        """Attack results the viewer reviewed since local midnight, reviews they undid aside
        (one query)."""
        midnight = timezone.localtime(self.now).replace(hour=0, minute=0, second=0, microsecond=0)
        return int(
            human_verdicts()
            .visible_to(self.scope)
            .filter(reviewer=self.user, timestamp__gte=midnight)
            .order_by()
            .aggregate(n=Count("attack_result_id", distinct=True))["n"]
        )

    # --- claims and skips ----------------------------------------------------------------

    def claim(self, result_id: Any) -> Hold:
        """Hold an item for the viewer, or say who holds it.

        The viewer's own claim is renewed and an expired one taken over by one conditional
        UPDATE; with no row yet, an INSERT, which the one-claim-per-result constraint refuses
        when another reviewer inserted first (on PostgreSQL the loser's UPDATE waits on the
        winner's row lock and then finds the condition false). Taking an item releases the
        viewer's other claims in this queue: a reviewer holds one item of a queue at a time.
        """
        until = self.now + claim_duration()
        with transaction.atomic():
            taken = (
                ReviewClaim.objects.filter(attack_result_id=result_id)
                .filter(Q(user=self.user) | Q(expires_at__lte=self.now))
                .update(user=self.user, queue=self.queue, claimed_at=self.now, expires_at=until)
            )
            if not taken:
                try:
                    with transaction.atomic():
                        ReviewClaim.objects.create(
                            attack_result_id=result_id,
                            user=self.user,
                            queue=self.queue,
                            claimed_at=self.now,
                            expires_at=until,
                        )
                except IntegrityError:
                    holder = (
                        ReviewClaim.objects.filter(attack_result_id=result_id)
                        .select_related("user")
                        .first()
                    )
                    if holder is None:
                        return Hold(mine=False)
                    return Hold(
                        mine=False,
                        holder=holder.user.get_username(),
                        expires_at=holder.expires_at,
                    )
            ReviewClaim.objects.filter(user=self.user, queue=self.queue).exclude(
                attack_result_id=result_id
            ).delete()
        return Hold(mine=True, holder=self.user.get_username(), expires_at=until)

    def release(self, result_id: Any) -> None:
        """Give up the viewer's claim on an item (one query)."""
        ReviewClaim.objects.filter(attack_result_id=result_id, user=self.user).delete()

    def skip(self, result: AttackResult, reason: str = "") -> ReviewSkip:
        """Pass over an item: it moves to the end of this queue and the viewer's claim ends."""
        with transaction.atomic():
            skipped = ReviewSkip.objects.create(
                queue=self.queue,
                attack_result=result,
                user=self.user,
                reason=reason.strip()[:500],
                skipped_at=self.now,
            )
            self.release(result.pk)
        return skipped

    def hand_out(
        self, after: Key | None, *, forward: bool = True, exclude: Any = None
    ) -> AttackResult | None:
        """The next (previous) free item after `after` (the first one when None), claimed
        for the viewer when they may judge it; a candidate another reviewer claims in the
        meantime is passed over (one query per candidate, and its claim)."""
        qs = self.available()
        if after is not None:
            qs = qs.filter(self._after(after) if forward else self._before(after))
            qs = qs.exclude(pk=after[2])
            if not forward:
                qs = qs.reverse()
        passed: list[Any] = [] if exclude is None else [exclude]
        for _ in range(CLAIM_ATTEMPTS):
            candidate = (
                qs.exclude(pk__in=passed)
                .select_related(None)
                .only("attack_result_id", "conversation_id", "ingested_at", "operation_id")
                .first()
            )
            if candidate is None:
                return None
            if not self.scope.may_record_verdicts(candidate.operation_id):
                return candidate
            if self.claim(candidate.pk).mine:
                return candidate
            passed.append(candidate.pk)
        return None


def awaiting_counts(queues: list[ReviewQueue], scope: Scope, user: AccountUser) -> dict[int, int]:
    """How many items each queue holds for the viewer (one query for all the queues)."""
    now = timezone.now()
    counts: dict[str, Any] = {}
    for queue in queues:
        walk = QueueWalk(queue, scope, user, now)
        if walk.valid:
            items = walk.items().order_by().values("attack_result_id")
            counts[f"q{queue.pk}"] = Count("attack_result_id", filter=Q(attack_result_id__in=items))
    if not counts:
        return {}
    row = AttackResult.objects.visible_to(scope).aggregate(**counts)
    return {int(name[1:]): int(n) for name, n in row.items()}
