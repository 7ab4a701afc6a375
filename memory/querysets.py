"""Named read shapes for memory rows, shared by the HTML pages, the API and the admin.

Each function returns a queryset that loads exactly what its consumers read (select_related /
prefetch_related / only), so a page costs a constant number of queries whatever its length.
"""

from __future__ import annotations

from django.db.models import Prefetch, QuerySet

from memory.models import (
    AttackResult,
    ComponentIdentifier,
    Conversation,
    ConversationReference,
    MessagePiece,
    PieceConverter,
    ScenarioResult,
)
from redteam.core.trees import (
    MAX_TREE_DEPTH,
    MAX_TREE_NODES,
    RebuiltTree,
    child_hashes,
    rebuild_from_rows,
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


# Related conversations listed per attack result, and inbound references per conversation.
MAX_RELATED_SHOWN = 50


def attack_results_for_detail() -> QuerySet[AttackResult]:
    """Attack results with their identifier dump, last response and the first
    MAX_RELATED_SHOWN related conversations (as ``related_shown``)."""
    # A result may name thousands of related conversations: the page lists the first few
    # (a sliced prefetch is one windowed query, whatever the number of results).
    related = ConversationReference.objects.order_by("conversation_type", "conversation_id")
    return AttackResult.objects.select_related(
        "atomic_attack_identifier", "atomic_attack_dump", "last_response", "conversation"
    ).prefetch_related(
        Prefetch(
            "related_conversations",
            queryset=related[:MAX_RELATED_SHOWN],
            to_attr="related_shown",
        )
    )


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


def identifier_trees(roots: list[ComponentIdentifier]) -> dict[str, RebuiltTree]:
    """Each root's tree rebuilt from stored rows (redteam.core.trees.rebuild_from_rows), by hash.

    The roots' rows are fetched together: one query per tree level, at most MAX_TREE_DEPTH,
    and at most MAX_TREE_NODES rows per root, since no rebuild emits more nodes than that.
    """
    rows: dict[str, ComponentIdentifier] = {r.hash: r for r in roots}
    absent: set[str] = set()
    limit = MAX_TREE_NODES * len(rows)
    frontier = [h for r in roots for h in child_hashes(r.children)]
    for _ in range(MAX_TREE_DEPTH):
        room = limit - len(rows)
        wanted = [h for h in dict.fromkeys(frontier) if h not in rows and h not in absent]
        if not wanted or room <= 0:
            break
        wanted = wanted[:room]
        found = ComponentIdentifier.objects.in_bulk(wanted)
        rows.update(found)
        absent.update(h for h in wanted if h not in found)
        frontier = [h for r in found.values() for h in child_hashes(r.children)]
    return {r.hash: rebuild_from_rows(r, rows, absent) for r in roots}


def identifier_tree(root: ComponentIdentifier) -> RebuiltTree:
    """One identifier's tree rebuilt from stored rows (see identifier_trees)."""
    return identifier_trees([root])[root.hash]


# --- export shapes (memory/export.py, memory/export.py) -----------------------------------


def _converter_dumps() -> Prefetch[str, QuerySet[PieceConverter]]:
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
    references: QuerySet[ConversationReference] = ConversationReference.objects.order_by("pk")
    converters: QuerySet[PieceConverter] = PieceConverter.objects.select_related("dump").order_by(
        "position"
    )
    return AttackResult.objects.select_related(
        "atomic_attack_dump",
        "last_response__target_dump",
        "last_response__attack_dump",
        "last_response__scorer_dump",
        "last_response__conversation__target_dump",
    ).prefetch_related(
        Prefetch("related_conversations", queryset=references),
        Prefetch("last_response__converters", queryset=converters),
    )


def scenario_results_for_export() -> QuerySet[ScenarioResult]:
    """Scenario results with the three identifier dumps their PyRIT dict needs."""
    return ScenarioResult.objects.select_related(
        "scenario_dump", "objective_target_dump", "objective_scorer_dump"
    )
