"""Admin for scores: read-only evidence; human verdicts cannot be deleted here."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from memory.admin import ReadOnlyAdmin
from scoring.models import Score, ScoreSource


@admin.register(Score)
class ScoreAdmin(ReadOnlyAdmin):
    list_display = ["id", "scorer_class", "score_type", "score_value", "status", "source"]
    list_filter = ["source", "score_type", "status"]
    search_fields = ["=id", "=message_piece_id"]
    raw_id_fields = ["scorer_identifier", "scorer_dump", "attack_result", "reviewer"]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Human verdicts are the review record: a reviewer corrects one by recording a new
        verdict (the latest counts), so none is deleted here, alone, in bulk or by cascade."""
        if isinstance(obj, Score) and obj.source == ScoreSource.HUMAN:
            return False
        return super().has_delete_permission(request, obj)
