"""Every PyRIT fixture row goes in over HTTP and comes back equal, field by field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from memory.models import AttackResult, Conversation, MessagePiece, Score
from seeds.models import Seed
from tests.api.pyrit_fixtures import (
    LINES,
    field_differences,
    fixture_payload,
    read_jsonl,
    without_annotations,
)

pytestmark = pytest.mark.django_db
INGEST = "/api/v1/ingest/"


def ingest(api: APIClient, payload: dict[str, Any], query: str = "") -> Any:
    return api.post(INGEST + query, payload, format="json")


def read_all(api: APIClient, resource: str, **params: Any) -> list[dict[str, Any]]:
    """Every row of a list endpoint, following cursors."""
    rows: list[dict[str, Any]] = []
    response = api.get(f"/api/v1/{resource}/", {"page_size": 7, **params})
    while True:
        assert response.status_code == 200, response.content
        body = response.json()
        rows.extend(body["results"])
        if not body["next"]:
            return rows
        response = api.get(body["next"])


def assert_rows_equal(
    expected: list[dict[str, Any]], actual: list[dict[str, Any]], key: str
) -> None:
    by_key = {row[key]: row for row in actual}
    assert sorted(by_key) == sorted(row[key] for row in expected)
    problems = {
        row[key]: diff
        for row in expected
        if (diff := field_differences(without_annotations(row), by_key[row[key]]))
    }
    assert not problems, problems


def assert_api_serves_payload(api: APIClient, payload: dict[str, Any], line: str) -> None:
    """Every row of the fixture payload reads back through the list endpoints unchanged."""
    assert_rows_equal(payload["message_pieces"], read_all(api, "message-pieces"), "id")
    assert_rows_equal(payload["scores"], read_all(api, "scores"), "id")
    assert_rows_equal(
        payload["attack_results"], read_all(api, "attack-results"), "attack_result_id"
    )
    seed_shape = "0.13" if line == "pyrit-0.13" else "1.x"
    assert_rows_equal(payload["seeds"], read_all(api, "seeds", shape=seed_shape), "id")
    if "conversations" in payload:
        assert_rows_equal(
            payload["conversations"], read_all(api, "conversations"), "conversation_id"
        )


@pytest.mark.parametrize("line", LINES)
def test_every_fixture_row_round_trips_over_http(
    api: APIClient, fixtures_dir: Path, line: str
) -> None:
    payload = fixture_payload(fixtures_dir, line)
    total = sum(len(v) for v in payload.values())
    response = ingest(api, payload)
    body = response.json()
    assert response.status_code == 200, [i for i in body["items"] if i["status"] == "rejected"]
    # 0.13 pieces embed their scores, so the scores list then finds them already stored.
    assert body["stored"] + body["unchanged"] == total
    assert body["errors"] == 0

    assert_api_serves_payload(api, payload, line)


@pytest.mark.parametrize("line", LINES)
def test_replaying_every_fixture_row_stores_nothing_new(
    api: APIClient, fixtures_dir: Path, line: str
) -> None:
    payload = fixture_payload(fixtures_dir, line)
    assert ingest(api, payload).status_code == 200
    counts = [m.objects.count() for m in (MessagePiece, Conversation, Score, AttackResult, Seed)]
    response = ingest(api, payload)
    assert response.status_code == 200
    body = response.json()
    assert body["stored"] == 0
    assert body["unchanged"] == sum(len(v) for v in payload.values())
    assert [m.objects.count() for m in (MessagePiece, Conversation, Score, AttackResult, Seed)] == (
        counts
    )


def test_score_entry_view_is_a_replay_and_reads_back(api: APIClient, fixtures_dir: Path) -> None:
    payload = fixture_payload(fixtures_dir, "pyrit-1.1")
    assert ingest(api, payload).status_code == 200
    entries = read_jsonl(fixtures_dir / "pyrit-1.1" / "score_entries.jsonl")
    response = ingest(api, {"scores": entries})
    assert response.status_code == 200
    assert response.json()["unchanged"] == len(entries)
    assert_rows_equal(entries, read_all(api, "scores", shape="entry"), "id")


@pytest.mark.parametrize("line", LINES)
def test_conversation_endpoint_returns_messages_with_scored_pieces(
    api: APIClient, fixtures_dir: Path, line: str
) -> None:
    payload = fixture_payload(fixtures_dir, line)
    assert ingest(api, payload).status_code == 200
    pieces = {p["id"]: p for p in payload["message_pieces"]}
    scores_by_piece: dict[str, set[str]] = {}
    for score in payload["scores"]:
        scores_by_piece.setdefault(score["message_piece_id"], set()).add(score["id"])
    conversation_ids = {p["conversation_id"] for p in pieces.values()}
    seen = 0
    for conversation_id in conversation_ids:
        response = api.get(f"/api/v1/conversations/{conversation_id}/")
        assert response.status_code == 200
        body = response.json()
        assert body["conversation_id"] == conversation_id
        sequences = [m["sequence"] for m in body["messages"]]
        assert sequences == sorted(sequences)
        assert len(set(sequences)) == len(sequences)
        for message in body["messages"]:
            for piece in message["pieces"]:
                seen += 1
                assert piece["sequence"] == message["sequence"]
                assert piece["role"] == message["role"]
                expected = dict(pieces[piece["id"]])
                got = dict(piece)
                got_scores = {s["id"] for s in got.pop("scores")}
                expected_scores = {s["id"] for s in expected.pop("scores", [])} | (
                    scores_by_piece.get(expected["original_prompt_id"], set())
                )
                assert got_scores == expected_scores
                assert not field_differences(expected, got)
    assert seen == len(pieces)


def test_unknown_conversation_is_404(api: APIClient) -> None:
    assert api.get("/api/v1/conversations/nope/").status_code == 404
