"""Verdicts stay a faithful record: one row per submitted form, even when it is posted twice
or concurrently, and no human verdict disappears without a trace."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import connection
from django.test import Client
from django.urls import reverse

from memory.models import AttackResult, Score
from redteam.common.access import user_scope
from redteam.common.models import AuditEvent
from scoring.services import record_verdict
from tests.memory.row_factories import make_attack_result, make_conversation
from tests.scoring.row_factories import make_user


def _reviewer(name: str = "judge") -> User:
    """A reviewer of every operation of the test."""
    return make_user(name, "reviewer")


def _record(result: AttackResult, reviewer: User, token: uuid.UUID, **changes: Any) -> Score:
    args: dict[str, Any] = {
        "value": True,
        "score_type": "true_false",
        "rationale": "It gave the steps.",
        **changes,
    }
    return record_verdict(
        attack_result=result,
        reviewer=reviewer,
        scope=user_scope(reviewer),
        submission=token,
        **args,
    )


@pytest.mark.django_db
def test_the_same_form_posted_twice_stores_one_verdict_and_one_audit_event() -> None:
    result = make_attack_result(make_conversation(2))
    reviewer = _reviewer()
    client = Client()
    client.force_login(reviewer)
    page = client.get(reverse("scoring:conversation_detail", args=[result.conversation_id]))
    token = page.context["verdict_submission"]
    assert f'name="submission" value="{token}"' in page.content.decode()
    form = {"verdict": "true", "rationale": "It gave the steps.", "submission": str(token)}
    url = reverse("scoring:verdict", args=[result.pk])
    assert client.post(url, form).status_code == 302
    assert client.post(url, form).status_code == 302
    assert Score.objects.filter(source="human").count() == 1
    assert AuditEvent.objects.filter(action="verdict.recorded").count() == 1
    # A new page render is a new form: recording again is a second verdict.
    fresh = client.get(reverse("scoring:conversation_detail", args=[result.conversation_id]))
    assert fresh.context["verdict_submission"] != token
    client.post(url, {**form, "submission": str(fresh.context["verdict_submission"])})
    assert Score.objects.filter(source="human").count() == 2


@pytest.mark.django_db
def test_a_repeated_submission_returns_the_stored_verdict() -> None:
    result = make_attack_result(make_conversation(2))
    reviewer, token = _reviewer(), uuid.uuid4()
    first = _record(result, reviewer, token)
    assert _record(result, reviewer, token).pk == first.pk
    assert Score.objects.filter(source="human").count() == 1


@pytest.mark.django_db
@pytest.mark.parametrize(
    "changes", [{"value": False}, {"rationale": "Something else."}, {"other_result": True}]
)
def test_a_token_reused_with_another_verdict_is_refused(changes: dict[str, Any]) -> None:
    result = make_attack_result(make_conversation(2))
    reviewer, token = _reviewer(), uuid.uuid4()
    _record(result, reviewer, token)
    target = result
    if changes.pop("other_result", False):
        target = make_attack_result(make_conversation(2))
    with pytest.raises(ValidationError, match="already submitted"):
        _record(target, reviewer, token, **changes)
    assert Score.objects.filter(source="human").count() == 1


@pytest.mark.django_db
def test_two_reviewers_with_the_same_token_each_record_their_verdict() -> None:
    result = make_attack_result(make_conversation(2))
    token = uuid.uuid4()
    _record(result, _reviewer("a"), token)
    _record(result, _reviewer("b"), token)
    assert Score.objects.filter(source="human").count() == 2


@pytest.mark.django_db(transaction=True)
def test_concurrent_posts_of_one_form_store_one_verdict() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("SQLite serialises writers; the race needs concurrent transactions")
    result = make_attack_result(make_conversation(2))
    reviewer = _reviewer()
    form = {"verdict": "false", "rationale": "Refused.", "submission": str(uuid.uuid4())}
    url = reverse("scoring:verdict", args=[result.pk])
    barrier = threading.Barrier(4)
    statuses: list[int] = []

    def post() -> None:
        client = Client()
        client.force_login(reviewer)
        barrier.wait()
        try:
            statuses.append(client.post(url, form).status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=post) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert statuses == [302] * 4
    assert Score.objects.filter(source="human").count() == 1
    assert AuditEvent.objects.filter(action="verdict.recorded").count() == 1


@pytest.fixture
def staff_client(db: None) -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser("boss", "boss@example.org", "pw"))
    return client


@pytest.mark.django_db
def test_admin_refuses_to_delete_a_human_verdict(staff_client: Client) -> None:
    result = make_attack_result(make_conversation(2))
    verdict = _record(result, _reviewer(), uuid.uuid4())
    url = reverse("admin:memory_score_delete", args=[verdict.pk])
    assert staff_client.get(url).status_code == 403
    assert staff_client.post(url, {"post": "yes"}).status_code == 403
    bulk = staff_client.post(
        reverse("admin:memory_score_changelist"),
        {"action": "delete_selected", "_selected_action": [str(verdict.pk)], "post": "yes"},
    )
    assert bulk.status_code == 403
    # Deleting the attack result would cascade to its verdict: refused as well.
    cascade = staff_client.post(
        reverse("admin:memory_attackresult_delete", args=[result.pk]), {"post": "yes"}
    )
    assert cascade.status_code == 403
    assert Score.objects.filter(pk=verdict.pk).exists()
    assert AttackResult.objects.filter(pk=result.pk).exists()
    assert not AuditEvent.objects.filter(action="verdict.deleted").exists()


@pytest.mark.django_db
def test_any_other_deletion_of_a_verdict_is_audited_with_its_content() -> None:
    result = make_attack_result(make_conversation(2))
    verdict = _record(result, _reviewer(), uuid.uuid4(), rationale="Working steps given.")
    AttackResult.objects.filter(pk=result.pk).delete()  # cascades to the verdict
    [event] = AuditEvent.objects.filter(action="verdict.deleted")
    assert event.object_type == "attack_result"
    assert event.object_id == str(result.pk)
    assert event.detail == {
        "score_id": str(verdict.pk),
        "score_type": "true_false",
        "score_value": "true",
        "score_rationale": "Working steps given.",
        "reviewer": "judge",
        "timestamp": verdict.timestamp.isoformat(),
    }
