"""The scenario results read API: exact round trip, filters, constant queries, schema."""

from __future__ import annotations

import json
from typing import Any

import pytest
from rest_framework.test import APIClient

from tests.api.pyrit_fixtures import field_differences, renumbered, scenario_rows
from tests.api.test_roundtrip import ingest, read_all

pytestmark = pytest.mark.django_db


def test_scenario_results_round_trip_exactly_over_http(api: APIClient) -> None:
    rows = scenario_rows()
    response = ingest(api, {"scenario_results": rows})
    assert response.status_code == 200, response.json()
    served = {row["id"]: row for row in read_all(api, "scenario-results")}
    assert sorted(served) == sorted(row["id"] for row in rows)
    for row in rows:
        assert field_differences(row, served[row["id"]]) == {}
        detail = api.get(f"/api/v1/scenario-results/{row['id']}/")
        assert detail.status_code == 200
        assert field_differences(row, detail.json()) == {}


def test_replayed_scenario_results_store_nothing_new(api: APIClient) -> None:
    assert ingest(api, {"scenario_results": scenario_rows()}).status_code == 200
    body = ingest(api, {"scenario_results": scenario_rows()}).json()
    assert body["stored"] == 0
    assert body["unchanged"] == 2


def test_a_bad_scenario_is_a_207_item_and_the_rest_is_stored(api: APIClient) -> None:
    bad = dict(scenario_rows()[1], scenario_run_state="PAUSED")
    response = ingest(api, {"scenario_results": [scenario_rows()[0], bad]})
    assert response.status_code == 207
    rejected = [i for i in response.json()["items"] if i["status"] == "rejected"]
    assert [(i["kind"], i["index"], i["errors"][0]["field"]) for i in rejected] == [
        ("scenario_results", 1, "scenario_run_state")
    ]
    assert len(read_all(api, "scenario-results")) == 1


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        ({"run_state": "FAILED"}, ["6d4f2a1b-9c8e-4f3b-8d72-1e3a5b7c9f21"]),
        ({"run_state": "COMPLETED"}, ["5c3e1f0a-8b7d-4e2a-9c61-0d2f4a6b8e10"]),
        ({"label": "operation=op_other"}, ["6d4f2a1b-9c8e-4f3b-8d72-1e3a5b7c9f21"]),
        ({"scenario_name": "encoding"}, "both"),
        ({"scenario_name": "Foundry"}, []),
        ({"target": "OpenAIChatTarget"}, "both"),
        ({"target": "AzureMLChatTarget"}, []),
        ({"after": "2026-11-22T03:30:00Z"}, ["6d4f2a1b-9c8e-4f3b-8d72-1e3a5b7c9f21"]),
        ({"before": "2026-11-22T03:30:00Z"}, ["5c3e1f0a-8b7d-4e2a-9c61-0d2f4a6b8e10"]),
    ],
)
def test_scenario_filters(api: APIClient, params: dict[str, str], expected: Any) -> None:
    ingest(api, {"scenario_results": scenario_rows()})
    ids = sorted(row["id"] for row in read_all(api, "scenario-results", **params))
    assert ids == (sorted(r["id"] for r in scenario_rows()) if expected == "both" else expected)


def test_bad_filter_value_is_a_400(api: APIClient) -> None:
    assert api.get("/api/v1/scenario-results/", {"run_state": "PAUSED"}).status_code == 400


@pytest.mark.parametrize("count", [3, 30])
def test_scenario_list_costs_constant_queries(
    api: APIClient, django_assert_num_queries: Any, count: int
) -> None:
    rows = [renumbered(scenario_rows()[0], k) for k in range(count)]
    assert ingest(api, {"scenario_results": rows}).status_code == 200
    # the key with its scope (its operations and memberships); scenarios with their dumps;
    # attack results joined with dumps and last response; related conversations; the last
    # responses' converters; the last scores.
    with django_assert_num_queries(6):
        response = api.get("/api/v1/scenario-results/", {"page_size": 50})
    results = response.json()["results"]
    assert len(results) == count
    assert all(len(r["attack_results"]["rot13"]) == 3 for r in results)


def test_schema_documents_scenario_results(api: APIClient) -> None:
    schema = json.loads(api.get("/api/schema/", {"format": "json"}).content)
    assert "/api/v1/scenario-results/" in schema["paths"]
    assert "/api/v1/scenario-results/{id}/" in schema["paths"]
    ingest_body = json.dumps(schema["paths"]["/api/v1/ingest/"]["post"])
    assert "scenario_results" in ingest_body


LEGACY_ROW: dict[str, Any] = {
    "id": "7e5a3b2c-1d0f-4a6b-9c8d-2f4e6a8b0c13",
    "scenario_name": "FoundryScenario",
    "scenario_description": None,
    "scenario_version": 1,
    "pyrit_version": "0.13.0",
    "scenario_init_data": {"max_turns": 3},
    "objective_target_identifier": {"__type__": "OpenAIChatTarget", "__module__": "m"},
    "objective_scorer_identifier": None,
    "scenario_run_state": "IN_PROGRESS",
    "attack_results_json": "{}",
    "labels": {"op": "x"},
    "number_tries": 1,
    "completion_time": "2025-10-01T10:00:00+00:00",
    "timestamp": "2025-10-01T09:00:00+00:00",
}


def test_legacy_scenario_row_round_trips_and_any_row_exports_in_either_shape(
    api: APIClient,
) -> None:
    assert ingest(api, {"scenario_results": [LEGACY_ROW, scenario_rows()[0]]}).status_code == 200
    served = api.get(f"/api/v1/scenario-results/{LEGACY_ROW['id']}/").json()
    assert field_differences(LEGACY_ROW, served) == {}
    as_1x = api.get(f"/api/v1/scenario-results/{LEGACY_ROW['id']}/", {"shape": "1.x"}).json()
    assert as_1x["scenario_name"] == "FoundryScenario"
    assert as_1x["attack_results"] == {}
    modern = scenario_rows()[0]["id"]
    as_013 = api.get(f"/api/v1/scenario-results/{modern}/", {"shape": "0.13"}).json()
    assert as_013["scenario_name"] == "EncodingScenario"
    assert sorted(json.loads(as_013["attack_results_json"])) == ["base64", "rot13"]


def test_attack_results_filter_by_their_scenario(api: APIClient) -> None:
    rows = scenario_rows()
    ingest(api, {"scenario_results": rows})
    loose = dict(rows[0]["attack_results"]["base64"][0], attribution_parent_id=None)
    loose = renumbered(loose, 99)
    assert ingest(api, {"attack_results": [loose]}).status_code == 200
    mine = read_all(api, "attack-results", scenario_result_id=rows[0]["id"])
    assert len(mine) == 6
    assert len(read_all(api, "attack-results")) == 7


def test_an_answer_embedding_too_many_results_is_a_clear_400(
    api: APIClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memory.api import reads

    monkeypatch.setattr(reads, "MAX_EMBEDDED_RESULTS", 5)
    rows = scenario_rows()
    ingest(api, {"scenario_results": rows})
    response = api.get(f"/api/v1/scenario-results/{rows[0]['id']}/")
    assert response.status_code == 400
    assert "scenario_result_id" in str(response.json()["attack_results"])
    # The failed run embeds nothing, and the results read in pages from their own list.
    assert api.get(f"/api/v1/scenario-results/{rows[1]['id']}/").status_code == 200
    assert len(read_all(api, "attack-results", scenario_result_id=rows[0]["id"])) == 6
