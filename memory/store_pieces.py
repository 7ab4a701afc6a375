"""Ingestion of message pieces and 1.x conversations (see memory.services for the contract)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from memory.bulk import (
    SMALL_INSERT_ROWS,
    identifier_use_rows,
    insert_rows,
    insert_together,
    store_identifier_uses,
)
from memory.hooks import announce, relabelled, summary_keys
from memory.models import Conversation, MessagePiece, PieceConverter
from memory.ownership import (
    NOT_WRITABLE,
    ConversationPlacer,
    LabelRefused,
    label_field,
    named_operation,
    preload,
)
from memory.parsing_pieces import ParsedPiece, ParsedScore, parse_piece
from memory.parsing_results import ParsedConversation, parse_conversation
from memory.shapes import PIECE_VALUE_KEYS
from memory.store_common import (
    KIND_CONVERSATIONS,
    KIND_PIECES,
    drop_empty_stubs,
    lock_conversations,
    prefixed,
    revise_rows,
    row_replay,
    stored_operation,
    stored_pieces,
)
from memory.store_scores import store_parsed_scores
from redteam.common.access import Writer
from redteam.common.models import MediaBlob
from redteam.core.batch import Batch, Entry, canonical, first_difference
from redteam.core.enums import MEDIA_PATH_DATA_TYPES
from redteam.core.outcomes import FieldError, ItemOutcome
from redteam.core.reassembly import INCONSISTENT_ROLES, message_errors
from redteam.core.roundtrip import identifier_compared

SIBLING_REJECTED = (
    "Another piece of the same message (conversation_id, sequence) was rejected; "
    "a message is stored whole or not at all."
)
PREVIEW_LENGTH = 300

PIECE_COMPARE_1X = (
    "conversation_id",
    "sequence",
    "role",
    "timestamp",
    *PIECE_VALUE_KEYS,
    # Identifiers compare by content hash (redteam/core/roundtrip.py), not by dump text.
    "converter_identifiers",
)
# A 1.x item is a projection of a 0.13 one, so it is compared on the 1.x fields only.
PIECE_COMPARE_013 = (
    *PIECE_COMPARE_1X,
    "labels",
    "targeted_harm_categories",
    "originator",
    "prompt_target_identifier",
    "attack_identifier",
    "scorer_identifier",
)
# Compared as identifier uses, read from the *_identifier_id / *_dump_id columns.
_IDENTIFIERS = frozenset(
    {"converter_identifiers", "prompt_target_identifier", "attack_identifier", "scorer_identifier"}
)
# What PyRIT's memory updates on stored pieces (update_prompt_entries_by_conversation_id):
# a newer version of a piece (Writer.revise) may change these and nothing else.
PIECE_REVISED = ("labels", "prompt_metadata")
CONVERSATION_SUMMARY_FIELDS = [
    "first_timestamp",
    "last_timestamp",
    "message_count",
    "piece_count",
    "labels",
    "harm_categories",
    "data_types",
    "converter_classes",
    "has_error",
    "preview",
    "target_identifier",
    "target_dump",
    "updated_at",
]


# --- message pieces ------------------------------------------------------------------------


def _piece_compare(piece: ParsedPiece) -> dict[str, Any]:
    row = dict(piece.row)
    # A tuple, not a list: compared item by item, never serialised (redteam.core.batch.canonical).
    row["converter_identifiers"] = tuple(
        identifier_compared(c.hash, c.digest) for c in piece.converters
    )
    for name, ident in (
        ("prompt_target_identifier", piece.target),
        ("attack_identifier", piece.attack),
        ("scorer_identifier", piece.scorer),
    ):
        row[name] = identifier_compared(ident.hash, ident.digest) if ident else None
    return row


def _piece_fields(piece: ParsedPiece) -> tuple[str, ...]:
    return PIECE_COMPARE_013 if piece.shape == "0.13" else PIECE_COMPARE_1X


PIECES = row_replay(KIND_PIECES, "message piece", _piece_compare, _piece_fields)


def _stored_piece_compare(obj: MessagePiece, converters: list[tuple[str, str]]) -> dict[str, Any]:
    row = {name: getattr(obj, name) for name in PIECE_COMPARE_013 if name not in _IDENTIFIERS}
    row["converter_identifiers"] = tuple(identifier_compared(h, d) for h, d in converters)
    row["prompt_target_identifier"] = identifier_compared(
        obj.target_identifier_id, obj.target_dump_id
    )
    row["attack_identifier"] = identifier_compared(obj.attack_identifier_id, obj.attack_dump_id)
    row["scorer_identifier"] = identifier_compared(obj.scorer_identifier_id, obj.scorer_dump_id)
    return row


def _piece_row(piece: ParsedPiece, blobs: set[str]) -> dict[str, Any]:
    """The MessagePiece columns (by attname) of a new piece."""
    row = dict(piece.row)
    for ident, fk in ((piece.target, "target"), (piece.attack, "attack"), (piece.scorer, "scorer")):
        if ident is not None:
            row[f"{fk}_identifier_id"] = ident.hash
            row[f"{fk}_dump_id"] = ident.digest
    # Media uploaded before its pieces is linked now; later uploads call link_media().
    for side in ("original", "converted"):
        sha = row[f"{side}_value_sha256"]
        if sha in blobs and row[f"{side}_value_data_type"] in MEDIA_PATH_DATA_TYPES:
            row[f"{side}_media_id"] = sha
    return row


def _revisable(piece: ParsedPiece, old: MessagePiece, old_values: Mapping[str, Any]) -> bool:
    """True when a stored piece differs only in what PyRIT updates in place (its labels and
    prompt metadata: update_prompt_entries_by_conversation_id), so it is a newer version."""
    fields = [f for f in PIECES.fields(piece) if f not in PIECE_REVISED]
    if first_difference(PIECES.values(piece), old_values, fields) is not None:
        return False
    return any(
        canonical(piece.row[name]) != canonical(getattr(old, name)) for name in PIECE_REVISED
    )


def _revision_refused(
    piece: ParsedPiece, old: MessagePiece, writer: Writer, prefix: str
) -> FieldError | None:
    """New labels may not name another operation than the piece's conversation is in."""
    try:
        named = named_operation(piece.row["labels"], writer, prefix)
    except LabelRefused as refused:
        return refused.error
    if named is not None and named != stored_operation(old):
        return FieldError(
            label_field(prefix),
            f"Piece {piece.id} is stored in another operation than its new labels name; a "
            "newer version may not move it.",
            code="conflict",
        )
    return None


def _revised_labels(
    conversations: Mapping[str, Conversation],
    revised: Sequence[tuple[ParsedPiece, MessagePiece]],
    already: set[str],
) -> list[Conversation]:
    """A revised piece's labels join its conversation's (summaries accumulate labels)."""
    changed: dict[str, Conversation] = {}
    for piece, _ in revised:
        labels = piece.row["labels"] or {}
        conv = conversations[piece.row["conversation_id"]]
        merged = {**(conv.labels or {}), **labels}
        if merged != (conv.labels or {}):
            conv.labels = merged
            conv.updated_at = timezone.now()
            if conv.pk not in already:
                changed[conv.pk] = conv
    return list(changed.values())


def _media_shas(pieces: Iterable[ParsedPiece]) -> set[str]:
    shas: set[str] = set()
    for piece in pieces:
        for side in ("original", "converted"):
            sha = piece.row[f"{side}_value_sha256"]
            if sha and piece.row[f"{side}_value_data_type"] in MEDIA_PATH_DATA_TYPES:
                shas.add(sha)
    return shas


def _is_error_piece(row: Mapping[str, Any]) -> bool:
    return bool(row["response_error"] != "none" or row["converted_value_data_type"] == "error")


def _update_piece_summaries(
    conversations: Mapping[str, Conversation],
    new_pieces: Sequence[ParsedPiece],
    stored_message_keys: set[tuple[str, int]],
) -> list[Conversation]:
    """Fold the new pieces into their conversations' summary columns (in memory)."""
    by_conversation: dict[str, list[ParsedPiece]] = {}
    for piece in new_pieces:
        by_conversation.setdefault(piece.row["conversation_id"], []).append(piece)
    now = timezone.now()
    changed: list[Conversation] = []
    for conversation_id, pieces in by_conversation.items():
        conv = conversations[conversation_id]
        previous_first = conv.first_timestamp
        timestamps = [p.row["timestamp"] for p in pieces]
        first, last = min(timestamps), max(timestamps)
        conv.first_timestamp = min(first, conv.first_timestamp or first)
        conv.last_timestamp = max(last, conv.last_timestamp or last)
        conv.piece_count += len(pieces)
        new_keys = {p.message_key for p in pieces} - stored_message_keys
        conv.message_count += len(new_keys)
        labels = dict(conv.labels or {})
        harm = list(conv.harm_categories or [])
        data_types = set(conv.data_types or [])
        converters = set(conv.converter_classes or [])
        for piece in pieces:
            row = piece.row
            labels.update(row["labels"] or {})
            harm.extend(h for h in row["targeted_harm_categories"] or [] if h not in harm)
            data_types.update((row["original_value_data_type"], row["converted_value_data_type"]))
            converters.update(c.class_name for c in piece.converters)
            conv.has_error = conv.has_error or _is_error_piece(row)
            if piece.target is not None and not conv.declared and conv.target_dump_id is None:
                # 0.13 pieces carry the target; a declared 1.x Conversation wins over it.
                conv.target_identifier_id = piece.target.hash
                conv.target_dump_id = piece.target.digest
        conv.labels, conv.harm_categories = labels, harm
        conv.data_types, conv.converter_classes = sorted(data_types), sorted(converters)
        user_text = [
            p
            for p in pieces
            if p.row["role"] == "user" and p.row["original_value_data_type"] == "text"
        ]
        if user_text:
            earliest = min(user_text, key=lambda p: (p.row["sequence"], p.row["timestamp"]))
            # The preview is the first user text. Pieces normally arrive in order; one that
            # predates everything stored (a late upload of the first turn) takes over.
            if (
                not conv.preview
                or previous_first is None
                or earliest.row["timestamp"] < previous_first
            ):
                conv.preview = earliest.row["original_value"][:PREVIEW_LENGTH]
        conv.updated_at = now
        changed.append(conv)
    return changed


def store_pieces(
    parsed: Sequence[ParsedPiece], writer: Writer, *, prefix: str = "", embedded: bool = False
) -> list[ItemOutcome]:
    """Store parsed pieces; the query count does not depend on len(parsed). `embedded`:
    copies inside another item (a result's last response), which never replace a stored piece.

    Queries: INSERT conversation stubs; SELECT conversations FOR UPDATE (one statement on
    PostgreSQL); SELECT stored pieces (same ids, or same conversation+sequence); [SELECT
    their converters, only when some ids are already stored]; [MediaBlob lookup, only for
    media pieces with a sha256]; INSERT identifiers, dumps and identifier operations (one
    statement on PostgreSQL); INSERT pieces; INSERT piece converters (for a few rows, one
    statement with the identifiers on PostgreSQL); UPDATE conversations (summaries and
    operations in one statement). Nested 0.13 scores add the score store's own constant
    count. Each piece joins its conversation's operation (memory.ownership).
    """
    batch = Batch.of(PIECES, parsed)

    # 1. Messages inside the batch: every piece valid and all sharing one role.
    groups: dict[tuple[str, int], list[Entry[ParsedPiece]]] = {}
    for entry in batch.entries:
        piece = entry.parsed
        if entry.first is not None or not isinstance(piece.row.get("conversation_id"), str):
            continue
        if not isinstance(piece.row.get("sequence"), int):
            continue
        groups.setdefault(piece.message_key, []).append(entry)
    for members in groups.values():
        rows = [e.parsed.row for e in members]
        if (
            len(members) > 1
            and not any(e.errors for e in members)
            and INCONSISTENT_ROLES in message_errors(rows)
        ):
            for e in members:
                e.errors.append(FieldError(f"{prefix}role", INCONSISTENT_ROLES))
    candidates = [
        e for members in groups.values() if not any(m.errors for m in members) for e in members
    ]
    for members in groups.values():
        if any(e.errors for e in members):
            for e in members:
                if not e.errors:
                    e.errors.append(FieldError(None, SIBLING_REJECTED))

    if candidates:
        _decide_pieces(batch, candidates, groups, writer, prefix, embedded)
    return batch.outcomes()


def _decide_pieces(
    batch: Batch[ParsedPiece],
    candidates: list[Entry[ParsedPiece]],
    groups: Mapping[tuple[str, int], list[Entry[ParsedPiece]]],
    writer: Writer,
    prefix: str,
    embedded: bool,
) -> None:
    """Compare candidates with stored rows, then insert the new ones (see store_pieces)."""
    conversation_ids = {e.parsed.row["conversation_id"] for e in candidates}
    conversations = lock_conversations(conversation_ids)
    before = summary_keys(conversations)
    ids = [pid for e in candidates if (pid := e.parsed.id) is not None]
    sequences = sorted({e.parsed.row["sequence"] for e in candidates})
    stored_by_id = {p.id: p for p in stored_pieces(ids, conversation_ids, sequences)}
    stored = list(stored_by_id.values())
    stored_roles = {(p.conversation_id, p.sequence): p.role for p in stored}
    # A piece added to a stored message goes after the pieces already there.
    next_position: dict[tuple[str, int], int] = {}
    for p in stored:
        key = (p.conversation_id, p.sequence)
        next_position[key] = max(next_position.get(key, 0), p.position + 1)
    revised: list[tuple[ParsedPiece, MessagePiece]] = []
    matched = [pid for pid in ids if pid in stored_by_id]
    stored_converters: dict[uuid.UUID, list[tuple[str, str]]] = {pid: [] for pid in matched}
    if matched:
        for piece_id, identifier_id, dump_id in (
            PieceConverter.objects.filter(piece_id__in=matched)
            .order_by("piece_id", "position")
            .values_list("piece_id", "identifier_id", "dump_id")
        ):
            stored_converters[piece_id].append((identifier_id, dump_id))

    for entry in candidates:
        piece = entry.parsed
        old = stored_by_id.get(piece.id) if piece.id is not None else None
        if old is not None and not writer.may_write(stored_operation(old)):
            # Never compared: "unchanged" or "conflict" would tell what another operation holds.
            entry.errors.append(FieldError(f"{prefix}id", f"This piece {NOT_WRITABLE}."))
            continue
        if old is not None:
            old_values = _stored_piece_compare(old, stored_converters[old.id])
            if writer.revise is not None and _revisable(piece, old, old_values):
                refusal = _revision_refused(piece, old, writer, prefix)
                if refusal is not None:
                    entry.errors.append(refusal)
                elif embedded or not writer.supersedes(old.revision):
                    # A copy inside another item, or a version older than the stored one (a
                    # request that arrived late): the stored piece stays.
                    entry.status = "unchanged"
                else:
                    revised.append((piece, old))
                    entry.status = "stored"
                continue
            diff = batch.replay.difference(piece, old_values)
            batch.settle(entry, None if diff is None else f"{prefix}{diff}")
            continue
        stored_role = stored_roles.get(piece.message_key)
        if stored_role is not None and stored_role != piece.row["role"]:
            entry.errors.append(
                FieldError(
                    f"{prefix}role",
                    f"{INCONSISTENT_ROLES} The stored pieces of this message have role "
                    f"{stored_role!r}.",
                )
            )
        else:
            entry.status = "new"
    fresh = [e for e in candidates if e.status == "new"]
    if fresh:
        preload(writer, (e.parsed.row["labels"] for e in fresh))
    placer = ConversationPlacer(conversations, writer, adopt=bool(fresh))
    for entry in fresh:
        piece = entry.parsed
        try:
            named = named_operation(piece.row["labels"], writer, prefix)
            placer.place(piece.row["conversation_id"], named, label_field(prefix))
        except LabelRefused as refused:
            entry.status = None
            entry.errors.append(refused.error)

    _store_nested_scores(candidates, writer, conversations)
    # A rejected piece takes the new pieces of its message down with it.
    for members in groups.values():
        if any(e.errors for e in members):
            for e in members:
                if e.status == "new":
                    e.status = None
                    e.errors.append(FieldError(None, SIBLING_REJECTED))

    new = [e.parsed for e in candidates if e.status == "new"]
    for e in candidates:
        if e.status == "new":
            e.parsed.row["revision"] = writer.revise
            e.status = "stored"
    # Candidates are in request order within each message, so new pieces keep that order.
    for piece in new:
        position = next_position.get(piece.message_key, 0)
        piece.row["position"] = position
        next_position[piece.message_key] = position + 1
    if new:
        shas = _media_shas(new)
        blobs = (
            set(MediaBlob.objects.filter(sha256__in=shas).values_list("sha256", flat=True))
            if shas
            else set()
        )
        identifiers = identifier_use_rows(
            (u, conversations[p.row["conversation_id"]].operation_id)
            for p in new
            for u in p.identifiers()
        )
        piece_rows = [_piece_row(p, blobs) for p in new]
        converter_rows = [
            {"piece_id": p.id, "position": k, "identifier_id": u.hash, "dump_id": u.digest}
            for p in new
            for k, u in enumerate(p.converters)
        ]
        if len(piece_rows) + len(converter_rows) <= SMALL_INSERT_ROWS:
            # A message or two (an attack loop's request): identifiers, pieces and converters
            # in one statement (memory.bulk.insert_together).
            insert_together(
                [
                    *identifiers,
                    (MessagePiece, [MessagePiece(**row) for row in piece_rows], False),
                    (PieceConverter, [PieceConverter(**row) for row in converter_rows], False),
                ]
            )
        else:
            insert_together(identifiers)
            insert_rows(MessagePiece, piece_rows)
            insert_rows(PieceConverter, converter_rows)
    stored_keys = {key for key in stored_roles}
    changed = _update_piece_summaries(conversations, new, stored_keys)
    if revised:
        revise_rows(
            MessagePiece,
            [
                (old, {**{k: p.row[k] for k in PIECE_REVISED}, "revision": writer.revise})
                for p, old in revised
            ],
            keep=(),
        )
        changed += _revised_labels(conversations, revised, {c.pk for c in changed})
    # Summaries and placements in one UPDATE.
    placer.finish(changed, CONVERSATION_SUMMARY_FIELDS)
    # Results of a conversation count under its labels and harm categories too.
    announce(conversation_ids=relabelled(conversations, before))
    drop_empty_stubs(conversations, {p.row["conversation_id"] for p in new})


def _store_nested_scores(
    candidates: Sequence[Entry[ParsedPiece]],
    writer: Writer,
    conversations: Mapping[str, Conversation],
) -> None:
    """Store the scores a 0.13 piece carries (in its conversation's operation); a rejected
    score rejects its piece."""
    owners: list[tuple[Entry[ParsedPiece], int]] = []
    scores: list[ParsedScore] = []
    operations: list[int | None] = []
    for entry in candidates:
        if entry.status is not None:
            conv = conversations[entry.parsed.row["conversation_id"]]
            for k, score in enumerate(entry.parsed.scores):
                owners.append((entry, k))
                scores.append(score)
                operations.append(conv.operation_id)
    outcomes = store_parsed_scores(scores, writer, operations=operations)
    for (entry, k), outcome in zip(owners, outcomes, strict=True):
        if outcome.status == "rejected":
            entry.status = None
            entry.errors.extend(prefixed(outcome.errors, f"scores[{k}]."))


@transaction.atomic(savepoint=False)
def store_message_pieces(
    items: Sequence[Mapping[str, Any]], *, writer: Writer | None = None
) -> list[ItemOutcome]:
    """Validate and store MessagePiece dicts (0.13 to_dict or 1.x model_dump), in bulk.

    `writer` says who sends them and into which operations (None: a trusted in-process
    caller, see Writer.trusted); pieces keep no author.
    """
    return store_pieces(
        [parse_piece(item, i) for i, item in enumerate(items)], writer or Writer.trusted()
    )


# --- conversations -------------------------------------------------------------------------


def _conversation_compare(conv: ParsedConversation) -> dict[str, Any]:
    return {
        "target_identifier": identifier_compared(conv.target.hash, conv.target.digest)
        if conv.target
        else None,
        "retries": conv.row["retries"],
    }


CONVERSATIONS = row_replay(
    KIND_CONVERSATIONS,
    "conversation",
    _conversation_compare,
    lambda _: ("target_identifier", "retries"),
    key="conversation_id",
)


@transaction.atomic(savepoint=False)
def store_conversations(
    items: Sequence[Mapping[str, Any]], *, writer: Writer | None = None
) -> list[ItemOutcome]:
    """Validate and store 1.x Conversation dicts (target identifier and retries).

    Queries: INSERT stubs; SELECT FOR UPDATE; INSERT identifiers; INSERT dumps; UPDATE
    (fields and operations in one statement). A 1.x conversation names no operation: a new
    one joins the sender's default operation until an attack result claims it
    (memory.ownership).
    """
    writer = writer or Writer.trusted()
    batch = Batch.of(CONVERSATIONS, [parse_conversation(item, i) for i, item in enumerate(items)])
    valid = batch.pending()
    if not valid:
        return batch.outcomes()
    conversations = lock_conversations(e.parsed.row["conversation_id"] for e in valid)
    if any(c.operation_id is None for c in conversations.values()):
        writer.load([])
    placer = ConversationPlacer(conversations, writer)
    now = timezone.now()
    changed: list[Conversation] = []
    for entry in valid:
        conv_item = entry.parsed
        conv = conversations[conv_item.row["conversation_id"]]
        try:
            placer.place(conv.pk, None, "conversation_id")
        except LabelRefused as refused:
            entry.errors.append(refused.error)
            continue
        if conv.declared:
            old = {
                "target_identifier": identifier_compared(
                    conv.target_identifier_id, conv.target_dump_id
                ),
                "retries": conv.retries,
            }
            difference = batch.replay.difference(conv_item, old)
            if difference is None or writer.revise is None:
                batch.settle(entry, difference)
                continue
            if not writer.supersedes(conv.revision):
                entry.status = "unchanged"  # older than the stored version: kept as is
                continue
            # A newer version (Writer.revise): PyRIT appends retries to the row in place.
            conv.revision = writer.revise
            if difference != "target_identifier":
                conv.retries = conv_item.row["retries"]
                conv.updated_at = now
                changed.append(conv)
                entry.status = "stored"
                continue
        # Undeclared rows were created from pieces or results: the declaration fills them.
        conv.declared = True
        conv.revision = writer.revise
        conv.retries = conv_item.row["retries"]
        conv.pyrit_version = conv_item.row["pyrit_version"]
        conv.target_identifier_id = conv_item.target.hash if conv_item.target else None
        conv.target_dump_id = conv_item.target.digest if conv_item.target else None
        conv.updated_at = now
        changed.append(conv)
        entry.status = "stored"
    store_identifier_uses(
        (target, conversations[e.parsed.row["conversation_id"]].operation_id)
        for e in valid
        if e.status == "stored" and (target := e.parsed.target) is not None
    )
    placer.finish(
        changed,
        [
            "declared",
            "retries",
            "pyrit_version",
            "target_identifier",
            "target_dump",
            "revision",
            "updated_at",
        ],
    )
    drop_empty_stubs(conversations, set())
    return batch.outcomes()
