"""Typed factories for memory rows (ORM), filled the way the ingestion services fill them.

Identifier rows go through the same parser and bulk writer as ingestion, so hashes, dumps and
denormalised columns are what production stores. Conversation summary columns are computed
from the pieces and results created here (see `refresh_summary`). The PyRIT-dict builders
for the service tests are in tests/memory/factories.py.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone

from memory.bulk import store_identifier_uses
from memory.hooks import announce
from memory.models import (
    AttackResult,
    Conversation,
    ConversationReference,
    MessagePiece,
    PieceConverter,
)
from memory.parsing import ParsedIdentifier, parse_identifier
from redteam.common.models import MediaBlob, Operation
from redteam.core.identity import ComponentIdentifier as CoreIdentifier
from redteam.core.operations import UNASSIGNED, labelled_operation

# --------------------------------------------------------------------------------------------
# Identifiers
# --------------------------------------------------------------------------------------------


def core_target(
    class_name: str = "OpenAIChatTarget",
    *,
    endpoint: str = "https://example.invalid/v1",
    model_name: str = "gpt-4o",
    temperature: float = 0.7,
) -> CoreIdentifier:
    """A target identifier (not stored)."""
    return CoreIdentifier(
        class_name=class_name,
        class_module="pyrit.prompt_target",
        params={"endpoint": endpoint, "model_name": model_name, "temperature": temperature},
        pyrit_version="1.1.0",
    )


def core_converter(class_name: str = "ROT13Converter", **params: Any) -> CoreIdentifier:
    """A converter identifier (not stored)."""
    return CoreIdentifier(
        class_name=class_name,
        class_module="pyrit.prompt_converter",
        params=params,
        pyrit_version="1.1.0",
    )


def core_scorer(class_name: str = "SubStringScorer", **params: Any) -> CoreIdentifier:
    """A scorer identifier (not stored)."""
    return CoreIdentifier(
        class_name=class_name,
        class_module="pyrit.score",
        params={"scorer_type": "true_false", **params},
        pyrit_version="1.1.0",
    )


def core_atomic_attack(
    attack: str = "PromptSendingAttack",
    *,
    target: CoreIdentifier | None = None,
    converters: Sequence[CoreIdentifier] = (),
    scorer: CoreIdentifier | None = None,
) -> CoreIdentifier:
    """An AtomicAttack > AttackTechnique > attack tree, as PyRIT 1.1 builds it."""
    children: dict[str, Any] = {"objective_target": target or core_target()}
    if scorer is not None:
        children["objective_scorer"] = scorer
    if converters:
        children["request_converters"] = list(converters)
    strategy = CoreIdentifier(
        class_name=attack,
        class_module="pyrit.executor.attack",
        children=children,
        pyrit_version="1.1.0",
    )
    technique = CoreIdentifier(
        class_name="AttackTechnique",
        class_module="pyrit.scenario.core.attack_technique",
        children={"attack": strategy},
        pyrit_version="1.1.0",
    )
    return CoreIdentifier(
        class_name="AtomicAttack",
        class_module="pyrit.scenario.core.atomic_attack",
        children={"attack_technique": technique, "seed_identifiers": []},
        pyrit_version="1.1.0",
    )


def strategy_of(atomic: CoreIdentifier) -> CoreIdentifier | None:
    """PyRIT's get_attack_strategy_identifier: attack_technique.attack, else attack."""
    technique = atomic.get_child("attack_technique")
    if technique is not None and technique.get_child("attack") is not None:
        return technique.get_child("attack")
    return atomic.get_child("attack")


def operation_named(labels: Mapping[str, Any] | None) -> Operation:
    """The operation a labels dict names (as ingestion reads it), else `unassigned`."""
    name = labelled_operation(dict(labels or {})) or UNASSIGNED
    operation, _ = Operation.objects.get_or_create(name=name)
    return operation


def store_identifier(
    identifier: CoreIdentifier, operation: Operation | None = None
) -> ParsedIdentifier:
    """Store an identifier tree's rows and its dump exactly as ingestion does, used in
    `operation` (None: not yet used anywhere)."""
    errors: list[Any] = []
    parsed = parse_identifier(identifier.model_dump(), "identifier", legacy=False, errors=errors)
    assert parsed is not None, errors
    store_identifier_uses([(parsed, operation.pk if operation is not None else None)])
    return parsed


# --------------------------------------------------------------------------------------------
# Media
# --------------------------------------------------------------------------------------------

# A valid 1x1 PNG.
PNG_1X1 = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201a2a1e4"
    "c80000000049454e44ae426082"
)


def make_media(data: bytes = PNG_1X1, content_type: str = "image/png") -> MediaBlob:
    """A media blob stored content-addressed in default storage."""
    sha = hashlib.sha256(data).hexdigest()
    name = f"media/{sha[:2]}/{sha}"
    if not default_storage.exists(name):
        default_storage.save(name, ContentFile(data))
    blob, _ = MediaBlob.objects.get_or_create(
        sha256=sha,
        defaults={"size": len(data), "content_type": content_type, "storage_name": name},
    )
    return blob


# --------------------------------------------------------------------------------------------
# Pieces and conversations
# --------------------------------------------------------------------------------------------


@dataclass
class PieceSpec:
    """What to create for one piece; unset fields get PyRIT's defaults."""

    value: str
    role: str = "user"
    data_type: str = "text"
    converted: str | None = None
    converted_type: str | None = None
    response_error: str = "none"
    converters: Sequence[CoreIdentifier] = ()
    media: MediaBlob | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)


def make_piece(
    conversation: Conversation,
    sequence: int,
    spec: PieceSpec,
    *,
    timestamp: datetime | None = None,
    piece_id: uuid.UUID | None = None,
    position: int | None = None,
) -> MessagePiece:
    """One stored piece (with its converter chain and media link), last in its message."""
    pid = piece_id or uuid.uuid4()
    if position is None:
        position = MessagePiece.objects.filter(conversation=conversation, sequence=sequence).count()
    converted = spec.converted if spec.converted is not None else spec.value
    converted_type = spec.converted_type or spec.data_type
    piece = MessagePiece.objects.create(
        id=pid,
        conversation=conversation,
        sequence=sequence,
        position=position,
        role=spec.role,
        timestamp=timestamp or timezone.now(),
        original_value=spec.value,
        original_value_data_type=spec.data_type,
        original_value_sha256=spec.media.sha256
        if spec.media
        else hashlib.sha256(spec.value.encode()).hexdigest(),
        converted_value=converted,
        converted_value_data_type=converted_type,
        converted_value_sha256=spec.media.sha256
        if spec.media
        else hashlib.sha256(converted.encode()).hexdigest(),
        response_error=spec.response_error,
        original_prompt_id=pid,
        prompt_metadata=dict(spec.metadata),
        original_media=spec.media,
        converted_media=spec.media,
    )
    for position, conv in enumerate(spec.converters):
        parsed = store_identifier(conv, conversation.operation)
        PieceConverter.objects.create(
            piece=piece, position=position, identifier_id=parsed.hash, dump_id=parsed.digest
        )
    return piece


def text_turns(count: int, prefix: str = "") -> list[list[PieceSpec]]:
    """Alternating user/assistant single-piece text messages."""
    return [
        [
            PieceSpec(
                f"{prefix}user turn {i}" if i % 2 == 0 else f"{prefix}assistant reply {i}",
                role="user" if i % 2 == 0 else "assistant",
            )
        ]
        for i in range(count)
    ]


def make_conversation(
    messages: Sequence[Sequence[PieceSpec]] | int = 2,
    *,
    conversation_id: str | None = None,
    target: CoreIdentifier | None = None,
    start: datetime | None = None,
    labels: Mapping[str, str] | None = None,
) -> Conversation:
    """A conversation with messages (a count means alternating user/assistant text turns), in
    the operation its labels name (else `unassigned`)."""
    if isinstance(messages, int):
        messages = text_turns(messages)
    operation = operation_named(labels)
    target_parsed = store_identifier(target or core_target(), operation)
    conversation = Conversation.objects.create(
        conversation_id=conversation_id or str(uuid.uuid4()),
        operation=operation,
        operation_claimed=bool(labels and labelled_operation(dict(labels))),
        target_identifier_id=target_parsed.hash,
        target_dump_id=target_parsed.digest,
        declared=True,
        labels=dict(labels or {}),
    )
    t0 = start or timezone.now() - timedelta(hours=1)
    for sequence, specs in enumerate(messages):
        for position, spec in enumerate(specs):
            make_piece(
                conversation,
                sequence,
                spec,
                timestamp=t0 + timedelta(seconds=sequence),
                position=position,
            )
    return refresh_summary(conversation)


def refresh_summary(conversation: Conversation) -> Conversation:
    """Recompute the summary columns the ingestion service maintains."""
    pieces = list(conversation.pieces.prefetch_related("converters__identifier"))
    results = list(conversation.attack_results.order_by("-timestamp"))
    if pieces:
        conversation.first_timestamp = min(p.timestamp for p in pieces)
        conversation.last_timestamp = max(p.timestamp for p in pieces)
    conversation.piece_count = len(pieces)
    conversation.message_count = len({p.sequence for p in pieces})
    conversation.data_types = sorted(
        {p.original_value_data_type for p in pieces} | {p.converted_value_data_type for p in pieces}
    )
    conversation.converter_classes = sorted(
        {c.identifier.class_name for p in pieces for c in p.converters.all()}
    )
    conversation.has_error = any(
        p.response_error != "none" or p.converted_value_data_type == "error" for p in pieces
    )
    users = sorted(
        (p for p in pieces if p.role == "user" and p.original_value_data_type == "text"),
        key=lambda p: (p.sequence, p.timestamp),
    )
    conversation.preview = users[0].original_value[:300] if users else ""
    labels = dict(conversation.labels or {})
    harms: list[str] = list(conversation.harm_categories or [])
    for r in results:
        labels.update(r.labels or {})
        harms.extend(h for h in r.targeted_harm_categories or [] if h not in harms)
    conversation.labels, conversation.harm_categories = labels, harms
    if results:
        conversation.outcome = results[0].outcome
        conversation.attack_class = results[0].attack_class
    conversation.save()
    return conversation


def make_attack_result(
    conversation: Conversation,
    *,
    objective: str = "Explain how to pick a lock",
    outcome: str = "failure",
    atomic: CoreIdentifier | None = None,
    labels: Mapping[str, str] | None = None,
    harm_categories: Sequence[str] = (),
    last_response: MessagePiece | None = None,
    last_score_id: uuid.UUID | None = None,
    timestamp: datetime | None = None,
    related: Sequence[tuple[str, str]] = (),
    executed_turns: int = 1,
) -> AttackResult:
    """An attack result with denormalised attack/target/converter columns, like ingestion, in
    the operation its labels name (else its conversation's)."""
    atomic = atomic or core_atomic_attack()
    operation = (
        operation_named(labels)
        if labels and labelled_operation(dict(labels))
        else conversation.operation
    )
    parsed = store_identifier(atomic, operation)
    strategy = strategy_of(atomic)
    target = strategy.get_child("objective_target") if strategy else None
    converters = strategy.get_child_list("request_converters") if strategy else []
    if last_response is None:
        last_response = conversation.pieces.order_by("-sequence").first()
    result = AttackResult.objects.create(
        attack_result_id=uuid.uuid4(),
        operation=operation,
        conversation=conversation,
        objective=objective,
        objective_sha256=hashlib.sha256(objective.encode()).hexdigest(),
        atomic_attack_identifier_id=parsed.hash,
        atomic_attack_dump_id=parsed.digest,
        attack_class=strategy.class_name if strategy else "",
        target_hash=target.hash if target else "",
        target_class=target.class_name if target else "",
        converter_classes=[c.class_name for c in converters],
        last_response=last_response,
        last_score_id=last_score_id,
        executed_turns=executed_turns,
        execution_time_ms=1234,
        outcome=outcome,
        outcome_reason=f"scored {outcome}",
        timestamp=timestamp or timezone.now(),
        labels=dict(labels or {}),
        targeted_harm_categories=list(harm_categories),
    )
    for conversation_id, kind in related:
        ConversationReference.objects.create(
            attack_result=result, conversation_id=conversation_id, conversation_type=kind
        )
    refresh_summary(conversation)
    # As ingestion does: the dashboard's tallies count the result in this transaction.
    announce(result_ids=[result.pk], conversation_ids=[conversation.pk])
    return result
