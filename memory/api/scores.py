"""Read API for scores, in PyRIT's shapes (memory/export.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db.models import QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import (
    OpenApiParameter,
    extend_schema,
    extend_schema_view,
)
from rest_framework.request import Request

from memory.api.schema import ScoreOut
from memory.export import ScoreShape, export_score
from memory.filters import ScoreFilterSet
from memory.models import Score
from redteam.common.api_common import (
    STORED,
    ShapedReadViewSet,
    cursor_pagination,
    requested_shape,
    view_scope,
)

SCORE_SHAPES = ("1.x", "0.13", "entry")
SCORE_SHAPE_PARAMETER = OpenApiParameter(
    "shape",
    OpenApiTypes.STR,
    enum=[STORED, *SCORE_SHAPES],
    description=(
        "`1.x` (model_dump), `0.13` (to_dict), `entry` (1.1 ScoreEntry.to_dict()), or `stored` "
        "(default: the shape each score arrived in)."
    ),
)


def score_shape(requested: str, score: Score) -> ScoreShape:
    """The shape to export a score in: the requested one or the one it arrived in."""
    if requested == STORED:
        return "0.13" if score.source_shape == "0.13" else "1.x"
    return requested  # type: ignore[return-value]


def export_scores(scores: Sequence[Score], requested: str) -> list[dict[str, Any]]:
    """Scores in the requested shape (no queries: the scorer dump is select_related)."""
    return [export_score(s, score_shape(requested, s)) for s in scores]


@extend_schema_view(
    list=extend_schema(
        summary="List scores", parameters=[SCORE_SHAPE_PARAMETER], responses=ScoreOut
    ),
    retrieve=extend_schema(
        summary="One score", parameters=[SCORE_SHAPE_PARAMETER], responses=ScoreOut
    ),
)
class ScoreViewSet(ShapedReadViewSet):
    """PyRIT scores (automated and human) of the caller's operations, newest first; 1 query per
    page (scores joined with their scorer dumps); a score of another operation is a 404."""

    filterset_class = ScoreFilterSet
    serializer_class = ScoreOut
    pagination_class = cursor_pagination("-timestamp", "-id")

    def get_queryset(self) -> QuerySet[Score]:
        """Visible scores with their scorer dump (for scorer_class_identifier)."""
        return Score.objects.visible_to(view_scope(self)).standing().select_related("scorer_dump")

    def requested_shape(self, request: Request) -> str:
        """Scores also come as PyRIT's score entries."""
        return requested_shape(request, allowed=SCORE_SHAPES)

    def export_rows(self, rows: Sequence[Any], shape: str) -> list[dict[str, Any]]:
        """Each score in its shape."""
        return export_scores(rows, shape)
