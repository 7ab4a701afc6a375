"""Strict parsing of PyRIT seed dicts (API ingestion) into unsaved Seed rows.

Accepts PyRIT 1.x `model_dump(mode="json")` and 0.13 dataclass shapes (PYRIT-MODEL.md 4.1).
Keys starting with `_` are fixture annotations and are ignored; any other unknown key is an
error, as PyRIT's models forbid extras. 0.13 dicts carry no `seed_type`: a dict with prompt
fields (`data_type`, `role`, `sequence`, `parameters`) is a prompt, one with
`adversarial_chat_system_prompt_path` or `num_turns` a simulated conversation, else an objective.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from redteam.core.enums import CHAT_MESSAGE_ROLES, PROMPT_DATA_TYPES, SEED_TYPES
from redteam.core.outcomes import FieldError
from redteam.core.roundtrip import SEED_FIELDS_NOT_PERSISTED, seed_compared
from seeds import rules
from seeds.models import Seed
from seeds.yaml_loader import SEED_KEYS, simulated_value

ITEM_KEYS = SEED_KEYS | {"prompt_group_id"}
# uuid5 namespace for the group of a seed sent without prompt_group_id (stable across resends).
LONE_SEED_GROUP_NAMESPACE = uuid.UUID("1f0c7a52-5d0e-4c36-9a57-2d0f3bb1c9e1")

# Fields compared to decide "unchanged" vs "conflict" when an id is sent again.
COMPARED_FIELDS = (
    "seed_type",
    "value",
    "value_sha256",
    "data_type",
    "name",
    "dataset_name",
    "description",
    "source",
    "added_by",
    "date_added",
    "harm_categories",
    "authors",
    "groups",
    "metadata",
    "prompt_group_alias",
    "is_general_technique",
    "is_jinja_template",
    "role",
    "sequence",
    "parameters",
    "response_json_schema",
    "num_turns",
    "adversarial_chat_system_prompt_path",
    "simulated_target_system_prompt_path",
    "next_message_system_prompt_path",
    "pyrit_version",
)


# The keys of `comparable`: what an item and a stored seed with its id are compared on.
COMPARED: tuple[str, ...] = (
    *(name for name in COMPARED_FIELDS if name not in SEED_FIELDS_NOT_PERSISTED),
    "prompt_group_id",
)


@dataclass
class ParsedSeed:
    """An item turned into an unsaved Seed plus what is needed to place it."""

    index: int
    seed: Seed
    prompt_group_id: uuid.UUID
    errors: list[FieldError] = field(default_factory=list)

    def comparable(self) -> dict[str, Any]:
        """The values that must match an already stored seed with the same id."""
        return comparable(self.seed, self.prompt_group_id)


def comparable(seed: Seed, prompt_group_id: uuid.UUID | None) -> dict[str, Any]:
    """A seed's content in PyRIT's memory round-trip form, for idempotency checks."""
    values = seed_compared({name: getattr(seed, name) for name in COMPARED_FIELDS})
    values["prompt_group_id"] = prompt_group_id
    return values


class _ItemParser:
    def __init__(self, item: Mapping[str, Any]) -> None:
        self.item = item
        self.errors: list[FieldError] = []

    def error(self, name: str | None, message: str) -> None:
        self.errors.append(FieldError(name, message))

    def string(self, name: str, *, required: bool = False) -> str | None:
        value = self.item.get(name)
        if value is None:
            if required:
                self.error(name, "This field is required.")
            return None
        if not isinstance(value, str):
            self.error(name, "Must be a string.")
            return None
        return value

    def string_list(self, name: str) -> list[str] | None:
        value = self.item.get(name)
        if value is None:
            return None
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.error(name, "Must be a list of strings.")
            return None
        return list(value)

    def boolean(self, name: str, default: bool) -> bool:
        value = self.item.get(name, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.error(name, "Must be true or false.")
            return default
        return value

    def integer(self, name: str) -> int | None:
        value = self.item.get(name)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            self.error(name, "Must be an integer.")
            return None
        if abs(value) > 2**31 - 1:
            self.error(name, "Out of range.")
            return None
        return value

    def enum(self, name: str, allowed: tuple[str, ...], default: str | None) -> str | None:
        value = self.item.get(name, default)
        if value is None:
            return default
        if value not in allowed:
            self.error(name, f"Unknown value {str(value)[:40]!r}; expected one of {allowed}.")
            return default
        return str(value)

    def mapping(self, name: str) -> dict[str, Any] | None:
        value = self.item.get(name)
        if value is None:
            return None
        if not isinstance(value, dict):
            self.error(name, "Must be an object.")
            return None
        if problem := rules.check_json_value(value, name):
            self.error(name, problem)
            return None
        return value

    def uuid_value(self, name: str, *, required: bool) -> uuid.UUID | None:
        value = self.item.get(name)
        if value is None:
            if required:
                self.error(name, "This field is required.")
            return None
        try:
            return uuid.UUID(str(value))
        except ValueError:
            self.error(name, "Must be a UUID.")
            return None

    def timestamp(self, name: str) -> datetime | None:
        value = self.item.get(name)
        if value is None:
            return None
        if not isinstance(value, str):
            self.error(name, "Must be an ISO 8601 date/time string.")
            return None
        try:
            parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            self.error(name, "Must be an ISO 8601 date/time string.")
            return None
        if parsed.tzinfo is None:
            self.error(name, "Must carry a time zone (naive timestamps are ambiguous).")
            return None
        try:
            return parsed.astimezone(UTC)
        except OverflowError:
            # e.g. 0001-01-01T00:00:00+05:00: a valid datetime whose UTC instant is not.
            self.error(name, f"{value[:80]!r} is out of range once converted to UTC.")
            return None


def _seed_type_of(item: Mapping[str, Any]) -> str | None:
    """The explicit seed_type, or the 0.13 class implied by the keys present."""
    if "seed_type" in item:
        value = item["seed_type"]
        return value if isinstance(value, str) else None
    if "adversarial_chat_system_prompt_path" in item or "num_turns" in item:
        return "simulated_conversation"
    if any(key in item for key in ("data_type", "role", "sequence", "parameters")):
        return "prompt"
    return "objective"


def parse_item(index: int, item: Any) -> ParsedSeed | list[FieldError]:
    """One PyRIT seed dict -> ParsedSeed, or the list of everything wrong with it."""
    if not isinstance(item, Mapping):
        return [FieldError(None, "Each seed must be a JSON object.")]
    unknown = sorted(k for k in item if isinstance(k, str) and not k.startswith("_"))
    unknown = [k for k in unknown if k not in ITEM_KEYS]
    p = _ItemParser(item)
    for key in unknown:
        p.error(key, "Unknown field.")
    seed_id = p.uuid_value("id", required=True)
    seed_type = _seed_type_of(item)
    if seed_type not in SEED_TYPES:
        p.error("seed_type", f"Unknown seed_type; expected one of {SEED_TYPES}.")
        seed_type = "prompt"
    default_data_type = "text"
    data_type = p.enum("data_type", PROMPT_DATA_TYPES, default_data_type) or "text"
    seed = Seed(
        id=seed_id,
        seed_type=seed_type,
        value=p.string("value", required=seed_type != "simulated_conversation") or "",
        value_sha256=p.string("value_sha256"),
        data_type=data_type,
        name=p.string("name"),
        dataset_name=p.string("dataset_name"),
        description=p.string("description"),
        source=p.string("source"),
        added_by=p.string("added_by"),
        date_added=p.timestamp("date_added"),
        harm_categories=p.string_list("harm_categories"),
        authors=p.string_list("authors"),
        groups=p.string_list("groups"),
        metadata=p.mapping("metadata"),
        prompt_group_alias=p.string("prompt_group_alias"),
        is_general_technique=p.boolean(
            "is_general_technique", seed_type == "simulated_conversation"
        ),
        is_jinja_template=p.boolean("is_jinja_template", False),
        role=p.enum("role", CHAT_MESSAGE_ROLES, None),
        sequence=p.integer("sequence"),
        parameters=p.string_list("parameters"),
        response_json_schema=p.mapping("response_json_schema"),
        num_turns=p.integer("num_turns"),
        adversarial_chat_system_prompt_path=p.string("adversarial_chat_system_prompt_path"),
        simulated_target_system_prompt_path=p.string("simulated_target_system_prompt_path"),
        next_message_system_prompt_path=p.string("next_message_system_prompt_path"),
        pyrit_version=p.string("pyrit_version"),
    )
    if seed_type == "prompt" and seed.sequence is None:
        seed.sequence = 0
    if seed_type == "simulated_conversation":
        if seed.num_turns is None:
            seed.num_turns = 3
        if seed.sequence is None:
            seed.sequence = 0
        if not seed.adversarial_chat_system_prompt_path:
            p.error("adversarial_chat_system_prompt_path", "This field is required.")
        if not seed.value:
            seed.value = simulated_value(seed)
    for problem in rules.seed_errors(seed):
        p.error(problem.field, problem.message)
    computed = rules.value_sha256_for(seed.data_type, seed.value)
    if computed is not None:
        if seed.value_sha256 and seed.value_sha256 != computed:
            p.error("value_sha256", "Does not match the sha256 of the value.")
        seed.value_sha256 = computed
    group_id = p.uuid_value("prompt_group_id", required=False)
    if p.errors or seed_id is None:
        return p.errors
    return ParsedSeed(
        index=index,
        seed=seed,
        prompt_group_id=group_id or uuid.uuid5(LONE_SEED_GROUP_NAMESPACE, str(seed_id)),
    )
