"""Attack-result list and detail, the objective page, the review queue and the dashboard."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError
from django.test import Client
from django.urls import reverse

from memory.models import AttackResult
from redteam.common.access import Scope, user_scope
from redteam.common.models import Operation
from redteam.core.textview import MAX_DISPLAY_CHARS
from scoring.models import OutcomeTally
from scoring.services import record_verdict
from scoring.tallies import build_dashboard, rebuild_tallies
from scoring.views import RESPONSE_CHARS
from tests.memory.row_factories import (
    core_atomic_attack,
    core_converter,
    core_target,
    make_attack_result,
    make_conversation,
    text_turns,
)
from tests.scoring.row_factories import make_score

pytestmark = pytest.mark.django_db


def _results(n: int, **kwargs: Any) -> list[AttackResult]:
    out = []
    for i in range(n):
        conv = make_conversation(2)
        out.append(
            make_attack_result(
                conv,
                outcome=("success", "failure", "undetermined", "error")[i % 4],
                labels={"operation": f"op{i % 2}"},
                harm_categories=["violence"] if i % 2 else ["hate"],
                **kwargs,
            )
        )
    return out


# --- list and queue --------------------------------------------------------------------------


def test_result_list_filters_and_shows_human_precedence(
    reviewer_client: Client, reviewer: User
) -> None:
    results = _results(4)
    record_verdict(
        attack_result=results[0],
        reviewer=reviewer,
        scope=user_scope(reviewer),
        value=False,
        score_type="true_false",
        rationale="no",
    )
    html = reviewer_client.get(
        reverse("scoring:attack_result_list") + "?harm_category=hate"
    ).content.decode()
    assert html.count('class="row-link"') == 2
    assert "disagrees" in html  # human false vs automated success
    assert "automated: success" in html


@pytest.mark.parametrize("n", [3, 30])
def test_result_list_query_count_is_constant(
    reviewer_client: Client, reviewer: User, django_assert_num_queries: Any, n: int
) -> None:
    for result in _results(n):
        make_score(attack_result=result, source="human", reviewer=reviewer, value="true")
    # session, user, memberships; one page of results; their latest human verdicts
    # (+reviewer); class-name suggestions.
    with django_assert_num_queries(6):
        response = reviewer_client.get(reverse("scoring:attack_result_list"))
    assert len(response.context["rows"]) == n


def test_queue_lists_unreviewed_then_disagreements(reviewer_client: Client, reviewer: User) -> None:
    agree, disagree, pending = _results(3)[0], *_results(2)
    AttackResult.objects.filter(pk__in=[agree.pk, disagree.pk, pending.pk]).update(
        outcome="success"
    )
    record_verdict(
        attack_result=agree,
        reviewer=reviewer,
        scope=user_scope(reviewer),
        value=True,
        score_type="true_false",
        rationale="yes",
    )
    record_verdict(
        attack_result=disagree,
        reviewer=reviewer,
        scope=user_scope(reviewer),
        value=0.1,
        score_type="float_scale",
        rationale="no",
    )
    unreviewed = reviewer_client.get(_queue("unreviewed")).context["rows"]
    assert pending.pk in {row["result"].pk for row in unreviewed}
    assert not {agree.pk, disagree.pk} & {row["result"].pk for row in unreviewed}
    disagreeing = reviewer_client.get(_queue("disagree"))
    assert [row["result"].pk for row in disagreeing.context["rows"]] == [disagree.pk]
    assert b"disagrees" in disagreeing.content


def _queue(slug: str) -> str:
    return reverse("scoring:queue_detail", args=[slug])


def test_queue_rejects_unknown_views(reviewer_client: Client) -> None:
    Operation.objects.create(name="op-a")  # the reviewer joins it: a member of some operation
    assert reviewer_client.get(reverse("scoring:review_queue") + "?view=all").status_code == 400
    assert reviewer_client.get(_queue("all")).status_code == 404


def test_former_queue_links_land_on_the_built_in_queues(reviewer_client: Client) -> None:
    Operation.objects.create(name="op-a")
    response = reviewer_client.get(reverse("scoring:review_queue") + "?view=disagree")
    assert (response.status_code, response["Location"]) == (302, _queue("disagree"))
    # With more filters, the results list keeps them all.
    response = reviewer_client.get(
        reverse("scoring:review_queue") + "?view=unreviewed&outcome=success"
    )
    assert response["Location"] == (
        reverse("scoring:attack_result_list") + "?outcome=success&review=unreviewed"
    )


@pytest.mark.parametrize("n", [3, 30])
def test_queue_query_count_is_constant(
    reviewer_client: Client, reviewer: User, django_assert_num_queries: Any, n: int
) -> None:
    for result in _results(n):
        make_score(attack_result=result, source="human", reviewer=reviewer, value="false")
    AttackResult.objects.update(outcome="success")
    # session, user, memberships; the queue; its counts; the viewer's verdicts today; one
    # page of disagreeing results never skipped, then the skipped ones filling the page;
    # their latest human verdicts.
    with django_assert_num_queries(9):
        response = reviewer_client.get(_queue("disagree"))
    assert len(response.context["rows"]) == n


# --- detail and objective ---------------------------------------------------------------------


def test_result_detail_shows_everything(reviewer_client: Client) -> None:
    conv = make_conversation(2)
    result = make_attack_result(conv, outcome="error", related=[("adv-1", "adversarial")])
    AttackResult.objects.filter(pk=result.pk).update(
        error_message="boom", error_type="RuntimeError", error_traceback="Traceback <script>"
    )
    score = make_score(piece=conv.pieces.get(sequence=1), value="false")
    AttackResult.objects.filter(pk=result.pk).update(last_score_id=score.id)
    html = reviewer_client.get(
        reverse("scoring:attack_result_detail", args=[result.pk])
    ).content.decode()
    assert "RuntimeError" in html
    assert "Traceback &lt;script&gt;" in html
    assert "adv-1" in html
    assert "adversarial" in html
    assert "SubStringScorer" in html
    assert "AtomicAttack" in html


@pytest.mark.parametrize("n", [3, 30])
def test_result_detail_query_count_is_constant(
    reviewer_client: Client, reviewer: User, django_assert_num_queries: Any, n: int
) -> None:
    result = make_attack_result(
        make_conversation(2), related=[(f"r{i}", "pruned") for i in range(n)]
    )
    for _ in range(n):
        make_score(attack_result=result, source="human", reviewer=reviewer)
    # session, user, memberships; result (+operation, dump, last response, conversation);
    # related conversations; verdicts and the last score (+scorer dump, reviewer).
    # + the operation's sensitive harm categories (reviewer safety).
    with django_assert_num_queries(7):
        reviewer_client.get(reverse("scoring:attack_result_detail", args=[result.pk]))


def test_objective_page_shows_every_attempt_side_by_side(reviewer_client: Client) -> None:
    first = make_attack_result(make_conversation(2), objective="Same goal", outcome="failure")
    make_attack_result(
        make_conversation(2),
        objective="Same goal",
        outcome="success",
        atomic=core_atomic_attack("CrescendoAttack", converters=[core_converter()]),
    )
    make_attack_result(make_conversation(2), objective="Other goal")
    response = reviewer_client.get(
        reverse("scoring:objective_detail", args=[first.objective_sha256])
    )
    html = response.content.decode()
    assert len(response.context["attempts"]) == 2
    assert "CrescendoAttack" in html
    assert "PromptSendingAttack" in html
    assert "diff attack vs first" in html


def test_objective_page_reads_only_the_start_it_shows_of_long_values(
    reviewer_client: Client,
) -> None:
    objective = "goal " * 30_000
    reply = "r" * 10_000
    result = make_attack_result(make_conversation(text_turns(2, prefix=reply)), objective=objective)
    response = reviewer_client.get(
        reverse("scoring:objective_detail", args=[result.objective_sha256])
    )
    shown = response.context["objective"]
    assert (shown.shown, shown.length, shown.truncated) == (MAX_DISPLAY_CHARS, len(objective), True)
    attempt = response.context["attempts"][0]
    expected = len(f"{reply}assistant reply 1")
    assert (attempt.response.shown, attempt.response.length) == (RESPONSE_CHARS, expected)
    # The values themselves stayed in the database.
    assert "objective" in attempt.result.get_deferred_fields()
    assert {"original_value", "converted_value"} <= (
        attempt.result.last_response.get_deferred_fields()
    )


def test_objective_page_404s(reviewer_client: Client) -> None:
    Operation.objects.create(name="op-a")  # the reviewer joins it: a member of some operation
    assert (
        reviewer_client.get(reverse("scoring:objective_detail", args=["f" * 64])).status_code == 404
    )
    # Not a digest: the URL never reaches the view (and cannot be reversed).
    for bad in ("xyz", "F" * 64, "f" * 63 + "g", "f" * 64 + "%0A"):
        assert reviewer_client.get(f"/objectives/{bad}/").status_code == 404


@pytest.mark.parametrize("n", [3, 30])
def test_objective_page_query_count_is_constant(
    reviewer_client: Client, django_assert_num_queries: Any, n: int
) -> None:
    results = [make_attack_result(make_conversation(2), objective="goal") for _ in range(n)]
    # session, user, memberships; attempts (+operation, last response, identifier); their
    # verdicts and last scores.
    # + the operation's sensitive harm categories (reviewer safety).
    with django_assert_num_queries(6):
        reviewer_client.get(reverse("scoring:objective_detail", args=[results[0].objective_sha256]))


# --- dashboard --------------------------------------------------------------------------------


def _bar(dashboard: Any, dimension: str, key: str) -> dict[str, int]:
    chart = next(c for c in dashboard.charts if c.dimension == dimension)
    counts: dict[str, int] = next(b for b in chart.bars if b.key == key).counts
    return counts


def test_dashboard_counts_outcomes_per_dimension() -> None:
    target = core_target("AzureMLChatTarget")
    _results(
        4, atomic=core_atomic_attack(target=target, converters=[core_converter("Base64Converter")])
    )
    dashboard = build_dashboard("operation", Scope.everything_scope())
    assert _bar(dashboard, "harm_category", "hate") == {
        "success": 1,
        "failure": 0,
        "undetermined": 1,
        "error": 0,
    }
    assert _bar(dashboard, "harm_category", "violence") == {
        "success": 0,
        "failure": 1,
        "undetermined": 0,
        "error": 1,
    }
    assert sum(_bar(dashboard, "attack", "PromptSendingAttack").values()) == 4
    assert sum(_bar(dashboard, "converter", "Base64Converter").values()) == 4
    assert sum(_bar(dashboard, "target", target.hash).values()) == 4
    assert _bar(dashboard, "label:operation", "op1")["failure"] == 1
    assert dashboard.label_keys == ["operation"]


def test_dashboard_adds_results_and_verdicts_newer_than_the_snapshot(reviewer: User) -> None:
    old = _results(2)
    # A snapshot that counts the two results.
    rebuild_tallies()
    assert OutcomeTally.objects.exists()
    assert (
        _bar(build_dashboard(None, Scope.everything_scope()), "harm_category", "hate")["success"]
        == 1
    )
    record_verdict(
        attack_result=old[0],
        reviewer=reviewer,
        scope=user_scope(reviewer),
        value=False,
        score_type="true_false",
        rationale="no",
    )
    new = make_attack_result(make_conversation(2), outcome="success", harm_categories=["hate"])
    counts = _bar(build_dashboard(None, Scope.everything_scope()), "harm_category", "hate")
    # old[0] moved from success to failure (human precedence); `new` adds one success.
    assert counts == {"success": 1, "failure": 1, "undetermined": 0, "error": 0}
    rebuild_tallies()
    assert _bar(build_dashboard(None, Scope.everything_scope()), "harm_category", "hate") == counts
    assert new.pk


def test_dashboard_page_links_bars_to_filtered_conversations(reviewer_client: Client) -> None:
    _results(2)
    html = reviewer_client.get(
        reverse("scoring:dashboard") + "?label_key=operation"
    ).content.decode()
    assert '/conversations/?harm_category=hate"' in html
    assert '/conversations/?harm_category=hate&amp;outcome=success"' in html
    assert '/conversations/?label=operation%3Aop0"' in html
    assert "By label operation" in html


def test_dashboard_has_nothing_to_rebuild(reviewer_client: Client, reader_client: Client) -> None:
    """Counts are kept by every write: the page offers no rebuild (a repair command does)."""
    Operation.objects.create(name="op-a")  # both join it, with their role
    assert reader_client.post(reverse("scoring:dashboard")).status_code == 405
    assert reviewer_client.post(reverse("scoring:dashboard")).status_code == 405
    assert b"Rebuild counts" not in reviewer_client.get(reverse("scoring:dashboard")).content


@pytest.mark.parametrize("n", [3, 30])
def test_dashboard_query_count_is_constant(
    reviewer_client: Client, reviewer: User, django_assert_num_queries: Any, n: int
) -> None:
    results = _results(n)
    rebuild_tallies()
    for result in results:
        make_score(attack_result=result, source="human", reviewer=reviewer, value="true")
    _results(n)
    # session, user, memberships; tallies of the shown dimensions (summed over the viewer's
    # operations); label keys; the shown targets' names; the latest day; the trend's cells;
    # the newest visible result (the live banner's marker).
    with django_assert_num_queries(9):
        response = reviewer_client.get(
            reverse("scoring:dashboard") + "?label_key=operation&trend_by=label&period=day"
        )
    assert response.context["data"].headline.results == 2 * n
    # The first n won by their verdicts; of the next n, every fourth is an automated success.
    assert response.context["data"].headline.rate.successes == n + (n + 3) // 4


def test_refresh_dashboard_command_recounts_and_checks_the_tallies() -> None:
    from io import StringIO

    from django.core.management import call_command

    from scoring.tallies import tally_totals

    _results(2)
    kept = tally_totals()
    out = StringIO()
    call_command("refresh_dashboard", "--check", stdout=out)
    assert "Counted 2 attack results" in out.getvalue()
    assert "the kept tallies equalled the recount" in out.getvalue()
    assert tally_totals() == kept
    # Damage the tallies as a change outside the services would: --check says so, and repairs.
    OutcomeTally.objects.filter(dimension="all").update(count=0)
    with pytest.raises(CommandError):
        call_command("refresh_dashboard", "--check", stdout=StringIO())
    assert tally_totals() == kept
