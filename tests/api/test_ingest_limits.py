"""The ingest endpoint's envelope: body/JSON/shape checks, limits, 200/207, atomic mode.

The per-kind services are replaced by a small fake that stores AuditEvent rows, so these tests
pin down the orchestration (redteam/site/ingest.py, redteam/site/api.py) independently of the real
services, which tests/api/test_ingest_roundtrip.py exercises end to end.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from rest_framework.test import APIClient

from redteam.common.models import AuditEvent
from redteam.core.outcomes import FieldError, ItemOutcome
from redteam.site import ingest

pytestmark = pytest.mark.django_db
URL = "/api/v1/ingest/"
FAKE = AuditEvent.objects.filter(action="fake")


def fake_store(items: Sequence[Mapping[str, Any]], *, writer: Any = None) -> list[ItemOutcome]:
    """Store items as AuditEvent rows; "bad" items are invalid; same id, new body: conflict."""
    outcomes = []
    for index, item in enumerate(items):
        item_id = str(item.get("id"))
        if item.get("bad"):
            outcomes.append(
                ItemOutcome("x", index, item_id, "rejected", [FieldError("bad", "is bad")])
            )
            continue
        existing = FAKE.filter(object_id=item_id).first()
        if existing is None:
            AuditEvent.objects.create(
                action="fake", object_type="fake", object_id=item_id, detail=dict(item)
            )
            outcomes.append(ItemOutcome("x", index, item_id, "stored"))
        elif existing.detail == dict(item):
            outcomes.append(ItemOutcome("x", index, item_id, "unchanged"))
        else:
            outcomes.append(
                ItemOutcome(
                    "x",
                    index,
                    item_id,
                    "rejected",
                    [FieldError("id", f"{item_id} exists with other content", "conflict")],
                )
            )
    return outcomes


def crashing_store(_items: Sequence[Mapping[str, Any]], *, writer: Any = None) -> list[ItemOutcome]:
    raise RuntimeError("boom")


@pytest.fixture
def fake_services(monkeypatch: pytest.MonkeyPatch) -> None:
    for kind in ingest.INGEST_KINDS:
        monkeypatch.setitem(ingest.INGEST_SERVICES, kind, fake_store)


def post(client: APIClient, body: Any, query: str = "", **extra: Any) -> Any:
    raw = body if isinstance(body, (bytes, str)) else json.dumps(body)
    return client.post(URL + query, raw, content_type="application/json", **extra)


@pytest.mark.usefixtures("fake_services")
def test_all_stored_is_200_with_counts(api: APIClient) -> None:
    response = post(api, {"message_pieces": [{"id": "a"}, {"id": "b"}], "seeds": [{"id": "s"}]})
    assert response.status_code == 200
    body = response.json()
    assert (body["stored"], body["unchanged"], body["errors"]) == (3, 0, 0)
    assert [(i["kind"], i["index"], i["status"]) for i in body["items"]] == [
        ("message_pieces", 0, "stored"),
        ("message_pieces", 1, "stored"),
        ("seeds", 0, "stored"),
    ]
    assert FAKE.count() == 3


@pytest.mark.usefixtures("fake_services")
def test_replay_is_200_and_stores_nothing_new(api: APIClient) -> None:
    batch = {"scores": [{"id": "a", "v": 1}]}
    post(api, batch)
    response = post(api, batch)
    assert response.status_code == 200
    assert response.json()["unchanged"] == 1
    assert response.json()["stored"] == 0
    assert FAKE.count() == 1


@pytest.mark.usefixtures("fake_services")
def test_partial_failure_is_207_and_names_item_index_id_and_field(api: APIClient) -> None:
    response = post(api, {"attack_results": [{"id": "ok"}, {"id": "no", "bad": True}]})
    assert response.status_code == 207
    body = response.json()
    assert (body["stored"], body["errors"]) == (1, 1)
    rejected = body["items"][1]
    assert rejected == {
        "kind": "attack_results",
        "index": 1,
        "id": "no",
        "status": "rejected",
        "errors": [{"field": "bad", "message": "is bad", "code": "invalid"}],
    }
    assert FAKE.filter(object_id="ok").exists()


@pytest.mark.usefixtures("fake_services")
def test_conflict_is_reported_per_item_and_nothing_is_overwritten(api: APIClient) -> None:
    post(api, {"scores": [{"id": "a", "v": 1}]})
    response = post(api, {"scores": [{"id": "a", "v": 2}, {"id": "b"}]})
    assert response.status_code == 207
    item = response.json()["items"][0]
    assert item["status"] == "rejected"
    assert item["errors"][0]["code"] == "conflict"
    assert FAKE.get(object_id="a").detail == {"id": "a", "v": 1}


@pytest.mark.usefixtures("fake_services")
def test_atomic_batch_with_a_rejected_item_stores_nothing(api: APIClient) -> None:
    response = post(api, {"seeds": [{"id": "ok"}, {"id": "no", "bad": True}]}, "?atomic=1")
    assert response.status_code == 207
    body = response.json()
    assert body["stored"] == 0
    assert body["errors"] == 1
    assert body["rolled_back"] is True
    assert [i["status"] for i in body["items"]] == ["rolled_back", "rejected"]
    assert not FAKE.exists()


@pytest.mark.usefixtures("fake_services")
def test_atomic_batch_without_errors_is_stored(api: APIClient) -> None:
    response = post(api, {"seeds": [{"id": "ok"}]}, "?atomic=1")
    assert response.status_code == 200
    assert response.json()["rolled_back"] is False
    assert FAKE.count() == 1


@pytest.mark.usefixtures("fake_services")
def test_bad_atomic_flag_is_400(api: APIClient) -> None:
    assert post(api, {}, "?atomic=maybe").status_code == 400


@pytest.mark.usefixtures("fake_services")
def test_non_object_items_are_rejected_per_item(api: APIClient) -> None:
    response = post(api, {"message_pieces": [1, {"id": "a"}, "x"]})
    assert response.status_code == 207
    items = response.json()["items"]
    assert [(i["index"], i["status"]) for i in items] == [
        (0, "rejected"),
        (1, "stored"),
        (2, "rejected"),
    ]


def test_services_run_in_dependency_order(api: APIClient, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []
    for kind in ingest.INGEST_KINDS:
        monkeypatch.setitem(ingest.INGEST_SERVICES, kind, fake_store)
    real = ingest.store_items

    def spy(kind: str, items: list[Any], *, writer: Any = None) -> list[ItemOutcome]:
        seen.append(kind)
        return real(kind, items, writer=writer)

    monkeypatch.setattr(ingest, "store_items", spy)
    body = {k: [{"id": k}] for k in reversed(ingest.INGEST_KINDS)}
    assert post(api, body).status_code == 200
    assert seen == [
        "conversations",
        "message_pieces",
        "scores",
        "attack_results",
        "scenario_results",
        "seeds",
    ]


def test_a_crashing_service_leaves_nothing_half_written(
    api: APIClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(ingest.INGEST_SERVICES, "conversations", fake_store)
    monkeypatch.setitem(ingest.INGEST_SERVICES, "message_pieces", crashing_store)
    api.raise_request_exception = False
    response = post(api, {"conversations": [{"id": "c"}], "message_pieces": [{"id": "p"}]})
    assert response.status_code == 500
    assert not FAKE.exists()


@pytest.mark.parametrize(
    "raw",
    [
        b"{",
        b"not json",
        b"\xff\xfe{}",
        b"[" * 100_000 + b"]" * 100_000,
    ],
)
@pytest.mark.usefixtures("fake_services")
def test_malformed_json_is_400(api: APIClient, raw: bytes) -> None:
    response = post(api, raw)
    assert response.status_code == 400
    assert response.json()["detail"]
    assert not FAKE.exists()


@pytest.mark.parametrize(
    "body",
    [
        [],
        "pieces",
        {"pieces": []},
        {"message_pieces": {"id": "a"}},
        {"scores": "x"},
        {"seeds": 3},
    ],
)
@pytest.mark.usefixtures("fake_services")
def test_wrong_top_level_types_are_400(api: APIClient, body: Any) -> None:
    response = post(api, body)
    assert response.status_code == 400
    assert response.json()["detail"]
    assert not FAKE.exists()


@pytest.mark.usefixtures("fake_services")
def test_unknown_key_and_valid_lists_store_nothing(api: APIClient) -> None:
    response = post(api, {"seeds": [{"id": "s"}], "pieces": [{"id": "p"}]})
    assert response.status_code == 400
    assert "pieces" in response.json()["detail"]
    assert not FAKE.exists()


@pytest.mark.usefixtures("fake_services")
def test_non_json_content_type_is_415(api: APIClient) -> None:
    response = api.post(URL, "a=1", content_type="application/x-www-form-urlencoded")
    assert response.status_code == 415


@pytest.mark.usefixtures("fake_services")
def test_body_over_the_limit_is_413_before_parsing(
    api: APIClient, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings.REDTEAM_MAX_BODY_BYTES = 100

    def must_not_parse(_data: bytes) -> Any:
        raise AssertionError("parsed an oversized body")

    monkeypatch.setattr("redteam.site.api.parse_json", must_not_parse)
    response = post(api, {"seeds": [{"id": "x" * 200}]})
    assert response.status_code == 413
    assert "100 bytes" in response.json()["detail"]
    assert response.json()["limit_bytes"] == 100
    assert not FAKE.exists()


@pytest.mark.usefixtures("fake_services")
def test_body_at_the_limit_is_accepted(api: APIClient, settings: Any) -> None:
    raw = json.dumps({"seeds": [{"id": "x"}]}).encode()
    settings.REDTEAM_MAX_BODY_BYTES = len(raw)
    assert post(api, raw).status_code == 200


@pytest.mark.usefixtures("fake_services")
def test_too_many_items_is_413_and_stores_nothing(api: APIClient, settings: Any) -> None:
    settings.REDTEAM_MAX_ITEMS = 3
    response = post(
        api, {"message_pieces": [{"id": "a"}, {"id": "b"}], "seeds": [{"id": "c"}, {"id": "d"}]}
    )
    assert response.status_code == 413
    assert "limit is 3" in response.json()["detail"]
    assert not FAKE.exists()


@pytest.mark.usefixtures("fake_services")
def test_items_at_the_limit_are_accepted(api: APIClient, settings: Any) -> None:
    settings.REDTEAM_MAX_ITEMS = 3
    response = post(api, {"message_pieces": [{"id": "a"}, {"id": "b"}], "seeds": [{"id": "c"}]})
    assert response.status_code == 200
