"""Export stored memory back to PyRIT's shapes (1.x ``model_dump(mode="json")``, 0.13 to_dict).

Key orders are PyRIT's (memory/shapes.py). Identifiers come back verbatim from their
IdentifierDump text. Timestamps are written as each line wrote them (redteam.core.timestamps).

Exporting N rows costs a constant number of queries when the rows come from
memory.querysets' ``*_for_export(scope)`` querysets. The functions that read more rows
(scores, last scores) take the same `Scope`, so an export holds nothing of an operation
its caller may not read: a score of another operation is left out, as PyRIT leaves out
what its memory does not hold.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from memory.models import (
    AttackResult,
    Conversation,
    IdentifierDump,
    MessagePiece,
    ScenarioResult,
    Score,
)
from memory.shapes import (
    ATTACK_RESULT_KEYS_013,
    ATTACK_RESULT_KEYS_1X,
    PIECE_KEYS_013,
    PIECE_KEYS_1X,
    SCORE_KEYS_013,
    SCORE_KEYS_1X,
    SCORE_KEYS_ENTRY,
)
from redteam.common.access import Scope
from redteam.core.reassembly import sort_message_pieces
from redteam.core.timestamps import timestamp_013, timestamp_1x

__all__ = [
    "Shape",
    "dump_of",
    "export_conversation",
    "export_piece",
    "export_pieces",
    "export_scenario_result",
]

Shape = Literal["1.x", "0.13"]


def dump_of(dump: IdentifierDump | None) -> dict[str, Any] | None:
    """The identifier dict exactly as it was received (key order and 1 vs 1.0 kept)."""
    if dump is None:
        return None
    value: dict[str, Any] = json.loads(dump.dump_json)
    return value


def _converters(piece: MessagePiece) -> list[dict[str, Any]]:
    # Prefetched by pieces_for_export(); the prefetch is ordered by position.
    return [d for d in (dump_of(c.dump) for c in piece.converters.all()) if d is not None]


def _legacy_fields(piece: MessagePiece) -> dict[str, Any]:
    """The 0.13-only fields; a 1.x piece takes them from its conversation (PYRIT-MODEL 2.1)."""
    if piece.source_shape == "0.13":
        return {
            "labels": piece.labels if piece.labels is not None else {},
            "targeted_harm_categories": piece.targeted_harm_categories or None,
            "prompt_target_identifier": dump_of(piece.target_dump),
            "attack_identifier": dump_of(piece.attack_dump),
            "scorer_identifier": dump_of(piece.scorer_dump),
            "originator": piece.originator or "undefined",
        }
    conversation: Conversation = piece.conversation
    return {
        "labels": dict(conversation.labels or {}),
        "targeted_harm_categories": list(conversation.harm_categories or []) or None,
        "prompt_target_identifier": dump_of(conversation.target_dump),
        "attack_identifier": None,
        "scorer_identifier": None,
        "originator": "undefined",
    }


def export_piece(
    piece: MessagePiece, shape: Shape = "1.x", *, scores: Sequence[Mapping[str, Any]] = ()
) -> dict[str, Any]:
    """One MessagePiece as PyRIT serializes it; ``scores`` fill a 0.13 piece's ``scores``."""
    values: dict[str, Any] = {
        "id": str(piece.id),
        "role": piece.role,
        "conversation_id": piece.conversation_id,
        "sequence": piece.sequence,
        "timestamp": timestamp_1x(piece.timestamp)
        if shape == "1.x"
        else timestamp_013(piece.timestamp),
        "original_value": piece.original_value,
        "original_value_data_type": piece.original_value_data_type,
        "original_value_sha256": piece.original_value_sha256,
        "converted_value": piece.converted_value,
        "converted_value_data_type": piece.converted_value_data_type,
        "converted_value_sha256": piece.converted_value_sha256,
        "response_error": piece.response_error,
        "original_prompt_id": str(piece.original_prompt_id),
        "prompt_metadata": piece.prompt_metadata,
        "converter_identifiers": _converters(piece),
    }
    if shape == "1.x":
        return {key: values[key] for key in PIECE_KEYS_1X}
    values.update(_legacy_fields(piece))
    values["scores"] = [dict(s) for s in scores]
    return {key: values[key] for key in PIECE_KEYS_013}


def export_pieces(
    pieces: Iterable[MessagePiece],
    shape: Shape = "1.x",
    *,
    scores_by_prompt_id: Mapping[Any, Sequence[Mapping[str, Any]]] | None = None,
    pyrit_order: bool = True,
) -> list[dict[str, Any]]:
    """Pieces in PyRIT's memory order (sort_message_pieces) unless told to keep the input's."""
    rows = list(pieces)
    if pyrit_order:
        rows = sort_message_pieces(rows)
    scores = scores_by_prompt_id or {}
    return [export_piece(p, shape, scores=scores.get(p.original_prompt_id, ())) for p in rows]


def export_conversation(conversation: Conversation) -> dict[str, Any]:
    """A 1.x Conversation: ``conversation_id``, ``target_identifier``, ``retries``."""
    return {
        "conversation_id": conversation.conversation_id,
        "target_identifier": dump_of(conversation.target_dump),
        "retries": list(conversation.retries or []),
    }


def export_scenario_result(
    scenario: ScenarioResult,
    shape: Shape,
    results: Mapping[str, dict[str, Any]],
) -> dict[str, Any]:
    """A scenario result in PyRIT's form: 1.x ``ScenarioResult.model_dump(mode="json")``
    (``results``: exported attack results by id, embedded by atomic attack name), or the
    0.13 ScenarioResultEntries row (0.13 had no dict form).

    An attack result named by the scenario but not stored is left out (PyRIT re-attaches
    only the rows its memory holds).
    """
    if shape == "0.13":
        return {
            "id": str(scenario.id),
            "scenario_name": scenario.scenario_name,
            "scenario_description": scenario.scenario_description,
            "scenario_version": scenario.scenario_version,
            "pyrit_version": scenario.pyrit_version,
            "scenario_init_data": scenario.scenario_init_data,
            "objective_target_identifier": dump_of(scenario.objective_target_dump) or {},
            "objective_scorer_identifier": dump_of(scenario.objective_scorer_dump),
            "scenario_run_state": scenario.scenario_run_state,
            "attack_results_json": scenario.attack_results_json
            if scenario.attack_results_json is not None
            else json.dumps(scenario.attack_result_ids),
            "labels": scenario.labels,
            "number_tries": scenario.number_tries,
            "completion_time": timestamp_013(scenario.completion_time),
            "timestamp": timestamp_013(scenario.creation_time),
        }
    return {
        "id": str(scenario.id),
        "scenario_identifier": dump_of(scenario.scenario_dump),
        "scenario_description": scenario.scenario_description,
        "attack_results": {
            name: [results[i] for i in ids if i in results]
            for name, ids in (scenario.attack_result_ids or {}).items()
        },
        "scenario_run_state": scenario.scenario_run_state,
        "labels": scenario.labels,
        "creation_time": timestamp_1x(scenario.creation_time),
        "completion_time": timestamp_1x(scenario.completion_time),
        "number_tries": scenario.number_tries,
        "display_group_map": scenario.display_group_map,
        "error_message": scenario.error_message,
        "error_type": scenario.error_type,
        "error_attack_result_ids": scenario.error_attack_result_ids,
        "metadata": scenario.metadata,
        "scenario_name": scenario.scenario_name,
        "scenario_version": scenario.scenario_version,
        "pyrit_version": scenario.pyrit_version,
        "objective_target_identifier": dump_of(scenario.objective_target_dump),
        "objective_scorer_identifier": dump_of(scenario.objective_scorer_dump),
    }


__all__ = [
    "ScoreShape",
    "export_attack_result",
    "export_attack_results",
    "export_pieces_with_scores",
    "export_score",
    "fits_013",
    "last_scores_of",
    "scores_by_prompt_id",
    "visible_last_response",
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


def _scores_query(scope: Scope) -> Any:
    return (
        Score.objects.visible_to(scope)
        .standing()
        .select_related("scorer_dump")
        .order_by("timestamp", "id")
    )


def scores_by_prompt_id(
    prompt_ids: Iterable[uuid.UUID], shape: ScoreShape = "0.13", *, scope: Scope
) -> dict[uuid.UUID, list[dict[str, Any]]]:
    """Visible scores of the pieces whose original_prompt_id is given, grouped by it (one
    query)."""
    ids = list(set(prompt_ids))
    grouped: dict[uuid.UUID, list[dict[str, Any]]] = {}
    if not ids:
        return grouped
    for score in _scores_query(scope).filter(message_piece_id__in=ids):
        if score.message_piece_id is not None and (shape != "0.13" or fits_013(score)):
            grouped.setdefault(score.message_piece_id, []).append(export_score(score, shape))
    return grouped


def export_pieces_with_scores(
    pieces: Iterable[MessagePiece],
    shape: Shape = "0.13",
    *,
    scope: Scope,
    pyrit_order: bool = True,
) -> list[dict[str, Any]]:
    """Pieces in PyRIT's shape; in 0.13 each carries its visible scores (one extra query in
    all)."""
    rows = list(pieces)
    scores = (
        scores_by_prompt_id((p.original_prompt_id for p in rows), scope=scope)
        if shape == "0.13"
        else {}
    )
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


def visible_last_response(result: AttackResult, scope: Scope) -> MessagePiece | None:
    """The result's last response, None when it is not stored or its conversation is outside
    the scope (a sender in two operations could point one's result at the other's piece).

    No query: attack_results_for_export selects the piece's conversation.
    """
    piece = result.last_response
    if piece is None or not scope.may_read(piece.conversation.operation_id):
        return None
    return piece


def export_attack_result(
    result: AttackResult,
    shape: Shape = "1.x",
    *,
    last_response: MessagePiece | None = None,
    last_score: Score | None = None,
    last_response_scores: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """One AttackResult as PyRIT serializes it, with the last response and last score the
    caller may see (visible_last_response; the visible score)."""
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


def last_scores_of(results: Sequence[AttackResult], scope: Scope) -> dict[uuid.UUID, Score]:
    """The visible last scores of these results, by id (one query; none when no result has
    one)."""
    score_ids = [r.last_score_id for r in results if r.last_score_id is not None]
    if not score_ids:
        return {}
    scores = Score.objects.visible_to(scope).select_related("scorer_dump").filter(id__in=score_ids)
    return {s.id: s for s in scores}


def export_attack_results(
    results: Iterable[AttackResult], shape: Shape = "1.x", *, scope: Scope
) -> list[dict[str, Any]]:
    """Attack results from attack_results_for_export(scope): one extra query for the last
    scores, and one more in the 0.13 shape for the last responses' scores."""
    rows = list(results)
    last_scores = last_scores_of(rows, scope)
    responses = [visible_last_response(r, scope) for r in rows]
    nested: dict[uuid.UUID, list[dict[str, Any]]] = {}
    if shape == "0.13":
        nested = scores_by_prompt_id(
            (p.original_prompt_id for p in responses if p is not None), scope=scope
        )
    return [
        export_attack_result(
            r,
            shape,
            last_response=response,
            last_score=last_scores.get(r.last_score_id) if r.last_score_id else None,
            last_response_scores=nested.get(response.original_prompt_id, [])
            if response is not None
            else [],
        )
        for r, response in zip(rows, responses, strict=True)
    ]
