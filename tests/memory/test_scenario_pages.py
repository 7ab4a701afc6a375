"""Scenario and scored-content pages: content, grouping, hostile values, constant queries."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from memory.models import AttackResult, ScenarioResult, ScorableContent
from redteam.site.ingest import ingest_batch
from tests.api.pyrit_fixtures import SCENARIO_FIXTURES, read_jsonl, renumbered, scenario_rows

pytestmark = pytest.mark.django_db

COMPLETED = "5c3e1f0a-8b7d-4e2a-9c61-0d2f4a6b8e10"
FAILED = "6d4f2a1b-9c8e-4f3b-8d72-1e3a5b7c9f21"


def load(rows: list[dict[str, Any]]) -> None:
    report = ingest_batch({"scenario_results": rows})
    assert report.errors == 0, [o.errors for o in report.outcomes if o.errors]


def test_scenario_list_shows_runs_with_state_and_success_rate(reader_client: Client) -> None:
    load(scenario_rows())
    html = reader_client.get(reverse("memory:scenario_list")).content.decode()
    assert html.count('class="row-link"') == 2
    assert "COMPLETED" in html
    assert "FAILED" in html
    assert "RuntimeError" in html
    assert "33%" in html  # 2 successes of 6 results


@pytest.mark.parametrize(
    ("query", "shown"),
    [("run_state=FAILED", 1), ("label=operation:op_scenario", 1), ("scenario_name=nothing", 0)],
)
def test_scenario_list_filters(reader_client: Client, query: str, shown: int) -> None:
    load(scenario_rows())
    html = reader_client.get(reverse("memory:scenario_list") + "?" + query).content.decode()
    assert html.count('class="row-link"') == shown


def test_bad_filter_and_cursor_are_400(reader_client: Client) -> None:
    url = reverse("memory:scenario_list")
    assert reader_client.get(url + "?run_state=PAUSED").status_code == 400
    assert reader_client.get(url + "?cursor=garbage").status_code == 400


def test_scenario_detail_groups_results_by_atomic_attack_and_eval_hash(
    reader_client: Client,
) -> None:
    load(scenario_rows())
    html = reader_client.get(reverse("memory:scenario_detail", args=[COMPLETED])).content.decode()
    attacks = scenario_rows()[0]["attack_results"]
    for name, results in attacks.items():
        assert f"<h3>{name} " in html
        eval_hash = results[0]["attribution_data"]["parent_eval_hash"]
        assert eval_hash in html
        for result in results:
            assert (
                reverse("scoring:attack_result_detail", args=[result["attack_result_id"]]) in html
            )
            assert reverse("scoring:conversation_detail", args=[result["conversation_id"]]) in html
    assert html.count("success rate <strong>33%</strong>") == 2
    assert "Encodings" in html  # the display group
    assert "EncodingScenario" in html
    assert "TrueFalseInverterScorer" in html


def test_failed_scenario_shows_its_error(reader_client: Client) -> None:
    load(scenario_rows())
    html = reader_client.get(reverse("memory:scenario_detail", args=[FAILED])).content.decode()
    assert "RuntimeError" in html
    assert "target unreachable" in html
    assert "No attack results point at this scenario." in html


def test_hostile_scenario_values_are_escaped(reader_client: Client) -> None:
    row = copy.deepcopy(scenario_rows()[1])
    row["error_message"] = "<script>alert(1)</script>\u202e"
    row["labels"] = {"op": "<img src=x onerror=alert(1)>"}
    row["scenario_description"] = "<b>bold</b>"
    load([row])
    for url in (reverse("memory:scenario_list"), reverse("memory:scenario_detail", args=[FAILED])):
        html = reader_client.get(url).content.decode()
        assert "<script>alert(1)" not in html
        assert "<img src=x" not in html
    detail = reader_client.get(reverse("memory:scenario_detail", args=[FAILED])).content.decode()
    assert "⟨U+202E⟩" in detail
    assert "&lt;b&gt;bold&lt;/b&gt;" in detail


def test_attack_result_page_links_its_scenario_and_survives_a_non_uuid_parent(
    reader_client: Client,
) -> None:
    load(scenario_rows())
    result = AttackResult.objects.filter(attribution_parent_id=COMPLETED).first()
    assert result is not None
    url = reverse("scoring:attack_result_detail", args=[result.pk])
    assert (
        reverse("memory:scenario_detail", args=[COMPLETED])
        in reader_client.get(url).content.decode()
    )
    AttackResult.objects.filter(pk=result.pk).update(attribution_parent_id="not-a-uuid")
    response = reader_client.get(url)
    assert response.status_code == 200
    assert "not-a-uuid" in response.content.decode()


def test_unknown_scenario_is_404(reader_client: Client) -> None:
    url = reverse("memory:scenario_detail", args=["00000000-0000-4000-8000-000000000000"])
    assert reader_client.get(url).status_code == 404


@pytest.mark.parametrize("n", [3, 30])
def test_scenario_pages_cost_constant_queries(
    reader_client: Client, django_assert_num_queries: Any, n: int
) -> None:
    load([renumbered(scenario_rows()[0], k) for k in range(n)])
    # session, user, memberships; one page of scenarios; outcome counts of the page.
    with django_assert_num_queries(5):
        response = reader_client.get(reverse("memory:scenario_list"))
    assert response.content.decode().count('class="row-link"') == n
    # One scenario whose results are spread over n atomic attacks.
    big = copy.deepcopy(scenario_rows()[0])
    big["id"] = "9f9f9f9f-0000-4000-8000-000000000000"
    base = big["attack_results"]["base64"][0]
    big["attack_results"] = {}
    for k in range(n):
        result = renumbered(base, 1000 + k)
        result["attribution_parent_id"] = big["id"]
        result["attribution_data"] = {"parent_collection": f"technique_{k}"}
        big["attack_results"][f"technique_{k}"] = [result]
    load([big])
    # session, user, memberships; scenario (+3 dumps); counts per atomic attack; results.
    with django_assert_num_queries(6):
        html = reader_client.get(reverse("memory:scenario_detail", args=[big["id"]])).content
    assert html.decode().count('class="atomic-attack"') == n
    assert ScenarioResult.objects.count() == n + 1


def test_scored_content_pages_show_the_text_with_its_scores(reader_client: Client) -> None:
    scores = read_jsonl(SCENARIO_FIXTURES / "loose_scores_before_storage.jsonl")
    assert ingest_batch({"scores": scores}).errors == 0
    listing = reader_client.get(reverse("memory:scored_content_list")).content.decode()
    assert listing.count('class="row-link"') == 2
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in listing
    assert "<script>alert" not in listing
    content = ScorableContent.objects.get(value__startswith="loose text one")
    html = reader_client.get(reverse("memory:scored_content_detail", args=[content.pk])).content
    text = html.decode()
    assert "⟨U+202E⟩" in text  # the bidi override is shown, not applied
    assert "loose rationale 0" in text
    assert "loose rationale 1" in text
    assert "loose rationale 2" not in text  # another text's score


@pytest.mark.parametrize("n", [3, 30])
def test_scored_content_pages_cost_constant_queries(
    reader_client: Client, django_assert_num_queries: Any, n: int
) -> None:
    template = read_jsonl(SCENARIO_FIXTURES / "loose_scores_before_storage.jsonl")[0]
    scores = []
    for k in range(n):
        score = renumbered(template, k)
        score["scorable"] = {
            "scorable_type": "content",
            "value": f"text {k % 2}",
            "data_type": "text",
        }
        scores.append(score)
    assert ingest_batch({"scores": scores}).errors == 0
    with django_assert_num_queries(4):  # session, user, memberships; one page
        reader_client.get(reverse("memory:scored_content_list"))
    content = ScorableContent.objects.get(value="text 0")
    # session, user, memberships; the content; its scores (+scorer dumps, reviewer).
    with django_assert_num_queries(5):
        html = reader_client.get(reverse("memory:scored_content_detail", args=[content.pk]))
    assert html.content.decode().count('<div class="score">') == (n + 1) // 2


def test_scenario_links_to_its_results_in_the_filtered_result_list(reader_client: Client) -> None:
    load(scenario_rows())
    AttackResult.objects.create(
        attack_result_id="00000000-0000-4000-8000-0000000000aa",
        conversation_id=AttackResult.objects.first().conversation_id,  # type: ignore[union-attr]
        objective="outside the scenario",
        objective_sha256="0" * 64,
    )
    detail = reader_client.get(reverse("memory:scenario_detail", args=[COMPLETED])).content.decode()
    link = f"{reverse('scoring:attack_result_list')}?scenario_result_id={COMPLETED}"
    assert link in detail
    html = reader_client.get(link).content.decode()
    assert html.count('class="row-link"') == 6
    assert "outside the scenario" not in html
