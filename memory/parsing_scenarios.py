"""Parse and validate PyRIT scenario results (no database access).

Two shapes arrive: PyRIT 1.x ``ScenarioResult.model_dump(mode="json")`` (the attack results
embedded by atomic attack name, computed identity fields at the end) and, from a 0.13 memory
file, the ``ScenarioResultEntries`` row (0.13's ScenarioResult had no dict form), which keeps
``scenario_init_data`` and ``attack_results_json``. The rules are those of memory/parsing.py.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from memory.parsing import (
    EXTENSION_KEYS,
    MISSING,
    ParsedIdentifier,
    _pyrit_version,
    _Reader,
    _type_name,
    parse_identifier,
    raw_id,
)
from memory.parsing_results import ParsedAttackResult, parse_attack_result
from redteam.core.enums import SCENARIO_RUN_STATES
from redteam.core.outcomes import FieldError

__all__ = [
    "SCENARIO_RESULT_KEYS_013",
    "SCENARIO_RESULT_KEYS_1X",
    "ParsedScenarioResult",
    "parse_scenario_result",
    "scenario_result_shape",
]

# ScenarioResult.model_dump(mode="json") keys, in PyRIT 1.1's order (computed fields last).
SCENARIO_RESULT_KEYS_1X: Final = (
    "id",
    "scenario_identifier",
    "scenario_description",
    "attack_results",
    "scenario_run_state",
    "labels",
    "creation_time",
    "completion_time",
    "number_tries",
    "display_group_map",
    "error_message",
    "error_type",
    "error_attack_result_ids",
    "metadata",
    "scenario_name",
    "scenario_version",
    "pyrit_version",
    "objective_target_identifier",
    "objective_scorer_identifier",
)
# 0.13's ScenarioResultEntries columns (pyrit-0.13/schema.sql), in table order.
SCENARIO_RESULT_KEYS_013: Final = (
    "id",
    "scenario_name",
    "scenario_description",
    "scenario_version",
    "pyrit_version",
    "scenario_init_data",
    "objective_target_identifier",
    "objective_scorer_identifier",
    "scenario_run_state",
    "attack_results_json",
    "labels",
    "number_tries",
    "completion_time",
    "timestamp",
)
# 0.13's ScenarioRunState was a Literal without CANCELLED.
RUN_STATES_013: Final = SCENARIO_RUN_STATES[:4]
MAX_ATOMIC_ATTACK_NAME: Final = 255


@dataclass
class ParsedScenarioResult:
    """A validated ScenarioResult, its identifiers and its embedded attack results."""

    index: int
    shape: str
    row: dict[str, Any] = field(default_factory=dict)
    scenario: ParsedIdentifier | None = None
    target: ParsedIdentifier | None = None
    scorer: ParsedIdentifier | None = None
    attack_results: list[ParsedAttackResult] = field(default_factory=list)
    # Field path of each embedded result, for error messages.
    attack_result_paths: list[str] = field(default_factory=list)
    errors: list[FieldError] = field(default_factory=list)
    raw_id: str | None = None

    @property
    def id(self) -> uuid.UUID | None:
        """The scenario result id (None when it did not parse)."""
        value: uuid.UUID | None = self.row.get("id")
        return value


def scenario_result_shape(item: Mapping[str, Any]) -> str:
    """'0.13' for a 0.13 ScenarioResultEntries row, else '1.x' (model_dump)."""
    if "scenario_init_data" in item or "attack_results_json" in item:
        return "0.13"
    return "1.x"


def _nullable_timestamp(r: _Reader, key: str, *, required: bool) -> Any:
    # PyRIT's completion_time may be None in the model (the table always has one).
    if r.item.get(key, MISSING) is None:
        return None
    return r.timestamp(key, required=required)


def _str_map(r: _Reader, key: str) -> dict[str, str]:
    value = r.json_object(key, nullable=True) or {}
    for k, v in value.items():
        if not isinstance(v, str):
            r.error(f"{key}.{k}", f"Must be a string, not {_type_name(v)}.")
    return value


def _parse_embedded_results(r: _Reader, scenario: ParsedScenarioResult) -> dict[str, list[str]]:
    """attack_results: {atomic attack name: [AttackResult dict, ...]} -> name: [ids]."""
    value = r.raw("attack_results", required=True)
    if value is MISSING:
        return {}
    if not isinstance(value, Mapping):
        r.error("attack_results", f"Must be an object, not {_type_name(value)}.")
        return {}
    ids: dict[str, list[str]] = {}
    for name, results in value.items():
        if len(name) > MAX_ATOMIC_ATTACK_NAME:
            r.error(
                f"attack_results.{name[:40]}", "Atomic attack names are at most 255 characters."
            )
            continue
        if not isinstance(results, list):
            r.error(f"attack_results.{name}", f"Must be a list, not {_type_name(results)}.")
            continue
        ids[name] = []
        for i, item in enumerate(results):
            path = r.name(f"attack_results.{name}[{i}].")
            parsed = parse_attack_result(item, i)
            if parsed.errors:
                scenario.errors.extend(
                    FieldError(f"{path}{e.field}" if e.field else path.rstrip("."), e.message)
                    for e in parsed.errors
                )
                continue
            scenario.attack_results.append(parsed)
            scenario.attack_result_paths.append(path)
            ids[name].append(str(parsed.id))
    return ids


def _identifiers(item: Mapping[str, Any], scenario: ParsedScenarioResult, legacy: bool) -> None:
    errors = scenario.errors
    if not legacy:
        scenario.scenario = parse_identifier(
            item.get("scenario_identifier"), "scenario_identifier", legacy=False, errors=errors
        )
        if scenario.scenario is None and not any(e.field == "scenario_identifier" for e in errors):
            errors.append(FieldError("scenario_identifier", "This field is required."))
    scenario.target = parse_identifier(
        item.get("objective_target_identifier"),
        "objective_target_identifier",
        legacy=legacy,
        errors=errors,
    )
    scenario.scorer = parse_identifier(
        item.get("objective_scorer_identifier"),
        "objective_scorer_identifier",
        legacy=legacy,
        errors=errors,
    )


def _computed_fields(r: _Reader, scenario: ParsedScenarioResult) -> dict[str, Any]:
    """scenario_name/scenario_version follow the identifier, as PyRIT computes them."""
    identifier = scenario.scenario.identifier if scenario.scenario else None
    name = identifier.class_name if identifier else ""
    version_param = identifier.params.get("version") if identifier else None
    version = version_param if isinstance(version_param, int) else 1
    sent_name = r.string("scenario_name", default=name)
    if identifier is not None and sent_name != name:
        r.error("scenario_name", f"Must be the scenario identifier's class name {name!r}.")
    sent_version = r.integer("scenario_version", default=version)
    if identifier is not None and sent_version != version:
        r.error("scenario_version", f"Must be the scenario identifier's version {version}.")
    return {"scenario_name": name[:255], "scenario_version": version}


def _results_json(r: _Reader) -> tuple[str | None, dict[str, list[str]]]:
    """0.13's attack_results_json text and, when it is {name: [ids]}, that map."""
    text = r.string("attack_results_json")
    if not isinstance(text, str):
        return None, {}
    try:
        value = json.loads(text)
    except ValueError:
        return text, {}
    if isinstance(value, Mapping) and all(
        isinstance(v, list) and all(isinstance(i, str) for i in v) for v in value.values()
    ):
        return text, {str(k): list(v) for k, v in value.items()}
    return text, {}


def parse_scenario_result(item: Any, index: int) -> ParsedScenarioResult:
    """Validate one ScenarioResult dict (1.x model_dump or a 0.13 table row)."""
    if not isinstance(item, Mapping):
        return ParsedScenarioResult(
            index=index,
            shape="1.x",
            errors=[FieldError(None, "Each scenario result must be an object.")],
        )
    shape = scenario_result_shape(item)
    legacy = shape == "0.13"
    scenario = ParsedScenarioResult(index=index, shape=shape, raw_id=raw_id(item, "id"))
    r = _Reader(item, "", scenario.errors)
    keys = SCENARIO_RESULT_KEYS_013 if legacy else SCENARIO_RESULT_KEYS_1X
    r.unknown_keys(
        frozenset(keys) | EXTENSION_KEYS,
        "0.13 ScenarioResultEntries row" if legacy else "ScenarioResult",
    )
    _identifiers(item, scenario, legacy)
    row: dict[str, Any] = {
        "id": r.uuid("id", required=True, nullable=False),
        "scenario_description": r.string("scenario_description"),
        "scenario_run_state": r.choice(
            "scenario_run_state",
            RUN_STATES_013 if legacy else SCENARIO_RUN_STATES,
            default="CREATED",
        ),
        "labels": r.str_dict("labels") if not legacy or item.get("labels") is not None else {},
        "completion_time": _nullable_timestamp(r, "completion_time", required=legacy),
        "number_tries": r.integer("number_tries"),
        "pyrit_version": _pyrit_version(r),
        "source_shape": shape,
        "target_hash": scenario.target.hash if scenario.target else "",
        "target_class": scenario.target.class_name[:255] if scenario.target else "",
    }
    if legacy:
        results_json, result_ids = _results_json(r)
        row.update(
            {
                "scenario_name": r.string(
                    "scenario_name", required=True, nullable=False, max_length=255, default=""
                ),
                "scenario_version": r.integer("scenario_version", default=1),
                "creation_time": r.timestamp("timestamp", required=True),
                "scenario_init_data": r.json_object(
                    "scenario_init_data", nullable=True, default_empty=False
                ),
                "attack_results_json": results_json,
                "attack_result_ids": result_ids,
                "display_group_map": {},
                "error_message": None,
                "error_type": None,
                "error_attack_result_ids": [],
                "metadata": {},
            }
        )
    else:
        row.update(
            {
                **_computed_fields(r, scenario),
                "creation_time": r.timestamp("creation_time", required=True),
                "display_group_map": _str_map(r, "display_group_map"),
                "error_message": r.string("error_message"),
                "error_type": r.string("error_type", max_length=255),
                "error_attack_result_ids": r.str_list(
                    "error_attack_result_ids", nullable=False, default=[]
                ),
                "metadata": r.json_object("metadata", nullable=True) or {},
                "attack_result_ids": _parse_embedded_results(r, scenario),
                "scenario_init_data": None,
                "attack_results_json": None,
            }
        )
    scenario.row = row
    return scenario
