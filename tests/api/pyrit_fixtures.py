"""Loading the PyRIT fixture rows (../shared/fixtures) as ingest payloads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

LINES = ("pyrit-1.1", "pyrit-0.13")
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
