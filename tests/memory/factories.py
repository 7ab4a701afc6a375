"""Builders of PyRIT-shaped dicts for the memory and scoring service tests."""

from __future__ import annotations

import hashlib
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

from redteam.core.identity import ComponentIdentifier
from redteam.core.timestamps import timestamp_1x

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)


def new_id() -> str:
    return str(uuid.uuid4())


def ts(seconds: float = 0) -> str:
    """A 1.x timestamp as pydantic writes it (Z; microseconds only when non-zero)."""
    return str(timestamp_1x(T0 + timedelta(seconds=seconds)))


def ts_013(seconds: float = 0) -> str:
    """A 0.13 timestamp (isoformat, +00:00)."""
    return (T0 + timedelta(seconds=seconds)).isoformat()


def identifier(class_name: str = "ROT13Converter", **params: Any) -> dict[str, Any]:
    """A 1.x flat identifier dump."""
    return ComponentIdentifier(
        class_name=class_name,
        class_module=f"pyrit.fake.{class_name.lower()}",
        params=params,
        pyrit_version="1.1.0",
    ).model_dump()


def attack_identifier(attack: str = "PromptSendingAttack", **params: Any) -> dict[str, Any]:
    """A 1.x AtomicAttack dump wrapping an attack with a target and a converter."""
    target = ComponentIdentifier("OpenAIChatTarget", "pyrit.prompt_target", {"model_name": "m"})
    converter = ComponentIdentifier("ROT13Converter", "pyrit.prompt_converter")
    strategy = ComponentIdentifier(
        attack,
        "pyrit.executor.attack",
        params,
        {"objective_target": target, "request_converters": [converter]},
    )
    technique = ComponentIdentifier(
        "AttackTechnique", "pyrit.scenario.core.attack_technique", children={"attack": strategy}
    )
    return ComponentIdentifier(
        "AtomicAttack",
        "pyrit.scenario.core.atomic_attack",
        children={"attack_technique": technique, "seed_identifiers": []},
        pyrit_version="1.1.0",
    ).model_dump()


def _sha(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    return hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()


def piece(**overrides: Any) -> dict[str, Any]:
    """A 1.x MessagePiece.model_dump(mode="json")."""
    piece_id = overrides.pop("id", None) or new_id()
    value = overrides.pop("original_value", "hello")
    row: dict[str, Any] = {
        "id": piece_id,
        "role": "user",
        "conversation_id": "conv-1",
        "sequence": 0,
        "timestamp": ts(),
        "original_value": value,
        "original_value_data_type": "text",
        "original_value_sha256": _sha(value),
        "converted_value": value,
        "converted_value_data_type": "text",
        "converted_value_sha256": _sha(value),
        "response_error": "none",
        "original_prompt_id": piece_id,
        "prompt_metadata": {},
        "converter_identifiers": [],
    }
    row.update(overrides)
    return row


def legacy_piece(**overrides: Any) -> dict[str, Any]:
    """A 0.13 MessagePiece.to_dict()."""
    piece_id = overrides.pop("id", None) or new_id()
    row: dict[str, Any] = {
        "id": piece_id,
        "role": "user",
        "conversation_id": "legacy-conv",
        "sequence": 0,
        "timestamp": ts_013(),
        "labels": {"operation": "op"},
        "targeted_harm_categories": None,
        "prompt_metadata": {},
        "converter_identifiers": [],
        "prompt_target_identifier": None,
        "attack_identifier": None,
        "scorer_identifier": None,
        "original_value_data_type": "text",
        "original_value": "hi",
        "original_value_sha256": None,
        "converted_value_data_type": "text",
        "converted_value": "hi",
        "converted_value_sha256": None,
        "response_error": "none",
        "originator": "undefined",
        "original_prompt_id": piece_id,
        "scores": [],
    }
    row.update(overrides)
    return row


def score(**overrides: Any) -> dict[str, Any]:
    """A 1.x Score.model_dump(mode="json")."""
    row: dict[str, Any] = {
        "id": new_id(),
        "score_value": "true",
        "status": "complete",
        "score_value_description": "",
        "score_type": "true_false",
        "score_category": ["jailbreak"],
        "score_rationale": "",
        "score_metadata": {},
        "scorer_class_identifier": identifier("SubStringScorer", substring="Sure"),
        "message_piece_id": None,
        "scorable": None,
        "timestamp": ts(5),
        "objective": None,
    }
    row.update(overrides)
    return row


def legacy_score(**overrides: Any) -> dict[str, Any]:
    """A 0.13 Score.to_dict()."""
    row: dict[str, Any] = {
        "id": new_id(),
        "score_value": "0.5",
        "score_value_description": "",
        "score_type": "float_scale",
        "score_category": None,
        "score_rationale": "r",
        "score_metadata": {},
        "scorer_class_identifier": identifier("SelfAskLikertScorer"),
        "message_piece_id": new_id(),
        "timestamp": ts_013(5),
        "objective": None,
    }
    row.update(overrides)
    return row


def conversation(**overrides: Any) -> dict[str, Any]:
    """A 1.x Conversation.model_dump(mode="json")."""
    row: dict[str, Any] = {
        "conversation_id": "conv-1",
        "target_identifier": identifier("OpenAIChatTarget", model_name="m", temperature=0.7),
        "retries": [],
    }
    row.update(overrides)
    return row


def attack_result(**overrides: Any) -> dict[str, Any]:
    """A 1.x AttackResult.model_dump(mode="json") without embedded piece or score."""
    row: dict[str, Any] = {
        "conversation_id": "conv-1",
        "objective": "do the thing",
        "attack_result_id": new_id(),
        "atomic_attack_identifier": attack_identifier(),
        "last_response": None,
        "last_score": None,
        "executed_turns": 1,
        "execution_time_ms": 10,
        "outcome": "success",
        "outcome_reason": None,
        "timestamp": ts(10),
        "related_conversations": [],
        "metadata": {},
        "labels": {"operation": "op"},
        "targeted_harm_categories": [],
        "error_message": None,
        "error_type": None,
        "error_traceback": None,
        "retry_events": [],
        "total_retries": 0,
        "attribution_parent_id": None,
        "attribution_data": None,
    }
    row.update(overrides)
    return row


def message(
    conversation_id: str, sequence: int, count: int, role: str = "user"
) -> list[dict[str, Any]]:
    """``count`` pieces of one message."""
    return [
        piece(conversation_id=conversation_id, sequence=sequence, role=role, timestamp=ts(sequence))
        for _ in range(count)
    ]
