"""OpenAPI output schema of the seeds read API: every key of PyRIT's seed dicts, both shapes.

A seed comes back as PyRIT 1.x ``model_dump(mode="json")`` or as the 0.13 dataclass fields
(seeds/api/views.py), and its keys depend on its class: SeedObjective, SeedPrompt or
SeedSimulatedConversation. Each (class, shape) pair is a closed component (every key listed
and required, ``additionalProperties: false``); the endpoint answers the ``oneOf`` of the
six, whose key sets differ. ``metadata`` and ``response_json_schema`` are free-form objects.
"""

from __future__ import annotations

from typing import Any

from rest_framework import serializers

from redteam.common.api_schema import (
    ClosedSerializer,
    EnumField,
    ShapeUnion,
    closed,
    timestamp_field,
)
from redteam.core.enums import CHAT_MESSAGE_ROLES, PROMPT_DATA_TYPES
from seeds.yaml_loader import SEED_BASE_KEYS

__all__ = ["SEED_KEYS_013", "SEED_KEYS_1X", "SeedOut"]

# Keys per seed_type, in PyRIT's order: the 1.x model_dump of each class ...
SEED_KEYS_1X: dict[str, tuple[str, ...]] = {
    "objective": (*SEED_BASE_KEYS, "data_type", "seed_type"),
    "prompt": (
        *SEED_BASE_KEYS,
        "data_type",
        "seed_type",
        "response_json_schema",
        "role",
        "sequence",
        "parameters",
    ),
    "simulated_conversation": (
        *SEED_BASE_KEYS,
        "data_type",
        "seed_type",
        "num_turns",
        "sequence",
        "adversarial_chat_system_prompt_path",
        "simulated_target_system_prompt_path",
        "next_message_system_prompt_path",
        "pyrit_version",
    ),
}
# ... and the 0.13 dataclass fields (no seed_type; objectives without data_type).
SEED_KEYS_013: dict[str, tuple[str, ...]] = {
    "objective": SEED_BASE_KEYS,
    "prompt": (*SEED_BASE_KEYS, "data_type", "role", "sequence", "parameters"),
    "simulated_conversation": (
        *SEED_BASE_KEYS,
        "data_type",
        "num_turns",
        "sequence",
        "adversarial_chat_system_prompt_path",
        "simulated_target_system_prompt_path",
        "next_message_system_prompt_path",
    ),
}
# PyRIT's class of each seed_type, for component names.
SEED_CLASSES = {
    "objective": "SeedObjective",
    "prompt": "SeedPrompt",
    "simulated_conversation": "SeedSimulatedConversation",
}


def _text(**kwargs: Any) -> serializers.CharField:
    """A string that may be empty or null (PyRIT keeps "" apart from None)."""
    return serializers.CharField(allow_blank=True, allow_null=True, **kwargs)


def _strings(help_text: str = "") -> serializers.ListField:
    return serializers.ListField(
        child=serializers.CharField(allow_blank=True), allow_null=True, help_text=help_text
    )


def _seed_fields(shape: str, seed_type: str) -> dict[str, Any]:
    return {
        "value": serializers.CharField(
            allow_blank=True,
            help_text="Text, or a file path for media (a simulated conversation's value is its "
            "configuration as compact JSON).",
        ),
        "value_sha256": _text(help_text="SHA-256 of the text or of the media file's bytes."),
        "id": serializers.UUIDField(),
        "name": _text(),
        "dataset_name": _text(),
        "harm_categories": _strings(),
        "description": _text(),
        "authors": _strings(),
        "groups": _strings(),
        "source": _text(),
        "date_added": timestamp_field(shape, allow_null=True),
        "added_by": _text(),
        "metadata": serializers.DictField(allow_null=True, help_text="Free-form."),
        "prompt_group_id": serializers.UUIDField(
            allow_null=True, help_text="The seed group; null for a seed sent without one."
        ),
        "prompt_group_alias": _text(),
        "is_general_technique": serializers.BooleanField(),
        "is_jinja_template": serializers.BooleanField(),
        "data_type": EnumField("PromptDataType", PROMPT_DATA_TYPES),
        "seed_type": EnumField(f"{SEED_CLASSES[seed_type]}Type", (seed_type,)),
        "response_json_schema": serializers.DictField(
            allow_null=True, help_text="A JSON schema the response must follow (free-form)."
        ),
        "role": EnumField("ChatMessageRole", CHAT_MESSAGE_ROLES, allow_null=True),
        "sequence": serializers.IntegerField(allow_null=True),
        "parameters": _strings("The template's placeholder names."),
        "num_turns": serializers.IntegerField(allow_null=True),
        "adversarial_chat_system_prompt_path": _text(),
        "simulated_target_system_prompt_path": _text(),
        "next_message_system_prompt_path": _text(),
        "pyrit_version": _text(max_length=32),
    }


def _seed_shape(shape: str, seed_type: str) -> type[ClosedSerializer]:
    keys = (SEED_KEYS_1X if shape == "1.x" else SEED_KEYS_013)[seed_type]
    name = f"{SEED_CLASSES[seed_type]}{'1x' if shape == '1.x' else '013'}"
    form = "model_dump" if shape == "1.x" else "dataclass fields"
    return closed(
        name,
        f"A PyRIT {shape} {SEED_CLASSES[seed_type]} ({form}).",
        keys,
        _seed_fields(shape, seed_type),
    )


SEED_SHAPES: dict[tuple[str, str], type[ClosedSerializer]] = {
    (shape, seed_type): _seed_shape(shape, seed_type)
    for shape in ("1.x", "0.13")
    for seed_type in SEED_CLASSES
}


class SeedOut(ShapeUnion):
    """A PyRIT seed: SeedObjective, SeedPrompt or SeedSimulatedConversation, as 1.x model_dump
    or as the 0.13 dataclass fields (`shape`)."""

    shapes = tuple(SEED_SHAPES.values())
