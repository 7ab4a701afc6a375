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

A queue is read in two segments, each in an order an index serves: the items never skipped
here ("fresh": newest ingested first, a walk of the results' (ingested_at, id) index that stops
at the LIMIT) and then the skipped ones (few: one per reviewer's pass; earliest skip first). A
page or a step reads the first segment and, past its end, the second (one query more).

Counts are bounded: each stops at COUNT_BOUND + 1 rows (a LIMITed subquery), so the header says
"12 of 1,000+" and "1,000+ left" in a huge queue and exact numbers in a small one, and the
position of an item deep in the queue is "beyond the first 1,000". All of a header's counts are
one query. So a queue of millions costs what a queue of three does.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.core.exceptions import EmptyResultSet
from django.db import IntegrityError, connections, transaction
from django.db.models import (
    Count,
    Exists,
    F,
    Max,
    OuterRef,
    Q,
    QuerySet,
    Subquery,
    Value,
)
from django.db.models.fields import DateTimeField

# Row-value comparison, "(ingested_at, id) > (x, y)": one range of the results' index on
# PostgreSQL (Django's own lookup for composite keys; on SQLite it is spelled out).
from django.db.models.fields.tuple_lookups import TupleGreaterThan, TupleLessThan
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
# Counts stop here: past it a count reads "1,000+" and a place "beyond the first 1,000".
COUNT_BOUND = 1000
# The queue order within each segment (the skipped one sorts by its skip first).
ORDER = ("-ingested_at", "-attack_result_id")


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


def bounded(n: int) -> str:
    """A count stopped at COUNT_BOUND + 1, as shown: "12", "1,000", "1,000+"."""
    return f"{COUNT_BOUND:,}+" if n > COUNT_BOUND else f"{n:,}"


@dataclass(frozen=True)
class Progress:
    """The viewer's place in a queue: "k of N, M left, you: X today".

    Every count but `today` is bounded: a value above COUNT_BOUND means "more than
    COUNT_BOUND" (the texts say "1,000+"); a position above it, "beyond the first 1,000".
    """

    position: int | None  # None: the current item is not (or no longer) in the queue
    total: int
    left: int
    today: int
    held_by_others: int
    skipped: int

    @property
    def place(self) -> str:
        """ "k of N" (or where the item is when it is not in the queue, or deep in it)."""
        if self.position is None:
            return f"not in this queue ({bounded(self.total)} in it)"
        if self.position > COUNT_BOUND:
            return f"beyond the first {COUNT_BOUND:,}"
        return f"{self.position:,} of {bounded(self.total)}"

    @property
    def has_next(self) -> bool:
        """Whether items may follow the current one (always, when counts stopped early)."""
        return self.position is None or self.total > COUNT_BOUND or self.position < self.total

    @property
    def total_shown(self) -> str:
        return bounded(self.total)

    @property
    def left_shown(self) -> str:
        return bounded(self.left)

    @property
    def held_shown(self) -> str:
        return bounded(self.held_by_others)

    @property
    def skipped_shown(self) -> str:
        return bounded(self.skipped)


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

    def base(self) -> QuerySet[AttackResult]:
        """The queue's items, unordered (the saved filter and the review restriction)."""
        if not self.valid:
            return AttackResult.objects.none()
        qs: QuerySet[AttackResult] = self.filterset.qs
        if self.queue.review in REVIEW_VIEWS:
            qs = for_review(qs, self.queue.review, self.user.pk)
        return qs

    def _skips(self) -> QuerySet[ReviewSkip]:
        return ReviewSkip.objects.filter(queue=self.queue)

    def _last_skip(self) -> Subquery:
        return Subquery(
            self._skips()
            .filter(attack_result=OuterRef("pk"))
            .order_by("-skipped_at")
            .values("skipped_at")[:1]
        )

    def items(self) -> QuerySet[AttackResult]:
        """The queue's items in queue order, each annotated with its latest skip here (one
        queryset: for lookups of a few items; pages and steps read the two segments)."""
        return (
            self.base()
            .annotate(**{SKIP_ANNOTATION: self._last_skip()})
            .order_by(F(SKIP_ANNOTATION).asc(nulls_first=True), *ORDER)
        )

    def fresh(self) -> QuerySet[AttackResult]:
        """The items never skipped in this queue, newest ingested first: the queue's first
        segment, read along the results' ingest index."""
        skipped = self._skips().filter(attack_result=OuterRef("pk"))
        return (
            self.base()
            .filter(~Exists(skipped))
            .annotate(**{SKIP_ANNOTATION: Value(None, output_field=DateTimeField())})
            .order_by(*ORDER)
        )

    def skipped(self) -> QuerySet[AttackResult]:
        """The items skipped in this queue, earliest (latest) skip first: the second
        segment, read from the queue's skips."""
        return (
            self.base()
            .filter(pk__in=self._skips().values("attack_result_id"))
            .annotate(**{SKIP_ANNOTATION: self._last_skip()})
            .order_by(F(SKIP_ANNOTATION).asc(), *ORDER)
        )

    def page(self, start: int, size: int) -> list[AttackResult]:
        """Items start..start+size-1 in queue order (one query while the first segment fills
        the page; past its end one more, and one to count it when the page starts past it)."""
        rows = list(self.fresh()[start : start + size])
        if len(rows) == size:
            return rows
        if rows or start == 0:
            fresh_count = start + len(rows)
        else:
            fresh_count = self.fresh().order_by()[:start].count()
        offset = max(0, start - fresh_count)
        rows.extend(self.skipped()[offset : offset + size - len(rows)])
        return rows

    def held_by_others(self) -> Exists:
        """Exists-expression: another reviewer holds an unexpired claim on the item."""
        return Exists(
            ReviewClaim.objects.filter(
                attack_result=OuterRef("pk"), expires_at__gt=self.now
            ).exclude(user=self.user)
        )

    # --- order ---------------------------------------------------------------------------

    def key_of(self, result: AttackResult) -> Key:
        """The place of a result in queue order (one query: its latest skip here)."""
        skipped = (
            self._skips().filter(attack_result=result).aggregate(last=Max("skipped_at"))["last"]
        )
        return (skipped, result.ingested_at, result.pk)

    @staticmethod
    def _newer(key: Key) -> TupleGreaterThan:
        return TupleGreaterThan((F("ingested_at"), F("attack_result_id")), (key[1], key[2]))

    @staticmethod
    def _older(key: Key) -> TupleLessThan:
        return TupleLessThan((F("ingested_at"), F("attack_result_id")), (key[1], key[2]))

    @classmethod
    def _skipped_before(cls, key: Key) -> Q:
        """Skipped items before `key` (a skipped item) in queue order."""
        return Q(**{f"{SKIP_ANNOTATION}__lt": key[0]}) | (
            Q(**{SKIP_ANNOTATION: key[0]}) & Q(cls._newer(key))
        )

    @classmethod
    def _skipped_after(cls, key: Key) -> Q:
        """Skipped items after `key` (a skipped item) in queue order."""
        return Q(**{f"{SKIP_ANNOTATION}__gt": key[0]}) | (
            Q(**{SKIP_ANNOTATION: key[0]}) & Q(cls._older(key))
        )

    def _segments(self, after: Key | None, forward: bool) -> list[QuerySet[AttackResult]]:
        """The querysets to read, in turn, for the items after (before) `after` in queue
        order, each in walking order."""
        fresh, skipped = self.fresh(), self.skipped()
        if after is None:
            return [fresh, skipped]
        if forward:
            if after[0] is None:
                return [fresh.filter(self._older(after)), skipped]
            return [skipped.filter(self._skipped_after(after))]
        if after[0] is None:
            return [fresh.filter(self._newer(after)).reverse()]
        return [skipped.filter(self._skipped_before(after)).reverse(), fresh.reverse()]

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
        """k of N, M left, X today (two queries: the queue's bounded counts, the viewer's
        verdicts).

        Left: the items no other reviewer holds that still wait for a verdict (in a queue of
        reviewed or disagreeing results, every such item: they wait to be re-checked). Each
        count stops at COUNT_BOUND + 1 rows; the position counts the items before the current
        one the same way (a walk of the segments' index from its start).
        """
        base = self.base()
        left = base.filter(~self.held_by_others())
        if self.queue.review in ("", "unreviewed"):
            left = left.filter(awaiting_review(self.user.pk))
        counted: dict[str, tuple[QuerySet[AttackResult], int]] = {
            "total": (base, COUNT_BOUND + 1),
            "left": (left, COUNT_BOUND + 1),
            "held": (base.filter(self.held_by_others()), COUNT_BOUND + 1),
            "skipped": (
                base.filter(pk__in=self._skips().values("attack_result_id")),
                COUNT_BOUND + 1,
            ),
        }
        if key is not None:
            counted["here"] = (base.filter(pk=key[2]), 1)
            if key[0] is None:
                counted["before"] = (self.fresh().filter(self._newer(key)), COUNT_BOUND)
            else:
                counted["before"] = (self.fresh(), COUNT_BOUND)
                counted["skipped_before"] = (
                    self.skipped().filter(self._skipped_before(key)),
                    COUNT_BOUND,
                )
        row = bounded_counts(counted, base.db)
        position = None
        if key is not None and row["here"]:
            position = min(row["before"] + row.get("skipped_before", 0), COUNT_BOUND) + 1
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
        meantime is passed over (one query per candidate, and its claim; one more where the
        never-skipped items run out and the skipped ones follow)."""
        passed: list[Any] = [] if exclude is None else [exclude]
        if after is not None:
            passed.append(after[2])
        segments = [
            qs.filter(~self.held_by_others()).select_related(None)
            for qs in self._segments(after, forward)
        ]
        for _ in range(CLAIM_ATTEMPTS):
            candidate = None
            while segments and candidate is None:
                candidate = (
                    segments[0]
                    .exclude(pk__in=passed)
                    .only("attack_result_id", "conversation_id", "ingested_at", "operation_id")
                    .first()
                )
                if candidate is None:
                    segments.pop(0)
            if candidate is None:
                return None
            if not self.scope.may_record_verdicts(candidate.operation_id):
                return candidate
            if self.claim(candidate.pk).mine:
                return candidate
            passed.append(candidate.pk)
        return None


def bounded_counts(counted: dict[str, tuple[QuerySet[Any], int]], using: str) -> dict[str, int]:
    """Each queryset's row count, stopped at its bound (one query for all of them: a scalar
    subquery per count over the queryset LIMITed to the bound)."""
    parts: list[str] = []
    params: list[Any] = []
    for qs, bound in counted.values():
        try:
            rows = qs.order_by().values("pk")[:bound]
            sql, sql_params = rows.query.get_compiler(using=using).as_sql()
        except EmptyResultSet:
            parts.append("0")
            continue
        parts.append(f"(SELECT COUNT(*) FROM ({sql}) bounded_rows)")
        params.extend(sql_params)
    if all(part == "0" for part in parts):
        return dict.fromkeys(counted, 0)
    with connections[using].cursor() as cursor:
        cursor.execute("SELECT " + ", ".join(parts), params)
        row = cursor.fetchone()
    return {name: int(n) for name, n in zip(counted, row, strict=True)}


def awaiting_counts(queues: list[ReviewQueue], scope: Scope, user: AccountUser) -> dict[int, int]:
    """How many items each queue holds for the viewer, each count stopped at COUNT_BOUND + 1
    (one query for all the queues)."""
    now = timezone.now()
    counted: dict[str, tuple[QuerySet[Any], int]] = {}
    for queue in queues:
        walk = QueueWalk(queue, scope, user, now)
        if walk.valid:
            counted[f"q{queue.pk}"] = (walk.base(), COUNT_BOUND + 1)
    if not counted:
        return {}
    row = bounded_counts(counted, AttackResult.objects.db)
    return {int(name[1:]): n for name, n in row.items()}
