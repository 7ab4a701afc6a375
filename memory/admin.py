"""Admin for ingested memory: read-only (redteam.common.admin's base), tuned for big tables."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from memory.models import (
    AttackResult,
    ComponentIdentifier,
    Conversation,
    ConversationReference,
    IdentifierDump,
    MessagePiece,
    PieceConverter,
    Score,
    ScoreSource,
)
from redteam.common.admin import ReadOnlyAdmin, ReadOnlyTabularInline


@admin.register(ComponentIdentifier)
class ComponentIdentifierAdmin(ReadOnlyAdmin):
    list_display = ["hash", "class_name", "class_module", "pyrit_version", "eval_hash"]
    search_fields = ["=hash", "class_name"]


@admin.register(IdentifierDump)
class IdentifierDumpAdmin(ReadOnlyAdmin):
    list_display = ["digest", "identifier"]
    search_fields = ["=digest", "=identifier__hash"]
    raw_id_fields = ["identifier"]


@admin.register(Conversation)
class ConversationAdmin(ReadOnlyAdmin):
    list_display = ["conversation_id", "attack_class", "outcome", "message_count", "last_timestamp"]
    list_filter = ["outcome", "has_error"]
    search_fields = ["=conversation_id"]
    raw_id_fields = ["target_identifier", "target_dump"]


class PieceConverterInline(ReadOnlyTabularInline):
    model = PieceConverter
    raw_id_fields = ["identifier", "dump"]


@admin.register(MessagePiece)
class MessagePieceAdmin(ReadOnlyAdmin):
    list_display = ["id", "conversation", "sequence", "role", "converted_value_data_type"]
    list_filter = ["role", "converted_value_data_type", "response_error"]
    search_fields = ["=id", "=conversation__conversation_id"]
    list_select_related = ["conversation"]
    inlines = [PieceConverterInline]
    raw_id_fields = [
        "conversation",
        "target_identifier",
        "target_dump",
        "attack_identifier",
        "attack_dump",
        "scorer_identifier",
        "scorer_dump",
        "original_media",
        "converted_media",
    ]


class ConversationReferenceInline(ReadOnlyTabularInline):
    model = ConversationReference


@admin.register(AttackResult)
class AttackResultAdmin(ReadOnlyAdmin):
    list_display = ["attack_result_id", "attack_class", "outcome", "executed_turns", "timestamp"]
    list_filter = ["outcome"]
    search_fields = ["=attack_result_id", "=conversation__conversation_id", "objective"]
    inlines = [ConversationReferenceInline]
    raw_id_fields = [
        "conversation",
        "atomic_attack_identifier",
        "atomic_attack_dump",
        "last_response",
    ]


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
