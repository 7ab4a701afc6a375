"""Loading the PyRIT fixture rows (../shared/fixtures) as ingest payloads."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path
from typing import Any

LINES = ("pyrit-1.1", "pyrit-0.13")
# Made by PyRIT 1.1.0 for this repository (see its README.md): a scenario run and loose content.
SCENARIO_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "pyrit_1_1_scenario"
# Fixture file -> ingest payload key.
FILES = {
    "conversations.jsonl": "conversations",
    "pieces.jsonl": "message_pieces",
    "scores.jsonl": "scores",
    "attack_results.jsonl": "attack_results",
    "seeds.jsonl": "seeds",
}


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """Rows of a .jsonl file."""
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def fixture_payload(fixtures_dir: Path, line: str) -> dict[str, list[dict[str, Any]]]:
    """Every row of one PyRIT line, keyed as the ingest endpoint expects."""
    payload: dict[str, list[dict[str, Any]]] = {}
    for name, kind in FILES.items():
        path = fixtures_dir / line / name
        if path.exists():
            payload[kind] = read_jsonl(path)
    return payload


def without_annotations(row: dict[str, Any]) -> dict[str, Any]:
    """A fixture row without the fixture's own `_`-prefixed annotation keys."""
    return {k: v for k, v in row.items() if not k.startswith("_")}


def field_differences(expected: dict[str, Any], actual: dict[str, Any]) -> dict[str, Any]:
    """Field-by-field differences (expected, actual), including key order."""
    diffs: dict[str, Any] = {}
    for key in dict.fromkeys([*expected, *actual]):
        if expected.get(key, "<missing>") != actual.get(key, "<missing>") or (key in expected) != (
            key in actual
        ):
            diffs[key] = (expected.get(key, "<missing>"), actual.get(key, "<missing>"))
    if not diffs and list(expected) != list(actual):
        diffs["<key order>"] = (list(expected), list(actual))
    return diffs


UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def renumbered(value: Any, copy: int) -> Any:
    """A deep copy whose every UUID string is replaced by one derived from (copy, uuid), so
    copies of a run share no ids while keeping every reference inside it consistent."""
    if isinstance(value, dict):
        return {k: renumbered(v, copy) for k, v in value.items()}
    if isinstance(value, list):
        return [renumbered(v, copy) for v in value]
    if isinstance(value, str) and UUID_RE.match(value):
        return str(uuid.uuid5(uuid.NAMESPACE_URL, f"{copy}:{value}"))
    return value


def scenario_rows(name: str = "scenario_results.jsonl") -> list[dict[str, Any]]:
    """The PyRIT 1.1 scenario fixture's ScenarioResult dumps (completed, then failed)."""
    return read_jsonl(SCENARIO_FIXTURES / name)
