"""My recent verdicts: the viewer's reviews newest first, with edit and undo (audited, history
kept, outcome following), only for their author while a reviewer, at constant query cost."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from memory.models import AttackResult, Conversation, Score
from redteam.common.access import user_scope
from redteam.common.models import AuditEvent, Operation
from scoring.models import ReviewQueue
from scoring.services import record_review
from scoring.verdict_fields import VerdictAnswers, VerdictFields
from tests.memory.row_factories import make_attack_result, make_conversation
from tests.scoring.row_factories import make_user

pytestmark = pytest.mark.django_db

CATEGORIES = ("refused", "partial", "complied")
MINE = "scoring:my_verdicts"


def _result(outcome: str = "success") -> AttackResult:
    return make_attack_result(make_conversation(2), outcome=outcome)


def _review(
    result: AttackResult, reviewer: User, *, fields: VerdictFields | None = None, **answers: Any
) -> uuid.UUID:
    token = uuid.uuid4()
    record_review(
        attack_result=result,
        reviewer=reviewer,
        scope=user_scope(reviewer),
        answers=VerdictAnswers(
            rationale=answers.pop("rationale", "Judged."),
            fields=fields or VerdictFields(),
            **answers,
        ),
        submission=token,
    )
    return token


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_lists_the_viewers_reviews_newest_first_with_links(
    reviewer_client: Client, reviewer: User
) -> None:
    first, second = _result(), _result()
    fields = VerdictFields(true_false=True, categories=CATEGORIES, notes=True)
    _review(first, reviewer, objective=False, rationale="<b>refused</b>")
    _review(second, reviewer, fields=fields, objective=True, category="complied", notes="turn 2")
    _review(first, make_user("kim"), objective=True, rationale="someone else's")
    response = reviewer_client.get(reverse(MINE))
    assert response.status_code == 200
    rows = response.context["rows"]
    # One row per review (the two-answer review is one row), the viewer's only.
    assert [r.attack_result.pk for r in rows] == [second.pk, first.pk]
    assert rows[0].category == "complied"
    assert rows[0].objective.score_value == "true"
    html = response.content.decode()
    assert reverse("scoring:conversation_detail", args=[second.conversation_id]) in html
    assert "someone else" not in html
    assert "&lt;b&gt;refused&lt;/b&gt;" in html
    assert "turn 2" in html
    assert html.count(">Undo</button>") == 2


@pytest.mark.parametrize("n", [3, 30])
def test_query_count_is_constant(
    reviewer_client: Client, reviewer: User, django_assert_num_queries: Any, n: int
) -> None:
    fields = VerdictFields(true_false=True, scale=True, categories=CATEGORIES)
    for result in [_result() for _ in range(n)]:
        _review(result, reviewer, fields=fields, objective=True, scale=0.5, category="partial")
    # session, user, memberships; one page of reviews (with their results); their scores.
    with django_assert_num_queries(5):
        response = reviewer_client.get(reverse(MINE))
    assert len(response.context["rows"]) == n


def test_pages_are_keyset_cursors(reviewer_client: Client, reviewer: User) -> None:
    for result in [_result() for _ in range(3)]:
        _review(result, reviewer, objective=True)
    page = reviewer_client.get(reverse(MINE) + "?size=2")
    assert len(page.context["rows"]) == 2
    older = reviewer_client.get(reverse(MINE) + f"?size=2&cursor={page.context['next_cursor']}")
    assert len(older.context["rows"]) == 1
    assert reviewer_client.get(reverse(MINE) + "?cursor=garbage").status_code == 400


def test_edit_records_a_correction_audited_with_the_earlier_value_kept(
    reviewer_client: Client, reviewer: User
) -> None:
    result = _result(outcome="success")
    token = _review(result, reviewer, objective=False, rationale="It refused.")
    assert Conversation.objects.get(pk=result.conversation_id).outcome == "failure"
    url = reverse("scoring:edit_verdict", args=[token])
    form = reviewer_client.get(url)
    assert form.status_code == 200
    assert "It refused." in form.content.decode()
    correction = str(uuid.uuid4())
    posted = {"objective": "true", "rationale": "It complied after all.", "submission": correction}
    assert reviewer_client.post(url, posted).status_code == 302
    old = Score.objects.get(verdict_submission=token)
    assert old.withdrawn_at is not None
    assert str(old.superseded_by) == correction
    assert old.score_value == "false"
    assert old.score_rationale == "It refused."
    assert Conversation.objects.get(pk=result.conversation_id).outcome == "success"
    event = AuditEvent.objects.get(action="verdict.edited")
    assert event.actor == reviewer
    assert event.detail["previous"][0]["rationale"] == "It refused."
    listed = reviewer_client.get(reverse(MINE))
    rows = listed.context["rows"]
    assert [(r.withdrawn, r.head.score_value) for r in rows] == [(False, "true"), (True, "false")]
    assert "replaced" in listed.content.decode()
    # The replaced review can no longer be edited or undone.
    assert reviewer_client.get(url).status_code == 302
    assert Score.objects.filter(source="human").count() == 2


def test_a_rejected_edit_keeps_every_typed_value(reviewer_client: Client, reviewer: User) -> None:
    result = _result()
    fields = VerdictFields(true_false=True, scale=True)
    token = _review(result, reviewer, fields=fields, objective=False, scale=0.2)
    url = reverse("scoring:edit_verdict", args=[token])
    posted = {
        "objective": "true",
        "scale": "0.9",
        "rationale": "   ",
        "notes": "typed notes",
        "submission": str(uuid.uuid4()),
    }
    response = reviewer_client.post(url, posted)
    assert response.status_code == 400
    html = response.content.decode()
    assert "typed notes" in html
    assert 'value="0.9"' in html
    assert not Score.objects.filter(withdrawn_at__isnull=False).exists()
    # The service's own refusal (nothing answered) comes back the same way.
    response = reviewer_client.post(
        url, {"rationale": "kept rationale", "submission": str(uuid.uuid4())}
    )
    assert response.status_code == 400
    assert "Answer at least one" in response.content.decode()
    assert "kept rationale" in response.content.decode()


def test_editing_a_category_offers_its_queues_list(reviewer_client: Client, reviewer: User) -> None:
    ReviewQueue.objects.create(name="Refusals", slug="refusals", categories=list(CATEGORIES))
    result = _result()
    fields = VerdictFields(true_false=False, categories=CATEGORIES)
    token = _review(result, reviewer, fields=fields, category="partial")
    url = reverse("scoring:edit_verdict", args=[token])
    form = reviewer_client.get(url).context["form"]
    assert [c for c, _ in form.fields["category"].choices] == list(CATEGORIES)
    posted = {"category": "refused", "rationale": "Refused.", "submission": str(uuid.uuid4())}
    assert reviewer_client.post(url, posted).status_code == 302
    [standing] = Score.objects.filter(source="human", withdrawn_at__isnull=True)
    assert standing.score_metadata["category"] == "refused"


def test_undo_withdraws_audited_and_the_automated_outcome_returns(
    reviewer_client: Client, reviewer: User
) -> None:
    result = _result(outcome="success")
    token = _review(result, reviewer, objective=False)
    url = reverse("scoring:undo_verdict", args=[token])
    assert reviewer_client.get(url).status_code == 405
    assert reviewer_client.post(url).status_code == 302
    assert reviewer_client.post(url).status_code == 302  # a double click changes nothing
    assert AuditEvent.objects.filter(action="verdict.withdrawn").count() == 1
    assert Conversation.objects.get(pk=result.conversation_id).outcome == "success"
    [row] = reviewer_client.get(reverse(MINE)).context["rows"]
    assert row.withdrawn
    assert not row.can_change


def test_another_users_verdict_is_a_404(reviewer: User) -> None:
    token = _review(_result(), reviewer, objective=True)
    other = _client(make_user("kim"))
    assert other.get(reverse("scoring:edit_verdict", args=[token])).status_code == 404
    assert other.post(reverse("scoring:undo_verdict", args=[token])).status_code == 404
    assert other.get(reverse(MINE)).context["rows"] == []
    assert not Score.objects.filter(withdrawn_at__isnull=False).exists()


def test_an_author_no_longer_reviewer_may_not_change_it(
    reviewer_client: Client, reviewer: User
) -> None:
    token = _review(_result(), reviewer, objective=True)
    reviewer.memberships.update(role="read-only")
    assert reviewer_client.get(reverse("scoring:edit_verdict", args=[token])).status_code == 403
    assert reviewer_client.post(reverse("scoring:undo_verdict", args=[token])).status_code == 403
    [row] = reviewer_client.get(reverse(MINE)).context["rows"]
    assert not row.can_change
    assert not Score.objects.filter(withdrawn_at__isnull=False).exists()


def test_an_author_removed_from_the_operation_gets_404(
    reviewer_client: Client, reviewer: User
) -> None:
    result = _result()
    token = _review(result, reviewer, objective=True)
    Operation.objects.create(name="op-elsewhere")  # the reviewer keeps a role there
    reviewer.memberships.filter(operation=result.operation).delete()
    assert reviewer_client.post(reverse("scoring:undo_verdict", args=[token])).status_code == 404
    assert reviewer_client.get(reverse("scoring:edit_verdict", args=[token])).status_code == 404
    assert reviewer_client.get(reverse(MINE)).context["rows"] == []
    assert not Score.objects.filter(withdrawn_at__isnull=False).exists()


def test_a_withdrawn_verdict_leaves_exports_and_the_api(
    reviewer_client: Client, reviewer: User
) -> None:
    result = _result(outcome="success")
    kept = _review(result, reviewer, objective=True)
    gone = _review(result, reviewer, objective=False)
    assert reviewer_client.post(reverse("scoring:undo_verdict", args=[gone])).status_code == 302
    standing = {str(s.pk) for s in Score.objects.filter(verdict_submission=kept)}
    withdrawn = {str(s.pk) for s in Score.objects.filter(verdict_submission=gone)}
    assert standing
    assert withdrawn
    assert (
        set(Score.objects.standing().values_list("pk", flat=True))
        & {uuid.UUID(w) for w in withdrawn}
        == set()
    )
    listed = reviewer_client.get("/api/v1/scores/", {"page_size": 100}).json()["results"]
    assert standing <= {row["id"] for row in listed}
    assert not withdrawn & {row["id"] for row in listed}
