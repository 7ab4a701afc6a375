"""Blind double review: a result matching a ReviewRequirement needs several independent
verdicts; until then each reviewer sees only their own (pages, API, exports), the automated
outcome stands, disagreement goes to adjudication, and the final verdict wins."""

from __future__ import annotations

import io
import json
import uuid
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from memory.models import AttackResult, Conversation, ReviewStatus, Score
from redteam.common.access import user_scope
from redteam.common.models import ApiKey, AuditEvent, Operation
from scoring.adjudication import MIN_SHARED_ITEMS, reviewer_stats
from scoring.blind import pending_result_ids, refresh_review_states, settled_q
from scoring.models import ReviewRequirement
from scoring.review import human_scores, latest_human_verdicts
from scoring.services import record_review, withdraw_review
from scoring.verdict_fields import VerdictAnswers, VerdictFields
from tests.access import bind_everywhere
from tests.memory.row_factories import make_attack_result, make_conversation
from tests.scoring.row_factories import make_user

pytestmark = pytest.mark.django_db

OP = "op_blind"
WITH_NOTES = VerdictFields(true_false=True, notes=True)
SECRET_RATIONALE = "ALICE-SECRET-RATIONALE-7f3a"
SECRET_NOTES = "ALICE-SECRET-NOTES-91bc"


def _result(
    objective: str = "Explain how to pick a lock", outcome: str = "failure"
) -> AttackResult:
    conversation = make_conversation(2, labels={"operation": OP})
    return make_attack_result(
        conversation, objective=objective, outcome=outcome, labels={"operation": OP}
    )


def _require(n: int = 2) -> ReviewRequirement:
    operation, _ = Operation.objects.get_or_create(name=OP)
    return ReviewRequirement.objects.create(
        operation=operation, label_key="operation", label_value=OP, required_verdicts=n
    )


def _review(
    result: AttackResult,
    user: User,
    value: bool,
    rationale: str = "Reasoned verdict.",
    notes: str = "",
) -> list[Score]:
    return record_review(
        attack_result=result,
        reviewer=user,
        scope=user_scope(user),
        answers=VerdictAnswers(
            rationale=rationale, objective=value, notes=notes, fields=WITH_NOTES
        ),
        submission=None,
    )


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def world() -> dict[str, Any]:
    """A result under a 2-verdict requirement and the team around it."""
    result = _result()
    _require(2)
    return {
        "result": result,
        "alice": make_user("alice", "reviewer"),
        "bob": make_user("bob", "reviewer"),
        "judy": make_user("judy", "adjudicator"),
        "lead": make_user("lena", "lead"),
    }


def _pages(result: AttackResult) -> list[str]:
    """Every HTML page that shows a result's verdicts, outcome or review state."""
    return [
        reverse("scoring:conversation_detail", args=[result.conversation_id]),
        reverse("scoring:conversation_detail", args=[result.conversation_id]) + "?queue=unreviewed",
        reverse("scoring:attack_result_detail", args=[result.pk]),
        reverse("scoring:objective_detail", args=[result.objective_sha256]),
        reverse("scoring:attack_result_list"),
        reverse("scoring:attack_result_list") + "?review=reviewed",
        reverse("scoring:attack_result_list") + "?review=disagree",
        reverse("scoring:attack_result_list") + "?review=unreviewed",
        reverse("scoring:review_queue"),
        reverse("scoring:queue_detail", args=["unreviewed"]),
        reverse("scoring:queue_detail", args=["reviewed"]),
        reverse("scoring:queue_detail", args=["disagree"]),
        reverse("scoring:my_verdicts"),
        reverse("scoring:dashboard"),
        reverse("memory:conversation_list"),
        reverse("home"),
    ]


def _api(result: AttackResult, score_id: Any) -> list[str]:
    """Every API read that carries scores."""
    return [
        "/api/v1/scores/",
        "/api/v1/scores/?source=human",
        f"/api/v1/scores/{score_id}/",
        f"/api/v1/conversations/{result.conversation_id}/",
        "/api/v1/attack-results/",
        f"/api/v1/attack-results/{result.pk}/",
        "/api/v1/message-pieces/",
    ]


def _leaks(body: bytes, secrets: list[str]) -> list[str]:
    text = body.decode("utf-8", errors="replace")
    return [s for s in secrets if s in text]


def _export() -> str:
    out = io.StringIO()
    call_command("export_conversations", "--run", stdout=out, stderr=io.StringIO())
    return out.getvalue()


# --- the requirement and the status ----------------------------------------------------------


def test_a_result_needs_the_required_verdicts_before_humans_decide(world: Any) -> None:
    result, alice, bob = world["result"], world["alice"], world["bob"]
    _review(result, alice, True)
    result.refresh_from_db()
    assert (result.review_status, result.review_required) == (ReviewStatus.PENDING, 2)
    # Pending: the automated outcome stands everywhere outcomes are decided.
    assert not human_scores().filter(attack_result=result).exists()
    assert latest_human_verdicts([result.pk], user_scope(world["lead"])) == {}
    assert Conversation.objects.get(pk=result.conversation_id).outcome == "failure"
    assert pending_result_ids([result.pk]) == {result.pk}
    assert not Score.objects.filter(attack_result=result).filter(settled_q()).exists()

    _review(result, bob, True)
    result.refresh_from_db()
    assert result.review_status == ReviewStatus.AGREED
    assert human_scores().filter(attack_result=result).count() == 2
    assert Conversation.objects.get(pk=result.conversation_id).outcome == "success"
    assert pending_result_ids([result.pk]) == set()
    assert not Score.objects.filter(attack_result=result, sealed=True).exists()


def test_results_outside_the_requirement_keep_the_single_review() -> None:
    _require(2)
    other = make_attack_result(make_conversation(2, labels={"operation": "op_other"}))
    alice = make_user("alice", "reviewer")
    _review(other, alice, True)
    other.refresh_from_db()
    assert other.review_status == ReviewStatus.SINGLE
    assert human_scores().filter(attack_result=other).count() == 1


def test_a_harm_category_requirement_matches_the_results_categories() -> None:
    conversation = make_conversation(2, labels={"operation": OP})
    hate = make_attack_result(conversation, harm_categories=["hate"], labels={"operation": OP})
    fraud = make_attack_result(
        make_conversation(2, labels={"operation": OP}),
        harm_categories=["fraud"],
        labels={"operation": OP},
    )
    ReviewRequirement.objects.create(harm_category="hate", required_verdicts=3)
    alice = make_user("alice", "reviewer")
    _review(hate, alice, True)
    _review(fraud, alice, True)
    hate.refresh_from_db()
    fraud.refresh_from_db()
    assert (hate.review_status, hate.review_required) == (ReviewStatus.PENDING, 3)
    assert fraud.review_status == ReviewStatus.SINGLE


def test_a_requirement_added_later_seals_verdicts_already_given(world: Any) -> None:
    result, alice, bob = world["result"], world["alice"], world["bob"]
    ReviewRequirement.objects.all().delete()
    refresh_review_states()
    _review(result, alice, True, rationale=SECRET_RATIONALE)
    assert Conversation.objects.get(pk=result.conversation_id).outcome == "success"
    _require(2)
    changes = refresh_review_states()
    assert [(c.before, c.after) for c in changes] == [(ReviewStatus.SINGLE, ReviewStatus.PENDING)]
    assert Conversation.objects.get(pk=result.conversation_id).outcome == "failure"
    page = _client(bob).get(reverse("scoring:attack_result_detail", args=[result.pk]))
    assert _leaks(page.content, [SECRET_RATIONALE]) == []


def test_withdrawing_a_verdict_reopens_the_review(world: Any) -> None:
    result, alice, bob = world["result"], world["alice"], world["bob"]
    _review(result, alice, True)
    [bobs] = _review(result, bob, True)
    assert bobs.verdict_submission is not None
    withdraw_review(reviewer=bob, scope=user_scope(bob), submission=bobs.verdict_submission)
    result.refresh_from_db()
    assert result.review_status == ReviewStatus.PENDING
    assert Score.objects.get(reviewer=alice, attack_result=result).sealed
    assert Conversation.objects.get(pk=result.conversation_id).outcome == "failure"


# --- blinding --------------------------------------------------------------------------------


def test_a_reviewer_never_receives_anothers_pending_verdict_in_html(world: Any) -> None:
    result, alice, bob, lead = world["result"], world["alice"], world["bob"], world["lead"]
    [score] = _review(result, alice, True, rationale=SECRET_RATIONALE, notes=SECRET_NOTES)
    secrets = [SECRET_RATIONALE, SECRET_NOTES, str(score.id), "alice"]
    for user in (bob, lead):
        client = _client(user)
        for url in _pages(result):
            response = client.get(url)
            assert response.status_code == 200, (url, response.status_code)
            assert _leaks(response.content, secrets) == [], (user.username, url)
    # The result waits for bob's verdict: it is in his unreviewed queue, not in the reviewed.
    page = _client(bob).get(reverse("scoring:queue_detail", args=["unreviewed"]))
    assert str(result.conversation_id) in page.content.decode()
    detail = _client(bob).get(reverse("scoring:attack_result_detail", args=[result.pk]))
    assert b'data-review-status="pending"' in detail.content
    # Alice sees her own verdict, and no longer has the result waiting in her queue.
    mine = _client(alice).get(reverse("scoring:attack_result_detail", args=[result.pk]))
    assert SECRET_RATIONALE in mine.content.decode()
    queue = _client(alice).get(reverse("scoring:queue_detail", args=["unreviewed"]))
    assert str(result.conversation_id) not in queue.content.decode()


def test_recording_ones_own_verdict_unseals_the_others(world: Any) -> None:
    result, alice, bob = world["result"], world["alice"], world["bob"]
    _review(result, alice, True, rationale=SECRET_RATIONALE)
    third = _result(objective="Another objective")
    carol = make_user("carol", "reviewer")
    _review(third, carol, False, rationale="CAROL-ONLY")
    # Bob records his (the result is then settled), then reads both.
    _review(result, bob, True)
    page = _client(bob).get(reverse("scoring:attack_result_detail", args=[result.pk]))
    assert SECRET_RATIONALE in page.content.decode()
    # A result still pending for a third reviewer stays sealed from bob.
    assert _client(bob).get("/api/v1/scores/?source=human").content.count(b"CAROL-ONLY") == 0


def test_a_reviewer_who_answered_a_three_verdict_review_sees_the_others(world: Any) -> None:
    result, alice, bob = world["result"], world["alice"], world["bob"]
    ReviewRequirement.objects.update(required_verdicts=3)
    refresh_review_states()
    _review(result, alice, True, rationale=SECRET_RATIONALE)
    carol = make_user("carol", "reviewer")
    assert SECRET_RATIONALE not in _client(bob).get("/api/v1/scores/").content.decode()
    _review(result, bob, False)
    result.refresh_from_db()
    assert result.review_status == ReviewStatus.PENDING
    # Still pending (2 of 3): bob now sees alice's; carol, who has not answered, does not.
    assert SECRET_RATIONALE in _client(bob).get("/api/v1/scores/").content.decode()
    assert SECRET_RATIONALE not in _client(carol).get("/api/v1/scores/").content.decode()


def test_the_api_never_hands_out_anothers_pending_verdict(world: Any) -> None:
    result, alice, bob = world["result"], world["alice"], world["bob"]
    [score] = _review(result, alice, True, rationale=SECRET_RATIONALE, notes=SECRET_NOTES)
    secrets = [SECRET_RATIONALE, SECRET_NOTES, str(score.id)]
    _, secret = ApiKey.objects.create_key(name="bob's", user=bob, scopes=["read"])
    key_client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    bind_everywhere(ApiKey.objects.get(name="bob's"))
    for client in (_client(bob), key_client):
        for url in _api(result, score.id):
            response = client.get(url)
            assert response.status_code in (200, 404), (url, response.status_code)
            assert _leaks(response.content, secrets) == [], url
        assert client.get(f"/api/v1/scores/{score.id}/").status_code == 404
    # Alice's own session reads it.
    assert SECRET_NOTES in _client(alice).get(f"/api/v1/scores/{score.id}/").content.decode()


def test_exports_leave_pending_verdicts_out_until_the_review_settles(world: Any) -> None:
    result, alice, bob = world["result"], world["alice"], world["bob"]
    [score] = _review(result, alice, True, rationale=SECRET_RATIONALE, notes=SECRET_NOTES)
    text = _export()
    assert _leaks(text.encode(), [SECRET_RATIONALE, SECRET_NOTES, str(score.id)]) == []
    _review(result, bob, True)
    payload = json.loads(_export())
    assert str(score.id) in {str(s["id"]) for s in payload["scores"]}


def test_in_adjudication_everyone_reading_the_operation_sees_the_verdicts(world: Any) -> None:
    result, alice, bob, judy = world["result"], world["alice"], world["bob"], world["judy"]
    _review(result, alice, True, rationale=SECRET_RATIONALE)
    _review(result, bob, False, rationale="BOB-SAYS-NO")
    page = _client(judy).get(reverse("scoring:adjudication_item", args=[result.pk]))
    assert SECRET_RATIONALE in page.content.decode()
    assert "BOB-SAYS-NO" in page.content.decode()


# --- adjudication ----------------------------------------------------------------------------


def test_disagreement_goes_to_adjudication_and_the_final_verdict_wins(world: Any) -> None:
    result, alice, bob, judy = world["result"], world["alice"], world["bob"], world["judy"]
    _review(result, alice, True)
    _review(result, bob, False)
    result.refresh_from_db()
    assert result.review_status == ReviewStatus.DISPUTED
    # In adjudication the automated outcome (failure) stands; the list says so.
    assert Conversation.objects.get(pk=result.conversation_id).outcome == "failure"
    assert not human_scores().filter(attack_result=result).exists()
    listing = _client(bob).get(reverse("scoring:attack_result_list"))
    assert b'data-review-status="disputed"' in listing.content

    queue = _client(judy).get(reverse("scoring:adjudication_queue"))
    assert queue.status_code == 200
    assert reverse("scoring:adjudication_item", args=[result.pk]) in queue.content.decode()

    url = reverse("scoring:adjudication_item", args=[result.pk])
    token = str(uuid.uuid4())
    post = {"verdict": "true", "rationale": "The steps are all there.", "submission": token}
    response = _client(judy).post(url, post)
    assert response.status_code == 302
    result.refresh_from_db()
    assert result.review_status == ReviewStatus.ADJUDICATED
    final = Score.objects.get(attack_result=result, final=True)
    assert (final.reviewer, final.score_value) == (judy, "true")
    assert final.score_metadata["final"] is True
    # The final verdict decides: success, over the automated failure and bob's false.
    assert Conversation.objects.get(pk=result.conversation_id).outcome == "success"
    assert list(human_scores().filter(attack_result=result)) == [final]
    detail = _client(bob).get(reverse("scoring:attack_result_detail", args=[result.pk]))
    assert b'id="effective-outcome"' not in detail.content or b"success" in detail.content
    assert b"final (adjudicated)" in detail.content
    event = AuditEvent.objects.get(action="verdict.adjudicated")
    assert event.object_id == str(result.pk)
    assert {s["score_value"] for s in event.detail["disputed"]} == {"true", "false"}
    # The same form again stores nothing more; the queue is empty.
    assert _client(judy).post(url, post).status_code in (302, 400)
    assert Score.objects.filter(attack_result=result, final=True).count() == 1
    queue = _client(judy).get(reverse("scoring:adjudication_queue"))
    assert reverse("scoring:adjudication_item", args=[result.pk]) not in queue.content.decode()
    # A later reviewer's verdict does not overturn the final one.
    carol = make_user("carol", "reviewer")
    _review(result, carol, False)
    assert Conversation.objects.get(pk=result.conversation_id).outcome == "success"


def test_non_adjudicators_are_refused(world: Any) -> None:
    result, alice, bob = world["result"], world["alice"], world["bob"]
    _review(result, alice, True)
    _review(result, bob, False)
    url = reverse("scoring:adjudication_item", args=[result.pk])
    post = {"verdict": "true", "rationale": "mine", "submission": str(uuid.uuid4())}
    for user in (bob, make_user("rob", "read-only")):
        client = _client(user)
        assert client.get(reverse("scoring:adjudication_queue")).status_code == 403
        assert client.get(url).status_code == 403
        assert client.post(url, post).status_code == 403
        assert client.get(reverse("scoring:reviewers")).status_code == 403
    assert not Score.objects.filter(final=True).exists()
    result.refresh_from_db()
    assert result.review_status == ReviewStatus.DISPUTED


def test_an_adjudicator_of_another_operation_gets_a_404() -> None:
    from tests.access import grant

    result = _result()
    _require(2)
    outsider = User.objects.create_user("otto", password="pw-review-123")
    grant(outsider, "op_elsewhere", "adjudicator")
    response = _client(outsider).get(reverse("scoring:adjudication_item", args=[result.pk]))
    assert response.status_code == 404


def test_an_adjudicator_who_gave_a_verdict_may_not_decide(world: Any) -> None:
    result, alice, judy = world["result"], world["alice"], world["judy"]
    _review(result, alice, True)
    _review(result, judy, False)
    url = reverse("scoring:adjudication_item", args=[result.pk])
    post = {"verdict": "false", "rationale": "mine", "submission": str(uuid.uuid4())}
    response = _client(judy).post(url, post)
    assert response.status_code == 400
    assert not Score.objects.filter(final=True).exists()
    # A lead decides instead.
    assert _client(world["lead"]).post(url, post).status_code == 302
    result.refresh_from_db()
    assert result.review_status == ReviewStatus.ADJUDICATED


def test_an_undecided_result_cannot_be_adjudicated(world: Any) -> None:
    result, alice = world["result"], world["alice"]
    _review(result, alice, True)
    url = reverse("scoring:adjudication_item", args=[result.pk])
    post = {"verdict": "false", "rationale": "early", "submission": str(uuid.uuid4())}
    response = _client(world["judy"]).post(url, post)
    assert response.status_code == 400
    assert not Score.objects.filter(final=True).exists()


# --- requirement admin -----------------------------------------------------------------------


def test_a_lead_sets_a_requirement_in_the_admin_and_it_is_audited() -> None:
    result = _result()
    lead = make_user("lena", "lead")
    lead.is_staff = True
    lead.save()
    alice = make_user("alice", "reviewer")
    _review(result, alice, True)
    operation = Operation.objects.get(name=OP)
    client = _client(lead)
    response = client.post(
        reverse("admin:scoring_reviewrequirement_add"),
        {"operation": operation.pk, "label": f"operation={OP}", "required_verdicts": 2},
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    requirement = ReviewRequirement.objects.get()
    assert (requirement.label_key, requirement.label_value) == ("operation", OP)
    result.refresh_from_db()
    assert result.review_status == ReviewStatus.PENDING
    event = AuditEvent.objects.get(action="review_requirement.created")
    assert event.detail["required_verdicts"] == 2
    # Both a label and a category, or neither: refused.
    bad = client.post(
        reverse("admin:scoring_reviewrequirement_add"),
        {
            "operation": operation.pk,
            "label": "a=b",
            "harm_category": "hate",
            "required_verdicts": 2,
        },
    )
    assert bad.status_code == 200
    assert ReviewRequirement.objects.count() == 1
    client.post(
        reverse("admin:scoring_reviewrequirement_delete", args=[requirement.pk]), {"post": "yes"}
    )
    assert not ReviewRequirement.objects.exists()
    assert AuditEvent.objects.filter(action="review_requirement.deleted").exists()
    result.refresh_from_db()
    assert result.review_status == ReviewStatus.SINGLE


# --- reviewers' agreement --------------------------------------------------------------------


def _independent_kappa(a: list[bool], b: list[bool]) -> float:
    """Cohen's kappa written out from its definition, for the comparison."""
    n = len(a)
    observed = sum(x == y for x, y in zip(a, b, strict=True)) / n
    pa, pb = sum(a) / n, sum(b) / n
    expected = pa * pb + (1 - pa) * (1 - pb)
    return (observed - expected) / (1 - expected)


def test_reviewer_agreement_and_pairwise_kappa_match_an_independent_computation() -> None:
    _require(2)
    alice, bob = make_user("alice", "reviewer"), make_user("bob", "reviewer")
    judy = make_user("judy", "adjudicator")
    a = [True, True, False, True, False, False, True, True, False, True, False, True]
    b = [True, False, False, True, False, True, True, True, False, False, False, True]
    finals: dict[int, bool] = {}
    for i, (x, y) in enumerate(zip(a, b, strict=True)):
        result = _result(objective=f"objective {i}")
        _review(result, alice, x)
        _review(result, bob, y)
        if x != y:
            finals[i] = i % 2 == 0
            scope = user_scope(judy)
            from scoring.adjudication import adjudicate

            adjudicate(
                attack_result=result,
                adjudicator=judy,
                scope=scope,
                answers=VerdictAnswers(rationale="decided", objective=finals[i], fields=WITH_NOTES),
                submission=None,
            )
    operation = Operation.objects.get(name=OP)
    stats = reviewer_stats(operation.pk)
    [pair] = stats.pairs
    assert pair.shared == len(a) >= MIN_SHARED_ITEMS
    assert pair.kappa == pytest.approx(_independent_kappa(a, b))
    by_name = {s.name: s for s in stats.reviewers}
    outcome = [finals.get(i, x) for i, x in enumerate(a)]
    for name, given in (("alice", a), ("bob", b)):
        entry = by_name[name]
        assert entry.reviewed == len(a)
        assert entry.settled == len(a)
        assert entry.agreed == sum(g == o for g, o in zip(given, outcome, strict=True))
    assert "judy" not in by_name
    page = _client(judy).get(reverse("scoring:reviewers") + f"?operation={operation.pk}")
    assert page.status_code == 200
    assert f"{pair.kappa:.3f}" in page.content.decode()


def test_pairs_below_the_minimum_show_no_kappa() -> None:
    _require(2)
    alice, bob = make_user("alice", "reviewer"), make_user("bob", "reviewer")
    for i in range(3):
        result = _result(objective=f"objective {i}")
        _review(result, alice, True)
        _review(result, bob, i == 0)
    [pair] = reviewer_stats(Operation.objects.get(name=OP).pk).pairs
    assert (pair.shared, pair.kappa) == (3, None)


# --- query counts ----------------------------------------------------------------------------


def _disputed(count: int, alice: User, bob: User) -> None:
    for i in range(count):
        result = _result(objective=f"disputed {i}")
        _review(result, alice, True, rationale=f"yes {i}")
        _review(result, bob, False, rationale=f"no {i}")


def _queries(client: Client, url: str) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    assert response.status_code == 200
    return len(ctx.captured_queries)


def test_adjudication_pages_cost_the_same_at_3_and_30_items() -> None:
    _require(2)
    alice, bob = make_user("alice", "reviewer"), make_user("bob", "reviewer")
    judy = make_user("judy", "adjudicator")
    client = _client(judy)
    _disputed(3, alice, bob)
    operation = Operation.objects.get(name=OP)
    first = AttackResult.objects.get(objective="disputed 0")
    urls = [
        reverse("scoring:adjudication_queue"),
        reverse("scoring:reviewers") + f"?operation={operation.pk}",
        reverse("scoring:adjudication_item", args=[first.pk]),
    ]
    few = [_queries(client, url) for url in urls]
    _disputed(27, alice, bob)
    many = [_queries(client, url) for url in urls]
    assert many == few
    assert few[0] <= 8
    assert few[1] <= 7
    assert few[2] <= 6


def test_the_dashboard_counts_a_blind_review_once_it_settles(world: Any) -> None:

    from scoring.tallies import build_dashboard

    result, alice, bob, lead = world["result"], world["alice"], world["bob"], world["lead"]
    scope = user_scope(lead)

    def outcomes() -> dict[str, int]:
        counts = build_dashboard(None, scope).headline.counts
        return {k: v for k, v in counts.items() if v}

    _review(result, alice, True)
    # Pending: the automated failure, in the snapshot and live alike.
    assert outcomes() == {"failure": 1}
    _review(result, bob, True)
    assert outcomes() == {"success": 1}
    assert outcomes() == {"success": 1}
    # Disputed after a correction: back to the automated outcome until adjudicated.
    [bobs] = Score.objects.filter(reviewer=bob, attack_result=result)
    from scoring.services import edit_review

    edit_review(
        reviewer=bob,
        scope=user_scope(bob),
        submission=bobs.verdict_submission or uuid.uuid4(),
        answers=VerdictAnswers(rationale="On reflection, no.", objective=False, fields=WITH_NOTES),
        correction=uuid.uuid4(),
    )
    result.refresh_from_db()
    assert result.review_status == ReviewStatus.DISPUTED
    assert outcomes() == {"failure": 1}


@pytest.mark.django_db(transaction=True)
def test_two_reviewers_answering_at_once_are_both_counted() -> None:
    import threading

    if connection.vendor != "postgresql":
        pytest.skip("SQLite serialises writers; the race needs concurrent transactions")
    result = _result()
    _require(2)
    alice, bob = make_user("alice", "reviewer"), make_user("bob", "reviewer")
    barrier = threading.Barrier(2)
    done: list[str] = []

    def answer(user: User, value: bool) -> None:
        barrier.wait()
        try:
            _review(result, user, value)
            done.append(user.username)
        finally:
            connection.close()

    threads = [
        threading.Thread(target=answer, args=(alice, True)),
        threading.Thread(target=answer, args=(bob, False)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(done) == ["alice", "bob"]
    result.refresh_from_db()
    assert result.review_status == ReviewStatus.DISPUTED
    assert not Score.objects.filter(attack_result=result, sealed=True).exists()


def test_the_refresh_command_follows_a_relabelled_result(world: Any) -> None:
    result, alice = world["result"], world["alice"]
    ReviewRequirement.objects.update(label_value="op_blind_later")
    refresh_review_states()
    _review(result, alice, True)
    result.refresh_from_db()
    assert result.review_status == ReviewStatus.SINGLE
    AttackResult.objects.filter(pk=result.pk).update(labels={"operation": "op_blind_later"})
    out = io.StringIO()
    call_command("refresh_review_states", "--operation", OP, stdout=out)
    assert "1 of them to another review status" in out.getvalue()
    result.refresh_from_db()
    assert result.review_status == ReviewStatus.PENDING
    with pytest.raises(Exception, match="no such operation"):
        call_command("refresh_review_states", "--operation", "op_missing", stdout=io.StringIO())
