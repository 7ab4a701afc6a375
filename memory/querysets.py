"""Named read shapes for memory rows, shared by the HTML pages, the API and the admin.

Each function returns a queryset that loads exactly what its consumers read (select_related /
prefetch_related / only), so a page costs a constant number of queries whatever its length.
"""

from __future__ import annotations

import json
from typing import Any

from django.db.models import Prefetch, QuerySet

from memory.models import (
    AttackResult,
    ComponentIdentifier,
    Conversation,
    ConversationReference,
    IdentifierDump,
    MessagePiece,
    PieceConverter,
    ScenarioResult,
)

# Columns of AttackResult that list rows never show; deferred so a page of results with
# 10 KB tracebacks or large metadata stays small.
_RESULT_LIST_DEFERRED = (
    "error_traceback",
    "metadata",
    "retry_events",
    "attribution_data",
)


def conversations_for_list() -> QuerySet[Conversation]:
    """Conversations with at least one piece, newest activity first, read from summary columns."""
    # last_timestamp is set as soon as a piece arrives; a declared conversation without pieces
    # has nothing to review yet. Ordering matches conv_recent_idx for keyset pagination.
    return (
        Conversation.objects.filter(last_timestamp__isnull=False)
        .select_related("target_identifier")
        .only(
            "conversation_id",
            "first_timestamp",
            "last_timestamp",
            "message_count",
            "piece_count",
            "labels",
            "harm_categories",
            "data_types",
            "converter_classes",
            "has_error",
            "attack_class",
            "outcome",
            "preview",
            "target_identifier__hash",
            "target_identifier__class_name",
        )
        .order_by("-last_timestamp", "-conversation_id")
    )


def conversation_for_detail() -> QuerySet[Conversation]:
    """Conversation rows with the target identifier and its verbatim dump (for the tree)."""
    return Conversation.objects.select_related("target_identifier", "target_dump")


def pieces_for_conversation(conversation_id: str) -> QuerySet[MessagePiece]:
    """A conversation's pieces in PyRIT order, with media, identifiers and converter chains."""
    # PyRIT orders by sequence and keeps its own order inside a message: the stored position.
    converters = PieceConverter.objects.select_related("identifier", "dump").order_by("position")
    return (
        MessagePiece.objects.filter(conversation_id=conversation_id)
        .select_related(
            "original_media",
            "converted_media",
            "target_identifier",
            "attack_identifier",
            "scorer_identifier",
        )
        .prefetch_related(Prefetch("converters", queryset=converters))
        .order_by("sequence", "position")
    )


def attack_results_for_list() -> QuerySet[AttackResult]:
    """Attack results for list pages, newest ingested first, without their bulky columns."""
    return (
        AttackResult.objects.defer(*_RESULT_LIST_DEFERRED)
        .select_related("atomic_attack_identifier")
        .order_by("-ingested_at", "-attack_result_id")
    )


def attack_results_for_detail() -> QuerySet[AttackResult]:
    """Attack results with their identifier dump, last response and related conversations."""
    related = ConversationReference.objects.order_by("conversation_type", "conversation_id")
    return AttackResult.objects.select_related(
        "atomic_attack_identifier", "atomic_attack_dump", "last_response", "conversation"
    ).prefetch_related(Prefetch("related_conversations", queryset=related))


def references_to_conversation(conversation_id: str) -> QuerySet[ConversationReference]:
    """References that name this conversation as related to some attack result."""
    return (
        ConversationReference.objects.filter(conversation_id=conversation_id)
        .select_related("attack_result")
        .only(
            "conversation_id",
            "conversation_type",
            "description",
            "attack_result__attack_result_id",
            "attack_result__conversation_id",
            "attack_result__objective",
            "attack_result__outcome",
        )
        .order_by("attack_result__attack_result_id")
    )


def identifier_dump(identifier: ComponentIdentifier, max_depth: int = 12) -> dict[str, Any]:
    """The identifier's flat dump: a stored one, or rebuilt from rows (one query per level).

    Nested identifiers (a target inside an attack tree) are stored as rows without a dump of
    their own; their tree is rebuilt from the children hashes, level by level.
    """
    stored = IdentifierDump.objects.filter(identifier=identifier).order_by("digest").first()
    if stored is not None:
        value = json.loads(stored.dump_json)
        if isinstance(value, dict):
            return value
    rows = {identifier.hash: identifier}
    frontier = _child_hashes(identifier)
    for _ in range(max_depth):
        wanted = frontier - rows.keys()
        if not wanted:
            break
        found = {r.hash: r for r in ComponentIdentifier.objects.filter(hash__in=wanted)}
        rows.update(found)
        frontier = {h for r in found.values() for h in _child_hashes(r)}
    return _flat_from_rows(identifier.hash, rows, max_depth)


def _child_hashes(row: ComponentIdentifier) -> set[str]:
    hashes: set[str] = set()
    for value in (row.children or {}).values():
        hashes.update(value if isinstance(value, list) else [value])
    return {h for h in hashes if isinstance(h, str)}


def _flat_from_rows(hash_: str, rows: dict[str, ComponentIdentifier], depth: int) -> dict[str, Any]:
    row = rows.get(hash_)
    if row is None:
        return {"class_name": "(missing)", "class_module": "", "hash": hash_}
    out: dict[str, Any] = {
        "class_name": row.class_name,
        "class_module": row.class_module,
        "hash": row.hash,
        "pyrit_version": row.pyrit_version,
    }
    if row.eval_hash:
        out["eval_hash"] = row.eval_hash
    out.update(row.params or {})
    if row.children and depth > 0:
        out["children"] = {
            name: [_flat_from_rows(h, rows, depth - 1) for h in value]
            if isinstance(value, list)
            else _flat_from_rows(value, rows, depth - 1)
            for name, value in row.children.items()
        }
    if row.attributes:
        out["attributes"] = dict(row.attributes)
    return out


def identifiers_for_list() -> QuerySet[ComponentIdentifier]:
    """Identifier rows for pickers and lists, by class name then hash."""
    return ComponentIdentifier.objects.order_by("class_name", "hash")


# --- export shapes (memory/export.py, scoring/export.py) -----------------------------------


def _converter_dumps() -> Prefetch:
    """A piece's converter uses with their verbatim dumps, in position order."""
    return Prefetch(
        "converters", queryset=PieceConverter.objects.select_related("dump").order_by("position")
    )


def pieces_for_export() -> QuerySet[MessagePiece]:
    """Pieces with every dump their PyRIT dict needs (two queries for any number of rows)."""
    return MessagePiece.objects.select_related(
        "target_dump", "attack_dump", "scorer_dump", "conversation__target_dump"
    ).prefetch_related(_converter_dumps())


def conversations_for_export() -> QuerySet[Conversation]:
    """Conversations with their target dump (one query)."""
    return Conversation.objects.select_related("target_dump").order_by("conversation_id")


def attack_results_for_export() -> QuerySet[AttackResult]:
    """Attack results with their dumps, last response (and its dumps) and references."""
    return AttackResult.objects.select_related(
        "atomic_attack_dump",
        "last_response__target_dump",
        "last_response__attack_dump",
        "last_response__scorer_dump",
        "last_response__conversation__target_dump",
    ).prefetch_related(
        Prefetch("related_conversations", queryset=ConversationReference.objects.order_by("pk")),
        Prefetch(
            "last_response__converters",
            queryset=PieceConverter.objects.select_related("dump").order_by("position"),
        ),
    )


def scenario_results_for_export() -> QuerySet[ScenarioResult]:
    """Scenario results with the three identifier dumps their PyRIT dict needs."""
    return ScenarioResult.objects.select_related(
        "scenario_dump", "objective_target_dump", "objective_scorer_dump"
    )
