"""Adjudication of blind double reviews, and how each reviewer agrees with the outcome.

A result whose independent verdicts disagree (ReviewStatus.DISPUTED, scoring.blind) waits in
the adjudication queue. An adjudicator (the `adjudicator` role, or lead, in the result's
live operation) who gave none of its verdicts records the final verdict: a human Score like
any review's, marked `final`, which decides the outcome over the reviewers' ones; it is
audited as `verdict.adjudicated` with the verdicts it settles. Its author may correct or
undo it from "my verdicts" like any review (the result then returns to the queue).

Per reviewer (`reviewer_stats`): items reviewed, agreement with the final verdict of the
results whose blind review is settled (AGREED or ADJUDICATED), and Cohen's kappa
(redteam.core.calibration.cohen_kappa) for each pair of reviewers with at least
MIN_SHARED_ITEMS results both judged. Verdicts are compared as success / no success.
"""

from __future__ import annotations

import math
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import QuerySet

from memory.models import AttackResult, ReviewStatus, Score, ScoreSource, VerdictField
from redteam.common.access import Scope
from redteam.common.audit import record_audit
from redteam.common.typing import User
from redteam.core.calibration import cohen_kappa
from scoring.blind import lock_result, refresh_review_state
from scoring.review import verdict_success
from scoring.services import (
    _latest_deciding,
    _refresh_conversation_outcome,
    _store_review,
    _summary,
    review_answers,
)
from scoring.verdict_fields import VerdictAnswers, VerdictFields

# What an adjudicator answers: the objective, true or false (the scale is the reviewers').
ADJUDICATION_FIELDS = VerdictFields(true_false=True, scale=False, notes=True)
# Pairs of reviewers need this many results both judged before their kappa is shown.
MIN_SHARED_ITEMS = 10
# The reviewers page reads at most this many verdicts of an operation (newest first).
MAX_STATS_VERDICTS = 20_000


def adjudicable_operation_ids(scope: Scope) -> frozenset[int] | None:
    """Operations where the scope may adjudicate (None: every live one, a superuser)."""
    if scope.everything:
        return None
    return frozenset(op for op in scope.roles if scope.may_adjudicate(op))


def may_adjudicate_somewhere(scope: Scope) -> bool:
    """True when the scope may adjudicate in at least one operation."""
    allowed = adjudicable_operation_ids(scope)
    return allowed is None or bool(allowed)


def disputed_results(scope: Scope) -> QuerySet[AttackResult]:
    """The results in adjudication that the scope may adjudicate, oldest first."""
    qs = AttackResult.objects.visible_to(scope).filter(review_status=ReviewStatus.DISPUTED)
    allowed = adjudicable_operation_ids(scope)
    if allowed is not None:
        qs = qs.filter(operation_id__in=sorted(allowed))
    else:
        qs = qs.exclude(operation_id__in=sorted(scope.archived))
    return qs.order_by("ingested_at", "attack_result_id")


def standing_verdicts(result_ids: list[Any]) -> dict[Any, list[Score]]:
    """The standing human verdicts of these results (every answer, newest first), with their
    reviewer: one query. Only called for results in adjudication or settled, whose verdicts
    are no longer sealed."""
    found: dict[Any, list[Score]] = {}
    rows = (
        Score.objects.filter(
            source=ScoreSource.HUMAN, attack_result_id__in=result_ids, withdrawn_at=None
        )
        .select_related("reviewer")
        .order_by("-final", "-timestamp", "verdict_field", "-ingested_at")
    )
    for score in rows:
        found.setdefault(score.attack_result_id, []).append(score)
    return found


@transaction.atomic
def adjudicate(
    *,
    attack_result: AttackResult,
    adjudicator: User,
    scope: Scope,
    answers: VerdictAnswers,
    submission: uuid.UUID | None,
) -> list[Score]:
    """Record the final verdict on a result in adjudication, audited as `verdict.adjudicated`.

    PermissionDenied unless the adjudicator may adjudicate in the result's (live) operation;
    ValidationError when the result is not (or no longer) in adjudication, when the
    adjudicator gave one of its verdicts, or for an invalid answer. The same form posted
    again returns the rows the first post stored.
    """
    if not adjudicator.is_authenticated or not scope.may_adjudicate(attack_result.operation_id):
        raise PermissionDenied("Adjudicating needs the adjudicator role in this operation.")
    stored, rationale, notes = review_answers(answers)
    if submission is not None:
        again = list(
            Score.objects.filter(
                reviewer_id=adjudicator.pk, verdict_submission=submission, final=True
            )
        )
        if again:
            return again
    # The row lock orders this after any verdict being recorded on the result meanwhile.
    row = lock_result(attack_result.pk)
    if row is None or row["review_status"] != ReviewStatus.DISPUTED:
        raise ValidationError("This result is not in adjudication.", code="not_disputed")
    disputed = standing_verdicts([attack_result.pk]).get(attack_result.pk, [])
    if any(s.reviewer_id == adjudicator.pk for s in disputed):
        raise ValidationError(
            "You gave one of this result's verdicts: another adjudicator decides it.",
            code="own_review",
        )
    scores, created = _store_review(
        attack_result=attack_result,
        reviewer=adjudicator,
        answers=stored,
        rationale=rationale,
        notes=notes,
        submission=submission or uuid.uuid4(),
        final=True,
    )
    if not created:
        return scores
    _, status = refresh_review_state(attack_result.pk)
    _refresh_conversation_outcome(attack_result, _latest_deciding(attack_result))
    final = scores[0]
    record_audit(
        actor=adjudicator,
        action="verdict.adjudicated",
        object_type="attack_result",
        object_id=attack_result.pk,
        detail={
            "score_id": str(final.id),
            "score_type": final.score_type,
            "score_value": final.score_value,
            "submission": str(final.verdict_submission),
            "scores": _summary(scores),
            "notes": notes,
            "disputed": _summary([s for s in disputed if s.verdict_field != VerdictField.CATEGORY]),
            "automated_outcome": attack_result.outcome,
            "review_status": status,
        },
    )
    return scores


# --- per-reviewer agreement -------------------------------------------------------------------


@dataclass
class ReviewerStats:
    """One reviewer's record in an operation."""

    reviewer_id: int
    name: str
    reviewed: int = 0
    settled: int = 0
    agreed: int = 0

    @property
    def agreement(self) -> float | None:
        """Share of their settled items where they agreed with the final verdict."""
        return self.agreed / self.settled if self.settled else None


@dataclass
class PairStats:
    """Two reviewers' agreement on the results both judged."""

    first: str
    second: str
    shared: int
    kappa: float | None  # None below MIN_SHARED_ITEMS (or undefined: one label only)
    agreed: int


@dataclass
class Agreement:
    """The reviewers page of one operation."""

    reviewers: list[ReviewerStats] = field(default_factory=list)
    pairs: list[PairStats] = field(default_factory=list)
    verdicts_read: int = 0
    truncated: bool = False


def reviewer_stats(operation_id: int) -> Agreement:
    """Items reviewed, agreement with the final verdict and pairwise kappas of the reviewers
    of one operation, from its standing outcome answers (at most MAX_STATS_VERDICTS, newest
    first): one query for the verdicts (+ reviewer names and result statuses)."""
    rows = list(
        Score.objects.filter(
            source=ScoreSource.HUMAN,
            operation_id=operation_id,
            attack_result__isnull=False,
            withdrawn_at=None,
            reviewer__isnull=False,
        )
        .exclude(verdict_field=VerdictField.CATEGORY)
        .order_by("-timestamp", "verdict_field", "-ingested_at")
        .values_list(
            "attack_result_id",
            "reviewer_id",
            "reviewer__username",
            "score_type",
            "score_value",
            "final",
            "attack_result__review_status",
        )[: MAX_STATS_VERDICTS + 1]
    )
    truncated = len(rows) > MAX_STATS_VERDICTS
    rows = rows[:MAX_STATS_VERDICTS]
    # Each reviewer's latest answer per result; the adjudicated results' final verdicts.
    judged: dict[Any, dict[int, bool]] = {}
    finals: dict[Any, bool] = {}
    statuses: dict[Any, str] = {}
    names: dict[int, str] = {}
    for result_id, reviewer_id, username, score_type, value, final, status in rows:
        success = verdict_success(score_type, value)
        if success is None:
            continue
        statuses[result_id] = status
        if final:
            finals.setdefault(result_id, success)
            continue
        names[reviewer_id] = username
        judged.setdefault(result_id, {}).setdefault(reviewer_id, success)
    stats = {pk: ReviewerStats(reviewer_id=pk, name=name) for pk, name in names.items()}
    for result_id, by_reviewer in judged.items():
        status = statuses[result_id]
        outcome: bool | None = None
        if status == ReviewStatus.ADJUDICATED:
            outcome = finals.get(result_id)
        elif status == ReviewStatus.AGREED:
            outcome = next(iter(by_reviewer.values()))
        for reviewer_id, success in by_reviewer.items():
            entry = stats[reviewer_id]
            entry.reviewed += 1
            if outcome is not None:
                entry.settled += 1
                entry.agreed += int(success == outcome)
    return Agreement(
        reviewers=sorted(stats.values(), key=lambda s: (-s.reviewed, s.name)),
        pairs=_pairs(judged, names),
        verdicts_read=len(rows),
        truncated=truncated,
    )


def _pairs(judged: dict[Any, dict[int, bool]], names: dict[int, str]) -> list[PairStats]:
    """Cohen's kappa of every pair of reviewers over the results both judged."""
    shared: dict[tuple[int, int], tuple[list[bool], list[bool]]] = {}
    for by_reviewer in judged.values():
        ids = sorted(by_reviewer)
        for i, first in enumerate(ids):
            for second in ids[i + 1 :]:
                a, b = shared.setdefault((first, second), ([], []))
                a.append(by_reviewer[first])
                b.append(by_reviewer[second])
    pairs = []
    for (first, second), (a, b) in shared.items():
        kappa: float | None = None
        if len(a) >= MIN_SHARED_ITEMS:
            value = cohen_kappa(a, b)
            kappa = None if math.isnan(value) else value
        pairs.append(
            PairStats(
                first=names[first],
                second=names[second],
                shared=len(a),
                kappa=kappa,
                agreed=sum(1 for x, y in zip(a, b, strict=True) if x == y),
            )
        )
    return sorted(pairs, key=lambda p: (-p.shared, p.first, p.second))
