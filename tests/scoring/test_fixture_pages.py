"""Real PyRIT output, ingested through the services, reviewed on every page."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from memory import services
from memory.models import AttackResult, Conversation
from memory.store_scores import store_scores
from redteam.common.media import store_media_bytes

pytestmark = pytest.mark.django_db


def _rows(path: Path) -> list[Any]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture
def pyrit_11(fixtures_dir: Path) -> Path:
    """The PyRIT 1.1 fixture run, stored as the API would store it (media included).

    Ingestion creates the operations its labels name in bulk (no post_save), so tests ask for
    this fixture before the reviewer's: the reviewer then joins the operations that exist.
    """
    root = fixtures_dir / "pyrit-1.1"
    for name, store in (
        ("conversations.jsonl", services.store_conversations),
        ("pieces.jsonl", services.store_message_pieces),
        ("scores.jsonl", store_scores),
        ("attack_results.jsonl", services.store_attack_results),
    ):
        outcomes = store(_rows(root / name))
        assert all(o.status != "rejected" for o in outcomes), name
    image = root / "media" / "fixture_checkerboard.png"
    services.link_media(store_media_bytes(image.read_bytes(), filename=image.name))
    return root


def test_every_fixture_conversation_renders_with_its_messages(
    pyrit_11: Path, reviewer_client: Client
) -> None:
    pieces = _rows(pyrit_11 / "pieces.jsonl")
    for conversation in Conversation.objects.all():
        response = reviewer_client.get(
            reverse("scoring:conversation_detail", args=[conversation.pk])
        )
        assert response.status_code == 200
        expected = {p["sequence"] for p in pieces if p["conversation_id"] == conversation.pk}
        assert {m.sequence for m in response.context["conversation_messages"]} == expected


def test_fixture_image_blocked_error_and_human_score_are_shown(
    pyrit_11: Path, reviewer_client: Client
) -> None:
    pieces = _rows(pyrit_11 / "pieces.jsonl")
    image = next(p for p in pieces if p["original_value_data_type"] == "image_path")
    html = reviewer_client.get(
        reverse("scoring:conversation_detail", args=[image["conversation_id"]])
    ).content.decode()
    assert '<img src="/media/' in html
    assert "Describe this image in detail." in html
    blocked = next(p for p in pieces if p["response_error"] == "blocked")
    html = reviewer_client.get(
        reverse("scoring:conversation_detail", args=[blocked["conversation_id"]])
    ).content.decode()
    assert 'class="badge blocked">blocked<' in html
    human = next(
        s
        for s in _rows(pyrit_11 / "scores.jsonl")
        if s["scorer_class_identifier"]["class_name"] == "HumanReviewScorer"
    )
    owner = next(p for p in pieces if p["id"] == human["message_piece_id"])
    html = reviewer_client.get(
        reverse("scoring:conversation_detail", args=[owner["conversation_id"]])
    ).content.decode()
    assert "Reviewer: detailed and actionable." in html
    assert 'class="badge human">human<' in html


@pytest.mark.usefixtures("pyrit_11")
def test_fixture_results_list_detail_objective_and_dashboard(reviewer_client: Client) -> None:
    results = list(AttackResult.objects.all())
    assert len(results) == 6
    listing = reviewer_client.get(reverse("scoring:attack_result_list"))
    assert len(listing.context["rows"]) == 6
    for result in results:
        detail = reviewer_client.get(reverse("scoring:attack_result_detail", args=[result.pk]))
        assert detail.status_code == 200
        objective = reviewer_client.get(
            reverse("scoring:objective_detail", args=[result.objective_sha256])
        )
        assert objective.status_code == 200
    dashboard = reviewer_client.get(reverse("scoring:dashboard") + "?label_key=operation")
    html = dashboard.content.decode()
    assert "RedTeamingAttack" in html
    assert "PromptSendingAttack" in html
    assert "physical_security" in html
    assert "fixture_op_1" in html
    filtered = reviewer_client.get(reverse("memory:conversation_list") + "?operation=fixture_op_1")
    assert len(filtered.context["rows"]) >= 5
