"""Parse and validate PyRIT scores, conversations and attack results (no database access).

The rules are those of memory/parsing.py (which also parses pieces and identifiers); see its
docstring for the choices made where PyRIT is lenient.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from memory.parsing import (
    EXTENSION_KEYS,
    INT64,
    MISSING,
    ParsedIdentifier,
    _id_string,
    _pyrit_version,
    _Reader,
    parse_identifier,
    raw_id,
)
from memory.parsing_pieces import ParsedPiece, ParsedScore, parse_piece, parse_score, piece_shape
from memory.shapes import (
    ATTACK_RESULT_1X_ONLY,
    ATTACK_RESULT_EXTRA_013,
    ATTACK_RESULT_KEYS_013,
    ATTACK_RESULT_KEYS_1X,
    CONVERSATION_KEYS,
    RETRY_EVENT_KEYS,
)
from redteam.core.enums import (
    ATTACK_OUTCOMES,
    CONVERSATION_RETRY_REASONS,
    CONVERSATION_TYPES,
)
from redteam.core.identity import ComponentIdentifier
from redteam.core.outcomes import FieldError
from redteam.core.roundtrip import related_description

__all__ = [
    "ParsedAttackResult",
    "ParsedConversation",
    "ParsedScore",
    "attack_result_shape",
    "parse_attack_result",
    "parse_conversation",
    "parse_score",
    "strategy_of",
]


# --- conversations -------------------------------------------------------------------------


@dataclass
class ParsedConversation:
    """A validated 1.x Conversation."""

    index: int
    row: dict[str, Any] = field(default_factory=dict)
    target: ParsedIdentifier | None = None
    errors: list[FieldError] = field(default_factory=list)
    raw_id: str | None = None


def _parse_retries(r: _Reader, key: str) -> list[dict[str, Any]]:
    value = r.raw(key, required=False)
    if value is MISSING or value is None:
        return []
    if not isinstance(value, list):
        r.error(key, "Must be a list.")
        return []
    out: list[dict[str, Any]] = []
    for i, retry in enumerate(value):
        if not isinstance(retry, Mapping):
            r.error(f"{key}[{i}]", "Must be an object.")
            continue
        sub = _Reader(retry, r.name(f"{key}[{i}]."), r.errors)
        sub.unknown_keys(frozenset({"sequence", "reason"}), "ConversationRetry")
        out.append(
            {
                "sequence": sub.integer("sequence", required=True),
                "reason": sub.choice("reason", CONVERSATION_RETRY_REASONS, required=True),
            }
        )
    return out


def parse_conversation(item: Any, index: int) -> ParsedConversation:
    """Validate one 1.x Conversation dict."""
    errors: list[FieldError] = []
    conv = ParsedConversation(index=index, errors=errors, raw_id=raw_id(item, "conversation_id"))
    if not isinstance(item, Mapping):
        errors.append(FieldError(None, "Each conversation must be an object."))
        return conv
    r = _Reader(item, "", errors)
    r.unknown_keys(frozenset(CONVERSATION_KEYS) | EXTENSION_KEYS, "Conversation")
    conv.target = parse_identifier(
        item.get("target_identifier"), "target_identifier", legacy=False, errors=errors
    )
    conv.row = {
        "conversation_id": _id_string(r, "conversation_id"),
        "retries": _parse_retries(r, "retries"),
        "pyrit_version": _pyrit_version(r),
    }
    return conv


# --- attack results ------------------------------------------------------------------------


@dataclass
class ParsedAttackResult:
    """A validated AttackResult, its embedded last response/score, and related conversations."""

    index: int
    shape: str
    row: dict[str, Any] = field(default_factory=dict)
    atomic: ParsedIdentifier | None = None
    last_response: ParsedPiece | None = None
    last_score: ParsedScore | None = None
    related: list[dict[str, Any]] = field(default_factory=list)
    errors: list[FieldError] = field(default_factory=list)
    raw_id: str | None = None

    @property
    def id(self) -> uuid.UUID | None:
        """The attack_result_id (None when it did not parse)."""
        value: uuid.UUID | None = self.row.get("attack_result_id")
        return value


def attack_result_shape(item: Mapping[str, Any]) -> str:
    """'1.x' when any 1.x-only key is present or last_response is a 1.x piece, else '0.13'.

    A ``pyrit_version`` below 1 (the column of a 0.13 memory row) marks the 0.13 shape even
    with a ``timestamp``: 0.13's table had that column although its to_dict() did not.
    """
    version = item.get("pyrit_version")
    legacy_version = isinstance(version, str) and version.startswith("0.")
    if any(k in item for k in ATTACK_RESULT_1X_ONLY - ATTACK_RESULT_EXTRA_013):
        return "1.x"
    if "timestamp" in item and not legacy_version:
        return "1.x"
    last = item.get("last_response")
    if isinstance(last, Mapping) and piece_shape(last) == "1.x":
        return "1.x"
    return "0.13"


def strategy_of(atomic: ComponentIdentifier | None) -> ComponentIdentifier | None:
    """PyRIT's get_attack_strategy_identifier: attack_technique.attack, else children.attack."""
    if atomic is None:
        return None
    try:
        technique = atomic.get_child("attack_technique")
        if technique is not None:
            attack = technique.get_child("attack")
            if attack is not None:
                return attack
        return atomic.get_child("attack")
    except ValueError:  # a list where PyRIT expects one child
        return None


def _denormalise_attack(atomic: ParsedIdentifier | None) -> dict[str, Any]:
    attack = strategy_of(atomic.identifier if atomic else None)
    out: dict[str, Any] = {
        "attack_class": "",
        "target_hash": "",
        "target_class": "",
        "converter_classes": [],
    }
    if attack is None:
        return out
    out["attack_class"] = attack.class_name[:255]
    try:
        target = attack.get_child("objective_target")
    except ValueError:
        target = None
    if target is not None:
        out["target_hash"] = target.hash
        out["target_class"] = target.class_name[:255]
    classes: list[str] = []
    for name in ("request_converters", "response_converters"):
        for conv in attack.get_child_list(name):
            if conv.class_name not in classes:
                classes.append(conv.class_name)
    out["converter_classes"] = classes
    return out


def _parse_retry_events(r: _Reader) -> list[Any]:
    value = r.raw("retry_events", required=False)
    if value is MISSING or value is None:
        return []
    if not isinstance(value, list):
        r.error("retry_events", "Must be a list.")
        return []
    for i, event in enumerate(value):
        if not isinstance(event, Mapping):
            r.error(f"retry_events[{i}]", "Must be an object.")
            continue
        sub = _Reader(event, r.name(f"retry_events[{i}]."), r.errors)
        sub.unknown_keys(frozenset(RETRY_EVENT_KEYS), "RetryEvent")
        sub.timestamp("timestamp")
        sub.integer("attempt_number", default=0)
        elapsed = event.get("elapsed_seconds")
        if elapsed is not None and (
            isinstance(elapsed, bool) or not isinstance(elapsed, int | float)
        ):
            sub.error("elapsed_seconds", "Must be a number.")
        for key in RETRY_EVENT_KEYS[2:-1]:
            sub.string(key)
    # Stored as sent (after validation) so a replay compares equal.
    return list(value)


def _parse_related(r: _Reader) -> list[dict[str, Any]]:
    value = r.raw("related_conversations", required=False)
    if value is MISSING or value is None:
        return []
    if not isinstance(value, list):
        r.error("related_conversations", "Must be a list.")
        return []
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for i, ref in enumerate(value):
        if not isinstance(ref, Mapping):
            r.error(f"related_conversations[{i}]", "Must be an object.")
            continue
        sub = _Reader(ref, r.name(f"related_conversations[{i}]."), r.errors)
        sub.unknown_keys(
            frozenset({"conversation_id", "conversation_type", "description"}),
            "ConversationReference",
        )
        conv_id = _id_string(sub, "conversation_id")
        conversation_type = sub.choice("conversation_type", CONVERSATION_TYPES, required=True)
        entry = {
            "conversation_id": conv_id,
            "conversation_type": conversation_type,
            "description": related_description(conversation_type, sub.string("description")),
        }
        # PyRIT keeps them in a set whose equality is conversation_id alone: first one wins.
        if isinstance(conv_id, str) and conv_id not in seen:
            seen.add(conv_id)
            out.append(entry)
    return out


def parse_attack_result(item: Any, index: int) -> ParsedAttackResult:
    """Validate one AttackResult dict (1.x model_dump or 0.13 to_dict)."""
    errors: list[FieldError] = []
    if not isinstance(item, Mapping):
        errors.append(FieldError(None, "Each attack result must be an object."))
        return ParsedAttackResult(index=index, shape="1.x", errors=errors)
    shape = attack_result_shape(item)
    legacy = shape == "0.13"
    result = ParsedAttackResult(
        index=index, shape=shape, errors=errors, raw_id=raw_id(item, "attack_result_id")
    )
    r = _Reader(item, "", errors)
    keys = (
        frozenset(ATTACK_RESULT_KEYS_013) | ATTACK_RESULT_EXTRA_013
        if legacy
        else frozenset(ATTACK_RESULT_KEYS_1X)
    )
    r.unknown_keys(keys | EXTENSION_KEYS, "0.13 AttackResult" if legacy else "AttackResult")

    objective = r.string("objective", required=True, nullable=False, default="") or ""
    result.atomic = parse_identifier(
        item.get("atomic_attack_identifier"),
        "atomic_attack_identifier",
        legacy=legacy,
        errors=errors,
    )
    last_response = item.get("last_response")
    if last_response is not None:
        result.last_response = parse_piece(last_response, index, prefix="last_response.")
        errors.extend(result.last_response.errors)
    last_score = item.get("last_score")
    if last_score is not None:
        result.last_score = parse_score(last_score, index, prefix="last_score.")
        errors.extend(result.last_score.errors)
    result.related = _parse_related(r)
    row: dict[str, Any] = {
        "attack_result_id": r.uuid("attack_result_id", required=True, nullable=False),
        "conversation_id": _id_string(r, "conversation_id"),
        "objective": objective,
        "objective_sha256": hashlib.sha256(objective.encode("utf-8", "replace")).hexdigest(),
        "last_response_id": result.last_response.id if result.last_response else None,
        "last_score_id": result.last_score.id if result.last_score else None,
        "executed_turns": r.integer("executed_turns"),
        "execution_time_ms": r.integer("execution_time_ms", bounds=INT64),
        "outcome": r.choice("outcome", ATTACK_OUTCOMES, default="undetermined"),
        "outcome_reason": r.string("outcome_reason"),
        "timestamp": r.timestamp("timestamp", required=not legacy),
        "metadata": r.json_object("metadata", nullable=True) or {},
        "labels": {} if legacy else r.str_dict("labels"),
        "targeted_harm_categories": []
        if legacy
        else r.str_list("targeted_harm_categories", nullable=False, default=[]),
        "error_message": None if legacy else r.string("error_message"),
        "error_type": None if legacy else r.string("error_type", max_length=255),
        "error_traceback": None if legacy else r.string("error_traceback"),
        "retry_events": [] if legacy else _parse_retry_events(r),
        "total_retries": 0 if legacy else r.integer("total_retries"),
        "attribution_parent_id": None
        if legacy
        else r.string("attribution_parent_id", max_length=64),
        "attribution_data": None
        if legacy
        else r.json_object("attribution_data", nullable=True, default_empty=False),
        "pyrit_version": _pyrit_version(r),
        "source_shape": shape,
        **_denormalise_attack(result.atomic),
    }
    result.row = row
    return result
