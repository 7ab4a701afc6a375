"""The live endpoints, URL by URL: who may ask, and that an answer never counts or confirms a
row of an operation the caller is not a member of (the access matrix and the isolation walk
cover them too; this names each case)."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from memory.models import Conversation
from redteam.common.live import Marker
from scoring.models import ReviewQueue
from tests.access import grant
from tests.memory.row_factories import make_attack_result, make_conversation

pytestmark = pytest.mark.django_db

ALPHA, BRAVO = {"operation": "alpha"}, {"operation": "bravo"}


def _client(user: User | None) -> Client:
    client = Client()
    if user is not None:
        client.force_login(user)
    return client


@pytest.fixture
def world() -> dict[str, Any]:
    """One alpha and one bravo attack, an alpha member, a bravo-only queue."""
    alpha = make_conversation(2, labels=ALPHA)
    bravo = make_conversation(2, labels=BRAVO)
    make_attack_result(alpha, labels=ALPHA, outcome="success")
    make_attack_result(bravo, labels=BRAVO, outcome="success")
    member = User.objects.create_user("alice", password="pw")
    grant(member, "alpha", "read-only")
    bravo_queue = ReviewQueue.objects.create(
        name="Bravo wins",
        slug="bravo-wins",
        operation=bravo.operation,
        filters={"outcome": ["success"]},
    )
    return {"alpha": alpha, "bravo": bravo, "member": member, "bravo_queue": bravo_queue}


def _urls(world: dict[str, Any]) -> list[str]:
    return [
        reverse("memory:live_conversations"),
        reverse("scoring:live_conversation", args=[world["alpha"].pk]),
        reverse("scoring:live_queue", args=["unreviewed"]),
        reverse("scoring:live_dashboard"),
    ]


def test_anonymous_callers_are_sent_to_log_in(world: dict[str, Any]) -> None:
    for url in _urls(world):
        response = _client(None).get(url)
        assert response.status_code == 302, url
        assert "/accounts/login/" in response["Location"]


def test_accounts_without_a_role_are_refused(world: dict[str, Any]) -> None:
    nobody = User.objects.create_user("nobody", password="pw")
    for url in _urls(world):
        assert _client(nobody).get(url).status_code == 403, url


def test_api_keys_never_poll_pages(world: dict[str, Any]) -> None:
    from redteam.common.models import ApiKey

    _, secret = ApiKey.objects.create_key(name="k", user=world["member"], scopes=["read"])
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    for url in _urls(world):
        response = client.get(url)
        assert response.status_code == 302, url


def test_members_get_json_for_their_own_rows(world: dict[str, Any]) -> None:
    client = _client(world["member"])
    for url in _urls(world):
        response = client.get(url)
        assert response.status_code == 200, url
        assert response["Content-Type"] == "application/json"


def test_another_operations_conversation_is_a_404_like_one_that_does_not_exist(
    world: dict[str, Any],
) -> None:
    client = _client(world["member"])
    foreign = client.get(reverse("scoring:live_conversation", args=[world["bravo"].pk]))
    missing = client.get(reverse("scoring:live_conversation", args=["no-such-conversation"]))
    assert foreign.status_code == missing.status_code == 404
    assert foreign.content.replace(world["bravo"].pk.encode(), b"ID") == missing.content.replace(
        b"no-such-conversation", b"ID"
    )


def test_another_operations_queue_is_a_404(world: dict[str, Any]) -> None:
    client = _client(world["member"])
    assert client.get(reverse("scoring:live_queue", args=["bravo-wins"])).status_code == 404


def test_counts_never_include_another_operations_rows(world: dict[str, Any]) -> None:
    client = _client(world["member"])
    urls = {
        "list": reverse("memory:live_conversations"),
        "list, bravo's label": reverse("memory:live_conversations") + "?operation=bravo",
        "queue": reverse("scoring:live_queue", args=["unreviewed"]),
        "dashboard": reverse("scoring:live_dashboard"),
    }
    before = {name: client.get(url).json() for name, url in urls.items()}
    assert before["list"]["new"] == 1, "alpha's conversation, not bravo's"
    assert before["list, bravo's label"]["new"] == 0
    assert before["queue"]["new"] == 1
    assert before["dashboard"]["new"] == 1, "every visible result: alpha's one"
    # Bravo keeps working: nothing an alpha member asks changes.
    for _ in range(3):
        make_attack_result(make_conversation(2, labels=BRAVO), labels=BRAVO, outcome="success")
    after = {name: client.get(url).json() for name, url in urls.items()}
    assert after == before


def test_pages_render_markers_of_visible_rows_only(world: dict[str, Any]) -> None:
    """The marker a page renders is the newest row the caller sees, never a newer foreign one
    (a foreign row's position would tell when bravo last worked)."""
    client = _client(world["member"])
    make_conversation(2, labels=BRAVO, start=timezone.now())
    page = client.get(reverse("memory:conversation_list"))
    alpha = Conversation.objects.get(pk=world["alpha"].pk)
    assert page.context["rows"][0].pk == alpha.pk
    answer = client.get(page.context["live"].url).json()
    assert answer["new"] == 0


def test_the_dashboard_marker_is_the_newest_visible_result(world: dict[str, Any]) -> None:
    client = _client(world["member"])
    alpha_newest = make_attack_result(make_conversation(2, labels=ALPHA), labels=ALPHA)
    make_attack_result(make_conversation(2, labels=BRAVO), labels=BRAVO)
    page = client.get(reverse("scoring:dashboard"))
    since = parse_qs(urlsplit(page.context["live"].url).query)["since"][0]
    assert since == Marker(alpha_newest.ingested_at, alpha_newest.pk).token()
    assert client.get(page.context["live"].url).json()["new"] == 0
