"""FilterSet for scores, after PyRIT's get_scores / get_prompt_scores (PYRIT-MODEL.md section 9).

Used by /api/v1/scores and any score list page: one query layer, the same parameters.
"""

from __future__ import annotations

from typing import Any

import django_filters as df
from django.db.models import Q, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field

from memory.filters import (
    HASH_RE,
    ChoicesFilter,
    ElementFilter,
    InFilter,
    MultiValueFilter,
    UUIDInFilter,
)
from memory.models import MessagePiece
from redteam.common.datebounds import DateBoundFilter
from redteam.core.enums import SCORE_STATUSES, SCORE_TYPES
from scoring.models import Score, ScoreSource

SCORE_TYPE_CHOICES = [(t, t) for t in SCORE_TYPES]
SCORE_STATUS_CHOICES = [(s, s) for s in SCORE_STATUSES]


class ScorerFilter(MultiValueFilter):
    """Scorer identifier by hash, or by class name; any of the given values."""

    def apply(self, qs: QuerySet[Any], value: list[str]) -> QuerySet[Any]:
        """A 64-hex value is an identifier hash; anything else is a class name."""
        condition = Q()
        for v in value:
            if HASH_RE.match(v):
                condition |= Q(scorer_identifier_id=v)
            else:
                condition |= Q(scorer_class=v)
        return qs.filter(condition)


@extend_schema_field(OpenApiTypes.STR)
class ConversationScoresFilter(InFilter):
    """Scores of the pieces of these conversations (joined through original_prompt_id)."""

    def apply(self, qs: QuerySet[Any], value: list[str]) -> QuerySet[Any]:
        """Scores whose message_piece_id is an original_prompt_id in the conversations."""
        pieces = MessagePiece.objects.filter(conversation_id__in=value)
        return qs.filter(message_piece_id__in=pieces.values("original_prompt_id"))


class ScoreFilterSet(df.FilterSet):
    """Filters for score lists: type, value, status, category, scorer, piece, time range."""

    id = UUIDInFilter(field_name="id")
    score_type = ChoicesFilter(field_name="score_type", choices=SCORE_TYPE_CHOICES)
    # PyRIT's true_false values are case-insensitive ("False" is stored by composite scorers).
    score_value = df.CharFilter(field_name="score_value", lookup_expr="iexact", max_length=64)
    status = ChoicesFilter(field_name="status", choices=SCORE_STATUS_CHOICES)
    score_category = ElementFilter(field_name="score_category", match="any")
    # `harm_category` is the name the other lists use for the same idea.
    harm_category = ElementFilter(field_name="score_category", match="any")
    scorer = ScorerFilter(field_name="scorer_identifier")
    source = ChoicesFilter(field_name="source", choices=ScoreSource.choices)
    message_piece_id = UUIDInFilter(field_name="message_piece_id")
    conversation_id = ConversationScoresFilter(field_name="conversation_id")
    attack_result_id = UUIDInFilter(field_name="attack_result_id")
    objective = df.CharFilter(field_name="objective", lookup_expr="icontains", max_length=300)
    after = DateBoundFilter(field_name="timestamp", bound="gte")
    before = DateBoundFilter(field_name="timestamp", bound="lte")

    class Meta:
        model = Score
        fields: list[str] = []
