"""PyRIT's seed and seed-group rules, and the content hashes used for dedup. Framework-free.

The same checks run for YAML imports, API ingestion and admin edits, so a curator sees the
error PyRIT itself would raise (PYRIT-MODEL.md 4.1, 4.4). They work on any object with the
seed attributes (`SeedRow` here, a Django `Seed`, a dataclass from the YAML loader).
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from redteam.core.enums import (
    CHAT_MESSAGE_ROLES,
    MEDIA_PATH_DATA_TYPES,
    PROMPT_DATA_TYPES,
    SEED_TYPES,
    TEXT_HASHED_DATA_TYPES,
)

# Role PyRIT gives a prompt when a group does not say (SeedGroup._enforce_consistent_role).
DEFAULT_ROLE = "user"


class SeedLike(Protocol):
    """The attributes the group rules read."""

    seed_type: str
    value: str
    value_sha256: str | None
    data_type: str
    role: str | None
    sequence: int | None
    is_general_technique: bool
    num_turns: int | None
    next_message_system_prompt_path: str | None


@dataclass(frozen=True)
class RuleError:
    """One broken rule; `index` points at the seed (within the checked list) when it is one."""

    field: str | None
    message: str
    index: int | None = None


def text_sha256(value: str) -> str:
    """PyRIT's sha256 for text-like values: the hex digest of the UTF-8 string."""
    return hashlib.sha256(value.encode("utf-8")).hexdigest()


def bytes_sha256(data: bytes) -> str:
    """PyRIT's sha256 for media values: the hex digest of the file bytes."""
    return hashlib.sha256(data).hexdigest()


def value_sha256_for(data_type: str, value: str) -> str | None:
    """sha256 of a value when it can be computed from the string alone (PYRIT-MODEL.md 2.4).

    Media paths hash their file bytes, which the caller must read; `url` values hash the
    string only for http(s) URLs.
    """
    if data_type in TEXT_HASHED_DATA_TYPES:
        return text_sha256(value)
    if data_type == "url" and value.startswith(("http://", "https://")):
        return text_sha256(value)
    return None


def is_media(data_type: str) -> bool:
    """True when the value is a path whose file bytes carry the content."""
    return data_type in MEDIA_PATH_DATA_TYPES or data_type == "url"


def simulated_range(seed: SeedLike) -> range:
    """Sequences a SeedSimulatedConversation occupies: 2 per turn, +1 with a next message."""
    turns = seed.num_turns if seed.num_turns is not None else 3
    start = seed.sequence or 0
    return range(start, start + turns * 2 + (1 if seed.next_message_system_prompt_path else 0))


def check_json_value(value: Any, path: str) -> str | None:
    """A problem with a metadata-like value: non-string keys do not store (NaN and Infinity
    do, as PyRIT stores them: see redteam/core/storedtext.py)."""
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                return f"{path} keys must be strings, not {key!r}"
            if problem := check_json_value(item, f"{path}.{key}"):
                return problem
    elif isinstance(value, list | tuple):
        for i, item in enumerate(value):
            if problem := check_json_value(item, f"{path}[{i}]"):
                return problem
    elif not (value is None or isinstance(value, str | int | float | bool)):
        return f"{path} holds a value that is not JSON ({type(value).__name__})"
    return None


def seed_errors(seed: SeedLike) -> list[RuleError]:
    """Rules on one seed: enumerations, objective constraints, simulated-conversation config."""
    errors: list[RuleError] = []
    if seed.seed_type not in SEED_TYPES:
        errors.append(RuleError("seed_type", f"Unknown seed_type {seed.seed_type!r}."))
        return errors
    if seed.data_type not in PROMPT_DATA_TYPES:
        errors.append(RuleError("data_type", f"Unknown data_type {seed.data_type!r}."))
    if seed.role is not None and seed.role not in CHAT_MESSAGE_ROLES:
        errors.append(RuleError("role", f"Unknown role {seed.role!r}."))
    if seed.seed_type == "objective":
        if seed.is_general_technique:
            errors.append(
                RuleError(
                    "is_general_technique",
                    "An objective cannot be a general technique "
                    "(PyRIT: SeedObjective with is_general_technique=True is invalid).",
                )
            )
        if seed.data_type != "text":
            errors.append(RuleError("data_type", "An objective is always text."))
    if seed.seed_type == "simulated_conversation":
        if seed.num_turns is not None and seed.num_turns <= 0:
            errors.append(RuleError("num_turns", "num_turns must be a positive integer."))
        if seed.sequence is not None and seed.sequence < 0:
            errors.append(RuleError("sequence", "sequence must be a non-negative integer."))
    if not isinstance(seed.value, str):
        errors.append(RuleError("value", "value must be a string."))
    errors.extend(_shape_errors(seed))
    return errors


def _shape_errors(seed: SeedLike) -> list[RuleError]:
    """JSON columns hold what PyRIT's models declare (lists of strings, string-keyed maps)."""
    errors: list[RuleError] = []
    for name in ("harm_categories", "authors", "groups", "parameters"):
        value = getattr(seed, name, None)
        if value is not None and not (
            isinstance(value, list) and all(isinstance(v, str) for v in value)
        ):
            errors.append(RuleError(name, f"{name} must be a list of strings."))
    for name in ("metadata", "response_json_schema"):
        value = getattr(seed, name, None)
        if value is None:
            continue
        if not isinstance(value, dict):
            errors.append(RuleError(name, f"{name} must be a JSON object."))
        elif problem := check_json_value(value, name):
            errors.append(RuleError(name, problem))
    sequence = getattr(seed, "sequence", None)
    if sequence is not None and (isinstance(sequence, bool) or not isinstance(sequence, int)):
        errors.append(RuleError("sequence", "sequence must be an integer."))
    return errors


def group_errors(seeds: Sequence[SeedLike]) -> list[RuleError]:
    """PyRIT's SeedGroup invariants over the seeds of one group (PYRIT-MODEL.md 4.4)."""
    if not seeds:
        return [RuleError(None, "A seed group cannot be empty.")]
    errors: list[RuleError] = []
    objectives = [i for i, s in enumerate(seeds) if s.seed_type == "objective"]
    if len(objectives) > 1:
        errors.append(
            RuleError(
                "seed_type",
                f"A seed group can hold only one objective; this one has {len(objectives)} "
                "(PyRIT: SeedGroup can only have one objective).",
                objectives[1],
            )
        )
    simulated = [i for i, s in enumerate(seeds) if s.seed_type == "simulated_conversation"]
    if len(simulated) > 1:
        errors.append(
            RuleError(
                "seed_type",
                "A seed group can hold only one simulated conversation.",
                simulated[1],
            )
        )
    prompts = [(i, s) for i, s in enumerate(seeds) if s.seed_type == "prompt"]
    by_sequence: dict[int, list[tuple[int, SeedLike]]] = defaultdict(list)
    for i, s in prompts:
        by_sequence[s.sequence or 0].append((i, s))
    for sequence, members in sorted(by_sequence.items()):
        roles = {s.role for _, s in members if s.role is not None}
        if not roles and len(by_sequence) > 1:
            errors.append(
                RuleError(
                    "role",
                    f"No role set for sequence {sequence} in a multi-sequence group; "
                    "at least one prompt of each sequence needs a role.",
                    members[0][0],
                )
            )
        if len(roles) > 1:
            errors.append(
                RuleError(
                    "role",
                    f"Inconsistent roles for sequence {sequence}: {', '.join(sorted(roles))}. "
                    "All prompts of one sequence share one role.",
                    members[-1][0],
                )
            )
    if simulated:
        occupied = simulated_range(seeds[simulated[0]])
        for i, s in prompts:
            if (s.sequence or 0) in occupied:
                errors.append(
                    RuleError(
                        "sequence",
                        f"Prompt sequence {s.sequence} overlaps the simulated conversation's "
                        f"range {list(occupied)}.",
                        i,
                    )
                )
    return errors


def fill_roles(seeds: Sequence[Any]) -> None:
    """Give every prompt of a sequence that sequence's role (PyRIT fills missing ones)."""
    by_sequence: dict[int, list[Any]] = defaultdict(list)
    for s in seeds:
        if s.seed_type == "prompt":
            by_sequence[s.sequence or 0].append(s)
    for members in by_sequence.values():
        roles = {s.role for s in members if s.role is not None}
        role = roles.pop() if len(roles) == 1 else (DEFAULT_ROLE if not roles else None)
        if role is not None:
            for s in members:
                if s.role is None:
                    s.role = role


def canonical_order(seeds: Iterable[Any]) -> list[Any]:
    """PyRIT's order inside a group: objective, simulated conversation, prompts by sequence."""
    items = list(seeds)
    rank = {"objective": 0, "simulated_conversation": 1, "prompt": 2}
    # sorted() is stable, so prompts sharing a sequence keep their input order, as in PyRIT.
    return sorted(
        items,
        key=lambda s: (
            rank.get(s.seed_type, 3),
            (s.sequence or 0) if s.seed_type == "prompt" else 0,
        ),
    )


def group_content_sha256(seeds: Iterable[SeedLike]) -> str:
    """Identity of a group's content, for dedup: sha256 of its ordered seed fingerprints.

    Order is PyRIT's canonical one, so the same group written in another order is the same.
    """
    rows = [
        [
            s.seed_type,
            s.sequence if s.seed_type == "prompt" else None,
            s.role if s.seed_type == "prompt" else None,
            s.data_type,
            s.value_sha256 or text_sha256(s.value),
        ]
        for s in canonical_order(seeds)
    ]
    blob = json.dumps(rows, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()
