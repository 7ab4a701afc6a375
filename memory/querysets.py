"""Named read shapes for memory rows, shared by the HTML pages, the API and the exports.

Each function returns a queryset that loads exactly what its consumers read (select_related /
prefetch_related / only), so a page costs a constant number of queries whatever its length.

Every shape takes the caller's `Scope` (redteam.common.access) and starts from
`Model.objects.visible_to(scope)`, so no page, endpoint or export built on one can forget
which operations its caller may read: a row outside them is simply absent (a 404 for a
detail). Rows fetched through a visible row (a result's references, a piece's converters,
the nodes of a visible identifier's tree) share its visibility.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime

from django.db.models import (
    BooleanField,
    Exists,
    ExpressionWrapper,
    F,
    OuterRef,
    Prefetch,
    Q,
    QuerySet,
    Subquery,
    TextField,
)
from django.db.models.functions import Cast

from memory.models import (
    AttackResult,
    ComponentIdentifier,
    Conversation,
    ConversationReference,
    MessagePiece,
    PieceConverter,
    ScenarioResult,
    ScorableContent,
)
from redteam.common.access import Scope
from redteam.common.fields import stored_text_head, stored_text_length
from redteam.common.models import MediaBlob
from redteam.core.textview import MAX_DISPLAY_CHARS
from redteam.core.trees import (
    MAX_TREE_DEPTH,
    MAX_TREE_NODES,
    RebuiltTree,
    child_hashes,
    rebuild_from_rows,
)
from seeds.models import Seed

# Columns of AttackResult that list rows never show; deferred so a page of results with
# 10 KB tracebacks or large metadata stays small.
_RESULT_LIST_DEFERRED = (
    "error_traceback",
    "metadata",
    "retry_events",
    "attribution_data",
)


def conversations_for_list(scope: Scope) -> QuerySet[Conversation]:
    """Visible conversations with at least one piece, newest activity first, read from
    summary columns."""
    # last_timestamp is set as soon as a piece arrives; a declared conversation without pieces
    # has nothing to review yet. Ordering matches conv_recent_idx (conv_op_recent_idx when
    # scoped to a few operations) for keyset pagination.
    return (
        Conversation.objects.visible_to(scope)
        .filter(last_timestamp__isnull=False)
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
            "target_identifier__display_name",
        )
        .order_by("-last_timestamp", "-conversation_id")
    )


def conversations_updated_since(scope: Scope, since: datetime) -> QuerySet[Conversation]:
    """The conversations holding data changed since `since`, latest change first (the home
    page's "arrived lately": a walk of conv_updated_idx)."""
    return (
        Conversation.objects.visible_to(scope)
        .filter(updated_at__gte=since, last_timestamp__isnull=False)
        .order_by("-updated_at")
    )


def conversation_for_detail(scope: Scope) -> QuerySet[Conversation]:
    """Visible conversations with the target identifier and its verbatim dump (for the tree)."""
    return Conversation.objects.visible_to(scope).select_related("target_identifier", "target_dump")


def pieces_for_conversation(scope: Scope, conversation_id: str) -> QuerySet[MessagePiece]:
    """A visible conversation's pieces in PyRIT order, with media, identifiers and converter
    chains (none when the conversation is not visible).

    The two values are read as the page shows them, whatever their size: the first
    MAX_DISPLAY_CHARS characters of each (``original_head``, ``converted_head``), their
    lengths (``original_length``, ``converted_length``) and whether they are equal
    (``values_equal``), all computed in the database; the values themselves are deferred.
    """
    # PyRIT orders by sequence and keeps its own order inside a message: the stored position.
    # The converters are the pieces' own, visible with them.
    converters = PieceConverter.objects.select_related("identifier", "dump").order_by("position")
    return (
        MessagePiece.objects.visible_to(scope)
        .filter(conversation_id=conversation_id)
        .defer("original_value", "converted_value")
        .annotate(
            original_head=stored_text_head("original_value", MAX_DISPLAY_CHARS),
            converted_head=stored_text_head("converted_value", MAX_DISPLAY_CHARS),
            original_length=stored_text_length("original_value"),
            converted_length=stored_text_length("converted_value"),
            values_equal=ExpressionWrapper(
                Q(original_value=F("converted_value")), output_field=BooleanField()
            ),
        )
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


def target_name() -> Subquery:
    """The display name of a result's objective target (``target_name``): one primary-key
    lookup per row shown, inside the row query."""
    names = ComponentIdentifier.objects.filter(hash=OuterRef("target_hash"))
    return Subquery(names.values("display_name")[:1])


def attack_results_for_list(scope: Scope) -> QuerySet[AttackResult]:
    """Visible attack results for list pages, newest ingested first, without their bulky
    columns, with their target's display name (``target_name``)."""
    return (
        AttackResult.objects.visible_to(scope)
        .annotate(target_name=target_name())
        .defer(*_RESULT_LIST_DEFERRED)
        .select_related("atomic_attack_identifier")
        .order_by("-ingested_at", "-attack_result_id")
    )


# Related conversations listed per attack result, and inbound references per conversation.
MAX_RELATED_SHOWN = 50


def attack_results_for_detail(scope: Scope) -> QuerySet[AttackResult]:
    """Visible attack results with their identifier dump, last response, target display name
    (``target_name``) and the first MAX_RELATED_SHOWN related conversations (as
    ``related_shown``), each annotated ``ingested``: whether that conversation is stored and
    visible (its page exists)."""
    # A result may name thousands of related conversations: the page lists the first few
    # (a sliced prefetch is one windowed query, whatever the number of results). The
    # references are the result's own data (PyRIT's related_conversations), visible with it;
    # the conversations they name may never have been sent, or be another operation's.
    related = ConversationReference.objects.annotate(
        ingested=Exists(
            Conversation.objects.visible_to(scope).filter(pk=OuterRef("conversation_id"))
        )
    ).order_by("conversation_type", "conversation_id")
    return (
        AttackResult.objects.visible_to(scope)
        .annotate(target_name=target_name())
        .select_related(
            "atomic_attack_identifier", "atomic_attack_dump", "last_response", "conversation"
        )
        .prefetch_related(
            Prefetch(
                "related_conversations",
                queryset=related[:MAX_RELATED_SHOWN],
                to_attr="related_shown",
            )
        )
    )


def references_to_conversation(
    scope: Scope, conversation_id: str
) -> QuerySet[ConversationReference]:
    """References that name this conversation as related to some visible attack result."""
    return (
        ConversationReference.objects.visible_to(scope)
        .filter(conversation_id=conversation_id)
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

    The roots come from a scoped read (`ComponentIdentifier.objects.visible_to`): every node
    below a visible root is visible too (ingestion records each node's operations with the
    root's), so the nodes are fetched by hash.

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


def identifiers_using(scope: Scope, identifier_hash: str) -> QuerySet[ComponentIdentifier]:
    """Visible identifiers whose children name this hash (its parents)."""
    # The identifier table is small (one row per distinct configuration), so a text search
    # over children for the hash is cheap and finds every parent whatever the child name.
    return (
        ComponentIdentifier.objects.visible_to(scope)
        .annotate(children_text=Cast("children", TextField()))
        .filter(children_text__contains=identifier_hash)
    )


def scenario_results_for_list(scope: Scope) -> QuerySet[ScenarioResult]:
    """Visible scenario results without the columns list rows never show, with their
    objective target's display name (``target_name``)."""
    return (
        ScenarioResult.objects.visible_to(scope)
        .annotate(target_name=target_name())
        .defer("metadata", "display_group_map", "attack_result_ids", "scenario_init_data")
    )


def scenario_result_for_detail(scope: Scope) -> QuerySet[ScenarioResult]:
    """Visible scenario results with their three identifier dumps (for the trees) and their
    objective target's display name (``target_name``)."""
    return (
        ScenarioResult.objects.visible_to(scope)
        .annotate(target_name=target_name())
        .select_related("scenario_dump", "objective_target_dump", "objective_scorer_dump")
    )


def media_visible_to(scope: Scope, hashes: Collection[str]) -> QuerySet[MediaBlob]:
    """The stored blobs among `hashes` that the scope may fetch: bytes a visible piece links
    (original or converted media, or its converted value's sha256), any seed links (seeds
    are the shared library), or visible scored content names.

    One query. Each reference is looked up by the given hashes (constants, so every lookup
    is an index scan: the media links' partial indexes, piece_csha_idx, the seeds' media and
    value_sha256 indexes, the content's value_sha256), then joined to the scope's operations.
    """
    wanted = sorted(set(hashes))
    blobs = MediaBlob.objects.filter(sha256__in=wanted)
    if scope.everything:
        return blobs
    pieces = MessagePiece.objects.visible_to(scope)
    referenced = (
        pieces.filter(converted_media__in=wanted).values("converted_media"),
        pieces.filter(original_media__in=wanted).values("original_media"),
        pieces.filter(converted_value_sha256__in=wanted).values("converted_value_sha256"),
        Seed.objects.filter(media__in=wanted).values("media"),
        Seed.objects.filter(value_sha256__in=wanted).values("value_sha256"),
        ScorableContent.objects.visible_to(scope)
        .filter(value_sha256__in=wanted)
        .values("value_sha256"),
    )
    condition = Q()
    for rows in referenced:
        condition |= Q(sha256__in=rows)
    return blobs.filter(condition)


# --- export shapes (memory/export.py, the API, redteam/site/run_export.py) ----------------


def _converter_dumps(lookup: str = "converters") -> Prefetch[str, QuerySet[PieceConverter]]:
    """A piece's converter uses with their verbatim dumps, in position order (`lookup`: the
    path to the pieces' converters)."""
    return Prefetch(
        lookup, queryset=PieceConverter.objects.select_related("dump").order_by("position")
    )


def pieces_for_export(scope: Scope) -> QuerySet[MessagePiece]:
    """Visible pieces with every dump their PyRIT dict needs (two queries for any number of
    rows)."""
    return (
        MessagePiece.objects.visible_to(scope)
        .select_related("target_dump", "attack_dump", "scorer_dump", "conversation__target_dump")
        .prefetch_related(_converter_dumps())
    )


def conversations_for_export(scope: Scope) -> QuerySet[Conversation]:
    """Visible conversations with their target dump (one query)."""
    return (
        Conversation.objects.visible_to(scope)
        .select_related("target_dump")
        .order_by("conversation_id")
    )


def attack_results_for_export(scope: Scope) -> QuerySet[AttackResult]:
    """Visible attack results with their dumps, last response (and its dumps, and its
    conversation's operation, for memory.export.visible_last_response) and references."""
    return (
        AttackResult.objects.visible_to(scope)
        .select_related(
            "atomic_attack_dump",
            "last_response__target_dump",
            "last_response__attack_dump",
            "last_response__scorer_dump",
            "last_response__conversation__target_dump",
        )
        .prefetch_related(
            Prefetch("related_conversations", queryset=ConversationReference.objects.order_by("pk"))
        )
        .prefetch_related(_converter_dumps("last_response__converters"))
    )


def scenario_results_for_export(scope: Scope) -> QuerySet[ScenarioResult]:
    """Visible scenario results with the three identifier dumps their PyRIT dict needs."""
    return scenario_result_for_detail(scope)
