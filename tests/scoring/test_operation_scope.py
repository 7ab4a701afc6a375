"""Review pages scoped to operations: two engagements attempt the same objective text, and a
member of one sees, counts and judges only their own attempts (404 for the other's rows)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from memory.models import AttackResult, Conversation, Score
from redteam.common.access import Scope, user_scope
from redteam.common.models import Operation
from scoring.services import record_verdict
from scoring.tallies import build_dashboard, rebuild_tallies
from tests.access import grant
from tests.memory.row_factories import make_attack_result, make_conversation
from tests.scoring.row_factories import PASSWORD, make_score

pytestmark = pytest.mark.django_db

GOAL = "Explain how to bypass the badge reader"
MINE, THEIRS = "op-mine", "op-theirs"


@dataclass
class Attempt:
    """One operation's attempt at GOAL: its conversation and attack result."""

    conversation: Conversation
    result: AttackResult


def _attempt(operation: str, conversation_id: str, **kwargs: Any) -> Attempt:
    conv = make_conversation(2, conversation_id=conversation_id, labels={"operation": operation})
    kwargs.setdefault("objective", GOAL)
    return Attempt(conv, make_attack_result(conv, **kwargs))


def _member(name: str, **roles: str) -> Client:
    """A signed-in client of a user with the given role in each named operation."""
    user = User.objects.create_user(name, password=PASSWORD)
    for operation, role in roles.items():
        grant(user, operation, role)
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def mine() -> Attempt:
    return _attempt(MINE, "conv-of-mine", outcome="success", harm_categories=["fraud"])


@pytest.fixture
def theirs() -> Attempt:
    return _attempt(
        THEIRS,
        "conv-of-theirs",
        outcome="failure",
        harm_categories=["their-secret-harm"],
        labels={"operation": THEIRS, "their_label": "x"},
    )


@pytest.fixture
def alice(mine: Attempt, theirs: Attempt) -> Client:
    """A reviewer of MINE only (THEIRS exists)."""
    return _member("alice", **{MINE: "reviewer"})


@pytest.fixture
def rob(mine: Attempt, theirs: Attempt) -> Client:
    """A read-only member of MINE only."""
    return _member("rob", **{MINE: "read-only"})


def _html(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200
    return response.content.decode()


# --- objective page ---------------------------------------------------------------------------


def test_objective_page_shows_only_the_members_attempts(
    alice: Client, mine: Attempt, theirs: Attempt
) -> None:
    assert mine.result.objective_sha256 == theirs.result.objective_sha256
    url = reverse("scoring:objective_detail", args=[mine.result.objective_sha256])
    response = alice.get(url)
    assert [a.result.pk for a in response.context["attempts"]] == [mine.result.pk]
    html = response.content.decode()
    assert "conv-of-mine" in html
    assert "conv-of-theirs" not in html
    assert str(theirs.result.pk) not in html


def test_objective_attempted_only_elsewhere_is_404(alice: Client) -> None:
    elsewhere = _attempt(THEIRS, "conv-elsewhere", objective="Only attempted over there")
    url = reverse("scoring:objective_detail", args=[elsewhere.result.objective_sha256])
    assert alice.get(url).status_code == 404


def test_superusers_see_every_operations_attempts(mine: Attempt, theirs: Attempt) -> None:
    client = Client()
    client.force_login(User.objects.create_superuser("root", "root@example.org", PASSWORD))
    url = reverse("scoring:objective_detail", args=[mine.result.objective_sha256])
    attempts = client.get(url).context["attempts"]
    assert {a.result.pk for a in attempts} == {mine.result.pk, theirs.result.pk}


# --- conversation and attack-result pages -----------------------------------------------------


def test_the_other_operations_conversation_and_result_are_404(
    alice: Client, theirs: Attempt
) -> None:
    for url in (
        reverse("scoring:conversation_detail", args=[theirs.conversation.pk]),
        reverse("scoring:attack_result_detail", args=[theirs.result.pk]),
    ):
        assert alice.get(url).status_code == 404


def test_conversation_page_shows_only_visible_references_and_scores(
    alice: Client, mine: Attempt
) -> None:
    # A result of the other operation names my conversation as related, and a score of the
    # other operation judges one of its pieces: neither shows on my page.
    _attempt(
        THEIRS,
        "conv-referrer",
        objective="Their referring objective",
        related=[(mine.conversation.pk, "adversarial")],
    )
    piece = mine.conversation.pieces.get(sequence=1)
    foreign = make_score(piece=piece, rationale="Their private rationale.")
    Score.objects.filter(pk=foreign.pk).update(operation=Operation.objects.get(name=THEIRS))
    make_score(piece=piece, rationale="Our own rationale.")
    html = _html(alice, reverse("scoring:conversation_detail", args=[mine.conversation.pk]))
    assert "Our own rationale." in html
    assert "Their private rationale." not in html
    assert "Their referring objective" not in html
    assert "adversarial conversation of" not in html


def test_queue_neighbours_skip_the_other_operation(alice: Client, mine: Attempt) -> None:
    _attempt(THEIRS, "conv-theirs-newer")
    response = alice.get(
        reverse("scoring:conversation_detail", args=[mine.conversation.pk]) + "?queue=unreviewed"
    )
    # Alone in the queue for alice: the other operation's newer result is not counted.
    assert response.context["progress"].position == 1
    assert response.context["progress"].total == 1
    assert "conv-theirs-newer" not in response.content.decode()
    step = alice.get(
        reverse("scoring:queue_step", args=["unreviewed", "previous"]) + f"?from={mine.result.pk}"
    )
    assert step["Location"] == reverse("scoring:queue_detail", args=["unreviewed"])


# --- lists and queue --------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["/attack-results/", "/review/unreviewed/"])
def test_result_list_and_queue_exclude_the_other_operation(
    alice: Client, mine: Attempt, url: str
) -> None:
    response = alice.get(url)
    assert [row["result"].pk for row in response.context["rows"]] == [mine.result.pk]
    assert "conv-of-theirs" not in response.content.decode()


def test_queue_excludes_verdicts_of_the_other_operation(
    alice: Client, mine: Attempt, theirs: Attempt
) -> None:
    judge = User.objects.create_superuser("judge", "judge@example.org", PASSWORD)
    record_verdict(
        attack_result=theirs.result,
        reviewer=judge,
        scope=Scope.everything_scope(),
        value=True,
        score_type="true_false",
        rationale="Their verdict.",
    )
    for view in ("reviewed", "disagree"):
        rows = alice.get(f"/review/{view}/").context["rows"]
        assert rows == []


# --- dashboard --------------------------------------------------------------------------------


def _totals(dashboard: Any, dimension: str) -> dict[str, int]:
    chart = next(c for c in dashboard.charts if c.dimension == dimension)
    return {bar.key: bar.total for bar in chart.bars}


def test_dashboard_counts_only_the_members_operations(
    alice: Client, mine: Attempt, theirs: Attempt
) -> None:
    # One result in each operation, then one more in each, and a verdict on the other
    # operation's first result: every one counted as it is stored.
    _attempt(MINE, "conv-mine-2", outcome="failure", harm_categories=["fraud"])
    _attempt(THEIRS, "conv-theirs-2", harm_categories=["their-secret-harm"])
    record_verdict(
        attack_result=theirs.result,
        reviewer=User.objects.create_superuser("judge", "judge@example.org", PASSWORD),
        scope=Scope.everything_scope(),
        value=True,
        score_type="true_false",
        rationale="Their verdict.",
    )
    response = alice.get(reverse("scoring:dashboard") + "?label_key=their_label")
    data = response.context["data"]
    assert _totals(data, "harm_category") == {"fraud": 2}
    assert _totals(data, "attack") == {"PromptSendingAttack": 2}
    assert data.headline.results == 2
    assert [r.counts[0].total for r in data.trend.rows if r.counts[0].total] == [2]
    assert "their_label" not in data.label_keys
    assert _totals(data, "label:their_label") == {}
    html = response.content.decode()
    assert "their-secret-harm" not in html
    # The same tallies summed for everyone: both operations' results.
    everything = build_dashboard(None, Scope.everything_scope())
    assert _totals(everything, "harm_category") == {"fraud": 2, "their-secret-harm": 2}
    assert everything.headline.results == 4


def test_dashboard_of_a_member_of_both_operations_sums_them(mine: Attempt, theirs: Attempt) -> None:
    rebuild_tallies()
    both = User.objects.create_user("bo")
    grant(both, MINE, "read-only")
    grant(both, THEIRS, "lead")
    data = build_dashboard(None, user_scope(both))
    assert _totals(data, "harm_category") == {"fraud": 1, "their-secret-harm": 1}
    assert _totals(data, "attack") == {"PromptSendingAttack": 2}


# --- verdicts ---------------------------------------------------------------------------------


def _post_verdict(client: Client, result: AttackResult) -> Any:
    return client.post(
        reverse("scoring:verdict", args=[result.pk]),
        {"verdict": "true", "rationale": "It worked.", "submission": "a" * 32},
    )


def test_verdict_on_the_other_operations_result_is_404(alice: Client, theirs: Attempt) -> None:
    assert _post_verdict(alice, theirs.result).status_code == 404
    assert not Score.objects.filter(source="human").exists()


def test_reviewer_records_a_verdict_in_their_operation(alice: Client, mine: Attempt) -> None:
    assert _post_verdict(alice, mine.result).status_code == 302
    verdict = Score.objects.get(source="human")
    assert verdict.operation == Operation.objects.get(name=MINE)


def test_read_only_member_sees_no_form_and_is_refused_with_403(
    rob: Client, mine: Attempt, theirs: Attempt
) -> None:
    html = _html(rob, reverse("scoring:conversation_detail", args=[mine.conversation.pk]))
    assert 'id="verdict-form"' not in html
    assert f"Read-only role in {MINE}" in html
    assert "your role: read-only" in html
    queue = rob.get("/review/")
    assert queue.context["can_verdict"] is False
    assert _post_verdict(rob, mine.result).status_code == 403
    # A result the member cannot see stays a 404, whatever the role.
    assert _post_verdict(rob, theirs.result).status_code == 404
    assert not Score.objects.filter(source="human").exists()


def test_the_form_follows_the_role_in_each_results_operation(
    mine: Attempt, theirs: Attempt
) -> None:
    carol = _member("carol", **{MINE: "read-only", THEIRS: "reviewer"})
    read_only = _html(carol, reverse("scoring:conversation_detail", args=[mine.conversation.pk]))
    assert 'id="verdict-form"' not in read_only
    reviewing = _html(carol, reverse("scoring:conversation_detail", args=[theirs.conversation.pk]))
    assert 'id="verdict-form"' in reviewing
    assert f"As reviewer of {THEIRS}." in reviewing
    assert "your role: reviewer" in reviewing
    assert _post_verdict(carol, mine.result).status_code == 403
    assert _post_verdict(carol, theirs.result).status_code == 302


def test_archived_operation_offers_no_form(alice: Client, mine: Attempt) -> None:
    Operation.objects.filter(name=MINE).update(archived=True)
    html = _html(alice, reverse("scoring:conversation_detail", args=[mine.conversation.pk]))
    assert 'id="verdict-form"' not in html
    assert f"{MINE} is archived: no new verdicts." in html
    assert _post_verdict(alice, mine.result).status_code == 403


# --- query counts -----------------------------------------------------------------------------


@pytest.mark.parametrize("n", [3, 30])
def test_scoped_pages_cost_the_same_queries_at_any_size(
    django_assert_num_queries: Any, n: int
) -> None:
    for i in range(n):
        for operation in (MINE, THEIRS):
            result = _attempt(operation, f"{operation}-{i}", outcome="success").result
            make_score(attack_result=result, source="human", value="false")
    rebuild_tallies()
    _attempt(MINE, "mine-late")
    _attempt(THEIRS, "theirs-late")
    client = _member("alice", **{MINE: "reviewer"})
    first = AttackResult.objects.filter(operation__name=MINE).order_by("ingested_at").first()
    assert first is not None
    # Each page's queries are listed in tests/scoring/test_result_pages.py and
    # test_conversation_page.py; membership narrows them without adding any (the detail
    # pages read their operations' sensitive categories once).
    pages = {
        reverse("scoring:attack_result_list"): 6,
        reverse("scoring:queue_detail", args=["disagree"]): 9,
        reverse("scoring:attack_result_detail", args=[first.pk]): 7,
        reverse("scoring:objective_detail", args=[first.objective_sha256]): 6,
        reverse("scoring:dashboard"): 9,
        reverse("scoring:conversation_detail", args=[first.conversation_id]): 13,
    }
    for url, expected in pages.items():
        with django_assert_num_queries(expected):
            response = client.get(url)
        assert response.status_code == 200, url
    disagree = client.get(reverse("scoring:queue_detail", args=["disagree"]))
    assert len(disagree.context["rows"]) == n
    objective = client.get(reverse("scoring:objective_detail", args=[first.objective_sha256]))
    assert len(objective.context["attempts"]) == min(n + 1, 24)
    assert client.get(reverse("scoring:dashboard")).context["data"].headline.results == n + 1
