"""List-endpoint filters and cursor pagination over the PyRIT fixture rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.api.pyrit_fixtures import fixture_payload
from tests.api.test_roundtrip import read_all

pytestmark = pytest.mark.django_db


@pytest.fixture
def run11(api: APIClient, fixtures_dir: Path) -> dict[str, list[dict[str, Any]]]:
    """The 1.1 fixture run, ingested."""
    payload = fixture_payload(fixtures_dir, "pyrit-1.1")
    assert api.post("/api/v1/ingest/", payload, format="json").status_code == 200
    return payload


def ids(rows: list[dict[str, Any]], key: str = "id") -> set[str]:
    return {r[key] for r in rows}


def test_pieces_by_conversation_role_and_data_type(api: APIClient, run11: Any) -> None:
    pieces = run11["message_pieces"]
    cid = pieces[0]["conversation_id"]
    got = read_all(api, "message-pieces", conversation_id=cid, role="assistant")
    assert ids(got) == {
        p["id"] for p in pieces if p["conversation_id"] == cid and p["role"] == "assistant"
    }
    errors = read_all(api, "message-pieces", data_type="error")
    assert ids(errors) == {p["id"] for p in pieces if p["converted_value_data_type"] == "error"}
    assert len(errors) == 2


def test_pieces_by_label_key_value_on_their_conversation(api: APIClient, run11: Any) -> None:
    image_conversations = {
        r["conversation_id"] for r in run11["attack_results"] if r["labels"].get("modality")
    }
    got = read_all(api, "message-pieces", label="modality=image")
    assert {p["conversation_id"] for p in got} == image_conversations
    assert read_all(api, "message-pieces", label="modality:audio") == []
    bad = api.get("/api/v1/message-pieces/", {"label": "no separator"})
    assert bad.status_code == 400
    assert "label" in bad.json()


def test_pieces_of_013_carry_their_own_labels(api: APIClient, fixtures_dir: Path) -> None:
    payload = fixture_payload(fixtures_dir, "pyrit-0.13")
    assert api.post("/api/v1/ingest/", payload, format="json").status_code == 200
    assert len(read_all(api, "message-pieces", label="operation=fixture_op_1")) == 5
    assert read_all(api, "message-pieces", label="operation=other") == []


def test_pieces_by_converter_target_and_harm(api: APIClient, run11: Any) -> None:
    converted = {p["id"] for p in run11["message_pieces"] if p["converter_identifiers"]}
    assert ids(read_all(api, "message-pieces", converter="ROT13Converter")) == converted
    rot13 = run11["message_pieces"][1]["converter_identifiers"][0]["hash"]
    assert ids(read_all(api, "message-pieces", converter=rot13)) == converted
    targeted = read_all(api, "message-pieces", target="ScriptedChatTarget")
    assert len(targeted) == len(run11["message_pieces"])
    harmed = {
        r["conversation_id"] for r in run11["attack_results"] if r["targeted_harm_categories"]
    }
    got = read_all(api, "message-pieces", harm_category="physical_security")
    assert {p["conversation_id"] for p in got} == harmed


def test_pieces_by_score_and_time_range(api: APIClient, run11: Any) -> None:
    scored_true = {
        s["message_piece_id"] for s in run11["scores"] if (s["score_value"] or "") == "true"
    }
    got = read_all(api, "message-pieces", score_value="TRUE")
    assert {p["original_prompt_id"] for p in got} == scored_true
    stamps = sorted(p["timestamp"] for p in run11["message_pieces"])
    middle = stamps[len(stamps) // 2]
    later = read_all(api, "message-pieces", after=middle)
    assert ids(later) == {p["id"] for p in run11["message_pieces"] if p["timestamp"] >= middle}
    assert api.get("/api/v1/message-pieces/", {"after": "not a date"}).status_code == 400


def test_scores_by_type_value_scorer_and_conversation(api: APIClient, run11: Any) -> None:
    scores = run11["scores"]
    floats = read_all(api, "scores", score_type="float_scale")
    assert ids(floats) == {s["id"] for s in scores if s["score_type"] == "float_scale"}
    falses = read_all(api, "scores", score_value="false")
    assert ids(falses) == {s["id"] for s in scores if (s["score_value"] or "").lower() == "false"}
    human = read_all(api, "scores", scorer="HumanReviewScorer")
    assert [s["scorer_class_identifier"]["class_name"] for s in human] == ["HumanReviewScorer"]
    cid = run11["message_pieces"][2]["conversation_id"]
    piece_ids = {
        p["original_prompt_id"] for p in run11["message_pieces"] if p["conversation_id"] == cid
    }
    got = read_all(api, "scores", conversation_id=cid)
    assert ids(got) == {s["id"] for s in scores if s["message_piece_id"] in piece_ids}
    assert api.get("/api/v1/scores/", {"score_type": "ternary"}).status_code == 400


def test_attack_results_by_outcome_label_and_attack(api: APIClient, run11: Any) -> None:
    results = run11["attack_results"]
    success = read_all(api, "attack-results", outcome="success")
    assert ids(success, "attack_result_id") == {
        r["attack_result_id"] for r in results if r["outcome"] == "success"
    }
    reviewed = read_all(api, "attack-results", label="review=manual")
    assert len(reviewed) == 1
    by_attack = read_all(api, "attack-results", attack="PromptSendingAttack")
    assert by_attack
    assert all(r["outcome"] in ("success", "failure", "undetermined") for r in by_attack)


def test_seeds_by_dataset_type_and_harm(api: APIClient, run11: Any) -> None:
    seeds = run11["seeds"]
    objectives = read_all(api, "seeds", seed_type="objective")
    assert ids(objectives) == {s["id"] for s in seeds if s["seed_type"] == "objective"}
    harm = read_all(api, "seeds", harm_category="illegal")
    assert ids(harm) == {s["id"] for s in seeds if "illegal" in (s["harm_categories"] or [])}
    name = seeds[0]["dataset_name"]
    assert ids(read_all(api, "seeds", dataset_name=name)) == {
        s["id"] for s in seeds if s["dataset_name"] == name
    }


def test_seed_filters_follow_the_shared_rules(api: APIClient, run11: Any) -> None:
    """Repeated values are alternatives, unknown choices and too many values are a 400, as on
    every other list (redteam.common.filters)."""
    seeds = run11["seeds"]
    both = read_all(api, "seeds", seed_type=["objective", "prompt"])
    assert ids(both) == {s["id"] for s in seeds if s["seed_type"] in ("objective", "prompt")}
    unknown = api.get("/api/v1/seeds/", {"seed_type": ["prompt", "poem"]})
    assert unknown.status_code == 400
    assert "poem" in str(unknown.json()["seed_type"])
    many = api.get("/api/v1/seeds/", {"harm_category": [f"h{i}" for i in range(21)]})
    assert many.status_code == 400
    assert "harm_category" in many.json()
    long = api.get("/api/v1/seeds/", {"data_type": "text" * 100})
    assert long.status_code == 400


@pytest.mark.parametrize(
    ("flag", "status"), [("yes", 200), (" TRUE ", 200), ("off", 200), ("  ", 200), ("maybe", 400)]
)
def test_flags_read_the_same_spellings_on_filters_and_ingest(
    api: APIClient, flag: str, status: int
) -> None:
    assert api.get("/api/v1/conversations/", {"has_error": flag}).status_code == status
    ingest = api.post(f"/api/v1/ingest/?atomic={flag}", {}, format="json")
    assert ingest.status_code == status


def test_identifiers_by_class_and_use_and_their_tree(api: APIClient, run11: Any) -> None:
    scorers = read_all(api, "identifiers", used_as="scorer")
    names = {i["class_name"] for i in scorers}
    assert {"SubStringScorer", "HumanReviewScorer"} <= names
    converters = read_all(api, "identifiers", used_as="converter")
    assert {i["class_name"] for i in converters} == {"ROT13Converter"}
    atomic = run11["attack_results"][0]["atomic_attack_identifier"]
    response = api.get(f"/api/v1/identifiers/{atomic['hash']}/")
    assert response.status_code == 200
    body = response.json()
    assert body["class_name"] == "AtomicAttack"
    assert body["missing"] == []
    tree = body["tree"]
    attack = tree["children"]["attack_technique"]["children"]["attack"]
    expected = atomic["children"]["attack_technique"]["children"]["attack"]
    assert attack["class_name"] == expected["class_name"]
    assert attack["hash"] == expected["hash"]
    assert (
        attack["children"]["objective_target"]["hash"]
        == (expected["children"]["objective_target"]["hash"])
    )
    assert api.get(f"/api/v1/identifiers/{'0' * 64}/").status_code == 404
    assert api.get("/api/v1/identifiers/../").status_code == 404


def test_cursor_pagination_visits_every_row_once(api: APIClient, run11: Any) -> None:
    seen: list[str] = []
    response = api.get("/api/v1/message-pieces/", {"page_size": 4})
    pages = 0
    while True:
        body = response.json()
        assert "count" not in body  # no COUNT(*) over the table
        seen.extend(r["id"] for r in body["results"])
        pages += 1
        if not body["next"]:
            break
        response = api.get(body["next"])
    assert len(seen) == len(set(seen)) == len(run11["message_pieces"])
    assert pages == -(-len(seen) // 4)
    assert api.get("/api/v1/message-pieces/", {"cursor": "garbage"}).status_code == 400


def test_shape_parameter(api: APIClient, run11: Any) -> None:
    piece = run11["message_pieces"][1]
    legacy = api.get(f"/api/v1/message-pieces/{piece['id']}/", {"shape": "0.13"}).json()
    assert legacy["timestamp"].endswith("+00:00")
    assert "scores" in legacy
    assert "labels" in legacy
    assert api.get("/api/v1/message-pieces/", {"shape": "2.0"}).status_code == 400
