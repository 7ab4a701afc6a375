"""Why each index of the piece and conversation tables exists: the reads whose plans use it.

Every index on ``memory_messagepiece`` is paid by every ingested piece, and every index on
``memory_conversation`` by every conversation a message creates or updates, so the tables keep
only the indexes some page, API read or ingestion step needs. ``PIECE_READS`` and
``CONVERSATION_READS`` build each read the way its code path does (the same FilterSets and
querysets, on a caller's scope) and name the index its plan must use; ``TABLES`` gives each
table's index set; ``DROPPED`` lists the indexes removed (migrations 0017, 0020 and 0021) and why.

``bench/explain.py`` runs EXPLAIN over every read on a loaded database and writes
docs/indexes.md; tests/memory/test_index_plans.py checks on PostgreSQL that every read's plan
can use its index and that each table carries exactly the indexes listed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import QuerySet
from django.db.models.query import RawQuerySet

from memory.filters import (
    ConversationFilterSet,
    IdentifierFilterSet,
    MessagePieceFilterSet,
    ScoreFilterSet,
)
from memory.models import (
    ComponentIdentifier,
    Conversation,
    MessagePiece,
    PieceConverter,
    original_prompt_in,
)
from memory.querysets import (
    conversations_updated_since,
    media_visible_to,
    pieces_for_conversation,
    pieces_for_export,
)
from redteam.common.access import Scope

# Rows a keyset page reads (the API's page size plus the one that says "there is more").
PAGE = 51


@dataclass(frozen=True)
class Sample:
    """Values of stored rows the reads look for (taken from the loaded database)."""

    conversation_id: str
    piece_id: uuid.UUID
    prompt_id: uuid.UUID
    sha256: str
    identifier_hash: str
    timestamp: str


@dataclass(frozen=True)
class PieceRead:
    """One read of the piece table: where it runs, how it is built, the index its plan uses."""

    name: str
    where: str
    build: Callable[[Scope, Sample], QuerySet[Any] | RawQuerySet[Any]]
    index: str
    # True when only a caller limited to some operations reads the pieces (a superuser's
    # media check needs no piece): tests plan it on such a scope.
    restricted: bool = False
    # True for a read planned on every operation (a superuser's); bench/explain.py plans the
    # others on a reviewer's scope.
    everything: bool = False
    # True for a keyset page whose order the index provides: tests plan it with explicit sorts
    # off, as on a large table, where sorting every row for the first page is what it avoids.
    ordered: bool = False
    # Other indexes a good plan may use instead, depending on the data (a common value is
    # found faster walking an order than through its own index).
    alternatives: tuple[str, ...] = ()

    def uses_its_index(self, used: set[str]) -> bool:
        """True when a plan reading `used` uses the index (or an alternative)."""
        return self.index in used or not used.isdisjoint(self.alternatives)


def _pieces_api(data: dict[str, Any]) -> Callable[[Scope, Sample], QuerySet[Any]]:
    """/api/v1/message-pieces/ with these query parameters: first page, newest first."""

    def build(scope: Scope, s: Sample) -> QuerySet[Any]:
        values = {
            k: (v.format(s=s) if isinstance(v, str) else [x.format(s=s) for x in v])
            for k, v in data.items()
        }
        qs = MessagePieceFilterSet(values, queryset=pieces_for_export(scope), scope=scope).qs
        return qs.order_by("-timestamp", "position", "-id")[:PAGE]

    return build


def _used_as(kind: str) -> Callable[[Scope, Sample], QuerySet[Any]]:
    """/api/v1/identifiers/?used_as=<kind>: identifiers a visible row uses that way."""

    def build(scope: Scope, _s: Sample) -> QuerySet[Any]:
        qs = IdentifierFilterSet({"used_as": kind}, scope=scope).qs
        return qs.order_by("-first_seen_at", "-hash")[:PAGE]

    return build


# A term few pieces hold, as searches look for: a word in nearly every conversation is found
# faster by walking the newest conversations (their plan reads piece_message_position).
SEARCH_TERM = "zeppelin"


def _search(scope: Scope, _s: Sample) -> QuerySet[Any]:
    qs = ConversationFilterSet({"q": SEARCH_TERM}, scope=scope).qs
    return qs.order_by("-last_timestamp", "-conversation_id")[:PAGE]


def _conversation_pieces(scope: Scope, s: Sample) -> QuerySet[Any]:
    return pieces_for_conversation(scope, s.conversation_id)


def _conversation_messages(scope: Scope, s: Sample) -> QuerySet[Any]:
    return (
        pieces_for_export(scope)
        .filter(conversation_id=s.conversation_id)
        .order_by("sequence", "position")
    )


def _scores_of_conversation(scope: Scope, s: Sample) -> QuerySet[Any]:
    qs = ScoreFilterSet({"conversation_id": s.conversation_id}, scope=scope).qs
    return qs.order_by("-timestamp", "-id")[:PAGE]


def _conversation_score_filter(scope: Scope, _s: Sample) -> QuerySet[Any]:
    qs = ConversationFilterSet({"score_value": "true"}, scope=scope).qs
    return qs.order_by("-last_timestamp", "-conversation_id")[:PAGE]


def _identifier_page(scope: Scope, s: Sample) -> QuerySet[Any]:
    from django.db.models import Q

    return (
        MessagePiece.objects.visible_to(scope)
        .filter(
            Q(target_identifier=s.identifier_hash)
            | Q(attack_identifier=s.identifier_hash)
            | Q(scorer_identifier=s.identifier_hash)
        )
        .only("id", "conversation_id", "sequence", "role")
        .order_by("id")[:50]
    )


def _media(scope: Scope, s: Sample) -> QuerySet[Any]:
    return media_visible_to(scope, [s.sha256])


def _ingest_stored(_scope: Scope, s: Sample) -> RawQuerySet[Any]:
    from django.db import router

    from memory.store_common import stored_pieces_statement

    alias = router.db_for_write(MessagePiece)
    sql, params = stored_pieces_statement([s.piece_id], [s.conversation_id], [0, 1], alias)
    return MessagePiece.objects.using(alias).raw(sql, params)


def _score_ingest(_scope: Scope, s: Sample) -> QuerySet[Any]:
    return MessagePiece.objects.filter(original_prompt_in([s.prompt_id])).values_list(
        "original_prompt_id", "conversation__operation_id"
    )


def _calibration_pieces(scope: Scope, s: Sample) -> QuerySet[Any]:
    return (
        MessagePiece.objects.visible_to(scope)
        .filter(original_prompt_in([s.prompt_id]))
        .order_by("timestamp", "id")
        .values_list("id", "original_prompt_id", "conversation_id")
    )


def _link_media(_scope: Scope, s: Sample) -> QuerySet[Any]:
    return MessagePiece.objects.filter(
        converted_value_sha256=s.sha256, converted_value_data_type__in=["image_path"]
    )


def _last_response(_scope: Scope, s: Sample) -> QuerySet[Any]:
    return MessagePiece.objects.filter(pk=s.piece_id)


def _converters_of_pieces(_scope: Scope, s: Sample) -> QuerySet[Any]:
    return PieceConverter.objects.filter(piece_id__in=[s.piece_id]).order_by("position")


def _converter_uses(scope: Scope, s: Sample) -> QuerySet[Any]:
    return (
        PieceConverter.objects.visible_to(scope)
        .filter(identifier=s.identifier_hash)
        .order_by("piece_id", "position")[:50]
    )


def _used_as_converter(scope: Scope, s: Sample) -> QuerySet[Any]:
    return _used_as("converter")(scope, s)


PIECE_READS: tuple[PieceRead, ...] = (
    PieceRead(
        "conversation list, full-text search (q=)",
        "memory.filters.ConversationFilterSet.filter_q",
        _search,
        "piece_search_gin",
    ),
    PieceRead(
        "conversation page: its pieces in order",
        "memory.querysets.pieces_for_conversation",
        _conversation_pieces,
        "piece_message_position",
    ),
    PieceRead(
        "API conversation messages",
        "memory.api.reads.ConversationMessagesView",
        _conversation_messages,
        "piece_message_position",
    ),
    PieceRead(
        "API message pieces, first page (newest first)",
        "memory.api.reads.MessagePieceViewSet",
        _pieces_api({}),
        "piece_time_idx",
        ordered=True,
    ),
    PieceRead(
        "API message pieces, after= / before=",
        "memory.filters.MessagePieceFilterSet (after, before)",
        _pieces_api({"after": "2026-09-10", "before": "2026-09-11"}),
        "piece_time_idx",
        ordered=True,
    ),
    PieceRead(
        "API message pieces, role=user (a common role: the time order serves it)",
        "memory.filters.MessagePieceFilterSet (role)",
        _pieces_api({"role": ["user"]}),
        "piece_time_idx",
        ordered=True,
    ),
    PieceRead(
        "API message pieces, role=system (a rare role)",
        "memory.filters.MessagePieceFilterSet (role)",
        _pieces_api({"role": ["system"]}),
        "piece_role_rare_idx",
    ),
    PieceRead(
        "API message pieces, data_type=image_path",
        "memory.filters.MessagePieceFilterSet (data_type)",
        _pieces_api({"data_type": ["image_path"]}),
        "piece_ctype_media_idx",
    ),
    PieceRead(
        "API message pieces, id=",
        "memory.filters.MessagePieceFilterSet (id)",
        _pieces_api({"id": ["{s.piece_id}"]}),
        "memory_messagepiece_pkey",
    ),
    PieceRead(
        "API message pieces, conversation_id=",
        "memory.filters.MessagePieceFilterSet (conversation_id)",
        _pieces_api({"conversation_id": ["{s.conversation_id}"]}),
        "piece_message_position",
    ),
    PieceRead(
        "API message pieces, original_prompt_id=",
        "memory.filters.MessagePieceFilterSet (original_prompt_id)",
        _pieces_api({"original_prompt_id": ["{s.prompt_id}"]}),
        "piece_copy_of_idx",
    ),
    PieceRead(
        "API message pieces, converted_value_sha256=",
        "memory.filters.MessagePieceFilterSet (converted_value_sha256)",
        _pieces_api({"converted_value_sha256": ["{s.sha256}"]}),
        "piece_csha_idx",
    ),
    PieceRead(
        "API identifiers, used_as=target (0.13 pieces' own target)",
        "memory.filters.IdentifierFilterSet.filter_used_as",
        _used_as("target"),
        "piece_target_idx",
    ),
    PieceRead(
        "API identifiers, used_as=attack",
        "memory.filters.IdentifierFilterSet.filter_used_as",
        _used_as("attack"),
        "piece_attack_idx",
    ),
    PieceRead(
        "API identifiers, used_as=scorer",
        "memory.filters.IdentifierFilterSet.filter_used_as",
        _used_as("scorer"),
        "piece_scorer_idx",
    ),
    PieceRead(
        "identifier page: 0.13 pieces using it",
        "memory.views.identifier_detail",
        _identifier_page,
        "piece_target_idx",
        # An identifier on many pieces: their first page is found walking the id order.
        alternatives=("memory_messagepiece_pkey",),
    ),
    PieceRead(
        "API scores, conversation_id=",
        "memory.filters.ConversationScoresFilter",
        _scores_of_conversation,
        "piece_message_position",
    ),
    PieceRead(
        "conversation list, score_value= filter",
        "memory.filters.ConversationFilterSet.filter_score_value",
        _conversation_score_filter,
        "piece_message_position",
    ),
    PieceRead(
        "media download: may the caller fetch these bytes",
        "memory.querysets.media_visible_to",
        _media,
        "piece_csha_idx",
        restricted=True,
    ),
    PieceRead(
        "media upload: link the pieces naming the bytes",
        "memory.services.link_media",
        _link_media,
        "piece_ctype_media_idx",
    ),
    PieceRead(
        "ingest: stored pieces with the batch's ids or messages",
        "memory.store_pieces._decide_pieces",
        _ingest_stored,
        "memory_messagepiece_pkey",
    ),
    PieceRead(
        "ingest: the same lookup, by message",
        "memory.store_pieces._decide_pieces",
        _ingest_stored,
        "piece_message_position",
    ),
    PieceRead(
        "score ingest: the operation of each scored piece",
        "memory.store_scores",
        _score_ingest,
        "piece_copy_of_idx",
    ),
    PieceRead(
        "scorer calibration: the pieces a page of disagreements points at",
        "scoring.calibration_views._disagreement_rows",
        _calibration_pieces,
        "piece_copy_of_idx",
    ),
    PieceRead(
        "every piece page and export: the pieces' converter chains (prefetch)",
        "memory.querysets.pieces_for_conversation, pieces_for_export",
        _converters_of_pieces,
        "piece_converter_position",
    ),
    PieceRead(
        "identifier page: pieces it converted",
        "memory.views.identifier_detail",
        _converter_uses,
        "converter_identifier_idx",
    ),
    PieceRead(
        "API identifiers, used_as=converter",
        "memory.filters.IdentifierFilterSet.filter_used_as",
        _used_as_converter,
        "converter_identifier_idx",
    ),
    PieceRead(
        "verdict pages: an attack result's last response",
        "scoring.services",
        _last_response,
        "memory_messagepiece_pkey",
    ),
)


def _conversations(data: dict[str, Any]) -> Callable[[Scope, Sample], QuerySet[Any]]:
    """The conversation list (page and API) with these filters: first page, newest first."""

    def build(scope: Scope, s: Sample) -> QuerySet[Any]:
        values = {k: v.format(s=s) for k, v in data.items()}
        qs = ConversationFilterSet(values, scope=scope).qs
        return qs.order_by("-last_timestamp", "-conversation_id")[:PAGE]

    return build


def _updated_since(scope: Scope, s: Sample) -> QuerySet[Any]:
    since = datetime.fromisoformat(s.timestamp)
    return conversations_updated_since(scope, since).values_list(
        "operation_id", "operation__name", "updated_at"
    )[:1001]


# Reads of memory_conversation: every conversation a message creates or changes pays each of its
# indexes. A filter on a value most conversations share is served by walking the list's order
# (conv_op_recent_idx) and skipping the rest; its own index pays off for a value few have, which
# is what these reads look for (a value no generated conversation has).
CONVERSATION_READS: tuple[PieceRead, ...] = (
    PieceRead(
        "conversation list, first page (a reviewer's operations)",
        "memory.views.conversation_list, memory.api.views.ConversationViewSet",
        _conversations({}),
        "conv_op_recent_idx",
        restricted=True,
        ordered=True,
    ),
    PieceRead(
        "conversation list, first page (every operation: a superuser)",
        "memory.views.conversation_list, memory.api.views.ConversationViewSet",
        _conversations({}),
        "conv_recent_idx",
        everything=True,
        ordered=True,
    ),
    PieceRead(
        "conversation list, after= / before=",
        "memory.filters.ConversationFilterSet (after, before)",
        _conversations({"after": "2026-09-10", "before": "2026-09-11"}),
        "conv_op_recent_idx",
        restricted=True,
        ordered=True,
    ),
    PieceRead(
        "conversation list, attack= (a class few conversations have)",
        "memory.filters.ConversationFilterSet (attack)",
        _conversations({"attack": "RareAttack"}),
        "conv_attack_idx",
    ),
    PieceRead(
        "conversation list, outcome= (each of the four is common: the list order is walked)",
        "memory.filters.ConversationFilterSet (outcome)",
        _conversations({"outcome": "error"}),
        "conv_op_recent_idx",
        restricted=True,
        ordered=True,
    ),
    PieceRead(
        "conversation list, target= (a target few conversations have)",
        "memory.filters.ConversationFilterSet (target)",
        _conversations({"target": "{s.identifier_hash}"}),
        "conv_target_idx",
    ),
    PieceRead(
        "conversation list, has_error=true",
        "memory.filters.ConversationFilterSet (has_error)",
        _conversations({"has_error": "true"}),
        "memory_conversation_has_error_cfffc7e5",
    ),
    PieceRead(
        "conversation list, label= (matched on the conversation or its attack results: the "
        "list order is walked)",
        "memory.filters.ConversationFilterSet (label)",
        _conversations({"label": "operator:nobody"}),
        "conv_op_recent_idx",
        restricted=True,
        ordered=True,
    ),
    PieceRead(
        "conversation list, harm_category= (a harm few conversations have)",
        "memory.filters.ConversationFilterSet (harm_category)",
        _conversations({"harm_category": "cbrn"}),
        "conv_harm_gin",
    ),
    PieceRead(
        "conversation list, converter= (a converter few conversations used)",
        "memory.filters.ConversationFilterSet (converter)",
        _conversations({"converter": "RareConverter"}),
        "conv_converters_gin",
    ),
    PieceRead(
        "conversation list, data_type= (a type few conversations hold)",
        "memory.filters.ConversationFilterSet (data_type)",
        _conversations({"data_type": "video_path"}),
        "conv_dtypes_gin",
    ),
    PieceRead(
        "home page: conversations that arrived lately",
        "memory.querysets.conversations_updated_since",
        _updated_since,
        "conv_updated_idx",
        restricted=True,
        ordered=True,
    ),
)

# Every catalogued read.
READS: tuple[PieceRead, ...] = PIECE_READS + CONVERSATION_READS

# The indexes of memory_messagepiece, each kept for the reads above that name it. The partial
# ones cover only rows that can match (a 0.13 piece's identifiers, media pieces, rare roles),
# so a plain 1.x text piece costs them nothing at ingestion.
PIECE_INDEXES: dict[str, str] = {
    "memory_messagepiece_pkey": "primary key (id)",
    "piece_message_position": "unique (conversation_id, sequence, position)",
    "piece_time_idx": "(timestamp, id)",
    "piece_copy_of_idx": (
        "(original_prompt_id) WHERE it is not the piece's own id: copies; the originals are "
        "found by primary key (memory.models.original_prompt_in), so a BitmapOr reads both"
    ),
    "piece_csha_idx": "(converted_value_sha256)",
    "piece_search_gin": "GIN full-text document of both values, a repeated value once (0019)",
    "piece_target_idx": "(target_identifier_id) WHERE NOT NULL",
    "piece_attack_idx": "(attack_identifier_id) WHERE NOT NULL",
    "piece_scorer_idx": "(scorer_identifier_id) WHERE NOT NULL",
    "piece_role_rare_idx": "(role) WHERE role is neither user nor assistant",
    "piece_ctype_media_idx": "(converted_value_data_type) WHERE it is not text",
    "piece_omedia_idx": "(original_media_id) WHERE NOT NULL",
    "piece_cmedia_idx": "(converted_media_id) WHERE NOT NULL",
}

# The indexes of memory_piececonverter (a row per converter of a piece, written with it).
CONVERTER_INDEXES: dict[str, str] = {
    "memory_piececonverter_pkey": "primary key (id)",
    "piece_converter_position": "unique (piece_id, position)",
    "converter_identifier_idx": "(identifier_id)",
}

# The indexes of memory_conversation (a row per conversation, updated with every message).
CONVERSATION_INDEXES: dict[str, str] = {
    "memory_conversation_pkey": "primary key (conversation_id)",
    "conv_recent_idx": "(last_timestamp DESC, conversation_id DESC)",
    "conv_op_recent_idx": "(operation_id, last_timestamp DESC, conversation_id DESC)",
    "conv_updated_idx": "(updated_at DESC)",
    "conv_attack_idx": "(attack_class)",
    "conv_target_idx": "(target_identifier_id)",
    "memory_conversation_has_error_cfffc7e5": "(has_error)",
    "conv_harm_gin": "GIN (harm_categories jsonb_path_ops)",
    "conv_converters_gin": "GIN (converter_classes jsonb_path_ops)",
    "conv_dtypes_gin": "GIN (data_types jsonb_path_ops)",
}

# The tables whose index sets are kept to what the reads need.
TABLES: dict[str, dict[str, str]] = {
    "memory_messagepiece": PIECE_INDEXES,
    "memory_piececonverter": CONVERTER_INDEXES,
    "memory_conversation": CONVERSATION_INDEXES,
}

# Indexes removed by migration 0017 and what replaced them for the reads on their columns.
DROPPED: dict[str, str] = {
    "memory_messagepiece_target_identifier_id_3725d21a_like": (
        "varchar_pattern_ops copy for LIKE 'prefix%'; identifiers are matched by whole hash "
        "only, no read uses LIKE on the column"
    ),
    "memory_messagepiece_attack_identifier_id_b5672bda_like": (
        "varchar_pattern_ops copy for LIKE; no read uses LIKE on the column"
    ),
    "memory_messagepiece_scorer_identifier_id_31e480b5_like": (
        "varchar_pattern_ops copy for LIKE; no read uses LIKE on the column"
    ),
    "memory_messagepiece_target_identifier_id_3725d21a": (
        "full index, an entry for every piece; replaced by piece_target_idx (non-NULL only: "
        "1.x pieces keep their target on the conversation)"
    ),
    "memory_messagepiece_attack_identifier_id_b5672bda": (
        "full index; replaced by the partial piece_attack_idx"
    ),
    "memory_messagepiece_scorer_identifier_id_31e480b5": (
        "full index; replaced by the partial piece_scorer_idx"
    ),
    "piece_role_idx": (
        "full index on a two-value column: a common role is read in time order "
        "(piece_time_idx); replaced by the partial piece_role_rare_idx for the rare roles"
    ),
    "piece_ctype_idx": ("full index, mostly 'text': replaced by the partial piece_ctype_media_idx"),
    "memory_messagepiece_original_prompt_id_3a6a01e4": (
        "full index, an entry for every piece, nearly all equal to the piece's own id: "
        "replaced by the partial piece_copy_of_idx (copies only; 0021)"
    ),
    "memory_piececonverter_piece_id_17d1e2cf": (
        "duplicate of piece_converter_position's first column, which serves every lookup by piece"
    ),
    "memory_piececonverter_identifier_id_b712e6e1": (
        "Django's automatic FK index; recreated as converter_identifier_idx without the LIKE copy"
    ),
    "memory_piececonverter_identifier_id_b712e6e1_like": (
        "varchar_pattern_ops copy; no read uses LIKE on the column"
    ),
    "memory_piececonverter_dump_id_405738cf": (
        "the dump is only followed from the row (export), never searched by"
    ),
    "memory_piececonverter_dump_id_405738cf_like": "varchar_pattern_ops copy of the same",
    # Migration 0020: memory_conversation.
    "memory_conversation_conversation_id_f8339b3e_like": (
        "varchar_pattern_ops copy of the primary key; conversations are found by whole id only"
    ),
    "memory_conversation_attack_class_948582b5_like": (
        "varchar_pattern_ops copy; the attack filter matches the whole class name"
    ),
    "memory_conversation_outcome_22e016ec_like": (
        "varchar_pattern_ops copy; the outcome filter matches a whole choice"
    ),
    "memory_conversation_target_dump_id_7a024251_like": "varchar_pattern_ops copy",
    "memory_conversation_target_identifier_id_59f821ff_like": (
        "varchar_pattern_ops copy; targets are matched by whole hash"
    ),
    "memory_conversation_last_timestamp_ba73843d": (
        "duplicate: conv_recent_idx leads with last_timestamp and serves every range and order"
    ),
    "memory_conversation_operation_id_ef0c8713": (
        "duplicate: conv_op_recent_idx leads with operation_id (every scoped read and the key's "
        "checks use it)"
    ),
    "memory_conversation_target_dump_id_7a024251": (
        "the dump is only followed from the row (pages, export), never searched by"
    ),
    "memory_conversation_attack_class_948582b5": "renamed conv_attack_idx (same definition)",
    "memory_conversation_outcome_22e016ec": (
        "four outcomes, each common: a filter on one walks the list order (conv_op_recent_idx)"
    ),
    "memory_conversation_first_timestamp_80501581": (
        "the run export, its only reader, sorts an operation's conversations: no plan used it"
    ),
    "conv_labels_gin": (
        "the label filters also match a conversation through its attack results' labels, an OR "
        "no GIN index serves: their plans walk the list order"
    ),
    "memory_conversation_target_identifier_id_59f821ff": (
        "renamed conv_target_idx (same definition)"
    ),
}


def sample_values() -> Sample:
    """Values of stored rows for the reads (any stored rows will do; the plan is the point)."""
    piece = MessagePiece.objects.order_by("pk").first()
    identifier = ComponentIdentifier.objects.order_by("pk").first()
    if piece is None:
        return Sample(
            "none", uuid.uuid4(), uuid.uuid4(), "0" * 64, "0" * 64, "2026-01-01T00:00:00Z"
        )
    return Sample(
        conversation_id=piece.conversation_id,
        piece_id=piece.id,
        prompt_id=piece.original_prompt_id,
        sha256=piece.converted_value_sha256 or "0" * 64,
        identifier_hash=identifier.hash if identifier else "0" * 64,
        timestamp=piece.timestamp.isoformat(),
    )


def reader_scope() -> Scope:
    """A reviewer of the lowest-numbered operation holding conversations (or of none)."""
    first = (
        Conversation.objects.filter(operation__isnull=False)
        .order_by("operation_id")
        .values_list("operation_id", flat=True)
        .first()
    )
    return Scope(roles={first: "reviewer"} if first is not None else {})


def _plan_indexes(plan: Any) -> set[str]:
    """Every index named in an EXPLAIN (FORMAT JSON) plan."""
    found: set[str] = set()
    if isinstance(plan, dict):
        for key, value in plan.items():
            if key == "Index Name":
                found.add(str(value))
            else:
                found |= _plan_indexes(value)
    elif isinstance(plan, list):
        for value in plan:
            found |= _plan_indexes(value)
    return found


def explain(
    qs: QuerySet[Any] | RawQuerySet[Any],
    *,
    analyze: bool = False,
    force_index: bool = False,
    force_order: bool = False,
) -> Any:
    """The EXPLAIN (FORMAT JSON) plan of a queryset on PostgreSQL, inside a transaction.

    `force_index` turns sequential scans off (as tests do on small tables, where a scan is
    cheaper than any index) so the plan shows which index the read can use; `force_order`
    turns explicit sorts off too, so an ordered read shows the index that gives its order.
    """
    import json

    from django.db import connection, transaction

    sql, params = statement(qs)
    options = "ANALYZE, BUFFERS, " if analyze else ""
    with transaction.atomic(), connection.cursor() as cursor:
        if force_index:
            cursor.execute("SET LOCAL enable_seqscan = off")
        if force_order:
            cursor.execute("SET LOCAL enable_sort = off")
        cursor.execute(f"EXPLAIN ({options}FORMAT JSON) {sql}", params)
        row = cursor.fetchone()
    plan = row[0] if row else []
    return json.loads(plan) if isinstance(plan, str) else plan


def statement(qs: QuerySet[Any] | RawQuerySet[Any]) -> tuple[str, Any]:
    """The SQL and parameters a read sends (a raw read carries them as written)."""
    if isinstance(qs, RawQuerySet):
        return str(qs.raw_query), qs.params or ()
    return qs.query.sql_with_params()


def plan_indexes(plan: Any) -> set[str]:
    """The indexes an EXPLAIN (FORMAT JSON) plan reads."""
    return _plan_indexes(plan)
