"""Stand-in for scoring.services.record_review until that service lands on this branch.

Stores the objective and the scale answers through record_verdict (the category and notes
are not stored here). Remove once scoring.services.record_review is merged.
"""

from __future__ import annotations

import uuid

from memory.models import AttackResult, Score
from redteam.common.access import Scope
from redteam.common.typing import User
from scoring.services import record_verdict
from scoring.verdict_fields import VerdictAnswers


def record_review(
    *,
    attack_result: AttackResult,
    reviewer: User,
    scope: Scope,
    answers: VerdictAnswers,
    submission: uuid.UUID | None,
) -> list[Score]:
    """One human Score per answered objective / scale (the first carries the token)."""
    scores: list[Score] = []
    for value, score_type in (
        (answers.objective, "true_false"),
        (answers.scale, "float_scale"),
    ):
        if value is None:
            continue
        scores.append(
            record_verdict(
                attack_result=attack_result,
                reviewer=reviewer,
                scope=scope,
                value=value,
                score_type=score_type,
                rationale=answers.rationale,
                submission=submission if not scores else None,
            )
        )
    return scores
