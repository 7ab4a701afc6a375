"""Ingestion of attack results (see memory.services for the contract)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from django.db import transaction
from django.db.models import Exists, F, OuterRef, Subquery
from django.utils import timezone

from memory.bulk import bulk_update, insert_rows, store_identifier_uses
from memory.hooks import announce, relabelled, summary_keys
from memory.models import AttackResult, Conversation, ConversationReference
from memory.ownership import (
    NOT_WRITABLE,
    ConversationPlacer,
    LabelRefused,
    label_field,
    named_operation,
    preload,
)
from memory.parsing_results import ParsedAttackResult, parse_attack_result
from memory.shapes import ATTACK_RESULT_TAIL_1X
from memory.store_common import (
    KIND_ATTACK_RESULTS,
    drop_empty_stubs,
    lock_conversations,
    prefixed,
    revise_rows,
    row_replay,
)
from memory.store_pieces import store_pieces
from memory.store_scores import store_parsed_scores
from redteam.common.access import Writer
from redteam.core.batch import Batch, Entry
from redteam.core.outcomes import FieldError, ItemOutcome
from redteam.core.roundtrip import (
    RELOAD_DESCRIPTIONS,
    identifier_compared,
    related_compared,
    traceback_compared,
)

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


RESULTS = row_replay(
    KIND_ATTACK_RESULTS,
    "attack result",
    _result_compare,
    _result_fields,
    key="attack_result_id",
)


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


def _embedded(valid: Sequence[Entry[ParsedAttackResult]], writer: Writer) -> None:
    """Store each result's last_response piece and last_score; a rejection rejects the result."""
    with_piece = [(e, p) for e in valid if (p := e.parsed.last_response) is not None]
    if with_piece:
        outcomes = store_pieces(
            [p for _, p in with_piece], writer, prefix="last_response.", embedded=True
        )
        for (entry, _), outcome in zip(with_piece, outcomes, strict=True):
            if outcome.status == "rejected":
                entry.errors.extend(prefixed(outcome.errors, "last_response."))
    with_score = [(e, s) for e in valid if (s := e.parsed.last_score) is not None and not e.errors]
    scored = store_parsed_scores([s for _, s in with_score], writer)
    for (entry, _), outcome in zip(with_score, scored, strict=True):
        if outcome.status == "rejected":
            entry.errors.extend(prefixed(outcome.errors, "last_score."))


@transaction.atomic(savepoint=False)
def store_attack_results(
    items: Sequence[Mapping[str, Any]], *, writer: Writer | None = None
) -> list[ItemOutcome]:
    """Validate and store AttackResult dicts, their related conversations and embedded items.

    The embedded last_response piece and last_score are stored too (same rules as when sent
    on their own), so exporting a result gives them back. Queries: the piece store's and the
    score store's constant counts, then INSERT stubs; SELECT conversations FOR UPDATE;
    SELECT stored results; [SELECT their references, when some ids are already stored];
    INSERT identifiers; INSERT dumps; INSERT results; INSERT references; UPDATE conversations.
    Each result joins the operation its labels name, else its conversation's; a labelled one
    claims its unclaimed conversations (memory.ownership). Results keep no author.
    """
    return store_parsed_attack_results(
        [parse_attack_result(item, i) for i, item in enumerate(items)],
        writer or Writer.trusted(),
    )


def store_parsed_attack_results(
    parsed: Sequence[ParsedAttackResult], writer: Writer, *, embedded: bool = False
) -> list[ItemOutcome]:
    """Store already-parsed attack results (also the hook scenario results use, with
    `embedded`: copies inside another item never replace a stored result)."""
    batch = Batch.of(RESULTS, parsed)
    if valid := batch.pending():
        _embedded(valid, writer)
    if valid := batch.pending():
        _decide_results(batch, valid, writer, embedded)
    return batch.outcomes()


def _place_result(result: ParsedAttackResult, placer: ConversationPlacer, writer: Writer) -> int:
    """The operation of a new result (LabelRefused when it may not be stored)."""
    named = named_operation(result.row["labels"], writer)
    conversation_id = result.row["conversation_id"]
    placer.place(conversation_id, named, label_field())
    operation = placer.conversations[conversation_id].operation_id
    assert operation is not None
    if named is not None:
        placer.claim_related((ref["conversation_id"] for ref in result.related), operation)
    return operation


def _decide_results(
    batch: Batch[ParsedAttackResult],
    valid: Sequence[Entry[ParsedAttackResult]],
    writer: Writer,
    embedded: bool,
) -> None:
    """Compare with stored results, insert the new ones and refresh conversation summaries."""
    latest = AttackResult.objects.filter(conversation_id=OuterRef("pk")).order_by(
        F("timestamp").desc(nulls_last=True), "-ingested_at"
    )
    conversations = lock_conversations(
        (e.parsed.row["conversation_id"] for e in valid),
        latest_result_timestamp=Subquery(latest.values("timestamp")[:1]),
        has_results=Exists(latest),
    )
    before = summary_keys(conversations)
    related_ids = {ref["conversation_id"] for e in valid for ref in e.parsed.related} - set(
        conversations
    )
    related_rows = (
        {
            c.pk: c
            for c in Conversation.objects.select_for_update()
            .filter(pk__in=sorted(related_ids))
            .order_by("pk")
        }
        if related_ids
        else {}
    )
    ids = [rid for e in valid if (rid := e.parsed.id) is not None]
    stored = {r.pk: r for r in AttackResult.objects.filter(pk__in=ids)}
    fresh = [e for e in valid if e.parsed.id not in stored]
    revising = writer.revise is not None
    if fresh or (stored and revising):
        # A revision's labels must still name its operation: looked up with the new ones'.
        preload(writer, (e.parsed.row["labels"] for e in (valid if revising else fresh)))
    placer = ConversationPlacer({**related_rows, **conversations}, writer, adopt=bool(fresh))
    related: dict[uuid.UUID, list[dict[str, Any]]] = {pk: [] for pk in stored}
    if stored:
        for ref in ConversationReference.objects.filter(attack_result_id__in=list(stored)).values(
            "attack_result_id", "conversation_id", "conversation_type", "description"
        ):
            related[ref["attack_result_id"]].append(dict(ref))
    new: list[ParsedAttackResult] = []
    revised: list[tuple[ParsedAttackResult, AttackResult]] = []
    for entry in valid:
        result = entry.parsed
        old = stored.get(result.id) if result.id is not None else None
        if old is not None and not writer.may_write(old.operation_id):
            # Never compared: the answer would tell what another operation holds.
            entry.errors.append(FieldError("attack_result_id", f"This result {NOT_WRITABLE}."))
        elif old is None:
            try:
                result.row["operation_id"] = _place_result(result, placer, writer)
            except LabelRefused as refused:
                entry.errors.append(refused.error)
                continue
            result.row["revision"] = writer.revise
            new.append(result)
            entry.status = "stored"
        else:
            difference = RESULTS.difference(result, _stored_result_compare(old, related[old.pk]))
            if difference is None or not revising:
                batch.settle(entry, difference)
            elif (refusal := _revision_refused(result, old, writer)) is not None:
                entry.errors.append(refusal)
            elif embedded or not writer.supersedes(old.revision):
                # A copy inside another item, or a version older than the stored one (a
                # request that arrived late): the stored row stays.
                entry.status = "unchanged"
            else:
                result.row["revision"] = writer.revise
                revised.append((result, old))
                entry.status = "stored"
    if revised:
        _revise_results(revised, related)
    if new:
        store_identifier_uses(
            (r.atomic, r.row["operation_id"]) for r in new if r.atomic is not None
        )
        insert_rows(AttackResult, [_result_row(r) for r in new])
        insert_rows(
            ConversationReference,
            [{"attack_result_id": r.id, **ref} for r in new for ref in r.related],
        )
    changed = _update_result_summaries(conversations, [*new, *(r for r, _ in revised)])
    bulk_update(
        Conversation,
        changed,
        ["outcome", "attack_class", "labels", "harm_categories", "updated_at"],
    )
    # In the same transaction: the dashboard's tallies count the new results (scoring).
    announce(result_ids=[r.id for r in new], conversation_ids=relabelled(conversations, before))
    placer.finish()
    drop_empty_stubs(conversations, {r.row["conversation_id"] for r in new})


def _revision_refused(
    result: ParsedAttackResult, old: AttackResult, writer: Writer
) -> FieldError | None:
    """Why a changed result may not replace the stored one: it names another conversation,
    or its labels another operation (a result never moves), or an operation it may not use."""
    if result.row["conversation_id"] != old.conversation_id:
        return FieldError(
            "conversation_id",
            f"Attack result {result.id} is stored for conversation {old.conversation_id}; "
            "a newer version may not move it.",
            code="conflict",
        )
    try:
        named = named_operation(result.row["labels"], writer)
    except LabelRefused as refused:
        return refused.error
    if named is not None and named != old.operation_id:
        return FieldError(
            label_field(),
            f"Attack result {result.id} is stored in another operation than its new labels "
            "name; a newer version may not move it.",
            code="conflict",
        )
    return None


def _revise_results(
    revised: Sequence[tuple[ParsedAttackResult, AttackResult]],
    related: Mapping[uuid.UUID, list[dict[str, Any]]],
) -> None:
    """Store newer versions of results (Writer.revise): their fields replace the stored ones;
    the id, conversation and operation stay. What compares equal in PyRIT's round-trip form
    keeps the stored form (the atomic attack's dump, a traceback longer than memory keeps,
    the related conversations with their descriptions, and the score and converter ones
    memory drops). Queries: INSERT identifiers; INSERT dumps; UPDATE results; [DELETE and
    INSERT references, when the kept set changed].
    """
    store_identifier_uses(
        (r.atomic, old.operation_id) for r, old in revised if r.atomic is not None
    )
    updates: list[tuple[AttackResult, dict[str, Any]]] = []
    references: list[dict[str, Any]] = []
    replaced: list[uuid.UUID] = []
    for result, old in revised:
        row = _result_row(result)
        atomic = result.atomic
        if atomic is None:
            row["atomic_attack_identifier_id"] = row["atomic_attack_dump_id"] = None
        elif identifier_compared(atomic.hash, atomic.digest) == identifier_compared(
            old.atomic_attack_identifier_id, old.atomic_attack_dump_id
        ):
            row["atomic_attack_dump_id"] = old.atomic_attack_dump_id
        if traceback_compared(row["error_traceback"]) == traceback_compared(old.error_traceback):
            row["error_traceback"] = old.error_traceback
        updates.append((old, row))
        stored = related.get(old.pk, [])
        if related_compared(result.related) != related_compared(stored):
            replaced.append(old.pk)
            sent = {ref["conversation_id"] for ref in result.related}
            kept = [
                ref
                for ref in stored
                if ref["conversation_id"] not in sent
                and ref["conversation_type"] not in RELOAD_DESCRIPTIONS
            ]
            references += [{"attack_result_id": old.pk, **ref} for ref in [*result.related, *kept]]
    revise_rows(AttackResult, updates, keep=("attack_result_id", "conversation_id", "operation_id"))
    if replaced:
        ConversationReference.objects.filter(attack_result_id__in=replaced).delete()
        insert_rows(ConversationReference, references)


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
