"""Per-item validation over HTTP: each rule rejects the item naming its list, index, id, field.

The rules themselves live in the ingestion services (memory/parsing*.py, seeds/parsing.py);
these tests pin down that the HTTP endpoint reports them per item, stores the valid items of
the same batch, and writes nothing for the rejected ones.
"""

from __future__ import annotations

import copy
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from rest_framework.test import APIClient

from memory.models import AttackResult, MessagePiece, Score
from tests.api import factories

pytestmark = pytest.mark.django_db
URL = "/api/v1/ingest/"

Mutation = Callable[[dict[str, Any]], None]


def _set(key: str, value: Any) -> Mutation:
    def mutate(item: dict[str, Any]) -> None:
        item[key] = value

    return mutate


def _drop(key: str) -> Mutation:
    def mutate(item: dict[str, Any]) -> None:
        item.pop(key)

    return mutate


PIECE_RULES: list[tuple[str, Mutation, str]] = [
    ("unknown role", _set("role", "wizard"), "role"),
    (
        "unknown data type",
        _set("converted_value_data_type", "hologram"),
        "converted_value_data_type",
    ),
    ("unknown response error", _set("response_error", "exploded"), "response_error"),
    ("naive timestamp", _set("timestamp", "2026-11-22T03:02:46.462671"), "timestamp"),
    ("unparseable timestamp", _set("timestamp", "yesterday"), "timestamp"),
    ("bad uuid", _set("id", "not-a-uuid"), "id"),
    ("bad original_prompt_id", _set("original_prompt_id", "123"), "original_prompt_id"),
    ("null converted value", _set("converted_value", None), "converted_value"),
    ("sequence not an int", _set("sequence", "one"), "sequence"),
    ("bad sha256", _set("converted_value_sha256", "xyz"), "converted_value_sha256"),
    ("unknown key", _set("colour", "blue"), "colour"),
    ("missing role", _drop("role"), "role"),
    ("missing conversation id", _drop("conversation_id"), "conversation_id"),
    ("metadata not an object", _set("prompt_metadata", [1, 2]), "prompt_metadata"),
    ("converters not a list", _set("converter_identifiers", "ROT13"), "converter_identifiers"),
]


@pytest.mark.parametrize(
    ("mutate", "field"), [pytest.param(m, f, id=rule) for rule, m, f in PIECE_RULES]
)
def test_invalid_piece_is_rejected_with_index_id_and_field(
    api: APIClient, mutate: Mutation, field: str
) -> None:
    good = factories.conversation_pieces(1)[0]
    bad = factories.conversation_pieces(1)[0]
    mutate(bad)
    response = api.post(URL, {"message_pieces": [good, bad]}, format="json")
    assert response.status_code == 207
    body = response.json()
    assert (body["stored"], body["errors"]) == (1, 1)
    item = body["items"][1]
    assert (item["kind"], item["index"], item["status"]) == ("message_pieces", 1, "rejected")
    if isinstance(bad.get("id"), str) and field != "id":
        assert item["id"] == bad["id"]
    fields = [e["field"] for e in item["errors"]]
    assert any(f is not None and f.split(".")[0].split("[")[0] == field for f in fields), fields
    assert all(e["message"] for e in item["errors"])
    assert MessagePiece.objects.count() == 1


def test_pieces_of_one_message_must_agree_and_are_rejected_together(api: APIClient) -> None:
    cid = str(uuid.uuid4())
    # Same conversation and sequence (one Message) but different roles: PyRIT's
    # "Inconsistent roles within the same message entry."
    first = factories.piece(cid, 0, "user", "part one")
    second = factories.piece(cid, 0, "assistant", "part two")
    other = factories.piece(cid, 1, "assistant", "a valid reply")
    response = api.post(URL, {"message_pieces": [first, second, other]}, format="json")
    assert response.status_code == 207
    items = response.json()["items"]
    assert [i["status"] for i in items] == ["rejected", "rejected", "stored"]
    messages = [e["message"] for i in items[:2] for e in i["errors"]]
    assert any("role" in m.lower() for m in messages), messages
    assert MessagePiece.objects.count() == 1


SCORE_RULES: list[tuple[str, dict[str, Any], str]] = [
    ("float above 1", {"score_type": "float_scale", "score_value": "1.5"}, "score_value"),
    ("float below 0", {"score_type": "float_scale", "score_value": "-0.1"}, "score_value"),
    ("float not a number", {"score_type": "float_scale", "score_value": "high"}, "score_value"),
    ("true_false not boolean", {"score_value": "maybe"}, "score_value"),
    ("unknown score type", {"score_type": "ternary"}, "score_type"),
    ("unknown status", {"status": "pending"}, "status"),
    ("undetermined with a value", {"status": "undetermined", "score_value": "true"}, "score_value"),
    ("complete without a value", {"score_value": None}, "score_value"),
    ("naive timestamp", {"timestamp": "2026-11-22T03:02:46"}, "timestamp"),
    ("bad piece id", {"message_piece_id": "nope", "scorable": None}, "message_piece_id"),
    ("metadata value a list", {"score_metadata": {"k": [1]}}, "score_metadata"),
]


@pytest.mark.parametrize(
    ("change", "field"), [pytest.param(c, f, id=rule) for rule, c, f in SCORE_RULES]
)
def test_invalid_score_is_rejected_with_field(
    api: APIClient, change: dict[str, Any], field: str
) -> None:
    piece = factories.conversation_pieces(1)[0]
    bad = factories.score(piece, **change)
    response = api.post(URL, {"scores": [factories.score(piece), bad]}, format="json")
    assert response.status_code == 207
    item = response.json()["items"][1]
    assert (item["kind"], item["index"], item["id"], item["status"]) == (
        "scores",
        1,
        bad["id"],
        "rejected",
    )
    assert any((e["field"] or "").startswith(field) for e in item["errors"]), item["errors"]
    assert Score.objects.count() == 1


def test_valid_float_scores_at_the_bounds_are_accepted(api: APIClient) -> None:
    piece = factories.conversation_pieces(1)[0]
    scores = [
        factories.score(piece, score_type="float_scale", score_value=v) for v in ("0.0", "1.0")
    ]
    scores.append(factories.score(piece, score_value="False"))  # PyRIT is case-insensitive
    response = api.post(URL, {"scores": scores}, format="json")
    assert response.status_code == 200
    assert response.json()["stored"] == 3


RESULT_RULES: list[tuple[str, dict[str, Any], str]] = [
    ("unknown outcome", {"outcome": "victory"}, "outcome"),
    ("bad result id", {"attack_result_id": "x"}, "attack_result_id"),
    ("turns not an int", {"executed_turns": "3"}, "executed_turns"),
    ("label value not a string", {"labels": {"op": 1}}, "labels"),
    (
        "unknown conversation type",
        {
            "related_conversations": [
                {"conversation_id": "c", "conversation_type": "x", "description": None}
            ]
        },
        "related_conversations",
    ),
]


@pytest.mark.parametrize(
    ("change", "field"), [pytest.param(c, f, id=rule) for rule, c, f in RESULT_RULES]
)
def test_invalid_attack_result_is_rejected_with_field(
    api: APIClient, change: dict[str, Any], field: str
) -> None:
    cid = str(uuid.uuid4())
    bad = factories.attack_result(cid, **change)
    response = api.post(URL, {"attack_results": [factories.attack_result(cid), bad]}, format="json")
    assert response.status_code == 207
    item = response.json()["items"][1]
    assert (item["kind"], item["index"], item["status"]) == ("attack_results", 1, "rejected")
    assert any((e["field"] or "").startswith(field) for e in item["errors"]), item["errors"]
    assert AttackResult.objects.count() == 1


def test_conflict_names_the_id_and_keeps_the_stored_content(api: APIClient) -> None:
    piece = factories.conversation_pieces(1)[0]
    assert api.post(URL, {"message_pieces": [piece]}, format="json").status_code == 200
    changed = copy.deepcopy(piece)
    changed["converted_value"] = "something else"
    response = api.post(URL, {"message_pieces": [changed]}, format="json")
    assert response.status_code == 207
    item = response.json()["items"][0]
    assert item["status"] == "rejected"
    assert item["id"] == piece["id"]
    error = item["errors"][0]
    assert error["code"] == "conflict"
    assert piece["id"] in error["message"]
    assert MessagePiece.objects.get(id=piece["id"]).converted_value == piece["converted_value"]


def test_conflicts_and_replays_in_one_batch_are_reported_per_item(api: APIClient) -> None:
    pieces = factories.conversation_pieces(3)
    assert api.post(URL, {"message_pieces": pieces[:2]}, format="json").status_code == 200
    changed = copy.deepcopy(pieces[1])
    changed["prompt_metadata"] = {"changed": True}
    response = api.post(URL, {"message_pieces": [pieces[0], changed, pieces[2]]}, format="json")
    assert response.status_code == 207
    body = response.json()
    assert [i["status"] for i in body["items"]] == ["unchanged", "rejected", "stored"]
    assert (body["stored"], body["unchanged"], body["errors"]) == (1, 1, 1)


def test_atomic_batch_with_an_invalid_piece_stores_no_piece(api: APIClient) -> None:
    pieces = factories.conversation_pieces(4)
    pieces[3]["role"] = "wizard"
    response = api.post(URL + "?atomic=1", {"message_pieces": pieces}, format="json")
    assert response.status_code == 207
    body = response.json()
    assert body["stored"] == 0
    assert body["rolled_back"] is True
    assert [i["status"] for i in body["items"]] == ["rolled_back"] * 3 + ["rejected"]
    assert MessagePiece.objects.count() == 0
    # The same batch, fixed, goes in whole.
    pieces[3]["role"] = "assistant"
    response = api.post(URL + "?atomic=1", {"message_pieces": pieces}, format="json")
    assert response.status_code == 200
    assert response.json()["stored"] == 4
