"""The dashboard's headline and names, and targets and scorers by name on the result pages.

Headline: results, success rate with n and a 95% Wilson interval, undetermined and error
counts, the share reviewed by a human, exact through the snapshot and the live correction.
Targets and scorers show the name people know (redteam.core.identity.display) with the hash
short beside it; the scorer filter picks results by their last score's scorer.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from memory.models import AttackResult, Score
from redteam.common.access import Scope, user_scope
from redteam.core.identity import ComponentIdentifier as CoreIdentifier
from scoring.services import record_verdict
from scoring.tallies import build_dashboard, rebuild_tallies
from tests.memory.row_factories import (
    core_atomic_attack,
    core_scorer,
    core_target,
    make_attack_result,
    make_conversation,
)
from tests.scoring.row_factories import make_score

pytestmark = pytest.mark.django_db
EVERYTHING = Scope.everything_scope()


def _judge_target() -> Any:
    return core_target(model_name="judge-deploy", endpoint="https://judge.example.invalid/v1")


def _results(outcomes: list[str], target: Any = None) -> list[AttackResult]:
    atomic = core_atomic_attack(target=target or _judge_target())
    return [
        make_attack_result(make_conversation(2), outcome=o, atomic=atomic, harm_categories=["hate"])
        for o in outcomes
    ]


def _verdict(result: AttackResult, reviewer: User, value: bool) -> None:
    record_verdict(
        attack_result=result,
        reviewer=reviewer,
        scope=user_scope(reviewer),
        value=value,
        score_type="true_false",
        rationale="checked",
    )


# --- headline ---------------------------------------------------------------------------------


def test_headline_counts_rate_interval_and_errors() -> None:
    _results(["success", "success", "failure", "undetermined", "error"])
    headline = build_dashboard(None, EVERYTHING).headline
    assert headline.results == 5
    assert headline.rate.successes == 2
    assert headline.rate.n == 5
    assert headline.rate.percent == 40
    assert headline.rate.interval == (12, 77)  # Wilson 95%: 0.1176..0.7693
    assert headline.undetermined == 1
    assert headline.errors == 1
    assert headline.reviewed == 0


def test_two_of_three_is_67_percent_on_the_page(reviewer_client: Client) -> None:
    _results(["success", "success", "failure"])
    html = reviewer_client.get(reverse("scoring:dashboard")).content.decode()
    assert "<strong>67%</strong>" in html  # headline, never truncated to 66
    assert "67% success</strong> of 3 results" in html  # every bar with its n
    assert "66%" not in html
    assert "2 of n = 3" in html
    assert "95% interval 21\u201394%" in html  # an en dash


def test_share_reviewed_is_exact_as_recorded_and_after_a_rebuild(reviewer: User) -> None:
    results = _results(["success", "failure", "failure", "undetermined"])
    rebuild_tallies()
    assert build_dashboard(None, EVERYTHING).headline.reviewed == 0
    # Verdicts are counted as recorded; a second verdict counts the result once.
    _verdict(results[0], reviewer, False)
    _verdict(results[0], reviewer, True)
    _verdict(results[1], reviewer, True)
    live = build_dashboard(None, EVERYTHING).headline
    assert live.reviewed == 2
    assert live.reviewed_percent == 50
    assert live.rate.successes == 2  # results[1]'s verdict turned a failure into a success
    rebuild_tallies()
    rebuilt = build_dashboard(None, EVERYTHING).headline
    assert (rebuilt.reviewed, rebuilt.rate.successes, rebuilt.results) == (2, 2, 4)


def test_empty_dashboard_says_so(reviewer_client: Client) -> None:
    html = reviewer_client.get(reverse("scoring:dashboard")).content.decode()
    assert "No attack results in your operations yet." in html


def test_counts_are_explained_in_plain_words(reviewer_client: Client) -> None:
    _results(["success"])
    html = reviewer_client.get(reverse("scoring:dashboard")).content.decode()
    assert "Counts are exact as of this page" in html
    assert "in the same transaction that stores it" in html


def test_target_bars_use_the_model_name_with_the_hash_short(reviewer_client: Client) -> None:
    target = _judge_target()
    _results(["success"], target=target)
    rebuild_tallies()
    _results(["failure"], target=core_target(model_name="late-model"))
    dashboard = build_dashboard(None, EVERYTHING)
    chart = next(c for c in dashboard.charts if c.dimension == "target")
    names = {b.display for b in chart.bars}
    # Counted by a recount and as stored alike.
    assert names == {"OpenAIChatTarget · judge-deploy", "OpenAIChatTarget · late-model"}
    html = reviewer_client.get(reverse("scoring:dashboard")).content.decode()
    assert "OpenAIChatTarget · judge-deploy" in html
    assert f'title="{target.hash}">{target.hash[:8]}</a>' in html


@pytest.mark.parametrize("n", [3, 30])
def test_dashboard_with_headline_costs_constant_queries(
    reviewer_client: Client, reviewer: User, django_assert_num_queries: Any, n: int
) -> None:
    results = _results(["success", "failure"] * n)
    rebuild_tallies()
    for result in results[:n]:
        make_score(attack_result=result, source="human", reviewer=reviewer, value="true")
    _results(["error"] * n, target=core_target(model_name=f"m{n}"))
    # session, user, memberships; tallies; label keys; target names; latest day; trend cells;
    # the newest visible result (the live banner's marker).
    with django_assert_num_queries(9):
        response = reviewer_client.get(reverse("scoring:dashboard"))
    headline = response.context["headline"]
    assert headline.results == 3 * n
    assert headline.errors == n


# --- names on the result pages ---------------------------------------------------------------


def test_result_list_and_detail_name_the_target(reviewer_client: Client) -> None:
    target = CoreIdentifier(
        class_name="OpenAIChatTarget",
        class_module="pyrit.prompt_target.openai.openai_chat_target",
        params={"model_name": "contoso-deploy", "underlying_model_name": "gpt-4o"},
        pyrit_version="1.1.0",
    )
    result = _results(["success"], target=target)[0]
    name = "OpenAIChatTarget · gpt-4o (deployment contoso-deploy)"
    listing = reviewer_client.get(reverse("scoring:attack_result_list")).content.decode()
    assert name in listing
    assert f'title="{target.hash}">{target.hash[:8]}</span>' in listing
    detail = reviewer_client.get(
        reverse("scoring:attack_result_detail", args=[result.pk])
    ).content.decode()
    assert name in detail


def test_scores_name_their_scorer(reviewer_client: Client) -> None:
    result = _results(["success"])[0]
    score = make_score(
        attack_result=result, scorer=core_scorer("SelfAskRefusalScorer", model_name="gpt-4o-mini")
    )
    AttackResult.objects.filter(pk=result.pk).update(last_score_id=score.pk)
    detail = reviewer_client.get(
        reverse("scoring:attack_result_detail", args=[result.pk])
    ).content.decode()
    assert "SelfAskRefusalScorer · gpt-4o-mini" in detail
    assert str(score.scorer_identifier_id)[:8] in detail


# --- scorer filter ----------------------------------------------------------------------------


def _scored(scorer: Any) -> AttackResult:
    result = _results(["success"])[0]
    score = make_score(attack_result=result, scorer=scorer)
    AttackResult.objects.filter(pk=result.pk).update(last_score_id=score.pk)
    return result


def _listed(client: Client, query: str) -> set[Any]:
    response = client.get(reverse("scoring:attack_result_list") + query)
    assert response.status_code == 200
    return {row["result"].pk for row in response.context["rows"]}


def test_scorer_filter_by_class_or_hash(reviewer_client: Client) -> None:
    substring = _scored(core_scorer("SubStringScorer"))
    refusal = _scored(core_scorer("SelfAskRefusalScorer", model_name="gpt-4o-mini"))
    unscored = _results(["failure"])[0]
    assert _listed(reviewer_client, "?scorer=SubStringScorer") == {substring.pk}
    refusal_hash = Score.objects.get(attack_result=refusal).scorer_identifier_id
    assert _listed(reviewer_client, f"?scorer={refusal_hash}") == {refusal.pk}
    assert _listed(reviewer_client, "?scorer=NoSuchScorer") == set()
    assert unscored.pk in _listed(reviewer_client, "?scorer=")


def test_scorer_filter_offers_the_visible_scorers(reviewer_client: Client) -> None:
    _scored(core_scorer("SubStringScorer"))
    response = reviewer_client.get(
        reverse("scoring:attack_result_list") + "?scorer=SubStringScorer"
    )
    assert response.context["scorer_classes"] == ["SubStringScorer"]
    html = response.content.decode()
    assert '<option value="SubStringScorer" selected>SubStringScorer</option>' in html
    # Targets and attacks are no scorers.
    assert "OpenAIChatTarget" not in response.context["scorer_classes"]


@pytest.mark.parametrize("n", [3, 30])
def test_filtered_result_list_costs_constant_queries(
    reviewer_client: Client, django_assert_num_queries: Any, n: int
) -> None:
    for _ in range(n):
        _scored(core_scorer("SubStringScorer"))
    # session, user, memberships; one page of results; their latest human verdicts;
    # class-name suggestions.
    with django_assert_num_queries(6):
        response = reviewer_client.get(
            reverse("scoring:attack_result_list") + "?scorer=SubStringScorer"
        )
    assert len(response.context["rows"]) == n
