"""Human verdicts: a reviewer's judgement of an attack result, stored as PyRIT Scores.

A review (one submitted form) is one ordinary Score row (memory.models.Score) per answered
field, from a per-reviewer human scorer identifier, with `source` human, sharing the form's
`verdict_submission`; the latest objective or scale verdict on a result is its effective
outcome (scoring.review). Its author may correct it (edit_review) or withdraw it
(withdraw_review); the earlier rows stay, marked withdrawn, as its history.
"""

from __future__ import annotations

import math
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from memory.bulk import store_identifier_uses
from memory.models import (
    AttackResult,
    Conversation,
    MessagePiece,
    Score,
    ScoreSource,
    VerdictField,
)
from memory.parsing import ParsedIdentifier, parse_identifier
from redteam.common.access import Scope
from redteam.common.audit import record_audit
from redteam.common.typing import User
from redteam.core.identity import LINE_PYRIT_VERSIONS, ComponentIdentifier
from scoring.blind import refresh_review_state
from scoring.review import effective_outcome, human_scores
from scoring.tallies import retally
from scoring.verdict_fields import (
    MAX_CATEGORY_CHARS,
    MAX_NOTES_CHARS,
    VerdictAnswers,
    VerdictFields,
)

if TYPE_CHECKING:
    from django.contrib.auth.models import User as AccountUser

HUMAN_SCORER_CLASS = "HumanReviewScorer"
HUMAN_SCORER_MODULE = "redteam.review"
VERDICT_DESCRIPTION = "Human reviewer verdict"
CATEGORY_DESCRIPTION = "Human reviewer category"
MAX_RATIONALE_CHARS = 10_000


def human_scorer_identifier(username: str) -> ParsedIdentifier:
    """The human scorer's identifier (one per reviewer), parsed as ingestion parses dumps."""
    identifier = ComponentIdentifier(
        class_name=HUMAN_SCORER_CLASS,
        class_module=HUMAN_SCORER_MODULE,
        params={"reviewer": username},
        pyrit_version=LINE_PYRIT_VERSIONS["1.1"],
    )
    # A leaf scorer's eval hash is its content hash (as PyRIT stamps on HumanReviewScorer).
    dump = identifier.with_eval_hash(identifier.hash).model_dump()
    errors: list[Any] = []
    parsed = parse_identifier(dump, "scorer_class_identifier", legacy=False, errors=errors)
    if parsed is None:  # pragma: no cover - the dump above is well-formed by construction
        raise ValueError(f"human scorer identifier rejected: {errors}")
    return parsed


def _score_value(value: bool | float, score_type: str) -> str:
    if score_type == "true_false":
        if not isinstance(value, bool):
            raise ValidationError("A true/false verdict needs a boolean value.", code="invalid")
        return "true" if value else "false"
    if score_type == "float_scale":
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ValidationError("A 0..1 verdict needs a number.", code="invalid")
        number = float(value)
        if math.isnan(number) or not 0.0 <= number <= 1.0:
            raise ValidationError("A 0..1 verdict must be between 0 and 1.", code="out_of_range")
        return repr(number)
    raise ValidationError("Verdicts are true_false or float_scale.", code="invalid_type")


@dataclass(frozen=True)
class _Answer:
    """One Score a review stores: which field, and its PyRIT value, type and category."""

    field: str
    score_type: str
    score_value: str
    category: str | None = None


def _clean_rationale(rationale: str) -> str:
    rationale = (rationale or "").strip()
    if not rationale:
        raise ValidationError("Give a rationale for the verdict.", code="required")
    if len(rationale) > MAX_RATIONALE_CHARS:
        raise ValidationError(
            f"The rationale is limited to {MAX_RATIONALE_CHARS} characters.", code="max_length"
        )
    return rationale


def review_answers(answers: VerdictAnswers) -> tuple[list[_Answer], str, str]:
    """The Scores a review stores, its rationale and its notes, validated against the fields
    the form asked for (ValidationError naming what is wrong)."""
    asked = answers.fields
    stored: list[_Answer] = []
    unasked = [
        name
        for name, given, wanted in (
            ("true/false", answers.objective is not None, asked.true_false),
            ("0..1 scale", answers.scale is not None, asked.scale),
            ("category", answers.category is not None, asked.category),
            ("notes", bool(answers.notes), asked.notes),
        )
        if given and not wanted
    ]
    if unasked:
        raise ValidationError(
            f"This review does not ask for: {', '.join(unasked)}.", code="not_asked"
        )
    if answers.objective is not None:
        value = _score_value(answers.objective, "true_false")
        stored.append(_Answer(VerdictField.OBJECTIVE, "true_false", value))
    if answers.scale is not None:
        value = _score_value(answers.scale, "float_scale")
        stored.append(_Answer(VerdictField.SCALE, "float_scale", value))
    if answers.category is not None:
        category = answers.category.strip() if isinstance(answers.category, str) else ""
        if len(category) > MAX_CATEGORY_CHARS or category not in asked.categories:
            raise ValidationError(
                "Choose one of the categories: " + ", ".join(asked.categories) + ".",
                code="invalid_category",
            )
        stored.append(_Answer(VerdictField.CATEGORY, "true_false", "true", category))
    if not stored:
        raise ValidationError("Answer at least one of the review's questions.", code="required")
    notes = (answers.notes or "").strip()
    if len(notes) > MAX_NOTES_CHARS:
        raise ValidationError(
            f"The notes are limited to {MAX_NOTES_CHARS} characters.", code="max_length"
        )
    return stored, _clean_rationale(answers.rationale), notes


def _answer_score(
    answer: _Answer,
    *,
    attack_result: AttackResult,
    reviewer: AccountUser,
    rationale: str,
    notes: str,
    piece_id: Any,
    scorer: ParsedIdentifier,
    submission: uuid.UUID,
    now: datetime,
    final: bool = False,
) -> Score:
    """The (unsaved) human Score of one answer, shaped as PyRIT's Score."""
    metadata: dict[str, Any] = {}
    if answer.category is not None:
        metadata["category"] = answer.category
        category: list[str] | None = [answer.category]
        description = CATEGORY_DESCRIPTION
    else:
        category = list(attack_result.targeted_harm_categories or []) or None
        description = VERDICT_DESCRIPTION
    if notes:
        metadata["notes"] = notes
    if final:
        # Exports carry PyRIT's Score fields only: the metadata says it is the final one.
        metadata["final"] = True
    return Score(
        id=uuid.uuid4(),
        operation_id=attack_result.operation_id,
        score_value=answer.score_value,
        status="complete",
        score_value_description=description,
        score_type=answer.score_type,
        score_category=category,
        score_rationale=rationale,
        score_metadata=metadata,
        scorer_identifier_id=scorer.hash,
        scorer_dump_id=scorer.digest,
        scorer_class=HUMAN_SCORER_CLASS,
        message_piece_id=piece_id,
        timestamp=now,
        objective=attack_result.objective,
        pyrit_version=LINE_PYRIT_VERSIONS["1.1"],
        source=ScoreSource.HUMAN,
        attack_result=attack_result,
        reviewer=reviewer,
        verdict_submission=submission,
        verdict_field=answer.field,
        final=final,
    )


def _same_review(
    stored: list[Score], attack_result: AttackResult, answers: list[_Answer], rationale: str
) -> bool:
    """Whether the rows a submission stored are the review now posted again."""
    posted = {(a.field, a.score_type, a.score_value) for a in answers}
    kept = {(s.verdict_field, s.score_type, s.score_value) for s in stored}
    return (
        posted == kept
        and all(s.attack_result_id == attack_result.pk for s in stored)
        and all(s.score_rationale == rationale for s in stored)
    )


def _summary(scores: list[Score]) -> list[dict[str, Any]]:
    """What an audit event keeps of a review's scores."""
    return [
        {
            "score_id": str(s.id),
            "field": s.verdict_field,
            "score_type": s.score_type,
            "score_value": s.score_value,
            "category": (s.score_metadata or {}).get("category"),
            "rationale": s.score_rationale,
            "final": s.final,
        }
        for s in scores
    ]


def refresh_conversation_outcomes(result_ids: list[Any]) -> None:
    """Set the conversation summaries of these results from their current deciding verdicts
    (after their blind-review status changed): two queries, then one UPDATE per result."""
    results = list(AttackResult.objects.filter(pk__in=result_ids))
    latest: dict[Any, Score] = {}
    for score in human_scores().filter(attack_result_id__in=result_ids):
        latest.setdefault(score.attack_result_id, score)
    for result in results:
        _refresh_conversation_outcome(result, latest.get(result.pk))


def _refresh_conversation_outcome(attack_result: AttackResult, human: Score | None) -> None:
    """Set the conversation list's summary outcome from `human` (the result's latest deciding
    verdict, None for the automated outcome), when this is the conversation's newest result."""
    conversation = Conversation.objects.filter(pk=attack_result.conversation_id)
    if attack_result.timestamp is not None:
        newer = AttackResult.objects.filter(
            conversation_id=OuterRef("pk"), timestamp__gt=attack_result.timestamp
        )
        conversation = conversation.filter(~Exists(newer))
    conversation.update(outcome=effective_outcome(attack_result.outcome, human))


def _may_review(reviewer: User, scope: Scope, attack_result: AttackResult) -> None:
    if not reviewer.is_authenticated or not scope.may_record_verdicts(attack_result.operation_id):
        raise PermissionDenied("Recording verdicts needs the reviewer role in this operation.")


def _store_review(
    *,
    attack_result: AttackResult,
    reviewer: AccountUser,
    answers: list[_Answer],
    rationale: str,
    notes: str,
    submission: uuid.UUID,
    before_insert: Callable[[], None] | None = None,
    final: bool = False,
) -> tuple[list[Score], bool]:
    """INSERT a review's Scores (all or none); (scores, created). A submission already stored
    returns its rows when they hold the same review, else a ValidationError."""
    scorer = human_scorer_identifier(reviewer.get_username())
    store_identifier_uses([(scorer, attack_result.operation_id)])
    # PyRIT scores attach to pieces through original_prompt_id; the last response may not
    # have arrived (no FK constraint), in which case the scores hang off the result only.
    piece_id = None
    if attack_result.last_response_id is not None:
        piece_id = (
            MessagePiece.objects.filter(pk=attack_result.last_response_id)
            .values_list("original_prompt_id", flat=True)
            .first()
        )
    now = timezone.now()
    rows = [
        _answer_score(
            answer,
            attack_result=attack_result,
            reviewer=reviewer,
            rationale=rationale,
            notes=notes,
            piece_id=piece_id,
            scorer=scorer,
            submission=submission,
            now=now,
            final=final,
        )
        for answer in answers
    ]
    try:
        # A savepoint, so a refused duplicate leaves the outer transaction usable.
        with transaction.atomic():
            if before_insert is not None:
                before_insert()
            # Inserted last, the objective answer is the newest row of its review wherever
            # verdicts are read newest first: it decides over the scale (scoring.review).
            Score.objects.bulk_create(rows[::-1])
    except IntegrityError:
        stored = list(
            Score.objects.filter(reviewer=reviewer, verdict_submission=submission).order_by(
                "verdict_field"
            )
        )
        if not stored:
            raise
        if not _same_review(stored, attack_result, answers, rationale):
            raise ValidationError(
                "This form was already submitted with another verdict; reload the page to "
                "record a new one.",
                code="resubmitted",
            ) from None
        return stored, False
    return rows, True


def _deciding(scores: list[Score]) -> Score | None:
    """The answer of a review that would decide the outcome (objective before scale)."""
    return next(
        (
            s
            for s in sorted(scores, key=lambda s: s.verdict_field)
            if s.withdrawn_at is None and s.verdict_field != VerdictField.CATEGORY
        ),
        None,
    )


def _after_write(attack_result: AttackResult, touched_outcome: bool) -> tuple[str, str]:
    """Refresh the result's blind-review status, then (when an outcome answer changed, or
    the status did) the conversation summary from the deciding verdict now: (before,
    after) status."""
    before, after = refresh_review_state(attack_result.pk)
    if touched_outcome or before != after:
        _refresh_conversation_outcome(attack_result, _latest_deciding(attack_result))
    return before, after


@transaction.atomic
def record_review(
    *,
    attack_result: AttackResult,
    reviewer: User,
    scope: Scope,
    answers: VerdictAnswers,
    submission: uuid.UUID | None,
) -> list[Score]:
    """Store a reviewer's review of an attack result, one human Score per answered field, and
    audit it as one event.

    objective -> a `true_false` Score; scale -> a `float_scale` Score; category -> a
    `true_false` "true" Score whose `score_category` is [category] and whose
    `score_metadata["category"]` holds it; notes -> `score_metadata["notes"]` of every Score.
    The objective and scale Scores carry the result's harm categories, as record_verdict did.

    `submission` is the review form's one-time token: the same form posted again (double
    click, retry, concurrent requests) returns the rows the first post stored, enforced by
    the `verdict_submitted_once` unique constraint rather than a check before the insert
    (None: a fresh token, nothing to repeat).

    `scope` is the reviewer's (redteam.common.access): it must allow verdicts in the
    result's operation. Queries: INSERT identifier, INSERT dump, SELECT the last response's
    original_prompt_id, INSERT the answers' scores; the blind-review refresh (lock the
    result, requirements, its answers, seal UPDATE, status UPDATE when it changed); the
    deciding verdict and the conversation's outcome summary UPDATE (when an answer decides
    the outcome); INSERT audit event. A repeated submission stops after the refused INSERT
    with one SELECT of the stored rows.
    """
    _may_review(reviewer, scope, attack_result)
    stored, rationale, notes = review_answers(answers)
    scores, created = _store_review(
        attack_result=attack_result,
        reviewer=reviewer,  # type: ignore[arg-type]
        answers=stored,
        rationale=rationale,
        notes=notes,
        submission=submission or uuid.uuid4(),
    )
    if not created:
        return scores
    deciding = _deciding(scores)
    # The conversation list reads this summary column, which follows the conversation's
    # newest result; human verdicts take precedence, so a verdict on that result updates it
    # (once blind review lets verdicts decide).
    _, status = _after_write(attack_result, deciding is not None)
    retally([attack_result.pk])
    first = deciding or scores[0]
    record_audit(
        actor=reviewer,
        action="verdict.recorded",
        object_type="attack_result",
        object_id=attack_result.pk,
        detail={
            # The deciding answer (else the first) at the top, every answer under "scores".
            "score_id": str(first.id),
            "score_type": first.score_type,
            "score_value": first.score_value,
            "submission": str(first.verdict_submission),
            "scores": _summary(scores),
            "notes": notes,
            "automated_outcome": attack_result.outcome,
            "review_status": status,
        },
    )
    return scores


def record_verdict(
    *,
    attack_result: AttackResult,
    reviewer: User,
    scope: Scope,
    value: bool | float,
    score_type: str,
    rationale: str,
    submission: uuid.UUID | None = None,
) -> Score:
    """Store one true/false or 0..1 verdict (a review asking that one field): record_review."""
    _may_review(reviewer, scope, attack_result)
    if score_type == "true_false":
        if not isinstance(value, bool):
            raise ValidationError("A true/false verdict needs a boolean value.", code="invalid")
        answers = VerdictAnswers(rationale=rationale, objective=value, fields=VerdictFields())
    elif score_type == "float_scale":
        if isinstance(value, bool):
            raise ValidationError("A 0..1 verdict needs a number.", code="invalid")
        answers = VerdictAnswers(
            rationale=rationale,
            scale=value,
            fields=VerdictFields(true_false=False, scale=True),
        )
    else:
        raise ValidationError("Verdicts are true_false or float_scale.", code="invalid_type")
    [score] = record_review(
        attack_result=attack_result,
        reviewer=reviewer,
        scope=scope,
        answers=answers,
        submission=submission,
    )
    return score


def review_rows(reviewer: User, scope: Scope, submission: uuid.UUID) -> list[Score]:
    """The visible Scores of one of the reviewer's reviews (empty when none: a 404), with
    their attack result (one query)."""
    return list(
        Score.objects.visible_to(scope)
        .filter(
            reviewer_id=reviewer.pk,
            verdict_submission=submission,
            source=ScoreSource.HUMAN,
            attack_result__isnull=False,
        )
        .select_related("attack_result")
        .order_by("verdict_field")
    )


def _standing(
    reviewer: User, scope: Scope, submission: uuid.UUID
) -> tuple[list[Score], AttackResult]:
    """A review's rows and its result, for its author while they may record verdicts in its
    operation (Score.DoesNotExist for another's or an unknown review; PermissionDenied)."""
    rows = review_rows(reviewer, scope, submission)
    if not rows:
        raise Score.DoesNotExist("No such verdict of yours.")
    attack_result = rows[0].attack_result
    assert attack_result is not None
    _may_review(reviewer, scope, attack_result)
    return rows, attack_result


def _latest_deciding(attack_result: AttackResult) -> Score | None:
    return human_scores().filter(attack_result_id=attack_result.pk).first()


@transaction.atomic
def edit_review(
    *,
    reviewer: User,
    scope: Scope,
    submission: uuid.UUID,
    answers: VerdictAnswers,
    correction: uuid.UUID,
) -> list[Score]:
    """Replace one of the reviewer's standing reviews by a corrected one, audited as one
    `verdict.edited` event holding both.

    The corrected review is recorded as record_review records one (new rows, now); the
    earlier rows stay, withdrawn by the reviewer and `superseded_by` the correction, as its
    history. `correction` is the edit form's one-time token: the same edit posted again
    returns the correction's rows. Raises Score.DoesNotExist for a review that is not the
    reviewer's (or not visible), PermissionDenied once they may no longer record verdicts in
    its operation, ValidationError for an invalid answer or a review already withdrawn.
    """
    rows, attack_result = _standing(reviewer, scope, submission)
    stored, rationale, notes = review_answers(answers)
    standing = [r for r in rows if r.withdrawn_at is None]
    repeated = [r for r in rows if r.superseded_by == correction]
    if not standing and not repeated:
        raise ValidationError("This verdict was already withdrawn.", code="withdrawn")
    now = timezone.now()

    def withdraw() -> None:
        # Only rows still standing: an undo or another edit that got there first wins.
        updated = Score.objects.filter(
            pk__in=[r.pk for r in standing], withdrawn_at__isnull=True
        ).update(withdrawn_at=now, withdrawn_by_id=reviewer.pk, superseded_by=correction)
        if updated != len(standing):
            raise ValidationError(
                "This verdict changed meanwhile; reload the page.", code="changed"
            )

    scores, created = _store_review(
        attack_result=attack_result,
        reviewer=reviewer,  # type: ignore[arg-type]
        answers=stored,
        rationale=rationale,
        notes=notes,
        submission=correction,
        before_insert=withdraw,
        final=any(r.final for r in rows),
    )
    if not created:
        return scores
    _, status = _after_write(attack_result, True)
    retally([attack_result.pk])
    record_audit(
        actor=reviewer,
        action="verdict.edited",
        object_type="attack_result",
        object_id=attack_result.pk,
        detail={
            "submission": str(submission),
            "correction": str(correction),
            "previous": _summary(standing),
            "scores": _summary(scores),
            "notes": notes,
            "review_status": status,
        },
    )
    return scores


@transaction.atomic
def withdraw_review(*, reviewer: User, scope: Scope, submission: uuid.UUID) -> list[Score]:
    """Withdraw (undo) one of the reviewer's standing reviews, audited as `verdict.withdrawn`
    with what it said; the rows stay as its history and no longer count. Withdrawing a
    withdrawn review again changes nothing. Raises as edit_review does."""
    rows, attack_result = _standing(reviewer, scope, submission)
    standing = [r for r in rows if r.withdrawn_at is None]
    if not standing:
        return rows
    now = timezone.now()
    # Only rows still standing: a concurrent undo or edit that got there first wins.
    updated = Score.objects.filter(
        pk__in=[r.pk for r in standing], withdrawn_at__isnull=True
    ).update(withdrawn_at=now, withdrawn_by_id=reviewer.pk)
    if not updated:
        return rows
    for row in standing:
        row.withdrawn_at, row.withdrawn_by_id = now, reviewer.pk
    _, status = _after_write(attack_result, True)
    retally([attack_result.pk])
    record_audit(
        actor=reviewer,
        action="verdict.withdrawn",
        object_type="attack_result",
        object_id=attack_result.pk,
        detail={
            "submission": str(submission),
            "scores": _summary(standing),
            "review_status": status,
        },
    )
    return rows
