"""Same object, same answer: a PyRIT object sent as the attack returned it and as PyRIT's
memory reloads it is `unchanged` the second time, whichever came first; a real difference is
still a `conflict`.

The memory forms are the 1.1 fixture rows (PyRIT wrote them to its memory and read them
back); the live forms undo what redteam/core/roundtrip.py lists: no descriptions on related
conversations (and a score conversation PyRIT's memory drops), no eval_hash stamped on
identifiers, another pyrit_version, full tracebacks, seeds' empty lists and unpersisted flags.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from memory.models import AttackResult, ConversationReference
from redteam.core.roundtrip import TRACEBACK_LIMIT
from redteam.site.pyrit_sqlite import import_pyrit_memory
from tests.api.pyrit_fixtures import fixture_payload, without_annotations
from tests.memory import factories as f

pytestmark = pytest.mark.django_db


def without_eval_hash(identifier: dict[str, Any] | None) -> dict[str, Any] | None:
    """The identifier as a live object dumps it: no eval_hash anywhere in the tree."""
    if identifier is None:
        return None
    out = {k: v for k, v in identifier.items() if k != "eval_hash"}
    children = out.get("children")
    if isinstance(children, dict):
        out["children"] = {
            name: [without_eval_hash(c) for c in child]
            if isinstance(child, list)
            else without_eval_hash(child)
            for name, child in children.items()
        }
    return out


def live_result(result: dict[str, Any]) -> dict[str, Any]:
    """An attack result as execute_async returns it (before PyRIT's memory touched it)."""
    live = copy.deepcopy(result)
    live["atomic_attack_identifier"] = without_eval_hash(live["atomic_attack_identifier"])
    if live["last_score"] is not None:
        score = live["last_score"]
        score["scorer_class_identifier"] = without_eval_hash(score["scorer_class_identifier"])
    live["related_conversations"] = [
        {**ref, "description": None} for ref in live["related_conversations"]
    ] + [
        {
            "conversation_id": f"scorer-chat-{live['attack_result_id']}",
            "conversation_type": "score",
            "description": None,
        }
    ]
    return live


def live_seed(seed: dict[str, Any]) -> dict[str, Any]:
    """A seed as loaded from its YAML file, before PyRIT's memory stored it."""
    live = {
        k: ([] if k in ("harm_categories", "authors", "groups", "parameters") and v is None else v)
        for k, v in without_annotations(seed).items()
    }
    live["is_jinja_template"] = True
    if live.get("seed_type") == "prompt":
        live["is_general_technique"] = True
    return live


def ingest(api: APIClient, **payload: Any) -> dict[str, Any]:
    """POST a batch; the answer's JSON."""
    response = api.post("/api/v1/ingest/", payload, format="json")
    assert response.status_code in (200, 207), response.content
    body: dict[str, Any] = response.json()
    return body


def live_payload(memory: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    """Every kind of the fixture run in its live form."""
    return {
        "conversations": [
            {**c, "target_identifier": {**c["target_identifier"], "pyrit_version": "1.0.0"}}
            for c in memory["conversations"]
        ],
        "message_pieces": [
            {
                **p,
                "converter_identifiers": [
                    {**c, "pyrit_version": "1.0.0"} for c in p["converter_identifiers"]
                ],
            }
            for p in memory["message_pieces"]
        ],
        "scores": [
            {**s, "scorer_class_identifier": without_eval_hash(s["scorer_class_identifier"])}
            for s in memory["scores"]
        ],
        "attack_results": [live_result(r) for r in memory["attack_results"]],
        "seeds": [live_seed(s) for s in memory["seeds"]],
    }


@pytest.mark.parametrize("live_first", [True, False])
def test_each_object_in_both_forms_is_unchanged(
    api: APIClient, fixtures_dir: Path, live_first: bool
) -> None:
    memory = fixture_payload(fixtures_dir, "pyrit-1.1")
    live = live_payload(memory)
    assert live != memory
    first, second = (live, memory) if live_first else (memory, live)
    counted = sum(len(rows) for rows in first.values())
    assert ingest(api, **first)["stored"] == counted
    again = ingest(api, **second)
    assert (again["stored"], again["errors"], again["unchanged"]) == (0, 0, counted), again


def test_live_results_pushed_then_the_memory_file_imported_is_all_unchanged(
    api: APIClient, fixtures_dir: Path
) -> None:
    live = live_payload(fixture_payload(fixtures_dir, "pyrit-1.1"))
    ingest(api, **live)
    report = import_pyrit_memory(fixtures_dir / "pyrit-1.1" / "pyrit_memory.sqlite")
    assert report.rejected == 0, report.errors
    for table in ("AttackResultEntries", "ScoreEntries", "PromptMemoryEntries", "Conversations"):
        assert report.tables[table].stored == 0, table


def test_a_related_conversation_without_description_is_stored_with_pyrits_reload_text(
    api: APIClient,
) -> None:
    related = [
        {"conversation_id": "p", "conversation_type": "pruned", "description": None},
        {"conversation_id": "a", "conversation_type": "adversarial", "description": None},
        {"conversation_id": "s", "conversation_type": "score", "description": None},
        {"conversation_id": "q", "conversation_type": "pruned", "description": "prior turn 2"},
    ]
    ingest(api, attack_results=[f.attack_result(related_conversations=related)])
    stored = dict(ConversationReference.objects.values_list("conversation_id", "description"))
    assert stored == {
        "p": "pruned conversation",
        "a": "adversarial chat conversation",
        "s": None,
        "q": "prior turn 2",
    }


def test_a_traceback_compares_on_what_pyrits_memory_keeps(api: APIClient) -> None:
    full = "Traceback (most recent call last):\n" + "x" * (2 * TRACEBACK_LIMIT)
    result = f.attack_result(error_traceback=full, outcome="error")
    ingest(api, attack_results=[result])
    kept = {**result, "error_traceback": full[:TRACEBACK_LIMIT]}
    assert ingest(api, attack_results=[kept])["unchanged"] == 1
    assert AttackResult.objects.get().error_traceback == full  # the first copy is kept whole
    changed = {**result, "error_traceback": "y" + full[1:TRACEBACK_LIMIT]}
    [item] = ingest(api, attack_results=[changed])["items"]
    assert item["errors"][0]["code"] == "conflict"


@pytest.mark.parametrize(
    ("kind", "change"),
    [
        (
            "attack_results",
            lambda r: {
                **r,
                "related_conversations": [
                    {"conversation_id": "other", "conversation_type": "pruned", "description": None}
                ],
            },
        ),
        (
            "attack_results",
            lambda r: {**r, "atomic_attack_identifier": f.attack_identifier(max_turns=5)},
        ),
        ("attack_results", lambda r: {**r, "outcome_reason": "changed"}),
        ("scores", lambda s: {**s, "scorer_class_identifier": f.identifier("OtherScorer")}),
        ("scores", lambda s: {**s, "score_rationale": "changed"}),
        ("message_pieces", lambda p: {**p, "converter_identifiers": [f.identifier("Base64")]}),
        ("conversations", lambda c: {**c, "target_identifier": f.identifier("OtherTarget")}),
        ("seeds", lambda s: {**s, "harm_categories": ["something else"]}),
        ("seeds", lambda s: {**s, "description": "changed"}),
    ],
)
def test_a_genuinely_different_value_is_still_a_conflict(
    api: APIClient, fixtures_dir: Path, kind: str, change: Any
) -> None:
    memory = fixture_payload(fixtures_dir, "pyrit-1.1")
    original = memory[kind][-1]
    original = without_annotations(original) if kind == "seeds" else original
    ingest(api, **{kind: [original]})
    [item] = ingest(api, **{kind: [change(original)]})["items"]
    assert item["status"] == "rejected"
    assert item["errors"][0]["code"] == "conflict", item
