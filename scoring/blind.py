"""Blind double review: which attack results need several independent human verdicts, where
each one's review stands, and the rule other modules apply to human verdicts.

A ReviewRequirement (admin, per operation) says that results matching a label value or a
harm category need N >= 2 verdicts. For such a result (memory.models.ReviewStatus):

- PENDING while fewer than N reviewers have a standing objective or scale verdict: those
  verdicts are sealed (Score.sealed; ScoreQuerySet.visible_to shows a sealed verdict only to
  its author and to reviewers who recorded their own on the result, so pages, the API and
  exports never hand one to anyone else), and they do not decide the outcome: the automated
  outcome stands, shown as "awaiting further verdicts";
- AGREED when N reviewers' verdicts agree (success or not): they decide;
- DISPUTED when they disagree: the result waits in the adjudication queue
  (/review/adjudication/), where an adjudicator of its operation, who gave none of the
  verdicts, records the final verdict (Score.final); until then the automated outcome stands.
  Once disputed, the verdicts are no longer sealed: the adjudicator (and any reader of the
  operation) sees them side by side;
- ADJUDICATED once a final verdict stands: it decides, whatever the reviewers said.

The status is kept on the result (AttackResult.review_status / review_required) and the seal
on its verdicts, refreshed under a row lock by every verdict write (scoring.services) and by
every requirement change (refresh_review_states), so reads are plain column filters.

For other modules (calibration metrics, human-label exports): `settled_q()` keeps the human
verdicts that count, `pending_result_ids()` names the results whose verdicts must not count
or be exported yet. scoring.review's `human_scores()` / `decides_outcome()` apply the same
rule to outcomes.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef, Q

from memory.models import (
    AttackResult,
    ReviewStatus,
    Score,
    ScoreSource,
    VerdictField,
)
from scoring.models import ReviewRequirement

# Statuses under which the human verdicts do not decide (the automated outcome stands).
UNDECIDED = (ReviewStatus.PENDING, ReviewStatus.DISPUTED)
REFRESH_CHUNK = 500
_ORDER = ("-final", "-timestamp", "verdict_field", "-ingested_at")


def settled_q(prefix: str = "") -> Q:
    """Condition on Score rows (reached through `prefix`, e.g. "scores__") keeping every
    automated score and the human verdicts that count: not on a result still awaiting
    independent verdicts or in adjudication, and, on an adjudicated result, only the final
    verdict. The one filter calibration and human-label exports apply to verdicts."""
    human = Q(**{f"{prefix}source": ScoreSource.HUMAN})
    undecided = Q(**{f"{prefix}attack_result__review_status__in": list(UNDECIDED)})
    overruled = Q(
        **{
            f"{prefix}attack_result__review_status": ReviewStatus.ADJUDICATED,
            f"{prefix}final": False,
        }
    )
    return ~(human & (undecided | overruled))


def pending_result_ids(result_ids: Iterable[uuid.UUID]) -> set[uuid.UUID]:
    """Of these attack results, those whose human verdicts must not count or be exported yet:
    awaiting further independent verdicts, or disagreeing and not yet adjudicated (one
    query)."""
    ids = list(result_ids)
    if not ids:
        return set()
    return set(
        AttackResult.objects.filter(pk__in=ids, review_status__in=list(UNDECIDED)).values_list(
            "attack_result_id", flat=True
        )
    )


def counts(review_status: str, final: bool) -> bool:
    """Whether a (standing, outcome-deciding) human verdict counts under its result's review
    status: the rule `settled_q` writes for queries."""
    if review_status in UNDECIDED:
        return False
    return final or review_status != ReviewStatus.ADJUDICATED


# --- requirements ---------------------------------------------------------------------------


def load_requirements() -> list[ReviewRequirement]:
    """Every requirement (a short admin-made list): one query."""
    return list(ReviewRequirement.objects.order_by("-required_verdicts", "pk"))


def merged_labels(result_labels: Any, conversation_labels: Any) -> dict[str, Any]:
    """The labels a requirement reads: the conversation's, overridden by the result's."""
    merged: dict[str, Any] = {}
    for labels in (conversation_labels, result_labels):
        if isinstance(labels, dict):
            merged.update(labels)
    return merged


def required_verdicts(
    requirements: Sequence[ReviewRequirement],
    operation_id: int | None,
    labels: dict[str, Any],
    categories: Any,
) -> int:
    """How many independent verdicts a result needs: the largest matching requirement's, 1
    when none matches."""
    cats = categories if isinstance(categories, list) else []
    return max(
        (r.required_verdicts for r in requirements if r.matches(operation_id, labels, cats)),
        default=1,
    )


# --- status ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Verdict:
    """One standing outcome answer on a result, as the status reads it (newest first)."""

    reviewer: Any  # the reviewer's id (or the review's submission once the account is gone)
    success: bool | None
    final: bool


def review_status(required: int, verdicts: Iterable[Verdict]) -> str:
    """A result's review status from its standing outcome answers, newest first: each
    reviewer's latest answer counts once."""
    if required <= 1:
        return ReviewStatus.SINGLE
    latest: dict[Any, bool] = {}
    for verdict in verdicts:
        if verdict.success is None:
            continue
        if verdict.final:
            return ReviewStatus.ADJUDICATED
        latest.setdefault(verdict.reviewer, verdict.success)
    if len(latest) < required:
        return ReviewStatus.PENDING
    return ReviewStatus.AGREED if len(set(latest.values())) == 1 else ReviewStatus.DISPUTED


def _verdicts(result_ids: Sequence[Any]) -> dict[Any, list[Verdict]]:
    """Standing outcome answers of these results, newest first (final ones first): one query."""
    from scoring.review import verdict_success

    rows = (
        Score.objects.filter(
            source=ScoreSource.HUMAN, attack_result_id__in=list(result_ids), withdrawn_at=None
        )
        .exclude(verdict_field=VerdictField.CATEGORY)
        .order_by(*_ORDER)
        .values_list(
            "attack_result_id",
            "reviewer_id",
            "verdict_submission",
            "score_type",
            "score_value",
            "final",
        )
    )
    found: dict[Any, list[Verdict]] = {}
    for result_id, reviewer_id, submission, score_type, value, final in rows:
        found.setdefault(result_id, []).append(
            Verdict(
                reviewer=reviewer_id if reviewer_id is not None else f"gone:{submission}",
                success=verdict_success(score_type, value),
                final=bool(final),
            )
        )
    return found


_STATE_FIELDS = (
    "attack_result_id",
    "operation_id",
    "labels",
    "conversation__labels",
    "targeted_harm_categories",
    "review_status",
    "review_required",
)


@dataclass(frozen=True)
class Change:
    """A result whose review status (or required count) a refresh changed."""

    result_id: Any
    before: str
    after: str
    required: int


def _apply(
    rows: Sequence[dict[str, Any]], requirements: Sequence[ReviewRequirement]
) -> list[Change]:
    """Recompute these results' statuses, store what changed and (re)seal their verdicts."""
    verdicts = _verdicts([row["attack_result_id"] for row in rows])
    changes: list[Change] = []
    for row in rows:
        pk = row["attack_result_id"]
        labels = merged_labels(row["labels"], row["conversation__labels"])
        required = required_verdicts(
            requirements, row["operation_id"], labels, row["targeted_harm_categories"]
        )
        status = review_status(required, verdicts.get(pk, []))
        if status != row["review_status"] or required != row["review_required"]:
            AttackResult.objects.filter(pk=pk).update(
                review_status=status, review_required=required
            )
            changes.append(Change(pk, row["review_status"], status, required))
        sealed = status == ReviewStatus.PENDING
        Score.objects.filter(attack_result_id=pk, source=ScoreSource.HUMAN).exclude(
            sealed=sealed
        ).update(sealed=sealed)
    return changes


def lock_result(result_id: Any) -> dict[str, Any] | None:
    """Lock an attack result's row for a review write (PostgreSQL: concurrent verdicts on one
    result are counted one after the other) and read what its status needs: one query."""
    row: dict[str, Any] | None = (
        AttackResult.objects.select_for_update(of=("self",))
        .filter(pk=result_id)
        .values(*_STATE_FIELDS)
        .first()
    )
    return row


@transaction.atomic
def refresh_review_state(
    result_id: Any, requirements: Sequence[ReviewRequirement] | None = None
) -> tuple[str, str]:
    """Recompute one result's review status after a verdict write: (before, after).

    Queries: the locked row, the requirements (unless given), its standing answers, the
    seal UPDATE, and the row UPDATE when the status changed.
    """
    row = lock_result(result_id)
    if row is None:
        return ReviewStatus.SINGLE, ReviewStatus.SINGLE
    before = str(row["review_status"])
    changes = _apply([row], load_requirements() if requirements is None else requirements)
    return before, changes[0].after if changes else before


def _chunks(ids: list[Any]) -> Iterator[list[Any]]:
    for start in range(0, len(ids), REFRESH_CHUNK):
        yield ids[start : start + REFRESH_CHUNK]


@transaction.atomic
def refresh_review_states(operation_ids: Iterable[int] | None = None) -> list[Change]:
    """Recompute the review status of every result a requirement change may affect (those
    with a human verdict, or a status already), in the given operations (None: all), in
    chunks; the conversations' outcome summaries and, when a status changed, the dashboard's
    tallies follow. Returns what changed."""
    from scoring.services import refresh_conversation_outcomes

    requirements = load_requirements()
    candidates = AttackResult.objects.filter(
        Q(Exists(Score.objects.filter(attack_result_id=OuterRef("pk"), source=ScoreSource.HUMAN)))
        | ~Q(review_status=ReviewStatus.SINGLE)
        | ~Q(review_required=1)
    )
    if operation_ids is not None:
        candidates = candidates.filter(operation_id__in=sorted(set(operation_ids)))
    ids = list(candidates.order_by("pk").values_list("pk", flat=True))
    changes: list[Change] = []
    for chunk in _chunks(ids):
        rows = list(
            AttackResult.objects.select_for_update(of=("self",))
            .filter(pk__in=chunk)
            .order_by("pk")
            .values(*_STATE_FIELDS)
        )
        changes.extend(_apply(rows, requirements))
    moved = [c.result_id for c in changes if c.before != c.after]
    if moved:
        refresh_conversation_outcomes(moved)
        # The dashboard counted these results under their former status.
        from scoring.tallies import retally

        retally(moved)
    return changes
