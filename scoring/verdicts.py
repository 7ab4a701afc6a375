"""Recording human verdicts as PyRIT-shaped Scores from a human scorer identifier."""

from __future__ import annotations

import math
import uuid
from typing import Any

from django.core.exceptions import PermissionDenied, ValidationError
from django.db import transaction
from django.db.models import Exists, OuterRef
from django.utils import timezone

from memory.bulk import store_identifier_uses
from memory.models import AttackResult, Conversation, MessagePiece
from memory.parsing import ParsedIdentifier, parse_identifier
from redteam.audit import record_audit
from redteam.identifiers import LINE_PYRIT_VERSIONS, ComponentIdentifier
from redteam.roles import can_record_verdicts
from scoring.models import Score, ScoreSource
from scoring.review import effective_outcome

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


@transaction.atomic
def record_verdict(
    *,
    attack_result: AttackResult,
    reviewer: Any,
    value: bool | float,
    score_type: str,
    rationale: str,
) -> Score:
    """Store a reviewer's verdict on an attack result as a human Score, and audit it.

    Queries: permission check (cached per user), INSERT identifier, INSERT dump, SELECT the
    last response's original_prompt_id, INSERT score, UPDATE the conversation's outcome
    summary (when this is its newest result), INSERT audit event.
    """
    if not can_record_verdicts(reviewer):
        raise PermissionDenied("Recording verdicts needs the reviewer role.")
    score_value = _score_value(value, score_type)
    rationale = (rationale or "").strip()
    if not rationale:
        raise ValidationError("Give a rationale for the verdict.", code="required")
    if len(rationale) > MAX_RATIONALE_CHARS:
        raise ValidationError(
            f"The rationale is limited to {MAX_RATIONALE_CHARS} characters.", code="max_length"
        )
    scorer = human_scorer_identifier(reviewer.get_username())
    store_identifier_uses([scorer])
    # PyRIT scores attach to pieces through original_prompt_id; the last response may not
    # have arrived (no FK constraint), in which case the score hangs off the result only.
    piece_id = None
    if attack_result.last_response_id is not None:
        piece_id = (
            MessagePiece.objects.filter(pk=attack_result.last_response_id)
            .values_list("original_prompt_id", flat=True)
            .first()
        )
    score = Score.objects.create(
        id=uuid.uuid4(),
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
    )
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
