"""Ingest and list endpoints cost a constant number of queries, whatever the batch or page."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from memory.models import ComponentIdentifier, IdentifierOperation
from redteam.common.models import Operation
from redteam.core.operations import UNASSIGNED
from tests.api import factories

pytestmark = pytest.mark.django_db


def _ingest_queries(api: APIClient, payload: dict[str, Any]) -> list[str]:
    """The statements one ingest request ran, each cut to its first 70 characters."""
    with CaptureQueriesContext(connection) as ctx:
        response = api.post("/api/v1/ingest/", payload, format="json")
    assert response.status_code == 200, response.json()
    return [q["sql"][:70] for q in ctx.captured_queries]


def _summary(small: list[str], large: list[str]) -> str:
    return "small:\n  " + "\n  ".join(small) + "\nlarge:\n  " + "\n  ".join(large)


# A batch of a few rows may cost fewer queries than a large one, never more: on PostgreSQL a
# message or two goes in with its identifiers in one statement (memory.bulk.insert_together),
# where a larger batch COPYs. From 20 rows on, the count is the same whatever the size.


def test_ingest_query_count_is_the_same_for_20_and_200_pieces(api: APIClient) -> None:
    api.get("/api/schema/")  # stamps last_used_at once, so no request below updates it
    small = _ingest_queries(api, {"message_pieces": factories.conversation_pieces(2)})
    medium = _ingest_queries(api, {"message_pieces": factories.conversation_pieces(20)})
    large = _ingest_queries(api, {"message_pieces": factories.conversation_pieces(200)})
    assert len(medium) == len(large), _summary(medium, large)
    assert len(small) <= len(large), _summary(small, large)


def test_mixed_ingest_query_count_is_the_same_for_20_and_200_of_each_kind(api: APIClient) -> None:
    api.get("/api/schema/")
    small = _ingest_queries(api, factories.mixed_batch(2))
    medium = _ingest_queries(api, factories.mixed_batch(20))
    large = _ingest_queries(api, factories.mixed_batch(200))
    assert len(medium) == len(large), _summary(medium, large)
    assert len(small) <= len(large), _summary(small, large)


def test_replay_query_count_is_constant_too(api: APIClient) -> None:
    api.get("/api/schema/")
    small, large = factories.mixed_batch(2), factories.mixed_batch(200)
    _ingest_queries(api, small)
    _ingest_queries(api, large)
    replay_small, replay_large = _ingest_queries(api, small), _ingest_queries(api, large)
    assert len(replay_small) == len(replay_large), _summary(replay_small, replay_large)


def _fill(api: APIClient, conversations: int) -> list[dict[str, Any]]:
    """`conversations` conversations of 2 pieces (user converted, assistant scored) + results."""
    payload: dict[str, list[dict[str, Any]]] = {
        "message_pieces": [],
        "scores": [],
        "attack_results": [],
    }
    for _ in range(conversations):
        pieces = factories.conversation_pieces(2)
        payload["message_pieces"] += pieces
        payload["scores"].append(factories.score(pieces[1]))
        payload["attack_results"].append(
            factories.attack_result(
                pieces[0]["conversation_id"],
                last_response=pieces[1],
                last_score=payload["scores"][-1],
            )
        )
    response = api.post("/api/v1/ingest/", payload, format="json")
    assert response.status_code == 200, response.json()
    return payload["message_pieces"]


# Queries per list page, whatever its length; the first is always the API key joined with its
# user and with its operations' memberships, which give its scope (last_used_at was stamped by
# an earlier request).
LIST_QUERIES = {
    # key and scope; pieces joined with their dumps and conversation; converter uses with
    # their dumps.
    "message-pieces": 3,
    # key and scope; conversations joined with their target dump.
    "conversations": 2,
    # key and scope; scores joined with their scorer dump.
    "scores": 2,
    # key and scope; results joined with dumps and last response; related conversations;
    # the last response's converters; the last scores.
    "attack-results": 5,
    # key and scope; identifier rows.
    "identifiers": 2,
}


@pytest.mark.parametrize("resource", list(LIST_QUERIES))
@pytest.mark.parametrize("conversations", [3, 30])
def test_list_endpoints_cost_constant_queries(
    api: APIClient, django_assert_num_queries: Any, resource: str, conversations: int
) -> None:
    _fill(api, conversations)
    # Identifiers are content-addressed (the fill reuses two); add distinct rows, used in the
    # operation the fill went to (the key's default), so the key sees them.
    ComponentIdentifier.objects.bulk_create(
        ComponentIdentifier(hash=f"{i:064x}", class_name=f"Target{i}", class_module="m")
        for i in range(conversations)
    )
    operation = Operation.objects.get(name=UNASSIGNED)
    IdentifierOperation.objects.bulk_create(
        IdentifierOperation(identifier_id=f"{i:064x}", operation=operation)
        for i in range(conversations)
    )
    with django_assert_num_queries(LIST_QUERIES[resource]):
        response = api.get(f"/api/v1/{resource}/", {"page_size": 1000})
    assert response.status_code == 200
    assert len(response.json()["results"]) >= conversations


@pytest.mark.parametrize("conversations", [3, 30])
def test_conversation_messages_cost_constant_queries(
    api: APIClient, django_assert_num_queries: Any, conversations: int
) -> None:
    long = factories.conversation_pieces(conversations * 2)
    scores = [factories.score(p) for p in long[1::2]]
    assert (
        api.post(
            "/api/v1/ingest/", {"message_pieces": long, "scores": scores}, format="json"
        ).status_code
        == 200
    )
    # key and scope; conversation (+target dump); pieces (+dumps); converter uses; scores.
    with django_assert_num_queries(5):
        response = api.get(f"/api/v1/conversations/{long[0]['conversation_id']}/")
    assert len(response.json()["messages"]) == conversations * 2


def test_seeds_list_costs_constant_queries(
    api: APIClient, django_assert_num_queries: Any, fixtures_dir: Any
) -> None:
    from tests.api.pyrit_fixtures import read_jsonl

    seeds = read_jsonl(fixtures_dir / "pyrit-1.1" / "seeds.jsonl")
    assert api.post("/api/v1/ingest/", {"seeds": seeds[:3]}, format="json").status_code == 200
    with django_assert_num_queries(2):  # key; seeds joined with their groups
        assert len(api.get("/api/v1/seeds/").json()["results"]) == 3
    assert api.post("/api/v1/ingest/", {"seeds": seeds}, format="json").status_code == 200
    with django_assert_num_queries(2):
        assert len(api.get("/api/v1/seeds/").json()["results"]) == len(seeds)
