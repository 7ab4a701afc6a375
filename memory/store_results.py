"""Ingestion of attack results (see memory.services for the contract)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction
from django.db.models import Exists, F, OuterRef, Subquery
from django.utils import timezone

from memory.bulk import bulk_update, insert_rows, store_identifier_uses
from memory.models import AttackResult, Conversation, ConversationReference
from memory.parsing_results import ParsedAttackResult, parse_attack_result
from memory.shapes import ATTACK_RESULT_TAIL_1X
from memory.store_common import (
    KIND_ATTACK_RESULTS,
    conflict,
    dedupe,
    drop_empty_stubs,
    final_outcomes,
    first_difference,
    lock_conversations,
    prefixed,
)
from memory.store_pieces import store_pieces
from memory.store_scores import store_parsed_scores
from redteam.core.outcomes import FieldError, ItemOutcome
from redteam.core.roundtrip import identifier_compared, related_compared, traceback_compared

ATTACK_RESULT_COMPARE_013 = (
    "conversation_id",
    "objective",
    "atomic_attack_identifier",
    "last_response_id",
    "last_score_id",
    "executed_turns",
    "execution_time_ms",
    "outcome",
    "outcome_reason",
    "related",
    "metadata",
)
ATTACK_RESULT_COMPARE_1X = (
    *ATTACK_RESULT_COMPARE_013,
    "timestamp",
    *ATTACK_RESULT_TAIL_1X,
)

# --- attack results ------------------------------------------------------------------------


def _result_compare(result: ParsedAttackResult) -> dict[str, Any]:
    """The compared values of an incoming result, in PyRIT's memory round-trip form."""
    row = dict(result.row)
    atomic = result.atomic
    row["atomic_attack_identifier"] = (
        identifier_compared(atomic.hash, atomic.digest) if atomic else None
    )
    row["related"] = related_compared(result.related)
    row["error_traceback"] = traceback_compared(row.get("error_traceback"))
    return row


def _result_fields(result: ParsedAttackResult) -> tuple[str, ...]:
    return ATTACK_RESULT_COMPARE_013 if result.shape == "0.13" else ATTACK_RESULT_COMPARE_1X


def _stored_result_compare(obj: AttackResult, related: list[dict[str, Any]]) -> dict[str, Any]:
    """The compared values of a stored result, in the same form."""
    skip = {"related", "atomic_attack_identifier"}
    row = {name: getattr(obj, name) for name in ATTACK_RESULT_COMPARE_1X if name not in skip}
    row["atomic_attack_identifier"] = identifier_compared(
        obj.atomic_attack_identifier_id, obj.atomic_attack_dump_id
    )
    row["related"] = related_compared(related)
    row["error_traceback"] = traceback_compared(obj.error_traceback)
    return row


def _result_row(result: ParsedAttackResult) -> dict[str, Any]:
    row = dict(result.row)
    if result.atomic is not None:
        row["atomic_attack_identifier_id"] = result.atomic.hash
        row["atomic_attack_dump_id"] = result.atomic.digest
    return row


def _is_newer(candidate: Any, current: Any, current_exists: bool) -> bool:
    """PyRIT keeps the newest result per conversation; untimed (0.13) results rank oldest."""
    if not current_exists:
        return True
    if candidate is None:
        return current is None
    return current is None or candidate >= current


def _embedded(
    results: Sequence[ParsedAttackResult], valid: list[int], errors: list[list[FieldError]]
) -> None:
    """Store each result's last_response piece and last_score; a rejection rejects the result."""
    with_piece = [i for i in valid if results[i].last_response is not None]
    if with_piece:
        pieces = [results[i].last_response for i in with_piece]
        outcomes = store_pieces([p for p in pieces if p is not None], prefix="last_response.")
        for i, outcome in zip(with_piece, outcomes, strict=True):
            if outcome.status == "rejected":
                errors[i].extend(prefixed(outcome.errors, "last_response."))
    with_score = [i for i in valid if results[i].last_score is not None and not errors[i]]
    scores = [results[i].last_score for i in with_score]
    embedded = [s for s in scores if s is not None]
    outcomes = store_parsed_scores(embedded) if embedded else []
    for i, outcome in zip(with_score, outcomes, strict=True):
        if outcome.status == "rejected":
            errors[i].extend(prefixed(outcome.errors, "last_score."))


@transaction.atomic
def store_attack_results(items: Sequence[Mapping[str, Any]]) -> list[ItemOutcome]:
    """Validate and store AttackResult dicts, their related conversations and embedded items.

    The embedded last_response piece and last_score are stored too (same rules as when sent
    on their own), so exporting a result gives them back. Queries: the piece store's and the
    score store's constant counts, then INSERT stubs; SELECT conversations FOR UPDATE;
    SELECT stored results; [SELECT their references, when some ids are already stored];
    INSERT identifiers; INSERT dumps; INSERT results; INSERT references; UPDATE conversations.
    """
    return store_parsed_attack_results(
        [parse_attack_result(item, i) for i, item in enumerate(items)]
    )


def store_parsed_attack_results(parsed: Sequence[ParsedAttackResult]) -> list[ItemOutcome]:
    """Store already-parsed attack results (also the hook scenario results use)."""
    duplicates = dedupe(parsed, "attack_result_id")
    errors = [list(r.errors) for r in parsed]
    valid = [i for i, r in enumerate(parsed) if not errors[i] and i not in duplicates]
    status: dict[int, str] = {}
    if valid:
        _embedded(parsed, valid, errors)
        valid = [i for i in valid if not errors[i]]
    if valid:
        _decide_results(parsed, valid, errors, status)
    return final_outcomes(
        KIND_ATTACK_RESULTS,
        parsed,
        errors,
        status,
        duplicates,
        _result_compare,
        _result_fields,
        key="attack_result_id",
    )


def _decide_results(
    parsed: Sequence[ParsedAttackResult],
    valid: list[int],
    errors: list[list[FieldError]],
    status: dict[int, str],
) -> None:
    """Compare with stored results, insert the new ones and refresh conversation summaries."""
    latest = AttackResult.objects.filter(conversation_id=OuterRef("pk")).order_by(
        F("timestamp").desc(nulls_last=True), "-ingested_at"
    )
    conversations = lock_conversations(
        (parsed[i].row["conversation_id"] for i in valid),
        latest_result_timestamp=Subquery(latest.values("timestamp")[:1]),
        has_results=Exists(latest),
    )
    ids = [rid for i in valid if (rid := parsed[i].id) is not None]
    stored = {r.pk: r for r in AttackResult.objects.filter(pk__in=ids)}
    related: dict[uuid.UUID, list[dict[str, Any]]] = {pk: [] for pk in stored}
    if stored:
        for ref in ConversationReference.objects.filter(attack_result_id__in=list(stored)).values(
            "attack_result_id", "conversation_id", "conversation_type", "description"
        ):
            related[ref["attack_result_id"]].append(dict(ref))
    new: list[ParsedAttackResult] = []
    for i in valid:
        result = parsed[i]
        old = stored.get(result.id) if result.id is not None else None
        if old is None:
            new.append(result)
            status[i] = "stored"
            continue
        old_row = _stored_result_compare(old, related[old.pk])
        diff = first_difference(_result_compare(result), old_row, _result_fields(result))
        if diff is None:
            status[i] = "unchanged"
        else:
            errors[i].append(conflict(KIND_ATTACK_RESULTS, result.id, diff))
    if new:
        store_identifier_uses(r.atomic for r in new if r.atomic is not None)
        insert_rows(AttackResult, [_result_row(r) for r in new])
        insert_rows(
            ConversationReference,
            [{"attack_result_id": r.id, **ref} for r in new for ref in r.related],
        )
    changed = _update_result_summaries(conversations, new)
    bulk_update(
        Conversation,
        changed,
        ["outcome", "attack_class", "labels", "harm_categories", "updated_at"],
    )
    drop_empty_stubs(conversations, {r.row["conversation_id"] for r in new})


def _update_result_summaries(
    conversations: Mapping[str, Conversation], new: Sequence[ParsedAttackResult]
) -> list[Conversation]:
    """Outcome and attack class follow the newest result; labels and harms accumulate."""
    now = timezone.now()
    changed: dict[str, Conversation] = {}
    for result in new:
        row = result.row
        conv = conversations[row["conversation_id"]]
        current = getattr(conv, "latest_result_timestamp", None)
        exists = bool(getattr(conv, "has_results", False)) or conv.pk in changed
        if _is_newer(row["timestamp"], current, exists):
            conv.outcome = row["outcome"]
            conv.attack_class = row["attack_class"]
            conv.latest_result_timestamp = row["timestamp"]  # type: ignore[attr-defined]
        labels = dict(conv.labels or {})
        labels.update(row["labels"])
        conv.labels = labels
        harm = list(conv.harm_categories or [])
        harm.extend(h for h in row["targeted_harm_categories"] if h not in harm)
        conv.harm_categories = harm
        conv.updated_at = now
        changed[conv.pk] = conv
    return list(changed.values())
