"""Ingestion of message pieces and 1.x conversations (see memory.services for the contract)."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from django.db import transaction
from django.utils import timezone

from memory.bulk import bulk_update, insert_rows, store_identifier_uses
from memory.models import Conversation, MessagePiece, PieceConverter
from memory.parsing_pieces import ParsedPiece, ParsedScore, parse_piece
from memory.parsing_results import ParsedConversation, parse_conversation
from memory.shapes import PIECE_VALUE_KEYS
from memory.store_common import (
    KIND_CONVERSATIONS,
    KIND_PIECES,
    conflict,
    dedupe,
    drop_empty_stubs,
    final_outcomes,
    first_difference,
    lock_conversations,
    prefixed,
)
from memory.store_scores import store_parsed_scores
from redteam.common.models import MediaBlob
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
    # A tuple, not a list: compared item by item, never serialised (memory.parsing.canonical).
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
    parsed: Sequence[ParsedPiece], *, kind: str = KIND_PIECES, prefix: str = ""
) -> list[ItemOutcome]:
    """Store parsed pieces; the query count does not depend on len(parsed).

    Queries: INSERT conversation stubs; SELECT conversations FOR UPDATE; SELECT stored
    pieces (same ids, or same conversation+sequence); [SELECT their converters, only when
    some ids are already stored]; [MediaBlob lookup, only for media pieces with a sha256];
    INSERT identifiers; INSERT identifier dumps; INSERT pieces; INSERT piece converters;
    UPDATE conversations. Nested 0.13 scores add the score store's own constant count.
    """
    errors: list[list[FieldError]] = [list(p.errors) for p in parsed]
    duplicates = dedupe(parsed, "id")

    # 1. Messages inside the batch: every piece valid and all sharing one role.
    groups: dict[tuple[str, int], list[int]] = {}
    for i, piece in enumerate(parsed):
        if i in duplicates or not isinstance(piece.row.get("conversation_id"), str):
            continue
        if not isinstance(piece.row.get("sequence"), int):
            continue
        groups.setdefault(piece.message_key, []).append(i)
    for members in groups.values():
        rows = [parsed[i].row for i in members]
        if (
            len(members) > 1
            and not any(errors[i] for i in members)
            and INCONSISTENT_ROLES in message_errors(rows)
        ):
            for i in members:
                errors[i].append(FieldError(f"{prefix}role", INCONSISTENT_ROLES))
    candidates = [
        i for members in groups.values() if not any(errors[i] for i in members) for i in members
    ]
    for members in groups.values():
        if any(errors[i] for i in members):
            for i in members:
                if not errors[i]:
                    errors[i].append(FieldError(None, SIBLING_REJECTED))

    status: dict[int, str] = {}
    if candidates:
        _decide_pieces(parsed, candidates, groups, errors, status, prefix)

    return final_outcomes(kind, parsed, errors, status, duplicates, _piece_compare, _piece_fields)


def _decide_pieces(
    parsed: Sequence[ParsedPiece],
    candidates: list[int],
    groups: Mapping[tuple[str, int], list[int]],
    errors: list[list[FieldError]],
    status: dict[int, str],
    prefix: str,
) -> None:
    """Compare candidates with stored rows, then insert the new ones (see _store_pieces)."""
    conversation_ids = {parsed[i].row["conversation_id"] for i in candidates}
    conversations = lock_conversations(conversation_ids)
    ids = [pid for i in candidates if (pid := parsed[i].id) is not None]
    sequences = sorted({parsed[i].row["sequence"] for i in candidates})
    # Two index lookups in one statement (primary key; conversation+sequence): an OR of the
    # two conditions would make PostgreSQL scan the table.
    stored = list(
        MessagePiece.objects.filter(id__in=ids).union(
            MessagePiece.objects.filter(
                conversation_id__in=conversation_ids, sequence__in=sequences
            )
        )
    )
    stored_by_id = {p.id: p for p in stored}
    stored_roles = {(p.conversation_id, p.sequence): p.role for p in stored}
    # A piece added to a stored message goes after the pieces already there.
    next_position: dict[tuple[str, int], int] = {}
    for p in stored:
        key = (p.conversation_id, p.sequence)
        next_position[key] = max(next_position.get(key, 0), p.position + 1)
    matched = [pid for pid in ids if pid in stored_by_id]
    stored_converters: dict[uuid.UUID, list[tuple[str, str]]] = {pid: [] for pid in matched}
    if matched:
        for piece_id, identifier_id, dump_id in (
            PieceConverter.objects.filter(piece_id__in=matched)
            .order_by("piece_id", "position")
            .values_list("piece_id", "identifier_id", "dump_id")
        ):
            stored_converters[piece_id].append((identifier_id, dump_id))

    for i in candidates:
        piece = parsed[i]
        old = stored_by_id.get(piece.id) if piece.id is not None else None
        if old is not None:
            old_row = _stored_piece_compare(old, stored_converters[old.id])
            diff = first_difference(_piece_compare(piece), old_row, _piece_fields(piece))
            if diff is None:
                status[i] = "unchanged"
            else:
                errors[i].append(conflict(KIND_PIECES, piece.id, f"{prefix}{diff}"))
            continue
        stored_role = stored_roles.get(piece.message_key)
        if stored_role is not None and stored_role != piece.row["role"]:
            errors[i].append(
                FieldError(
                    f"{prefix}role",
                    f"{INCONSISTENT_ROLES} The stored pieces of this message have role "
                    f"{stored_role!r}.",
                )
            )
        else:
            status[i] = "new"

    _store_nested_scores(parsed, candidates, errors, status)
    # A rejected piece takes the new pieces of its message down with it.
    for members in groups.values():
        if any(errors[i] for i in members):
            for i in members:
                if status.get(i) == "new":
                    status.pop(i)
                    errors[i].append(FieldError(None, SIBLING_REJECTED))

    new = [parsed[i] for i in candidates if status.get(i) == "new"]
    for i in candidates:
        if status.get(i) == "new":
            status[i] = "stored"
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
        store_identifier_uses(u for p in new for u in p.identifiers())
        insert_rows(MessagePiece, [_piece_row(p, blobs) for p in new])
        insert_rows(
            PieceConverter,
            [
                {"piece_id": p.id, "position": k, "identifier_id": u.hash, "dump_id": u.digest}
                for p in new
                for k, u in enumerate(p.converters)
            ],
        )
    stored_keys = {key for key in stored_roles}
    changed = _update_piece_summaries(conversations, new, stored_keys)
    bulk_update(Conversation, changed, CONVERSATION_SUMMARY_FIELDS)
    drop_empty_stubs(conversations, {p.row["conversation_id"] for p in new})


def _store_nested_scores(
    parsed: Sequence[ParsedPiece],
    candidates: list[int],
    errors: list[list[FieldError]],
    status: dict[int, str],
) -> None:
    """Store the scores a 0.13 piece carries; a rejected score rejects its piece."""
    owners: list[tuple[int, int]] = []
    scores: list[ParsedScore] = []
    for i in candidates:
        if i in status:
            for k, score in enumerate(parsed[i].scores):
                owners.append((i, k))
                scores.append(score)
    outcomes = store_parsed_scores(scores) if scores else []
    for (i, k), outcome in zip(owners, outcomes, strict=True):
        if outcome.status == "rejected":
            status.pop(i, None)
            errors[i].extend(prefixed(outcome.errors, f"scores[{k}]."))


@transaction.atomic
def store_message_pieces(items: Sequence[Mapping[str, Any]]) -> list[ItemOutcome]:
    """Validate and store MessagePiece dicts (0.13 to_dict or 1.x model_dump), in bulk."""
    return store_pieces([parse_piece(item, i) for i, item in enumerate(items)])


# --- conversations -------------------------------------------------------------------------


@transaction.atomic
def store_conversations(items: Sequence[Mapping[str, Any]]) -> list[ItemOutcome]:
    """Validate and store 1.x Conversation dicts (target identifier and retries).

    Queries: INSERT stubs; SELECT FOR UPDATE; INSERT identifiers; INSERT dumps; UPDATE.
    """
    parsed = [parse_conversation(item, i) for i, item in enumerate(items)]
    duplicates = dedupe(parsed, "conversation_id")
    errors = [list(c.errors) for c in parsed]
    status: dict[int, str] = {}
    valid = [i for i, c in enumerate(parsed) if not errors[i] and i not in duplicates]
    changed: list[Conversation] = []
    if valid:
        conversations = lock_conversations(parsed[i].row["conversation_id"] for i in valid)
        now = timezone.now()
        for i in valid:
            conv_item = parsed[i]
            conv = conversations[conv_item.row["conversation_id"]]
            new = _conversation_compare(conv_item)
            if conv.declared:
                old = {
                    "target_identifier": identifier_compared(
                        conv.target_identifier_id, conv.target_dump_id
                    ),
                    "retries": conv.retries,
                }
                diff = first_difference(new, old, new)
                if diff is None:
                    status[i] = "unchanged"
                else:
                    errors[i].append(conflict(KIND_CONVERSATIONS, conv.pk, diff))
                continue
            # Undeclared rows were created from pieces or results: the declaration fills them.
            conv.declared = True
            conv.retries = conv_item.row["retries"]
            conv.pyrit_version = conv_item.row["pyrit_version"]
            conv.target_identifier_id = conv_item.target.hash if conv_item.target else None
            conv.target_dump_id = conv_item.target.digest if conv_item.target else None
            conv.updated_at = now
            changed.append(conv)
            status[i] = "stored"
        store_identifier_uses(
            target
            for i in valid
            if status.get(i) == "stored" and (target := parsed[i].target) is not None
        )
        bulk_update(
            Conversation,
            changed,
            [
                "declared",
                "retries",
                "pyrit_version",
                "target_identifier",
                "target_dump",
                "updated_at",
            ],
        )
    return final_outcomes(
        KIND_CONVERSATIONS,
        parsed,
        errors,
        status,
        duplicates,
        _conversation_compare,
        lambda _: ("target_identifier", "retries"),
        key="conversation_id",
    )


def _conversation_compare(conv: ParsedConversation) -> dict[str, Any]:
    return {
        "target_identifier": identifier_compared(conv.target.hash, conv.target.digest)
        if conv.target
        else None,
        "retries": conv.row["retries"],
    }
