"""Read API for rows that carry scores: message pieces, conversations' messages, attack results.

Every row is produced by the export functions (memory/export.py), so what was ingested comes
back equal, field by field, in the shape it was sent in. Every read goes through the
caller's scope (`scope_for(request)`): the querysets are memory.querysets' scoped shapes, the
FilterSets scope their own subqueries, and the scores attached to a row are the visible ones;
a row outside the caller's operations is a 404, as one that does not exist.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

from django.db.models import QuerySet
from django.http import Http404
from drf_spectacular.utils import (
    extend_schema,
    extend_schema_view,
)
from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from memory.api.schema import AttackResultOut, MessagePieceOut, ScenarioResultOut
from memory.api.schema import ConversationMessages as _CONVERSATION_MESSAGES
from memory.export import (
    export_attack_result,
    export_conversation,
    export_piece,
    export_scenario_result,
    export_score,
    fits_013,
    last_scores_of,
    scores_by_prompt_id,
    visible_last_response,
)
from memory.filters import (
    AttackResultFilterSet,
    MessagePieceFilterSet,
    ScenarioResultFilterSet,
)
from memory.models import AttackResult, MessagePiece, ScenarioResult, Score
from memory.querysets import (
    attack_results_for_export,
    conversations_for_export,
    pieces_for_export,
    scenario_results_for_export,
)
from redteam.common.access import Scope, scope_for
from redteam.common.api_common import (
    SHAPE_PARAMETER,
    ShapedReadViewSet,
    cursor_pagination,
    requested_shape,
    row_shape,
    view_scope,
)
from redteam.core.reassembly import reassemble_conversation


def _scores_for(pieces: Sequence[MessagePiece], scope: Scope) -> dict[uuid.UUID, list[Score]]:
    """Visible scores of these pieces grouped by original_prompt_id (1 query).

    PyRIT joins scores to pieces through original_prompt_id, so duplicated pieces share them.
    """
    ids = {p.original_prompt_id for p in pieces}
    grouped: dict[uuid.UUID, list[Score]] = {}
    if not ids:
        return grouped
    scores = (
        Score.objects.visible_to(scope)
        .standing()
        .select_related("scorer_dump")
        .filter(message_piece_id__in=ids)
        .order_by("timestamp", "id")
    )
    for score in scores:
        if score.message_piece_id is not None:
            grouped.setdefault(score.message_piece_id, []).append(score)
    return grouped


def export_pieces_page(
    pieces: Sequence[MessagePiece], requested: str, *, scope: Scope, with_scores: bool = False
) -> list[dict[str, Any]]:
    """Pieces in the requested (or stored) shape; 0.13 pieces carry their visible scores as
    PyRIT does.

    With `with_scores`, 1.x pieces also get a `scores` list (the conversation endpoint).
    """
    needs_scores = with_scores or any(
        row_shape(requested, p.source_shape) == "0.13" for p in pieces
    )
    grouped = _scores_for(pieces, scope) if needs_scores else {}
    rows = []
    for piece in pieces:
        shape = row_shape(requested, piece.source_shape)
        scores = [
            export_score(score, shape)
            for score in grouped.get(piece.original_prompt_id, [])
            if shape == "1.x" or fits_013(score)
        ]
        row = export_piece(piece, shape, scores=scores)
        if with_scores and shape == "1.x":
            row["scores"] = scores
        rows.append(row)
    return rows


@extend_schema_view(
    list=extend_schema(
        summary="List message pieces",
        description="Newest first. Filters follow PyRIT's get_message_pieces.",
        parameters=[SHAPE_PARAMETER],
        responses=MessagePieceOut,
    ),
    retrieve=extend_schema(summary="One message piece", parameters=[SHAPE_PARAMETER]),
)
class MessagePieceViewSet(ShapedReadViewSet):
    """PyRIT message pieces. Queries per page: pieces (+dumps, conversation), converters, and
    scores when a row is exported in the 0.13 shape."""

    filterset_class = MessagePieceFilterSet
    serializer_class = MessagePieceOut
    # Newest first; pieces of one message share a timestamp and come in message order.
    pagination_class = cursor_pagination("-timestamp", "position", "-id")

    def get_queryset(self) -> QuerySet[MessagePiece]:
        """Visible pieces with every dump their PyRIT dict needs."""
        return pieces_for_export(view_scope(self))

    def export_rows(self, rows: Sequence[Any], shape: str) -> list[dict[str, Any]]:
        """Each piece in its shape."""
        return export_pieces_page(rows, shape, scope=view_scope(self))


class ConversationMessagesView(APIView):
    """A conversation reassembled into messages, each piece with its scores."""

    @extend_schema(
        operation_id="conversation_messages",
        summary="A conversation's messages with their pieces and scores",
        parameters=[SHAPE_PARAMETER],
        responses=_CONVERSATION_MESSAGES,
    )
    def get(self, request: Request, conversation_id: str) -> Response:
        """Queries: the key's operations, conversation, pieces (+dumps), converters, scores:
        5 at any length. 404 unless the conversation is in one of the caller's operations."""
        shape = requested_shape(request)
        scope = scope_for(request)
        conversations = conversations_for_export(scope)
        conversation = conversations.filter(conversation_id=conversation_id).first()
        if conversation is None:
            raise Http404
        pieces = list(
            pieces_for_export(scope)
            .filter(conversation_id=conversation_id)
            .order_by("sequence", "position")
        )
        exported = export_pieces_page(pieces, shape, scope=scope, with_scores=True)
        by_id = {piece.id: row for piece, row in zip(pieces, exported, strict=True)}
        messages = [
            {
                "sequence": message.sequence,
                "role": message.role,
                "pieces": [by_id[p.id] for p in message.pieces],
            }
            for message in reassemble_conversation(pieces)
        ]
        return Response({**export_conversation(conversation), "messages": messages})


def export_results_page(
    results: Sequence[AttackResult], requested: str, *, scope: Scope
) -> list[dict[str, Any]]:
    """Attack results with their visible last score (1 query) and, in 0.13, last responses'
    visible scores."""
    last_scores = last_scores_of(results, scope)
    shapes = [row_shape(requested, r.source_shape) for r in results]
    responses = [visible_last_response(r, scope) for r in results]
    nested: dict[uuid.UUID, list[dict[str, Any]]] = {}
    legacy_responses = [
        response
        for response, shape in zip(responses, shapes, strict=True)
        if shape == "0.13" and response is not None
    ]
    if legacy_responses:
        nested = scores_by_prompt_id((p.original_prompt_id for p in legacy_responses), scope=scope)
    rows = []
    for result, shape, last_response in zip(results, shapes, responses, strict=True):
        rows.append(
            export_attack_result(
                result,
                shape,
                last_response=last_response,
                last_score=last_scores.get(result.last_score_id) if result.last_score_id else None,
                last_response_scores=nested.get(last_response.original_prompt_id, [])
                if last_response is not None
                else [],
            )
        )
    return rows


@extend_schema_view(
    list=extend_schema(
        summary="List attack results",
        description="Newest first. Filters follow PyRIT's get_attack_results.",
        parameters=[SHAPE_PARAMETER],
        responses=AttackResultOut,
    ),
    retrieve=extend_schema(summary="One attack result", parameters=[SHAPE_PARAMETER]),
)
class AttackResultViewSet(ShapedReadViewSet):
    """PyRIT attack results with their last response and last score, at a constant number of
    queries per page."""

    filterset_class = AttackResultFilterSet
    serializer_class = AttackResultOut
    pagination_class = cursor_pagination("-ingested_at", "-attack_result_id")
    lookup_field = "attack_result_id"

    def get_queryset(self) -> QuerySet[AttackResult]:
        """Visible results with dumps, last response and related conversations."""
        return attack_results_for_export(view_scope(self))

    def export_rows(self, rows: Sequence[Any], shape: str) -> list[dict[str, Any]]:
        """Each result in its shape."""
        return export_results_page(rows, shape, scope=view_scope(self))


# A page of scenarios embeds every attack result they name; fewer scenarios per page, and a
# ceiling on the results one answer embeds (about 4.5 KB each), keep that work bounded.
SCENARIO_PAGE_SIZE = 20
SCENARIO_MAX_PAGE_SIZE = 50
MAX_EMBEDDED_RESULTS = 2000


def export_scenarios_page(
    scenarios: Sequence[ScenarioResult],
    requested: str,
    *,
    scope: Scope,
    max_results: int | None,
) -> list[dict[str, Any]]:
    """Scenarios with their visible attack results embedded (a constant number of queries).

    Raises ValidationError (400) when the answer would embed more than ``max_results``
    results, naming the smaller request and the result list that reads them in pages.
    """
    shapes = [row_shape(requested, s.source_shape) for s in scenarios]
    wanted = {
        uuid.UUID(i)
        for s, shape in zip(scenarios, shapes, strict=True)
        if shape == "1.x"
        for ids in (s.attack_result_ids or {}).values()
        for i in ids
    }
    if max_results is not None and len(wanted) > max_results:
        raise ValidationError(
            {
                "attack_results": (
                    f"These scenario results embed {len(wanted)} attack results, more than "
                    f"{max_results} in one answer: ask for fewer (page_size=1), or read "
                    "the results in pages from /api/v1/attack-results/?scenario_result_id=<id>."
                )
            }
        )
    results = list(attack_results_for_export(scope).filter(pk__in=wanted)) if wanted else []
    exported = {
        str(r.pk): row
        for r, row in zip(results, export_results_page(results, "1.x", scope=scope), strict=True)
    }
    return [
        export_scenario_result(s, shape, exported)
        for s, shape in zip(scenarios, shapes, strict=True)
    ]


@extend_schema_view(
    list=extend_schema(
        summary="List scenario results",
        description=(
            "Newest first (creation time). Filters follow PyRIT's get_scenario_results: "
            "`scenario_name` (substring), `scenario_version`, `run_state`, "
            "`label=key=value`, `target` (objective target hash or class), `after`/`before` "
            "(completion time), `pyrit_version`."
        ),
        parameters=[SHAPE_PARAMETER],
        responses=ScenarioResultOut,
    ),
    retrieve=extend_schema(summary="One scenario result", parameters=[SHAPE_PARAMETER]),
)
class ScenarioResultViewSet(ShapedReadViewSet):
    """PyRIT scenario results with their attack results re-attached by atomic attack name."""

    filterset_class = ScenarioResultFilterSet
    serializer_class = ScenarioResultOut
    pagination_class = type(
        "ScenarioPagination",
        (cursor_pagination("-creation_time", "-id"),),
        {"page_size": SCENARIO_PAGE_SIZE, "max_page_size": SCENARIO_MAX_PAGE_SIZE},
    )

    def get_queryset(self) -> QuerySet[ScenarioResult]:
        """Visible scenarios with their identifier dumps."""
        return scenario_results_for_export(view_scope(self))

    def export_rows(self, rows: Sequence[Any], shape: str) -> list[dict[str, Any]]:
        """Each scenario in its shape."""
        return export_scenarios_page(
            rows, shape, scope=view_scope(self), max_results=MAX_EMBEDDED_RESULTS
        )
