"""Human verdicts: a reviewer's judgement of an attack result, stored as a PyRIT Score.

A verdict is an ordinary Score row (memory.models.Score) from a per-reviewer human scorer
identifier, with `source` human; the latest verdict on a result is its effective outcome.
"""

from __future__ import annotations

import math
import uuid
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
)
from memory.parsing import ParsedIdentifier, parse_identifier
from redteam.common.access import Scope
from redteam.common.audit import record_audit
from redteam.common.typing import User
from redteam.core.identity import LINE_PYRIT_VERSIONS, ComponentIdentifier
from scoring.review import effective_outcome

if TYPE_CHECKING:
    from django.contrib.auth.models import User as AccountUser

HUMAN_SCORER_CLASS = "HumanReviewScorer"
HUMAN_SCORER_MODULE = "redteam.review"
VERDICT_DESCRIPTION = "Human reviewer verdict"
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


def _insert_verdict(
    *,
    attack_result: AttackResult,
    reviewer: AccountUser,
    score_value: str,
    score_type: str,
    rationale: str,
    piece_id: Any,
    scorer: ParsedIdentifier,
    submission: uuid.UUID | None,
) -> Score:
    """INSERT the human Score row of a verdict (IntegrityError for a repeated submission)."""
    return Score.objects.create(
        id=uuid.uuid4(),
        operation_id=attack_result.operation_id,
        score_value=score_value,
        status="complete",
        score_value_description=VERDICT_DESCRIPTION,
        score_type=score_type,
        score_category=list(attack_result.targeted_harm_categories or []) or None,
        score_rationale=rationale,
        score_metadata={},
        scorer_identifier_id=scorer.hash,
        scorer_dump_id=scorer.digest,
        scorer_class=HUMAN_SCORER_CLASS,
        message_piece_id=piece_id,
        timestamp=timezone.now(),
        objective=attack_result.objective,
        pyrit_version=LINE_PYRIT_VERSIONS["1.1"],
        source=ScoreSource.HUMAN,
        attack_result=attack_result,
        reviewer=reviewer,
        verdict_submission=submission,
    )


@transaction.atomic
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
    """Store a reviewer's verdict on an attack result as a human Score, and audit it.

    `submission` is the verdict form's one-time token: the same form posted again (double
    click, retry, concurrent requests) returns the row the first post stored, enforced by the
    `verdict_submitted_once` unique constraint rather than a check before the insert.

    `scope` is the reviewer's (redteam.common.access): it must allow verdicts in the
    result's operation. Queries: INSERT identifier, INSERT dump, SELECT the
    last response's original_prompt_id, INSERT score, UPDATE the conversation's outcome
    summary (when this is its newest result), INSERT audit event. A repeated submission stops
    after the refused INSERT with one SELECT of the stored row.
    """
    if not reviewer.is_authenticated or not scope.may_record_verdicts(attack_result.operation_id):
        raise PermissionDenied("Recording verdicts needs the reviewer role in this operation.")
    score_value = _score_value(value, score_type)
    rationale = (rationale or "").strip()
    if not rationale:
        raise ValidationError("Give a rationale for the verdict.", code="required")
    if len(rationale) > MAX_RATIONALE_CHARS:
        raise ValidationError(
            f"The rationale is limited to {MAX_RATIONALE_CHARS} characters.", code="max_length"
        )
    scorer = human_scorer_identifier(reviewer.get_username())
    store_identifier_uses([(scorer, attack_result.operation_id)])
    # PyRIT scores attach to pieces through original_prompt_id; the last response may not
    # have arrived (no FK constraint), in which case the score hangs off the result only.
    piece_id = None
    if attack_result.last_response_id is not None:
        piece_id = (
            MessagePiece.objects.filter(pk=attack_result.last_response_id)
            .values_list("original_prompt_id", flat=True)
            .first()
        )
    try:
        # A savepoint, so a refused duplicate leaves the outer transaction usable.
        with transaction.atomic():
            score = _insert_verdict(
                attack_result=attack_result,
                reviewer=reviewer,
                score_value=score_value,
                score_type=score_type,
                rationale=rationale,
                piece_id=piece_id,
                scorer=scorer,
                submission=submission,
            )
    except IntegrityError:
        stored = Score.objects.filter(reviewer=reviewer, verdict_submission=submission).first()
        if submission is None or stored is None:
            raise
        if (
            stored.attack_result_id != attack_result.pk
            or stored.score_value != score_value
            or stored.score_type != score_type
            or stored.score_rationale != rationale
        ):
            raise ValidationError(
                "This form was already submitted with another verdict; reload the page to "
                "record a new one.",
                code="resubmitted",
            ) from None
        return stored
    # The conversation list reads this summary column, which follows the conversation's
    # newest result; human verdicts take precedence, so a verdict on that result updates it.
    conversation = Conversation.objects.filter(pk=attack_result.conversation_id)
    if attack_result.timestamp is not None:
        newer = AttackResult.objects.filter(
            conversation_id=OuterRef("pk"), timestamp__gt=attack_result.timestamp
        )
        conversation = conversation.filter(~Exists(newer))
    conversation.update(outcome=effective_outcome(attack_result.outcome, score))
    record_audit(
        actor=reviewer,
        action="verdict.recorded",
        object_type="attack_result",
        object_id=attack_result.pk,
        detail={
            "score_id": str(score.id),
            "score_type": score_type,
            "score_value": score_value,
            "automated_outcome": attack_result.outcome,
        },
    )
    return score
