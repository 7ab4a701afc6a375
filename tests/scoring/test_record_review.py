"""record_review: one PyRIT-shaped human Score per answered field of a review, validated,
stored once per submitted form; only objective and scale answers decide the outcome."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied, ValidationError
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from memory.export import export_score
from memory.models import AttackResult, Conversation, Score
from memory.shapes import SCORE_KEYS_1X
from redteam.common.access import user_scope
from redteam.common.models import AuditEvent
from scoring.review import (
    for_review,
    has_human_verdict,
    human_scores,
    latest_human_verdicts,
    with_human_success,
)
from scoring.services import edit_review, record_review, record_verdict, withdraw_review
from scoring.tallies import build_dashboard, rebuild_tallies
from scoring.verdict_fields import (
    MAX_CATEGORY_CHARS,
    MAX_NOTES_CHARS,
    VerdictAnswers,
    VerdictFields,
)
from tests.memory.row_factories import make_attack_result, make_conversation
from tests.scoring.row_factories import make_user

pytestmark = pytest.mark.django_db

EVERY_FIELD = VerdictFields(
    true_false=True, scale=True, categories=("refused", "partial", "complied"), notes=True
)
CATEGORY_ONLY = VerdictFields(true_false=False, categories=("refused", "partial", "complied"))


@pytest.fixture
def result() -> AttackResult:
    return make_attack_result(make_conversation(2), outcome="success", harm_categories=["fraud"])


@pytest.fixture
def judge() -> User:
    return make_user("judge", "reviewer")


def _review(
    result: AttackResult,
    reviewer: User,
    submission: uuid.UUID | None = None,
    *,
    fields: VerdictFields = EVERY_FIELD,
    **answers: Any,
) -> list[Score]:
    return record_review(
        attack_result=result,
        reviewer=reviewer,
        scope=user_scope(reviewer),
        answers=VerdictAnswers(
            rationale=answers.pop("rationale", "Read the whole reply."), fields=fields, **answers
        ),
        submission=submission,
    )


def _success(results: Any) -> bool | None:
    """The annotated human outcome of the one result in `results`."""
    value: bool | None = getattr(with_human_success(results).get(), "human_success")  # noqa: B009
    return value


def _by_field(scores: list[Score]) -> dict[str, Score]:
    return {s.verdict_field: s for s in scores}


def test_each_answer_is_its_own_pyrit_shaped_human_score(result: Any, judge: User) -> None:
    token = uuid.uuid4()
    scores = _review(
        result, judge, token, objective=False, scale=0.25, category="partial", notes="see turn 3"
    )
    stored = _by_field(list(Score.objects.filter(source="human")))
    assert set(stored) == {"objective", "scale", "category"} == set(_by_field(scores))
    objective, scale, category = stored["objective"], stored["scale"], stored["category"]
    assert (objective.score_type, objective.score_value) == ("true_false", "false")
    assert (scale.score_type, scale.score_value) == ("float_scale", "0.25")
    assert (category.score_type, category.score_value) == ("true_false", "true")
    assert category.score_category == ["partial"]
    assert category.score_metadata == {"category": "partial", "notes": "see turn 3"}
    assert objective.score_category == scale.score_category == ["fraud"]
    assert objective.score_metadata == scale.score_metadata == {"notes": "see turn 3"}
    for score in stored.values():
        assert score.status == "complete"
        assert score.score_rationale == "Read the whole reply."
        assert score.verdict_submission == token
        assert (score.attack_result_id, score.reviewer_id) == (result.pk, judge.pk)
        assert score.message_piece_id == result.last_response.original_prompt_id
        assert score.scorer_class == "HumanReviewScorer"
        # Exports read them as any PyRIT score: the same keys, the category in its place.
        exported = export_score(score)
        assert tuple(exported) == SCORE_KEYS_1X
        assert exported["scorer_class_identifier"]["class_name"] == "HumanReviewScorer"
    assert export_score(category)["score_category"] == ["partial"]
    assert export_score(category)["score_metadata"]["category"] == "partial"
    [event] = AuditEvent.objects.filter(action="verdict.recorded")
    assert [s["field"] for s in event.detail["scores"]] == ["objective", "scale", "category"]
    assert event.detail["score_value"] == "false"
    assert event.detail["notes"] == "see turn 3"


@pytest.mark.parametrize(
    ("fields", "answers", "kinds"),
    [
        (VerdictFields(), {"objective": True}, {("objective", "true_false", "true")}),
        (
            VerdictFields(true_false=False, scale=True),
            {"scale": 1},
            {("scale", "float_scale", "1.0")},
        ),
        (CATEGORY_ONLY, {"category": "refused"}, {("category", "true_false", "true")}),
        (
            EVERY_FIELD,
            {"objective": True, "category": "complied"},
            {("objective", "true_false", "true"), ("category", "true_false", "true")},
        ),
        (
            VerdictFields(true_false=True, scale=True),
            {"scale": 0.0},
            {("scale", "float_scale", "0.0")},
        ),
    ],
)
def test_every_field_kind_and_combination_is_stored(
    result: Any, judge: User, fields: VerdictFields, answers: dict[str, Any], kinds: set[Any]
) -> None:
    _review(result, judge, fields=fields, **answers)
    stored = Score.objects.filter(source="human").values_list(
        "verdict_field", "score_type", "score_value"
    )
    assert set(stored) == kinds
    assert AuditEvent.objects.filter(action="verdict.recorded").count() == 1


@pytest.mark.parametrize(
    ("fields", "answers", "message"),
    [
        (EVERY_FIELD, {}, "at least one"),
        (EVERY_FIELD, {"notes": "only notes"}, "at least one"),
        (EVERY_FIELD, {"objective": True, "rationale": "  "}, "rationale"),
        (EVERY_FIELD, {"scale": 1.5}, "between 0 and 1"),
        (EVERY_FIELD, {"scale": float("nan")}, "between 0 and 1"),
        (EVERY_FIELD, {"scale": True}, "number"),
        (EVERY_FIELD, {"objective": "yes"}, "boolean"),
        (EVERY_FIELD, {"category": "jailbroken"}, "Choose one of the categories"),
        (EVERY_FIELD, {"category": "x" * (MAX_CATEGORY_CHARS + 1)}, "categories"),
        (EVERY_FIELD, {"objective": True, "notes": "n" * (MAX_NOTES_CHARS + 1)}, "notes"),
        (EVERY_FIELD, {"objective": True, "rationale": "r" * 10_001}, "rationale"),
        (VerdictFields(), {"scale": 0.5}, "does not ask for: 0..1 scale"),
        (VerdictFields(), {"objective": True, "category": "refused"}, "category"),
        (VerdictFields(), {"objective": True, "notes": "n"}, "notes"),
    ],
)
def test_invalid_reviews_are_refused_and_store_nothing(
    result: Any, judge: User, fields: VerdictFields, answers: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message):
        _review(result, judge, fields=fields, **answers)
    assert not Score.objects.filter(source="human").exists()
    assert not AuditEvent.objects.filter(action="verdict.recorded").exists()


def test_a_reader_may_not_review(result: Any) -> None:
    reader = make_user("rob", "read-only")
    with pytest.raises(PermissionDenied):
        _review(result, reader, objective=True)
    assert not Score.objects.filter(source="human").exists()


def test_a_category_marks_the_result_reviewed_but_never_decides_its_outcome(
    result: Any, judge: User
) -> None:
    # A "success" result, a category-only review: still counted as its automated outcome.
    _review(result, judge, fields=CATEGORY_ONLY, category="refused")
    results = AttackResult.objects.filter(pk=result.pk)
    assert results.filter(has_human_verdict()).exists()
    assert for_review(results, "reviewed").exists()
    assert not for_review(results, "unreviewed").exists()
    assert not for_review(results, "disagree").exists()
    assert _success(results) is None
    assert latest_human_verdicts([result.pk], user_scope(judge)) == {}
    assert Conversation.objects.get(pk=result.conversation_id).outcome == "success"
    rebuild_tallies()
    dashboard = build_dashboard(None, user_scope(judge))
    [attack_bar] = dashboard.charts[1].bars
    assert attack_bar.counts["success"] == 1
    assert attack_bar.counts["failure"] == 0


def test_a_later_category_leaves_the_earlier_objective_verdict_in_force(
    result: Any, judge: User
) -> None:
    _review(result, judge, fields=VerdictFields(), objective=False)
    _review(result, make_user("kim"), fields=CATEGORY_ONLY, category="complied")
    results = AttackResult.objects.filter(pk=result.pk)
    assert _success(results) is False
    assert for_review(results, "disagree").exists()
    latest = latest_human_verdicts([result.pk], user_scope(judge))[result.pk]
    assert (latest.verdict_field, latest.score_value) == ("objective", "false")
    assert Conversation.objects.get(pk=result.conversation_id).outcome == "failure"


def test_within_one_review_the_objective_answer_decides_over_the_scale(
    result: Any, judge: User
) -> None:
    _review(result, judge, objective=False, scale=0.9)
    assert _success(AttackResult.objects.filter(pk=result.pk)) is False
    deciding = human_scores().filter(attack_result=result).first()
    assert deciding is not None
    assert deciding.verdict_field == "objective"
    assert Conversation.objects.get(pk=result.conversation_id).outcome == "failure"


def test_the_same_review_posted_twice_is_stored_once(result: Any, judge: User) -> None:
    token = uuid.uuid4()
    first = _review(result, judge, token, objective=True, scale=0.8, category="complied")
    again = _review(result, judge, token, objective=True, scale=0.8, category="complied")
    assert {s.pk for s in again} == {s.pk for s in first}
    assert Score.objects.filter(source="human").count() == 3
    assert AuditEvent.objects.filter(action="verdict.recorded").count() == 1


@pytest.mark.parametrize(
    "changes",
    [
        {"objective": False, "scale": 0.8, "category": "complied"},
        {"objective": True, "category": "complied"},
        {"objective": True, "scale": 0.8, "category": "complied", "rationale": "Other."},
    ],
)
def test_one_token_with_another_review_is_refused(
    result: Any, judge: User, changes: dict[str, Any]
) -> None:
    token = uuid.uuid4()
    _review(result, judge, token, objective=True, scale=0.8, category="complied")
    with pytest.raises(ValidationError, match="already submitted"):
        _review(result, judge, token, **changes)
    assert Score.objects.filter(source="human").count() == 3


def test_record_verdict_is_a_one_answer_review(result: Any, judge: User) -> None:
    score = record_verdict(
        attack_result=result,
        reviewer=judge,
        scope=user_scope(judge),
        value=0.75,
        score_type="float_scale",
        rationale="Mostly there.",
    )
    assert (score.verdict_field, score.score_type, score.score_value) == (
        "scale",
        "float_scale",
        "0.75",
    )
    assert score.verdict_submission is not None
    assert score.score_metadata == {}


def test_a_review_costs_a_fixed_number_of_queries(result: Any, judge: User) -> None:
    scope = user_scope(judge)
    with CaptureQueriesContext(connection) as one:
        record_review(
            attack_result=result,
            reviewer=judge,
            scope=scope,
            answers=VerdictAnswers(rationale="r", objective=True),
            submission=None,
        )
    fresh = make_attack_result(make_conversation(2), outcome="success")
    with CaptureQueriesContext(connection) as three:
        record_review(
            attack_result=fresh,
            reviewer=judge,
            scope=scope,
            answers=VerdictAnswers(
                rationale="r", objective=True, scale=0.5, category="partial", fields=EVERY_FIELD
            ),
            submission=None,
        )
    # The answers are inserted together: three cost what one does.
    assert len(three) == len(one)


def test_edit_and_undo_move_the_effective_outcome_and_keep_the_history(
    result: Any, judge: User
) -> None:
    scope = user_scope(judge)
    token, correction = uuid.uuid4(), uuid.uuid4()
    _review(result, judge, token, fields=VerdictFields(), objective=False)
    rebuild_tallies()
    edited = edit_review(
        reviewer=judge,
        scope=scope,
        submission=token,
        answers=VerdictAnswers(rationale="It did comply.", objective=True, fields=VerdictFields()),
        correction=correction,
    )
    old = Score.objects.get(verdict_submission=token)
    assert old.withdrawn_at is not None
    assert (old.withdrawn_by, old.superseded_by, old.score_value) == (judge, correction, "false")
    assert [s.score_value for s in edited] == ["true"]
    results = AttackResult.objects.filter(pk=result.pk)
    assert _success(results) is True
    assert Conversation.objects.get(pk=result.conversation_id).outcome == "success"
    [attack_bar] = build_dashboard(None, scope).charts[1].bars
    assert (attack_bar.counts["success"], attack_bar.counts["failure"]) == (1, 0)
    # The same edit form posted again stores nothing more.
    edit_review(
        reviewer=judge,
        scope=scope,
        submission=token,
        answers=VerdictAnswers(rationale="It did comply.", objective=True, fields=VerdictFields()),
        correction=correction,
    )
    assert Score.objects.filter(source="human").count() == 2
    event = AuditEvent.objects.get(action="verdict.edited")
    assert event.detail["previous"][0]["score_value"] == "false"
    assert event.detail["scores"][0]["score_value"] == "true"

    withdraw_review(reviewer=judge, scope=scope, submission=correction)
    withdraw_review(reviewer=judge, scope=scope, submission=correction)
    assert AuditEvent.objects.filter(action="verdict.withdrawn").count() == 1
    assert not results.filter(has_human_verdict()).exists()
    assert _success(results) is None
    # Back to the automated outcome, on the list summary and the dashboard.
    assert Conversation.objects.get(pk=result.conversation_id).outcome == "success"
    [attack_bar] = build_dashboard(None, scope).charts[1].bars
    assert (attack_bar.counts["success"], attack_bar.counts["failure"]) == (1, 0)
    # Both earlier reviews stay as history.
    assert Score.objects.filter(source="human", withdrawn_at__isnull=False).count() == 2


def test_an_undone_verdict_falls_back_to_the_one_before(result: Any, judge: User) -> None:
    _review(result, make_user("kim"), fields=VerdictFields(), objective=False)
    token = uuid.uuid4()
    _review(result, judge, token, fields=VerdictFields(), objective=True)
    assert Conversation.objects.get(pk=result.conversation_id).outcome == "success"
    withdraw_review(reviewer=judge, scope=user_scope(judge), submission=token)
    assert Conversation.objects.get(pk=result.conversation_id).outcome == "failure"
    latest = latest_human_verdicts([result.pk], user_scope(judge))[result.pk]
    assert latest.reviewer is not None
    assert latest.reviewer.username == "kim"


def test_only_the_author_may_edit_or_undo_while_a_reviewer(result: Any, judge: User) -> None:
    token = uuid.uuid4()
    _review(result, judge, token, fields=VerdictFields(), objective=True)
    other = make_user("kim")
    with pytest.raises(Score.DoesNotExist):
        withdraw_review(reviewer=other, scope=user_scope(other), submission=token)
    judge.memberships.update(role="read-only")
    with pytest.raises(PermissionDenied):
        withdraw_review(reviewer=judge, scope=user_scope(judge), submission=token)
    assert not Score.objects.filter(withdrawn_at__isnull=False).exists()


def test_the_dashboard_counts_a_category_review_as_reviewed_not_as_an_outcome(
    result: Any, judge: User
) -> None:
    scope = user_scope(judge)
    rebuild_tallies()
    # After the snapshot: counted live.
    _review(result, judge, fields=CATEGORY_ONLY, category="refused")
    live = build_dashboard(None, scope).headline
    assert (live.reviewed, live.rate.successes) == (1, 1)
    # In the snapshot.
    rebuild_tallies()
    stored = build_dashboard(None, scope).headline
    assert (stored.reviewed, stored.rate.successes) == (1, 1)


def test_an_undo_after_the_snapshot_is_counted_live(result: Any, judge: User) -> None:
    scope = user_scope(judge)
    token = _review(result, judge, fields=VerdictFields(), objective=False)[0].verdict_submission
    assert token is not None
    rebuild_tallies()
    before = build_dashboard(None, scope).headline
    assert (before.reviewed, before.rate.successes) == (1, 0)
    withdraw_review(reviewer=judge, scope=scope, submission=token)
    after = build_dashboard(None, scope).headline
    assert (after.reviewed, after.rate.successes) == (0, 1)


def test_result_pages_read_the_deciding_verdict_and_mark_the_others(
    result: Any, judge: User
) -> None:
    client = Client()
    client.force_login(judge)
    _review(result, judge, fields=VerdictFields(), objective=False, rationale="first")
    [second] = _review(result, judge, fields=VerdictFields(), objective=True, rationale="second")
    assert second.verdict_submission is not None
    withdraw_review(reviewer=judge, scope=user_scope(judge), submission=second.verdict_submission)
    _review(result, make_user("kim"), fields=CATEGORY_ONLY, category="complied")
    detail = client.get(reverse("scoring:attack_result_detail", args=[result.pk]))
    assert detail.context["r"].effective == "failure"
    assert detail.context["r"].human.score_rationale == "first"
    html = detail.content.decode()
    assert "withdrawn " in html
    assert "category (not an outcome)" in html
    conversation = client.get(reverse("scoring:conversation_detail", args=[result.conversation_id]))
    [view] = conversation.context["results"]
    assert view.effective == "failure"
    objective = client.get(reverse("scoring:objective_detail", args=[result.objective_sha256]))
    [attempt] = objective.context["attempts"]
    assert attempt.effective == "failure"


@pytest.mark.django_db(transaction=True)
def test_concurrent_posts_of_one_review_store_it_once() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("SQLite serialises writers; the race needs concurrent transactions")
    result = make_attack_result(make_conversation(2), outcome="success")
    judge = make_user("judge", "reviewer")
    token = uuid.uuid4()
    barrier = threading.Barrier(4)
    stored: list[set[uuid.UUID]] = []

    def post() -> None:
        barrier.wait()
        try:
            scores = _review(result, judge, token, objective=True, scale=0.7, category="partial")
            stored.append({s.pk for s in scores})
        finally:
            connection.close()

    threads = [threading.Thread(target=post) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(stored) == 4
    assert len({frozenset(s) for s in stored}) == 1
    assert Score.objects.filter(source="human").count() == 3
    assert AuditEvent.objects.filter(action="verdict.recorded").count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_concurrent_undo_and_edit_leave_one_outcome() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("SQLite serialises writers; the race needs concurrent transactions")
    result = make_attack_result(make_conversation(2), outcome="success")
    judge = make_user("judge", "reviewer")
    token = _review(result, judge, fields=VerdictFields(), objective=False)[0].verdict_submission
    assert token is not None
    scope = user_scope(judge)
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def undo() -> None:
        barrier.wait()
        try:
            withdraw_review(reviewer=judge, scope=scope, submission=token)
            outcomes.append("undone")
        finally:
            connection.close()

    def edit() -> None:
        barrier.wait()
        try:
            edit_review(
                reviewer=judge,
                scope=scope,
                submission=token,
                answers=VerdictAnswers(rationale="r", objective=True),
                correction=uuid.uuid4(),
            )
            outcomes.append("edited")
        except ValidationError:
            outcomes.append("refused")
        finally:
            connection.close()

    threads = [threading.Thread(target=undo), threading.Thread(target=edit)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert "undone" in outcomes
    standing = Score.objects.filter(source="human", withdrawn_at__isnull=True)
    # Either the edit came first (its correction stands) or the undo did (nothing stands).
    if "edited" in outcomes:
        assert [s.score_value for s in standing] == ["true"]
    else:
        assert outcomes == ["undone", "refused"] or outcomes == ["refused", "undone"]
        assert not standing.exists()
    assert Score.objects.get(verdict_submission=token).withdrawn_at is not None
