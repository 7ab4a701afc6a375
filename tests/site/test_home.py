"""The home page (queues with their counts, held and skipped items, recent runs), the no-role
page and the site's 403 page."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from memory.models import AttackResult, Conversation
from redteam.common.models import Operation
from redteam.site import home
from redteam.site.home import MAX_QUEUES_COUNTED
from scoring import queues
from scoring.models import ReviewClaim, ReviewQueue, ReviewSkip
from tests.access import grant
from tests.memory.row_factories import make_attack_result, make_conversation
from tests.scoring.row_factories import make_score, make_user

pytestmark = pytest.mark.django_db

ALPHA = {"operation": "alpha"}
BRAVO = {"operation": "bravo"}


def _result(labels: dict[str, str], outcome: str = "failure", objective: str = "") -> AttackResult:
    conv = make_conversation(2, labels=labels)
    return make_attack_result(
        conv, outcome=outcome, objective=objective or f"objective {conv.pk[:8]}"
    )


def _member(name: str, operation: str = "alpha", role: str = "reviewer") -> tuple[User, Client]:
    user = User.objects.create_user(name, password="pw-home-123")
    grant(user, operation, role)
    client = Client()
    client.force_login(user)
    return user, client


def _counts(response: Any) -> dict[str, int | None]:
    return {qc.queue.slug: qc.count for qc in response.context["queue_counts"]}


def _claim(user: User, result: AttackResult, queue: ReviewQueue, minutes: int = 10) -> None:
    now = timezone.now()
    ReviewClaim.objects.create(
        attack_result=result,
        user=user,
        queue=queue,
        claimed_at=now,
        expires_at=now + timedelta(minutes=minutes),
    )


def _skip(user: User, result: AttackResult, queue: ReviewQueue, reason: str = "") -> None:
    ReviewSkip.objects.create(
        queue=queue, attack_result=result, user=user, reason=reason, skipped_at=timezone.now()
    )


def test_home_shows_queues_with_their_counts_of_the_viewers_operation_only() -> None:
    alpha_results = [_result(ALPHA, "success"), _result(ALPHA), _result(ALPHA)]
    for _ in range(4):
        _result(BRAVO, "success")
    make_score(attack_result=alpha_results[1], source="human", value="true")
    Operation.objects.get_or_create(name="alpha")
    ReviewQueue.objects.create(
        name="Alpha successes", slug="alpha-successes", filters={"outcome": ["success"]}
    )
    ReviewQueue.objects.create(
        name="Bravo only",
        slug="bravo-only",
        operation=Operation.objects.get(name="bravo"),
    )
    _, client = _member("amy")
    response = client.get(reverse("home"))
    assert response.status_code == 200
    counts = _counts(response)
    # unreviewed: 3 alpha results, one with a verdict; disagree: that verdict says "true"
    # against an automated failure; reviewed: one.
    assert counts == {
        "disagree": 1,
        "reviewed": 1,
        "unreviewed": 2,
        "alpha-successes": 1,
    }
    html = response.content.decode()
    # Built-ins first, each with its count and a link to where it is worked.
    assert html.index("Disagreements") < html.index("Alpha successes")
    assert "2 awaiting review" in html
    assert "Bravo only" not in html
    assert 'href="/review/alpha-successes/"' in html
    assert 'href="/review/unreviewed/"' in html


def test_a_queue_whose_saved_filter_no_longer_validates_says_so() -> None:
    _result(ALPHA)
    ReviewQueue.objects.create(name="Broken", slug="broken", filters={"outcome": ["nonsense"]})
    _, client = _member("amy")
    response = client.get(reverse("home"))
    assert _counts(response)["broken"] is None
    assert "its saved filter no longer applies" in response.content.decode()


def test_more_queues_than_counted_say_how_many_more() -> None:
    for i in range(MAX_QUEUES_COUNTED + 2):
        ReviewQueue.objects.create(name=f"q{i:02}", slug=f"q{i:02}")
    _, client = _member("amy")
    response = client.get(reverse("home"))
    assert len(response.context["queue_counts"]) == MAX_QUEUES_COUNTED
    assert "+5 more queues" in response.content.decode()  # 3 built-ins + 22, 20 counted


def test_home_lists_my_claims_and_skips_with_their_queue_and_never_others() -> None:
    queue = ReviewQueue.objects.get(slug="unreviewed")
    mine = _result(ALPHA, objective="held by amy")
    skipped = _result(ALPHA, objective="skipped by amy")
    theirs = _result(ALPHA, objective="held by ben")
    expired = _result(ALPHA, objective="hold expired")
    bravo = _result(BRAVO, objective="bravo item")
    amy, client = _member("amy")
    ben, _ = _member("ben")
    _claim(amy, mine, queue)
    _claim(amy, expired, queue, minutes=-1)
    _claim(ben, theirs, queue)
    _skip(amy, skipped, queue, reason="needs a second look")
    # A claim and a skip on another operation's result (membership since revoked).
    _claim(amy, bravo, queue)
    _skip(amy, bravo, queue)
    html = client.get(reverse("home")).content.decode()
    assert "held by amy" in html
    assert f"/conversations/{mine.conversation_id}/?queue=unreviewed" in html
    assert "skipped by amy" in html
    assert "needs a second look" in html
    assert f"/conversations/{skipped.conversation_id}/?queue=unreviewed" in html
    assert "held by ben" not in html
    assert "hold expired" not in html
    assert "bravo item" not in html


def test_recent_runs_are_counted_per_visible_operation() -> None:
    for _ in range(3):
        make_conversation(1, labels=ALPHA)
    make_conversation(1, labels={"operation": "alpha2"})
    for _ in range(5):
        make_conversation(1, labels=BRAVO)
    old = make_conversation(1, labels=ALPHA)
    Conversation.objects.filter(pk=old.pk).update(updated_at=timezone.now() - timedelta(days=2))
    amy, client = _member("amy")
    grant(amy, "alpha2", "read-only")
    response = client.get(reverse("home"))
    runs = {r["operation__name"]: r["conversations"] for r in response.context["recent_runs"]}
    assert runs == {"alpha": 3, "alpha2": 1}
    html = response.content.decode()
    assert "?operation=alpha2" in html
    assert "bravo" not in html


def test_big_pushes_are_counted_up_to_a_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(home, "RECENT_WINDOW", 4)
    monkeypatch.setattr(queues, "COUNT_BOUND", 3)
    for _ in range(3):
        _result(ALPHA)
    for _ in range(2):
        _result({"operation": "alpha2"})
    amy, client = _member("amy")
    grant(amy, "alpha2", "read-only")
    response = client.get(reverse("home"))
    runs = [(r["operation__name"], r["conversations"]) for r in response.context["recent_runs"]]
    # The latest four conversations: both of alpha2, the two newest of alpha.
    assert runs == [("alpha2", 2), ("alpha", 2)]
    html = response.content.decode()
    assert "Counted over the latest 4 conversations; more arrived." in html
    assert "3+ awaiting review" in html  # five unreviewed results, counted up to the bound
    monkeypatch.setattr(home, "RECENT_WINDOW", 5)
    html = client.get(reverse("home")).content.decode()
    assert "more arrived" not in html


def test_empty_sections_say_why_or_are_left_out() -> None:
    _, client = _member("amy")
    html = client.get(reverse("home")).content.decode()
    assert "No conversation arrived or changed in your operations" in html
    assert 'id="claims"' not in html
    assert 'id="skips"' not in html
    assert "awaiting review" in html  # the built-in queues, at 0


@pytest.mark.parametrize("n", [3, 30])
def test_home_query_count_is_constant_with_items_and_claims(
    n: int, django_assert_num_queries: Any
) -> None:
    queue = ReviewQueue.objects.get(slug="unreviewed")
    ReviewQueue.objects.create(name="Successes", slug="successes", filters={"outcome": ["success"]})
    amy, client = _member("amy")
    for i in range(n):
        result = _result(ALPHA, "success" if i % 2 else "failure")
        if i % 3 == 0:
            _claim(amy, result, queue)
        else:
            _skip(amy, result, queue)
        if i % 5 == 0:
            make_score(attack_result=result, source="human", value="true")
    # session, user, memberships; queues; their counts (one query for all); claims; skips;
    # recent runs.
    with django_assert_num_queries(8):
        response = client.get(reverse("home"))
    assert response.status_code == 200


def test_a_user_without_a_role_gets_the_no_role_page() -> None:
    _result(ALPHA)
    User.objects.create_user("nora", password="pw-home-123")
    client = Client()
    client.login(username="nora", password="pw-home-123")
    for url in (reverse("home"), reverse("memory:conversation_list"), reverse("scoring:dashboard")):
        response = client.get(url)
        assert response.status_code == 403, url
        html = response.content.decode()
        assert "no role in any operation" in html
        assert "read-only" in html
        assert "reviewer" in html
        assert "A lead of the operation you work on, or an administrator" in html
        assert "manage.py grant --user nora" in html
        assert '<link rel="stylesheet"' in html  # the site's page, not a bare 403
        assert "alpha" not in html  # nothing about the operations
        assert 'href="/conversations/"' not in html  # no menu into pages it cannot read


def test_anonymous_users_are_sent_to_sign_in() -> None:
    response = Client().get(reverse("home"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_a_too_low_role_gets_the_sites_403_page() -> None:
    result = _result(ALPHA)
    _, client = _member("rob", role="read-only")
    response = client.post(
        reverse("scoring:verdict", args=[result.pk]),
        {"verdict": "true", "rationale": "x", "submission": "8e2b1c4a-0b7e-4d56-9c55-2f1b0f0c1d11"},
    )
    assert response.status_code == 403
    html = response.content.decode()
    assert "Not allowed" in html
    assert "Recording verdicts needs the reviewer role in this operation." in html
    assert '<link rel="stylesheet"' in html


def test_a_403_under_the_api_stays_json(rf: Any) -> None:
    from django.core.exceptions import PermissionDenied

    from redteam.site.views import forbidden

    request = rf.get("/api/v1/anything/")
    request.user = make_user("rob", "read-only")
    response = forbidden(request, PermissionDenied("nope"))
    assert response.status_code == 403
    assert response["Content-Type"] == "application/json"
