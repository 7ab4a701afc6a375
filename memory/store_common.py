"""Shared parts of the ingestion services: replay comparison, conversation locking.

Conversations are created as empty stubs with INSERT ... ON CONFLICT DO NOTHING, then locked
with SELECT ... FOR UPDATE ordered by primary key (PostgreSQL; SQLite serialises writers),
so two batches that touch the same conversation serialise on its row instead of failing or
losing a summary update, and cannot deadlock.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, cast

from memory.bulk import bulk_insert
from memory.models import Conversation
from memory.parsing import canonical
from redteam.core.outcomes import FieldError, ItemOutcome, ItemStatus

KIND_CONVERSATIONS = "conversations"
KIND_PIECES = "message_pieces"
KIND_ATTACK_RESULTS = "attack_results"


# --- shared helpers ------------------------------------------------------------------------


def outcome_status(errors: Sequence[FieldError], status: str | None) -> ItemStatus:
    """An item's final status: rejected when it has errors or was never decided."""
    if errors or status not in ("stored", "unchanged"):
        return "rejected"
    return cast(ItemStatus, status)


def first_difference(
    new: Mapping[str, Any], old: Mapping[str, Any], fields: Iterable[str]
) -> str | None:
    """The first field whose canonical values differ, or None when all are equal."""
    for name in fields:
        if canonical(new.get(name)) != canonical(old.get(name)):
            return name
    return None


def conflict(kind: str, item_id: Any, field: str | None) -> FieldError:
    noun = {
        KIND_PIECES: "message piece",
        KIND_ATTACK_RESULTS: "attack result",
        KIND_CONVERSATIONS: "conversation",
        "scenario_results": "scenario result",
    }.get(kind, "item")
    detail = f" (field {field!r} differs)" if field else ""
    return FieldError(
        field,
        f"A {noun} with id {item_id} is already stored with different content{detail}; "
        "stored items are never overwritten.",
        code="conflict",
    )


def item_id(parsed: Any, key: str = "id") -> str | None:
    value = parsed.row.get(key) if parsed.row else None
    if value is not None:
        return str(value)
    raw: str | None = parsed.raw_id
    return raw


def prefixed(errors: Iterable[FieldError], prefix: str) -> list[FieldError]:
    return [
        FieldError(f"{prefix}{e.field}" if e.field else prefix.rstrip("."), e.message, e.code)
        for e in errors
    ]


def lock_conversations(
    conversation_ids: Iterable[str], **annotations: Any
) -> dict[str, Conversation]:
    """Create missing conversations as stubs, then lock and read them all (two queries)."""
    ids = sorted(set(conversation_ids))
    # Sorted inserts and a sorted FOR UPDATE give every transaction the same lock order.
    bulk_insert(Conversation, [Conversation(conversation_id=c) for c in ids], ignore_conflicts=True)
    query = Conversation.objects.select_for_update().filter(pk__in=ids).order_by("pk")
    if annotations:
        query = query.annotate(**annotations)
    return {c.pk: c for c in query}


def dedupe(parsed: Sequence[Any], key: str) -> dict[int, int]:
    """Map the index of each repeated id to the index of its first occurrence."""
    first: dict[Any, int] = {}
    duplicates: dict[int, int] = {}
    for i, item in enumerate(parsed):
        item_id = item.row.get(key) if not item.errors else None
        if item_id is None:
            continue
        if item_id in first:
            duplicates[i] = first[item_id]
        else:
            first[item_id] = i
    return duplicates


def resolve_duplicates(
    kind: str,
    parsed: Sequence[Any],
    outcomes: list[ItemOutcome],
    duplicates: Mapping[int, int],
    compare: Callable[[Any], Mapping[str, Any]],
    fields_of: Callable[[Any], Iterable[str]],
    key: str = "id",
) -> None:
    """A repeated id in one batch: same content follows the first; different is a conflict."""
    for i, j in duplicates.items():
        diff = first_difference(compare(parsed[i]), compare(parsed[j]), fields_of(parsed[i]))
        this_id = item_id(parsed[i], key)
        if diff is not None:
            error = FieldError(
                diff,
                f"Id {this_id} appears twice in this batch with different content "
                f"(field {diff!r} differs).",
                code="conflict",
            )
            outcomes[i] = ItemOutcome(kind, i, this_id, "rejected", [error])
        elif outcomes[j].status == "rejected":
            outcomes[i] = ItemOutcome(kind, i, this_id, "rejected", list(outcomes[j].errors))
        else:
            outcomes[i] = ItemOutcome(kind, i, this_id, "unchanged")


def final_outcomes(
    kind: str,
    parsed: Sequence[Any],
    errors: Sequence[list[FieldError]],
    status: Mapping[int, str],
    duplicates: Mapping[int, int],
    compare: Callable[[Any], Mapping[str, Any]],
    fields_of: Callable[[Any], Iterable[str]],
    key: str = "id",
) -> list[ItemOutcome]:
    """One outcome per parsed item, in order; repeated ids then follow their first occurrence."""
    outcomes = [
        ItemOutcome(
            kind,
            i,
            item_id(item, key),
            outcome_status(errors[i], status.get(i)),
            errors[i],
        )
        for i, item in enumerate(parsed)
    ]
    resolve_duplicates(kind, parsed, outcomes, duplicates, compare, fields_of, key=key)
    return outcomes


def drop_empty_stubs(conversations: Mapping[str, Conversation], used: set[str]) -> None:
    """Delete stubs created for conversations whose every piece was rejected (rare path)."""
    empty = [
        cid
        for cid, conv in conversations.items()
        if cid not in used and conv.piece_count == 0 and not conv.declared
    ]
    if empty:
        Conversation.objects.filter(
            pk__in=empty, piece_count=0, declared=False, attack_results__isnull=True
        ).delete()
