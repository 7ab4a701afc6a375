"""Live pages: the conversation list, a running conversation, a review queue and the dashboard
render a marker; their endpoints count what arrived beyond it (same filter, bounded at 20+),
answer bad markers with a 400, and cost the same queries whatever arrived."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from memory.models import Conversation
from redteam.common.live import LIVE_LIMIT, Marker
from scoring.models import ReviewQueue, ReviewSkip
from tests.memory.row_factories import (
    PieceSpec,
    make_attack_result,
    make_conversation,
    make_piece,
    refresh_summary,
)

pytestmark = pytest.mark.django_db


def _live_url(response: Any) -> str:
    live = response.context["live"]
    assert live is not None, "the page does not poll"
    assert f'data-live-url="{live.url.replace("&", "&amp;")}"' in response.content.decode()
    return str(live.url)


def _ask(client: Client, url: str) -> dict[str, Any]:
    response = client.get(url)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "application/json"
    answer: dict[str, Any] = response.json()
    return answer


def _newer_conversations(n: int, **kwargs: Any) -> list[Conversation]:
    """n conversations whose last activity is after every older one's."""
    start = timezone.now()
    return [
        make_conversation(2, start=start + timedelta(seconds=10 * i), **kwargs) for i in range(n)
    ]


# ---------------------------------------------------------------------------------------------
# Conversation list
# ---------------------------------------------------------------------------------------------


def test_the_list_counts_new_conversations_of_its_filter(reviewer_client: Client) -> None:
    make_conversation(2, labels={"operation": "op1"})
    make_conversation(2, labels={"operation": "op2"})
    page = reviewer_client.get(reverse("memory:conversation_list") + "?operation=op1")
    url = _live_url(page)
    assert "operation=op1" in url
    assert "since=" in url
    assert _ask(reviewer_client, url) == {"new": 0, "more": False, "final": False, "message": ""}
    _newer_conversations(1, labels={"operation": "op2"})
    assert _ask(reviewer_client, url)["new"] == 0, "another filter's conversation"
    _newer_conversations(1, labels={"operation": "op1"})
    answer = _ask(reviewer_client, url)
    assert answer["new"] == 1
    assert answer["message"] == "1 new conversation since you opened this page"
    _newer_conversations(2, labels={"operation": "op1"})
    assert _ask(reviewer_client, url)["message"] == "3 new conversations since you opened this page"


def test_a_conversation_with_new_messages_moves_up_and_counts(reviewer_client: Client) -> None:
    older = make_conversation(2, start=timezone.now() - timedelta(hours=3))
    make_conversation(2, start=timezone.now() - timedelta(hours=2))
    url = _live_url(reviewer_client.get(reverse("memory:conversation_list")))
    make_piece(older, 2, PieceSpec("one more turn"), timestamp=timezone.now())
    refresh_summary(older)
    assert _ask(reviewer_client, url)["new"] == 1


def test_an_empty_list_counts_every_conversation_that_arrives(reviewer_client: Client) -> None:
    url = _live_url(reviewer_client.get(reverse("memory:conversation_list")))
    assert "since=" not in url
    make_conversation(2)
    assert _ask(reviewer_client, url)["new"] == 1


def test_the_count_stops_at_the_bound(reviewer_client: Client) -> None:
    make_conversation(2, start=timezone.now() - timedelta(days=1))
    url = _live_url(reviewer_client.get(reverse("memory:conversation_list")))
    _newer_conversations(LIVE_LIMIT + 2)
    answer = _ask(reviewer_client, url)
    assert answer == {
        "new": LIVE_LIMIT,
        "more": True,
        "final": True,
        "message": f"{LIVE_LIMIT}+ new conversations since you opened this page",
    }


def test_later_pages_and_invalid_filters_do_not_poll(reviewer_client: Client) -> None:
    _newer_conversations(3)
    first = reviewer_client.get(reverse("memory:conversation_list") + "?size=2")
    assert first.context["live"] is not None
    assert "size=" not in first.context["live"].url
    cursor = first.context["next_cursor"]
    later = reviewer_client.get(reverse("memory:conversation_list") + f"?size=2&cursor={cursor}")
    assert later.context["live"] is None
    assert "live.js" not in later.content.decode()
    bad = reviewer_client.get(reverse("memory:conversation_list") + "?label=no-separator")
    assert bad.status_code == 400
    assert bad.context["live"] is None


@pytest.mark.parametrize(
    "query",
    [
        "since=not-a-marker",
        "since=" + "A" * 2000,
        # A marker whose key is no conversation id a row could hold.
        "since=" + Marker(timezone.now(), "x" * 300).token(),
        "label=no-separator",
    ],
)
def test_bad_markers_and_filters_are_a_400(reviewer_client: Client, query: str) -> None:
    response = reviewer_client.get(reverse("memory:live_conversations") + "?" + query)
    assert response.status_code == 400
    assert "error" in response.json()


@pytest.mark.parametrize("n", [3, 30])
def test_the_list_poll_costs_the_same_queries_whatever_arrived(
    reviewer_client: Client, django_assert_num_queries: Any, n: int
) -> None:
    make_conversation(2, start=timezone.now() - timedelta(days=1))
    url = _live_url(reviewer_client.get(reverse("memory:conversation_list") + "?outcome=failure"))
    for conversation in _newer_conversations(n):
        make_attack_result(conversation, outcome="failure")
    # Session, user, memberships; the bounded keyset lookup.
    with django_assert_num_queries(4):
        answer = _ask(reviewer_client, url)
    assert answer["new"] == min(n, LIVE_LIMIT)


# ---------------------------------------------------------------------------------------------
# A running conversation
# ---------------------------------------------------------------------------------------------


def test_a_running_conversation_reports_pieces_and_a_finishing_result(
    reviewer_client: Client,
) -> None:
    conversation = make_conversation(2)
    url = _live_url(
        reviewer_client.get(reverse("scoring:conversation_detail", args=[conversation.pk]))
    )
    assert "pieces=2" in url
    assert "results=0" in url
    assert _ask(reviewer_client, url)["message"] == ""
    make_piece(conversation, 2, PieceSpec("turn three"))
    make_piece(conversation, 3, PieceSpec("reply three", role="assistant"))
    refresh_summary(conversation)
    answer = _ask(reviewer_client, url)
    assert answer["pieces"] == 2
    assert answer["results"] == 0
    assert answer["message"] == "2 new pieces since you opened this page"
    make_attack_result(conversation, outcome="success")
    answer = _ask(reviewer_client, url)
    assert answer["results"] == 1
    assert answer["results_changed"] is True
    assert answer["message"] == (
        "2 new pieces and 1 new attack result since you opened this page (latest outcome: success)"
    )
    assert answer["final"] is False


def test_a_result_that_changes_is_noticed(reviewer_client: Client) -> None:
    conversation = make_conversation(2)
    result = make_attack_result(conversation, outcome="undetermined")
    url = _live_url(
        reviewer_client.get(reverse("scoring:conversation_detail", args=[conversation.pk]))
    )
    assert _ask(reviewer_client, url)["message"] == ""
    # PyRIT's newer version of the same result (the attack finished).
    result.outcome, result.executed_turns = "failure", 3
    result.save()
    answer = _ask(reviewer_client, url)
    assert answer["results"] == 0
    assert answer["results_changed"] is True
    assert answer["message"] == (
        "an attack result changed since you opened this page (latest outcome: failure)"
    )


def test_a_quiet_conversation_and_a_rejected_verdict_do_not_poll(reviewer_client: Client) -> None:
    conversation = make_conversation(2)
    result = make_attack_result(conversation)
    Conversation.objects.filter(pk=conversation.pk).update(
        updated_at=timezone.now() - timedelta(hours=2)
    )
    page = reviewer_client.get(reverse("scoring:conversation_detail", args=[conversation.pk]))
    assert page.context["live"] is None
    Conversation.objects.filter(pk=conversation.pk).update(updated_at=timezone.now())
    rejected = reviewer_client.post(reverse("scoring:verdict", args=[result.pk]), {})
    assert rejected.status_code == 400
    assert rejected.context["live"] is None


@pytest.mark.parametrize("query", ["pieces=two", "pieces=1&results=-1", "results=²"])
def test_conversation_baselines_must_be_counts(reviewer_client: Client, query: str) -> None:
    conversation = make_conversation(2)
    url = reverse("scoring:live_conversation", args=[conversation.pk])
    assert reviewer_client.get(f"{url}?{query}").status_code == 400
    assert reviewer_client.get(url).json()["pieces"] == 2, "no baseline: all of it is new"


@pytest.mark.parametrize("n", [3, 30])
def test_the_conversation_poll_costs_the_same_queries_whatever_arrived(
    reviewer_client: Client, django_assert_num_queries: Any, n: int
) -> None:
    conversation = make_conversation(2)
    url = _live_url(
        reviewer_client.get(reverse("scoring:conversation_detail", args=[conversation.pk]))
    )
    for i in range(n):
        make_piece(conversation, 2 + i, PieceSpec(f"turn {i}"))
    for _ in range(n // 3):
        make_attack_result(conversation)
    refresh_summary(conversation)
    # Session, user, memberships; the conversation's counts; its results.
    with django_assert_num_queries(5):
        answer = _ask(reviewer_client, url)
    assert answer["pieces"] == n
    assert answer["results"] == n // 3


# ---------------------------------------------------------------------------------------------
# Review queues
# ---------------------------------------------------------------------------------------------


def _queue() -> ReviewQueue:
    return ReviewQueue.objects.create(name="Wins", slug="wins", filters={"outcome": ["success"]})


def test_a_queue_counts_new_items_of_its_own_filter(reviewer_client: Client) -> None:
    _queue()
    make_attack_result(make_conversation(2), outcome="success")
    url = _live_url(reviewer_client.get(reverse("scoring:queue_detail", args=["wins"])))
    assert "since=" in url
    assert _ask(reviewer_client, url)["new"] == 0
    make_attack_result(make_conversation(2), outcome="failure")
    assert _ask(reviewer_client, url)["new"] == 0, "outside the queue's filter"
    make_attack_result(make_conversation(2), outcome="success")
    skipped = make_attack_result(make_conversation(2), outcome="success")
    answer = _ask(reviewer_client, url)
    assert answer["new"] == 2
    assert answer["message"] == "2 new items since you opened this page"
    ReviewSkip.objects.create(
        queue=ReviewQueue.objects.get(slug="wins"),
        attack_result=skipped,
        user=User.objects.get(username="rita"),
        skipped_at=timezone.now(),
    )
    assert _ask(reviewer_client, url)["new"] == 1, "a skipped item is not new"


def test_a_later_queue_page_starts_from_the_queue_head(
    reviewer_client: Client, django_assert_num_queries: Any
) -> None:
    _queue()
    for _ in range(3):
        make_attack_result(make_conversation(2), outcome="success")
    head = _live_url(reviewer_client.get(reverse("scoring:queue_detail", args=["wins"])))
    # Session, user, memberships; the queue; its counts; the viewer's verdicts today; the
    # (empty) page of items (the never-skipped ones, how many there are, the skipped ones);
    # and the queue's first item, where new items start.
    with django_assert_num_queries(10):
        later = reviewer_client.get(reverse("scoring:queue_detail", args=["wins"]) + "?page=2")
    assert _live_url(later) == head
    make_attack_result(make_conversation(2), outcome="success")
    assert _ask(reviewer_client, head)["new"] == 1


def test_the_built_in_unreviewed_queue_polls(reviewer_client: Client) -> None:
    url = _live_url(reviewer_client.get(reverse("scoring:queue_detail", args=["unreviewed"])))
    assert "since=" not in url
    make_attack_result(make_conversation(2))
    assert _ask(reviewer_client, url)["new"] == 1


@pytest.mark.parametrize("n", [3, 30])
def test_the_queue_poll_costs_the_same_queries_whatever_arrived(
    reviewer_client: Client, django_assert_num_queries: Any, n: int
) -> None:
    _queue()
    make_attack_result(make_conversation(2), outcome="success")
    url = _live_url(reviewer_client.get(reverse("scoring:queue_detail", args=["wins"])))
    for _ in range(n):
        make_attack_result(make_conversation(2), outcome="success")
    # Session, user, memberships; the queue; the bounded keyset lookup.
    with django_assert_num_queries(5):
        answer = _ask(reviewer_client, url)
    assert answer["new"] == min(n, LIVE_LIMIT)
    assert answer["more"] == (n > LIVE_LIMIT)


def test_queue_markers_are_checked(reviewer_client: Client) -> None:
    _queue()
    url = reverse("scoring:live_queue", args=["wins"])
    assert reviewer_client.get(f"{url}?since=garbage").status_code == 400
    assert reviewer_client.get(reverse("scoring:live_queue", args=["nope"])).status_code == 404


# ---------------------------------------------------------------------------------------------
# Dashboard
# ---------------------------------------------------------------------------------------------


def test_the_dashboard_counts_results_after_the_newest_it_counted(
    reviewer_client: Client,
) -> None:
    make_attack_result(make_conversation(2), outcome="success")
    url = _live_url(reviewer_client.get(reverse("scoring:dashboard")))
    assert _ask(reviewer_client, url)["new"] == 0
    make_attack_result(make_conversation(2))
    # Counted live by the page now: the marker moves to it.
    later = _live_url(reviewer_client.get(reverse("scoring:dashboard")))
    assert later != url
    assert _ask(reviewer_client, later)["new"] == 0
    make_attack_result(make_conversation(2))
    make_attack_result(make_conversation(2))
    assert _ask(reviewer_client, url)["new"] == 3
    answer = _ask(reviewer_client, later)
    assert answer["message"] == "2 new attack results since you opened this page"


@pytest.mark.parametrize("n", [3, 30])
def test_the_dashboard_poll_costs_the_same_queries_whatever_arrived(
    reviewer_client: Client, django_assert_num_queries: Any, n: int
) -> None:
    url = _live_url(reviewer_client.get(reverse("scoring:dashboard")))
    for _ in range(n):
        make_attack_result(make_conversation(2))
    # Session, user, memberships; the bounded keyset lookup.
    with django_assert_num_queries(4):
        answer = _ask(reviewer_client, url)
    assert answer["new"] == min(n, LIVE_LIMIT)


def test_pages_poll_at_the_configured_interval(reviewer_client: Client, settings: Any) -> None:
    settings.REDTEAM_LIVE_POLL_SECONDS = 3
    page = reviewer_client.get(reverse("memory:conversation_list"))
    assert 'data-live-every="3"' in page.content.decode()
