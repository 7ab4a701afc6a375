"""Typed factories for scores and users with review roles."""

from __future__ import annotations

import uuid
from datetime import datetime

from django.contrib.auth.models import User
from django.utils import timezone

from memory.models import AttackResult, MessagePiece, Score
from redteam.core.identity import ComponentIdentifier as CoreIdentifier
from scoring.tallies import retally
from tests.access import grant_everywhere
from tests.memory.row_factories import core_scorer, operation_named, store_identifier

PASSWORD = "pw-review-123"


def make_user(username: str, role: str | None = "reviewer") -> User:
    """A user with `role` in every operation of the test (None: no role at all)."""
    user = User.objects.create_user(username, password=PASSWORD)
    if role is not None:
        grant_everywhere(user, role)
    return user


def make_score(
    *,
    piece: MessagePiece | None = None,
    value: str | None = "true",
    score_type: str = "true_false",
    scorer: CoreIdentifier | None = None,
    rationale: str = "The response contains the requested steps.",
    category: list[str] | None = None,
    attack_result: AttackResult | None = None,
    source: str = "automated",
    reviewer: User | None = None,
    timestamp: datetime | None = None,
) -> Score:
    """A score on a piece (through its original_prompt_id) and/or an attack result, in the
    operation of what it scores (else `unassigned`)."""
    if attack_result is not None:
        operation = attack_result.operation
    elif piece is not None:
        operation = piece.conversation.operation
    else:
        operation = operation_named(None)
    parsed = store_identifier(scorer or core_scorer(), operation)
    score = Score.objects.create(
        id=uuid.uuid4(),
        operation=operation,
        score_value=value,
        status="complete" if value is not None else "undetermined",
        score_value_description="",
        score_type=score_type,
        score_category=category,
        score_rationale=rationale,
        score_metadata={},
        scorer_identifier_id=parsed.hash,
        scorer_dump_id=parsed.digest,
        scorer_class=(scorer or core_scorer()).class_name,
        message_piece_id=piece.original_prompt_id if piece else None,
        timestamp=timestamp or timezone.now(),
        source=source,
        attack_result=attack_result,
        reviewer=reviewer,
    )
    if attack_result is not None and source == "human":
        # As the verdict services do: the dashboard's tallies follow the verdict.
        retally([attack_result.pk])
    return score
