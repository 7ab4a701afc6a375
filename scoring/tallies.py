"""Dashboard counts: attack-result outcomes per harm category, attack, converter, target, label.

Counting a million pieces' results on every page view would grow with the table, so the
counts live in OutcomeTally rows rebuilt by `refresh_outcome_tallies` (a management command,
or the dashboard's refresh button). The rows are kept per operation: a viewer's dashboard sums
the rows of their operations (every operation for a superuser) and adds the few visible
results and verdicts that arrived after the snapshot, so it is exact for that viewer, shows
nothing of other operations, and its cost does not grow with the table. Outcomes are
effective outcomes: the latest human verdict wins over the automated one.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import Exists, Max, OuterRef, Q, Subquery, Sum
from django.utils import timezone

from memory.models import AttackResult, ComponentIdentifier, Score, ScoreSource
from redteam.common.access import Scope
from redteam.core.enums import ATTACK_OUTCOMES
from redteam.core.outcomes import OutcomeCounts
from redteam.core.stats import Rate, percent
from scoring.blind import deciding_answer
from scoring.models import OutcomeTally, TallySnapshot
from scoring.review import (
    human_scores,
    human_scores_as_of,
    human_verdicts,
    human_verdicts_as_of,
    verdict_success,
)

DIMENSIONS = ("harm_category", "attack", "converter", "target")
# Not charted: whether a human reviewed the result (keys REVIEWED / NOT_REVIEWED), for the
# headline's share reviewed; counted with the other dimensions so it costs no query.
REVIEW_DIMENSION = "reviewed"
REVIEWED, NOT_REVIEWED = "yes", "no"
NONE_KEY = "(none)"
LABEL_PREFIX = "label:"
# Results ingested in the last few minutes are counted live rather than in the snapshot, so a
# batch still committing while the snapshot is taken is never missed.
SNAPSHOT_MARGIN = timedelta(minutes=5)
MAX_BARS = 25
NAME_BATCH = 1000
MAX_LABEL_KEYS = 200
_FIELDS = (
    "pk",
    "outcome",
    "attack_class",
    "target_hash",
    "target_class",
    "converter_classes",
    "targeted_harm_categories",
    "labels",
    "conversation__labels",
    "conversation__harm_categories",
    "ingested_at",
)
# Every result counts exactly once under this dimension: its totals are the result count.
_ONE_PER_RESULT = "attack"

Key = tuple[str, str, str]  # (dimension, key, display)


def result_keys(row: Mapping[str, Any]) -> list[Key]:
    """Every (dimension, key, display) an attack result counts under."""
    keys: list[Key] = []
    # 1.x results carry labels and harms; 0.13 ones left them on the pieces, which the
    # conversation summary collected.
    harms = list(row["targeted_harm_categories"] or row["conversation__harm_categories"] or [])
    for harm in dict.fromkeys(str(h) for h in harms) or [NONE_KEY]:
        keys.append(("harm_category", harm[:300], harm[:300]))
    attack = (row["attack_class"] or NONE_KEY)[:300]
    keys.append(("attack", attack, attack))
    for conv in dict.fromkeys(str(c) for c in row["converter_classes"] or []) or [NONE_KEY]:
        keys.append(("converter", conv[:300], conv[:300]))
    if row["target_hash"]:
        # The name people know (redteam.core.identity.display) when the row carries it; the
        # refresh looks the names up once for every target it counted.
        display = row.get("target_name") or row["target_class"] or "target"
        keys.append(("target", row["target_hash"], display))
    else:
        keys.append(("target", NONE_KEY, NONE_KEY))
    labels = {**(row["conversation__labels"] or {}), **(row["labels"] or {})}
    for name, value in labels.items():
        keys.append((f"{LABEL_PREFIX}{name}"[:120], str(value)[:300], str(value)[:300]))
    return keys


def _effective(outcome: str, human: tuple[str, str | None] | None) -> str:
    if human is not None:
        success = verdict_success(*human)
        if success is not None:
            return "success" if success else "failure"
    return outcome


@transaction.atomic
def refresh_outcome_tallies(*, watermark: datetime | None = None) -> TallySnapshot:
    """Rebuild every operation's tallies from the results ingested up to `watermark`
    (default: now - margin), all at one watermark."""
    started = time.monotonic()
    taken_at = timezone.now()
    watermark = watermark or taken_at - SNAPSHOT_MARGIN
    # Reviewed: any standing verdict, a category too; the outcome: the deciding ones only
    # (under blind review, as the verdicts standing at the watermark decide).
    humans = _deciding_as_of(watermark)
    reviewed_ids = set(humans)
    humans = {pk: answer for pk, answer in humans.items() if answer is not None}
    counts: Counter[tuple[int | None, str, str, str]] = Counter()
    displays: dict[tuple[str, str], str] = {}
    results = 0
    rows = AttackResult.objects.filter(ingested_at__lte=watermark).values(*_FIELDS, "operation_id")
    for row in rows.iterator(chunk_size=5000):
        results += 1
        outcome = _effective(row["outcome"], humans.get(row["pk"]))
        for dimension, key, display in result_keys(row):
            counts[(row["operation_id"], dimension, key, outcome)] += 1
            displays[(dimension, key)] = display
        reviewed = REVIEWED if row["pk"] in reviewed_ids else NOT_REVIEWED
        counts[(row["operation_id"], REVIEW_DIMENSION, reviewed, outcome)] += 1
        displays[(REVIEW_DIMENSION, reviewed)] = reviewed
    displays.update(_target_names(key for dimension, key in displays if dimension == "target"))
    OutcomeTally.objects.all().delete()
    OutcomeTally.objects.bulk_create(
        [
            OutcomeTally(
                operation_id=op,
                dimension=d,
                key=k,
                outcome=o,
                count=n,
                display=displays[(d, k)][:300],
            )
            for (op, d, k, o), n in counts.items()
        ],
        batch_size=2000,
    )
    TallySnapshot.objects.all().delete()
    return TallySnapshot.objects.create(
        watermark=watermark,
        taken_at=taken_at,
        results=results,
        duration_ms=int((time.monotonic() - started) * 1000),
    )


def _target_names(hashes: Iterable[str]) -> dict[tuple[str, str], str]:
    """("target", hash) -> display name of every stored target identifier among `hashes`
    (one query per NAME_BATCH hashes)."""
    wanted = sorted(h for h in set(hashes) if h != NONE_KEY)
    names: dict[tuple[str, str], str] = {}
    for start in range(0, len(wanted), NAME_BATCH):
        batch = wanted[start : start + NAME_BATCH]
        for hash_, name in ComponentIdentifier.objects.filter(hash__in=batch).values_list(
            "hash", "display_name"
        ):
            if name:
                names[("target", hash_)] = name
    return names


@dataclass(kw_only=True)
class Bar(OutcomeCounts):
    """One key of one dimension: counts per outcome, kept apart."""

    key: str
    display: str

    def segments(self) -> list[tuple[str, int, int]]:
        """(outcome, count, width percent) per non-empty outcome, for the stacked bar."""
        total = self.total or 1
        return [
            (o, self.counts[o], max(1, round(100 * self.counts[o] / total)))
            for o in ATTACK_OUTCOMES
            if self.counts[o]
        ]


@dataclass
class Chart:
    """The bars of one dimension, most results first."""

    dimension: str
    bars: list[Bar]
    hidden: int = 0

    @property
    def max_total(self) -> int:
        """The largest bar, which sets the scale."""
        return max((b.total for b in self.bars), default=0)


@dataclass(frozen=True)
class Headline:
    """The dashboard's headline numbers over the viewer's results (effective outcomes)."""

    results: int
    counts: Mapping[str, int]
    reviewed: int

    @property
    def rate(self) -> Rate:
        """Attack success rate: successes of all results (PyRIT's objective_achieved_rate),
        with n and its 95% Wilson interval."""
        return Rate(successes=self.counts.get("success", 0), n=self.results)

    @property
    def undetermined(self) -> int:
        """Results with no decided outcome."""
        return self.counts.get("undetermined", 0)

    @property
    def errors(self) -> int:
        """Results whose attack ended in an error."""
        return self.counts.get("error", 0)

    @property
    def reviewed_percent(self) -> int:
        """Share of results with a human verdict, in whole percent (rounded half up)."""
        return percent(self.reviewed, self.results)


@dataclass
class Dashboard:
    """Everything the dashboard page shows, over the viewer's operations."""

    charts: list[Chart]
    label_keys: list[str]
    more_label_keys: bool
    label_key: str | None
    snapshot: TallySnapshot
    # The viewer's results counted in the snapshot, and those added since.
    snapshot_results: int
    live_results: int
    headline: Headline
    # The newest visible result ingested after the snapshot, as (ingested_at, pk): where the
    # page's live check starts (None: none since the snapshot, it starts at the watermark).
    newest: tuple[datetime, Any] | None = None


def _deciding_as_of(
    watermark: datetime, result_ids: list[Any] | None = None
) -> dict[Any, tuple[str, str | None] | None]:
    """Every result with a verdict standing at the watermark (of these results, when given),
    with the (score_type, score_value) deciding its outcome then, None when none does: one
    query."""
    rows: dict[Any, list[tuple[Any, str, str, str | None, bool]]] = {}
    required: dict[Any, int] = {}
    qs = human_verdicts_as_of(watermark).filter(attack_result__isnull=False)
    if result_ids is not None:
        qs = qs.filter(attack_result_id__in=result_ids)
    for ar_id, field, score_type, value, reviewer_id, submission, final, needed in qs.values_list(
        "attack_result_id",
        "verdict_field",
        "score_type",
        "score_value",
        "reviewer_id",
        "verdict_submission",
        "final",
        "attack_result__review_required",
    ):
        reviewer = reviewer_id if reviewer_id is not None else f"gone:{submission}"
        rows.setdefault(ar_id, []).append((reviewer, field, score_type, value, final))
        required[ar_id] = needed
    return {pk: deciding_answer(required[pk], answers) for pk, answers in rows.items()}


def _blind_before(rows: list[dict[str, Any]], watermark: datetime) -> None:
    """Correct the "before" verdict of results under blind review (their deciding verdict at
    the watermark depends on every verdict standing then): one query, only when any is."""
    blind = [
        row["pk"] for row in rows if row["review_required"] > 1 and row["ingested_at"] <= watermark
    ]
    if not blind:
        return
    then = _deciding_as_of(watermark, blind)
    for row in rows:
        if row["pk"] in blind:
            answer = then.get(row["pk"])
            row["old_human_type"], row["old_human_value"] = answer or (None, None)


def _dirty_results(watermark: datetime, scope: Scope) -> list[dict[str, Any]]:
    """Visible results ingested after the snapshot, or given (or withdrawn) a human verdict
    after it (two queries)."""
    # Fetched first as literal ids: `ingested_at > W OR pk IN (<ids>)` is two index scans
    # (a BitmapOr); with a subquery in the OR, PostgreSQL scans the whole table instead.
    # A verdict withdrawn since (undone or corrected) changes the outcome as well.
    re_reviewed = list(
        Score.objects.visible_to(scope)
        .filter(source=ScoreSource.HUMAN, attack_result__isnull=False)
        .filter(Q(ingested_at__gt=watermark) | Q(withdrawn_at__gt=watermark))
        .values_list("attack_result_id", flat=True)
        .distinct()
    )

    def latest(field_name: str, *, before: bool) -> Subquery:
        qs = (human_scores_as_of(watermark) if before else human_scores()).filter(
            attack_result=OuterRef("pk")
        )
        return Subquery(qs.values(field_name)[:1])

    def reviewed(*, before: bool) -> Exists:
        qs = human_verdicts_as_of(watermark) if before else human_verdicts()
        return Exists(qs.filter(attack_result=OuterRef("pk")))

    condition = Q(ingested_at__gt=watermark)
    if re_reviewed:
        condition |= Q(pk__in=re_reviewed)
    names = ComponentIdentifier.objects.filter(hash=OuterRef("target_hash"))
    rows = list(
        AttackResult.objects.visible_to(scope)
        .filter(condition)
        .annotate(
            human_type=latest("score_type", before=False),
            human_value=latest("score_value", before=False),
            old_human_type=latest("score_type", before=True),
            old_human_value=latest("score_value", before=True),
            reviewed_now=reviewed(before=False),
            reviewed_then=reviewed(before=True),
            target_name=Subquery(names.values("display_name")[:1]),
        )
        .values(
            *_FIELDS,
            "human_type",
            "human_value",
            "old_human_type",
            "old_human_value",
            "reviewed_now",
            "reviewed_then",
            "target_name",
            "review_required",
        )
    )
    _blind_before(rows, watermark)
    return rows


def _human(row: Mapping[str, Any], prefix: str) -> tuple[str, str | None] | None:
    kind = row[f"{prefix}human_type"]
    return None if kind is None else (kind, row[f"{prefix}human_value"])


def build_dashboard(label_key: str | None, scope: Scope) -> Dashboard:
    """Sum the snapshot over the scope's operations and correct it with what happened since
    in them (five queries)."""
    snapshot = TallySnapshot.objects.order_by("-taken_at").first()
    if snapshot is None:
        snapshot = refresh_outcome_tallies()
    dimensions = [*DIMENSIONS]
    if label_key:
        dimensions.append(f"{LABEL_PREFIX}{label_key}")
    counts: dict[str, dict[str, Bar]] = {d: {} for d in [*dimensions, REVIEW_DIMENSION]}
    tallies = OutcomeTally.objects.visible_to(scope).filter(
        dimension__in=[*dimensions, REVIEW_DIMENSION]
    )
    # One row per (dimension, key, outcome) whatever the number of operations summed.
    for tally in (
        tallies.values("dimension", "key", "outcome")
        .annotate(total=Sum("count"), shown=Max("display"))
        .order_by()
    ):
        bar = counts[tally["dimension"]].setdefault(
            tally["key"], Bar(key=tally["key"], display=tally["shown"])
        )
        bar.add(tally["outcome"], tally["total"])
    snapshot_results = sum(bar.total for bar in counts[_ONE_PER_RESULT].values())
    # Label keys offered in the picker: a client may send thousands of distinct keys, so
    # only the first MAX_LABEL_KEYS (by name) are read and listed.
    label_keys = {
        d.removeprefix(LABEL_PREFIX)
        for d in OutcomeTally.objects.visible_to(scope)
        .filter(dimension__startswith=LABEL_PREFIX)
        .order_by("dimension")
        .values_list("dimension", flat=True)
        .distinct()[: MAX_LABEL_KEYS + 1]
    }
    dirty = _dirty_results(snapshot.watermark, scope)
    for row in dirty:
        keys = result_keys(row)
        now_outcome = _effective(row["outcome"], _human(row, ""))
        old_outcome = (
            _effective(row["outcome"], _human(row, "old_"))
            if row["ingested_at"] <= snapshot.watermark
            else None
        )
        for dimension, key, display in keys:
            if dimension.startswith(LABEL_PREFIX):
                label_keys.add(dimension.removeprefix(LABEL_PREFIX))
            if dimension not in counts:
                continue
            bar = counts[dimension].setdefault(key, Bar(key=key, display=display))
            if old_outcome is not None:
                bar.counts[old_outcome] -= 1
            bar.counts[now_outcome] += 1
        # Reviewed or not: before the snapshot (if it counted the result) and now.
        reviews = counts[REVIEW_DIMENSION]
        if old_outcome is not None:
            was = REVIEWED if row["reviewed_then"] else NOT_REVIEWED
            reviews.setdefault(was, Bar(key=was, display=was)).counts[old_outcome] -= 1
        now = REVIEWED if row["reviewed_now"] else NOT_REVIEWED
        reviews.setdefault(now, Bar(key=now, display=now)).counts[now_outcome] += 1
    charts = [_chart(d, counts[d].values()) for d in dimensions]
    return Dashboard(
        charts=charts,
        label_keys=sorted(label_keys)[:MAX_LABEL_KEYS],
        more_label_keys=len(label_keys) > MAX_LABEL_KEYS,
        label_key=label_key,
        snapshot=snapshot,
        snapshot_results=snapshot_results,
        live_results=len(dirty),
        newest=max(
            (
                (row["ingested_at"], row["pk"])
                for row in dirty
                if row["ingested_at"] > snapshot.watermark
            ),
            default=None,
        ),
        headline=_headline(counts[_ONE_PER_RESULT].values(), counts[REVIEW_DIMENSION]),
    )


def _headline(bars: Iterable[Bar], reviews: Mapping[str, Bar]) -> Headline:
    """Totals by outcome over every result (each counts under exactly one attack bar)."""
    totals = OutcomeCounts()
    for bar in bars:
        for outcome, n in bar.counts.items():
            totals.add(outcome, n)
    reviewed = reviews[REVIEWED].total if REVIEWED in reviews else 0
    return Headline(results=totals.total, counts=dict(totals.counts), reviewed=reviewed)


def _chart(dimension: str, bars: Iterable[Bar]) -> Chart:
    ordered: Sequence[Bar] = sorted(
        (b for b in bars if b.total > 0), key=lambda b: (-b.total, b.display)
    )
    return Chart(dimension, list(ordered[:MAX_BARS]), hidden=max(0, len(ordered) - MAX_BARS))
