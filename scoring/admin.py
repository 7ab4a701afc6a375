"""Admin for scores: read-only evidence."""

from __future__ import annotations

from django.contrib import admin

from memory.admin import ReadOnlyAdmin
from scoring.models import Score


@admin.register(Score)
class ScoreAdmin(ReadOnlyAdmin):
    list_display = ["id", "scorer_class", "score_type", "score_value", "status", "source"]
    list_filter = ["source", "score_type", "status"]
    search_fields = ["=id", "=message_piece_id"]
    raw_id_fields = ["scorer_identifier", "scorer_dump", "attack_result", "reviewer"]
