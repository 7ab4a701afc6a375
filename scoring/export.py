"""Export scores and attack results (which embed their last score) to PyRIT's shapes.

Shapes: "1.x" (``model_dump(mode="json")``), "0.13" (``to_dict()``) and, for scores, "entry"
(1.1's ``ScoreEntry.to_dict()`` DB-row view). Pieces exported in the 0.13 shape carry their
scores (joined through ``original_prompt_id``, as PyRIT's memory hydrates them), which is why
piece export with scores lives here. Each list export costs a constant number of queries.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from memory.export import (
    Shape,
    dump_of,
    export_piece,
    export_pieces,
    timestamp_013,
    timestamp_1x,
)
from memory.models import AttackResult, MessagePiece
from memory.shapes import (
    ATTACK_RESULT_KEYS_013,
    ATTACK_RESULT_KEYS_1X,
    SCORE_KEYS_013,
    SCORE_KEYS_1X,
    SCORE_KEYS_ENTRY,
)
from scoring.models import Score

__all__ = [
    "ScoreShape",
    "export_attack_result",
    "export_attack_results",
    "export_pieces_with_scores",
    "export_score",
    "fits_013",
    "scores_by_prompt_id",
]

ScoreShape = Literal["1.x", "0.13", "entry"]


def _uuid(value: uuid.UUID | None) -> str | None:
    return str(value) if value is not None else None


def export_score(score: Score, shape: ScoreShape = "1.x") -> dict[str, Any]:
    """One Score as PyRIT serializes it (select_related("scorer_dump") to avoid a query)."""
    values: dict[str, Any] = {
        "id": str(score.id),
        "score_value": score.score_value,
        "status": score.status,
        "score_value_description": score.score_value_description,
        "score_type": score.score_type,
        "score_category": score.score_category,
        "score_rationale": score.score_rationale,
        "score_metadata": score.score_metadata if score.score_metadata is not None else {},
        "scorer_class_identifier": dump_of(score.scorer_dump),
        "message_piece_id": _uuid(score.message_piece_id),
        "prompt_request_response_id": _uuid(score.message_piece_id),
        "scorable": score.scorable,
        "scorable_content_id": _uuid(score.scorable_content_id),
        "timestamp": timestamp_1x(score.timestamp)
        if shape == "1.x"
        else timestamp_013(score.timestamp),
        "objective": score.objective,
    }
    keys = {"1.x": SCORE_KEYS_1X, "0.13": SCORE_KEYS_013, "entry": SCORE_KEYS_ENTRY}[shape]
    return {key: values[key] for key in keys}


def fits_013(score: Score) -> bool:
    """Whether PyRIT 0.13 can hold the score: its Score requires a value, so an undetermined
    (1.1) score has no place in a 0.13 piece's ``scores``."""
    return score.score_value is not None


def _scores_query() -> Any:
    return Score.objects.select_related("scorer_dump").order_by("timestamp", "id")


def scores_by_prompt_id(
    prompt_ids: Iterable[uuid.UUID], shape: ScoreShape = "0.13"
) -> dict[uuid.UUID, list[dict[str, Any]]]:
    """Scores of the pieces whose original_prompt_id is given, grouped by it (one query)."""
    ids = list(set(prompt_ids))
    grouped: dict[uuid.UUID, list[dict[str, Any]]] = {}
    if not ids:
        return grouped
    for score in _scores_query().filter(message_piece_id__in=ids):
        if score.message_piece_id is not None and (shape != "0.13" or fits_013(score)):
            grouped.setdefault(score.message_piece_id, []).append(export_score(score, shape))
    return grouped


def export_pieces_with_scores(
    pieces: Iterable[MessagePiece], shape: Shape = "0.13", *, pyrit_order: bool = True
) -> list[dict[str, Any]]:
    """Pieces in PyRIT's shape; in 0.13 each carries its scores (one extra query in all)."""
    rows = list(pieces)
    scores = scores_by_prompt_id(p.original_prompt_id for p in rows) if shape == "0.13" else {}
    return export_pieces(rows, shape, scores_by_prompt_id=scores, pyrit_order=pyrit_order)


def _related(result: AttackResult, shape: Shape) -> list[dict[str, Any]]:
    refs = [
        {
            "conversation_id": ref.conversation_id,
            "conversation_type": ref.conversation_type,
            "description": ref.description,
        }
        for ref in result.related_conversations.all()
    ]
    if shape == "1.x":
        # pydantic dumps the set as a list sorted by (id, type, description or "").
        refs.sort(
            key=lambda r: (r["conversation_id"], r["conversation_type"], r["description"] or "")
        )
    return refs


def export_attack_result(
    result: AttackResult,
    shape: Shape = "1.x",
    *,
    last_score: Score | None = None,
    last_response_scores: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """One AttackResult as PyRIT serializes it, with its last response and last score."""
    last_response = result.last_response  # None when the piece is not stored
    values: dict[str, Any] = {
        "conversation_id": result.conversation_id,
        "objective": result.objective,
        "attack_result_id": str(result.attack_result_id),
        "atomic_attack_identifier": dump_of(result.atomic_attack_dump),
        "last_response": export_piece(last_response, shape, scores=last_response_scores)
        if last_response is not None
        else None,
        "last_score": export_score(last_score, shape) if last_score is not None else None,
        "executed_turns": result.executed_turns,
        "execution_time_ms": result.execution_time_ms,
        "outcome": result.outcome,
        "outcome_reason": result.outcome_reason,
        "timestamp": timestamp_1x(result.timestamp),
        "related_conversations": _related(result, shape),
        "metadata": result.metadata if result.metadata is not None else {},
        "labels": result.labels if result.labels is not None else {},
        "targeted_harm_categories": list(result.targeted_harm_categories or []),
        "error_message": result.error_message,
        "error_type": result.error_type,
        "error_traceback": result.error_traceback,
        "retry_events": list(result.retry_events or []),
        "total_retries": result.total_retries,
        "attribution_parent_id": result.attribution_parent_id,
        "attribution_data": result.attribution_data,
    }
    keys = ATTACK_RESULT_KEYS_1X if shape == "1.x" else ATTACK_RESULT_KEYS_013
    return {key: values[key] for key in keys}


def export_attack_results(
    results: Iterable[AttackResult], shape: Shape = "1.x"
) -> list[dict[str, Any]]:
    """Attack results from attack_results_for_export(): one extra query for the last scores,
    and one more in the 0.13 shape for the last responses' scores."""
    rows = list(results)
    score_ids = [r.last_score_id for r in rows if r.last_score_id is not None]
    last_scores = (
        {s.id: s for s in Score.objects.select_related("scorer_dump").filter(id__in=score_ids)}
        if score_ids
        else {}
    )
    nested: dict[uuid.UUID, list[dict[str, Any]]] = {}
    if shape == "0.13":
        nested = scores_by_prompt_id(
            r.last_response.original_prompt_id for r in rows if r.last_response is not None
        )
    return [
        export_attack_result(
            r,
            shape,
            last_score=last_scores.get(r.last_score_id) if r.last_score_id else None,
            last_response_scores=nested.get(r.last_response.original_prompt_id, [])
            if r.last_response is not None
            else [],
        )
        for r in rows
    ]
