"""Seed and atomic-attack identifiers as PyRIT builds them (PYRIT-MODEL.md 7.7, 7.8)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final

from redteam.core.identity.hashing import (
    LEGACY_LINES,
    LINE_PYRIT_VERSIONS,
    ComponentIdentifier,
    check_line,
    config_hash,
)

# --------------------------------------------------------------------------------------------
# Seed and atomic-attack identifiers (sections 7.7, 7.8)
# --------------------------------------------------------------------------------------------

#: seed_type -> (class name, module) of PyRIT's seed classes.
SEED_CLASSES: Final[Mapping[str, tuple[str, str]]] = {
    "prompt": ("SeedPrompt", "pyrit.models.seeds.seed_prompt"),
    "objective": ("SeedObjective", "pyrit.models.seeds.seed_objective"),
    "simulated_conversation": (
        "SeedSimulatedConversation",
        "pyrit.models.seeds.seed_simulated_conversation",
    ),
}
_ATOMIC_ATTACK: Final = ("AtomicAttack", "pyrit.scenario.core.atomic_attack")
_ATTACK_TECHNIQUE: Final = ("AttackTechnique", "pyrit.scenario.core.attack_technique")


def _seed_class(seed: Mapping[str, Any], seed_class: str | None) -> tuple[str, str]:
    """Resolve (class name, module) from an explicit class name or the seed's ``seed_type``."""
    if seed_class is not None:
        for name, module in SEED_CLASSES.values():
            if name == seed_class:
                return name, module
        raise ValueError(f"unknown seed class {seed_class!r}")
    # SeedGroup dict inputs and the seeds table both default seed_type to "prompt".
    seed_type = seed.get("seed_type") or "prompt"
    if seed_type not in SEED_CLASSES:
        raise ValueError(f"unknown seed_type {seed_type!r}")
    return SEED_CLASSES[seed_type]


def build_seed_identifier(
    seed: Mapping[str, Any],
    *,
    line: str = "1.1",
    seed_class: str | None = None,
    pyrit_version: str | None = None,
) -> ComponentIdentifier:
    """Identifier of a seed given as a mapping (e.g. a seed's ``model_dump``).

    The class comes from ``seed_class`` (e.g. ``"SeedObjective"``, for legacy rows without
    ``seed_type``) or else from ``seed["seed_type"]`` (default ``"prompt"``). 1.x
    (``SeedIdentifier.from_seed``) has params value, value_sha256, data_type, dataset_name,
    is_general_technique with None dropped; a missing data_type is the Seed default
    ``"text"``. Legacy lines have no data_type and keep None values. ``pyrit_version``
    defaults to the line's release.
    """
    name, module = _seed_class(seed, seed_class)
    version = pyrit_version or LINE_PYRIT_VERSIONS[check_line(line)]
    params: dict[str, Any] = {"value": seed.get("value"), "value_sha256": seed.get("value_sha256")}
    if line not in LEGACY_LINES:
        params["data_type"] = seed.get("data_type") or "text"
    params["dataset_name"] = seed.get("dataset_name")
    params["is_general_technique"] = bool(seed.get("is_general_technique", False))
    if line not in LEGACY_LINES:
        # 1.x builds with of(), which drops None values before storing them.
        params = {k: v for k, v in params.items() if v is not None}
    return ComponentIdentifier(name, module, params=params, pyrit_version=version)


def _seed_identifiers(
    value: Mapping[str, Any] | Sequence[ComponentIdentifier | Mapping[str, Any]] | None,
    line: str,
    pyrit_version: str,
) -> list[ComponentIdentifier]:
    """Normalize a seed group / list of seeds / list of seed identifiers to identifiers."""
    if value is None:
        return []
    items: Iterable[Any] = (value.get("seeds") or []) if isinstance(value, Mapping) else value
    return [
        item
        if isinstance(item, ComponentIdentifier)
        else build_seed_identifier(item, line=line, pyrit_version=pyrit_version)
        for item in items
    ]


def build_atomic_attack_identifier(
    *,
    attack_identifier: ComponentIdentifier | None = None,
    technique_identifier: ComponentIdentifier | None = None,
    seed_identifiers_or_group: Mapping[str, Any]
    | Sequence[ComponentIdentifier | Mapping[str, Any]]
    | None = None,
    line: str = "1.1",
    pyrit_version: str | None = None,
) -> ComponentIdentifier:
    """Composite ``AtomicAttack`` identifier of an attack (or technique) and its seeds.

    ``seed_identifiers_or_group`` is a seed group mapping (``{"seeds": [...]}``), or a
    sequence of seed identifiers and/or seed mappings (built with
    :func:`build_seed_identifier` for ``line``), or None for no seeds.

    0.13+/1.x: exactly one of ``technique_identifier``/``attack_identifier``; a bare attack is
    wrapped in an ``AttackTechnique`` node; children are ``attack_technique`` and
    ``seed_identifiers`` (``[]`` when there are none; ``[]`` enters the hash).
    0.12: children are ``attack`` and ``seeds`` (``attack_identifier`` only).
    """
    version = pyrit_version or LINE_PYRIT_VERSIONS[check_line(line)]
    seeds = _seed_identifiers(seed_identifiers_or_group, line, version)
    children: dict[str, ComponentIdentifier | list[ComponentIdentifier]]
    if line == "0.12":
        if technique_identifier is not None or attack_identifier is None:
            raise ValueError("PyRIT 0.12 atomic attacks take attack_identifier only")
        children = {"attack": attack_identifier, "seeds": seeds}
    else:
        if (technique_identifier is None) == (attack_identifier is None):
            raise ValueError("Provide exactly one of technique_identifier and attack_identifier")
        if technique_identifier is None:
            assert attack_identifier is not None  # narrowed by the check above
            technique_identifier = ComponentIdentifier(
                *_ATTACK_TECHNIQUE, children={"attack": attack_identifier}, pyrit_version=version
            )
        children = {"attack_technique": technique_identifier, "seed_identifiers": seeds}
    return ComponentIdentifier(*_ATOMIC_ATTACK, children=children, pyrit_version=version)


def compute_seed_group_hash(seed_identifiers: Iterable[ComponentIdentifier]) -> str:
    """1.x logical seed-group id: ``config_hash`` of the seeds' full flat dumps."""
    # PyRIT asks to exclude hash/eval_hash/pyrit_version, but its flat serializer ignores
    # `exclude`, so they are hashed; matching 1.1.0 means hashing the full dump (verified).
    return config_hash({"seed_identifiers": [s.model_dump() for s in seed_identifiers]})
