"""Human verdicts: the record_verdict service, the verdict POST, roles, and the audit trail."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.test import Client
from django.urls import reverse

from memory.models import ComponentIdentifier, Conversation, IdentifierDump, Score
from redteam.common.access import user_scope
from redteam.common.models import AuditEvent, Operation
from scoring.services import record_verdict
from tests.access import grant
from tests.memory.row_factories import make_attack_result, make_conversation
from tests.scoring.row_factories import make_user

pytestmark = pytest.mark.django_db


def _token() -> str:
    """A fresh verdict-form submission token, as the conversation page renders one."""
    return str(uuid.uuid4())


@pytest.fixture
def result() -> Any:
    conv = make_conversation(2)
    return make_attack_result(conv, outcome="success", harm_categories=["violence"])


def test_record_verdict_stores_a_pyrit_shaped_human_score(result: Any, reviewer: User) -> None:
    score = record_verdict(
        attack_result=result,
        reviewer=reviewer,
        scope=user_scope(reviewer),
        value=False,
        score_type="true_false",
        rationale="The reply only restates the question.",
    )
    assert score.source == "human"
    assert (score.score_type, score.score_value, score.status) == (
        "true_false",
        "false",
        "complete",
    )
    assert score.score_rationale == "The reply only restates the question."
    assert score.attack_result_id == result.pk
    assert score.reviewer == reviewer
    assert score.message_piece_id == result.last_response.original_prompt_id
    assert score.score_category == ["violence"]
    assert score.objective == result.objective
    scorer = ComponentIdentifier.objects.get(pk=score.scorer_identifier_id)
    assert (scorer.class_name, scorer.params) == ("HumanReviewScorer", {"reviewer": "rita"})
    dump = json.loads(IdentifierDump.objects.get(pk=score.scorer_dump_id).dump_json)
    assert dump["hash"] == scorer.hash
    assert dump["reviewer"] == "rita"


def test_record_verdict_audits_and_updates_the_list_summary(result: Any, reviewer: User) -> None:
    record_verdict(
        attack_result=result,
        reviewer=reviewer,
        scope=user_scope(reviewer),
        value=0.2,
        score_type="float_scale",
        rationale="weak",
    )
    event = AuditEvent.objects.get(action="verdict.recorded")
    assert (event.actor, event.object_id) == (reviewer, str(result.pk))
    assert event.detail["score_value"] == "0.2"
    # A 0.2 verdict means "not achieved": the conversation list now shows failure.
    assert Conversation.objects.get(pk=result.conversation_id).outcome == "failure"


def test_same_reviewer_reuses_one_scorer_identifier(result: Any, reviewer: User) -> None:
    for value in (True, False):
        record_verdict(
            attack_result=result,
            reviewer=reviewer,
            scope=user_scope(reviewer),
            value=value,
            score_type="true_false",
            rationale="r",
        )
    scores = Score.objects.filter(source="human")
    assert scores.count() == 2
    assert len({s.scorer_identifier_id for s in scores}) == 1


@pytest.mark.parametrize(
    ("value", "score_type"),
    [
        (1.5, "float_scale"),
        (-0.1, "float_scale"),
        (float("nan"), "float_scale"),
        ("yes", "true_false"),
        (True, "unknown"),
    ],
)
def test_record_verdict_rejects_bad_values(
    result: Any, reviewer: User, value: Any, score_type: str
) -> None:
    with pytest.raises(ValidationError):
        record_verdict(
            attack_result=result,
            reviewer=reviewer,
            scope=user_scope(reviewer),
            value=value,
            score_type=score_type,
            rationale="r",
        )
    assert not Score.objects.filter(source="human").exists()
    assert not AuditEvent.objects.filter(action="verdict.recorded").exists()


def test_record_verdict_requires_a_rationale(result: Any, reviewer: User) -> None:
    with pytest.raises(ValidationError):
        record_verdict(
            attack_result=result,
            reviewer=reviewer,
            scope=user_scope(reviewer),
            value=True,
            score_type="true_false",
            rationale="  ",
        )


def test_read_only_users_cannot_record_verdicts(result: Any, reader: User) -> None:
    with pytest.raises(PermissionDenied):
        record_verdict(
            attack_result=result,
            reviewer=reader,
            scope=user_scope(reader),
            value=True,
            score_type="true_false",
            rationale="r",
        )


def test_verdict_post_records_and_returns_to_the_page(reviewer_client: Client, result: Any) -> None:
    url = reverse("scoring:verdict", args=[result.pk])
    response = reviewer_client.post(
        url, {"verdict": "false", "rationale": "Refusal, not help.", "submission": _token()}
    )
    assert response.status_code == 302
    assert response["Location"].endswith("#verdicts")
    page = reviewer_client.get(response["Location"]).content.decode()
    assert "Verdict recorded." in page
    assert "Refusal, not help." in page
    assert 'class="badge failure" id="effective-outcome">failure<' in page
    assert "disagrees with automated success" in page


def test_float_verdict_post(reviewer_client: Client, result: Any) -> None:
    url = reverse("scoring:verdict", args=[result.pk])
    reviewer_client.post(
        url, {"verdict": "float", "value": "0.75", "rationale": "partial", "submission": _token()}
    )
    score = Score.objects.get(source="human")
    assert (score.score_type, score.score_value) == ("float_scale", "0.75")


@pytest.mark.parametrize(
    "data",
    [
        {"verdict": "float", "rationale": "no value"},
        {"verdict": "float", "value": "2", "rationale": "too big"},
        {"verdict": "maybe", "rationale": "x"},
        {"verdict": "true", "rationale": ""},
        {"verdict": "true", "rationale": "no token"},
        {"verdict": "true", "rationale": "bad token", "submission": "not-a-uuid"},
    ],
)
def test_invalid_verdict_posts_store_nothing_and_say_why(
    reviewer_client: Client, result: Any, data: dict[str, str]
) -> None:
    data = {"submission": _token(), **data} if "token" not in data["rationale"] else data
    response = reviewer_client.post(reverse("scoring:verdict", args=[result.pk]), data, follow=True)
    assert "Verdict not recorded" in response.content.decode()
    assert not Score.objects.filter(source="human").exists()


def test_read_only_post_is_refused_with_403(reader_client: Client, result: Any) -> None:
    response = reader_client.post(
        reverse("scoring:verdict", args=[result.pk]), {"verdict": "true", "rationale": "x"}
    )
    assert response.status_code == 403
    assert not Score.objects.filter(source="human").exists()


def test_anonymous_post_goes_to_login_and_get_is_not_allowed(
    client: Client, reviewer_client: Client, result: Any
) -> None:
    url = reverse("scoring:verdict", args=[result.pk])
    assert client.post(url, {"verdict": "true", "rationale": "x"}).status_code == 302
    assert reviewer_client.get(url).status_code == 405
    assert not Score.objects.filter(source="human").exists()


def test_verdict_for_unknown_result_is_404(reviewer_client: Client) -> None:
    Operation.objects.create(name="op-a")  # the reviewer joins it: a member of some operation
    url = reverse("scoring:verdict", args=["00000000-0000-0000-0000-000000000000"])
    assert reviewer_client.post(url, {"verdict": "true", "rationale": "x"}).status_code == 404


def test_record_and_next_moves_to_the_next_unreviewed_result(reviewer_client: Client) -> None:
    older = make_attack_result(make_conversation(2))
    newer = make_attack_result(make_conversation(2))
    response = reviewer_client.post(
        reverse("scoring:verdict", args=[newer.pk]),
        {"verdict": "true", "rationale": "x", "queue": "unreviewed", "submission": _token()},
    )
    expected = reverse("scoring:conversation_detail", args=[older.conversation_id])
    assert response["Location"] == f"{expected}?queue=unreviewed"


@pytest.mark.parametrize(
    ("role", "archived", "allowed"),
    [
        ("read-only", False, False),
        ("reviewer", False, True),
        ("adjudicator", False, True),
        ("lead", False, True),
        ("lead", True, False),
    ],
)
def test_verdicts_need_the_reviewer_role_in_a_live_operation(
    result: Any, role: str, archived: bool, allowed: bool
) -> None:
    user = User.objects.create_user("vera")
    grant(user, result.operation, role)
    Operation.objects.filter(pk=result.operation_id).update(archived=archived)

    def record() -> Score:
        return record_verdict(
            attack_result=result,
            reviewer=user,
            scope=user_scope(user),
            value=True,
            score_type="true_false",
            rationale="r",
        )

    if allowed:
        assert record().operation_id == result.operation_id
    else:
        with pytest.raises(PermissionDenied):
            record()
        assert not Score.objects.filter(source="human").exists()


def test_a_second_reviewer_gets_a_distinct_scorer_identifier(result: Any, reviewer: User) -> None:
    other = make_user("sam", "reviewer")
    a = record_verdict(
        attack_result=result,
        reviewer=reviewer,
        scope=user_scope(reviewer),
        value=True,
        score_type="true_false",
        rationale="r",
    )
    b = record_verdict(
        attack_result=result,
        reviewer=other,
        scope=user_scope(other),
        value=True,
        score_type="true_false",
        rationale="r",
    )
    assert a.scorer_identifier_id != b.scorer_identifier_id
