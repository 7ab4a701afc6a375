"""Review queues that keep their place: the walk stays inside the queue's filter and order,
claims keep two reviewers off one item, skips go to the end, the header counts, a rejected
verdict keeps what was typed, and the pages cost the same queries at 3 and 30 items."""

from __future__ import annotations

import itertools
import uuid
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from memory.models import AttackResult, Score
from redteam.common.access import user_scope
from redteam.common.models import Operation
from scoring import queues
from scoring.forms import VerdictForm
from scoring.models import ReviewClaim, ReviewQueue, ReviewSkip
from scoring.queues import QueueWalk, queue_for
from scoring.services import record_verdict
from scoring.verdict_fields import VerdictAnswers, VerdictFields
from tests.access import grant
from tests.memory.row_factories import make_attack_result, make_conversation
from tests.scoring.row_factories import make_score, make_user

pytestmark = pytest.mark.django_db


def _results(n: int, outcomes: tuple[str, ...] = ("success", "failure")) -> list[AttackResult]:
    """n results ingested one after the other (the last is the newest), outcomes cycling."""
    return [
        make_attack_result(
            make_conversation(2), outcome=outcomes[i % len(outcomes)], objective=f"objective {i}"
        )
        for i in range(n)
    ]


def _queue(slug: str = "wins", **kwargs: Any) -> ReviewQueue:
    defaults: dict[str, Any] = {"name": slug.title(), "filters": {"outcome": ["success"]}}
    return ReviewQueue.objects.create(slug=slug, **{**defaults, **kwargs})


def _client(user: User) -> Client:
    client = Client()
    client.force_login(user)
    return client


def _token() -> str:
    return str(uuid.uuid4())


def _conversation_of(location: str) -> str:
    """The conversation id of a conversation page URL (queue mode)."""
    path = location.split("?")[0]
    assert path.startswith("/conversations/"), location
    return path.removeprefix("/conversations/").rstrip("/")


def _step(client: Client, slug: str, after: AttackResult | None = None) -> str | None:
    """Follow "next" (the first item when `after` is None): the conversation handed out."""
    url = reverse("scoring:queue_step", args=[slug, "next"])
    response = client.get(url + (f"?from={after.pk}" if after else ""))
    assert response.status_code == 302
    if response["Location"] == reverse("scoring:queue_detail", args=[slug]):
        return None
    assert response["Location"].endswith(f"?queue={slug}")
    return _conversation_of(response["Location"])


def _result_of(conversation_id: str) -> AttackResult:
    return AttackResult.objects.get(conversation_id=conversation_id)


# --- the walk stays inside the filter -------------------------------------------------------


def test_next_walks_a_filtered_queue_in_order_and_never_leaves_it(reviewer: User) -> None:
    results = _results(12)
    _queue()
    client = _client(reviewer)
    seen: list[AttackResult] = []
    current = None
    while (conversation := _step(client, "wins", current)) is not None:
        current = _result_of(conversation)
        seen.append(current)
    wins = [r for r in reversed(results) if r.outcome == "success"]
    assert [r.pk for r in seen] == [r.pk for r in wins]  # newest ingested first, all 6
    assert {r.outcome for r in seen} == {"success"}


def test_record_and_next_stays_inside_the_filter(reviewer: User) -> None:
    _results(8)
    _queue()
    client = _client(reviewer)
    conversation = _step(client, "wins")
    recorded = []
    while conversation is not None:
        result = _result_of(conversation)
        assert result.outcome == "success"
        page = client.get(
            reverse("scoring:conversation_detail", args=[conversation]) + "?queue=wins"
        )
        assert page.status_code == 200
        response = client.post(
            reverse("scoring:verdict", args=[result.pk]),
            {"verdict": "false", "rationale": "no", "queue": "wins", "submission": _token()},
        )
        recorded.append(result.pk)
        location = response["Location"]
        if location == reverse("scoring:queue_detail", args=["wins"]):
            break
        conversation = _conversation_of(location)
    assert len(recorded) == 4
    assert set(
        Score.objects.filter(source="human").values_list("attack_result__outcome", flat=True)
    ) == {"success"}


def test_the_conversation_page_reads_the_queue_from_its_slug(
    reviewer_client: Client,
) -> None:
    _older, newer = _results(2, ("success",))
    _queue(instructions="**Judge** the *reply*, not the prompt. <script>x</script>")
    html = reviewer_client.get(
        reverse("scoring:conversation_detail", args=[newer.conversation_id]) + "?queue=wins"
    ).content.decode()
    assert 'id="queue-progress">1 of 2, 2 left, you: 0 today<' in html
    assert f"/review/wins/next/?from={newer.pk}" in html
    assert "<strong>Judge</strong>" in html
    assert "<script>x" not in html
    assert 'name="queue" value="wins"' in html


def test_unknown_archived_or_foreign_queues_are_404(reviewer: User) -> None:
    conv = make_conversation(2)
    make_attack_result(conv)
    client = _client(reviewer)
    page = reverse("scoring:conversation_detail", args=[conv.pk])
    assert client.get(page + "?queue=nope").status_code == 404
    _queue("old", archived=True)
    assert client.get(page + "?queue=old").status_code == 404
    assert client.get(reverse("scoring:queue_detail", args=["old"])).status_code == 404
    elsewhere = Operation.objects.create(name="elsewhere")
    outsider = User.objects.create_user("olga")
    assert conv.operation is not None
    grant(outsider, conv.operation, "reviewer")
    _queue("theirs", operation=elsewhere)
    assert _client(outsider).get(reverse("scoring:queue_detail", args=["theirs"])).status_code == (
        404
    )
    assert client.get(reverse("scoring:queue_detail", args=["theirs"])).status_code == 200


# --- claims -----------------------------------------------------------------------------------


def test_two_reviewers_never_get_the_same_item_from_next() -> None:
    _results(6, ("success",))
    _queue()
    rita, sam = make_user("rita"), make_user("sam")
    a, b = _client(rita), _client(sam)
    handed: list[str] = []
    for client in (a, b, a, b, a, b):
        current = None
        claimed = ReviewClaim.objects.filter(user__username="rita" if client is a else "sam")
        if claimed.exists():
            current = claimed.get().attack_result
        conversation = _step(client, "wins", current)
        assert conversation is not None
        handed.append(conversation)
    assert len(set(handed)) == 6
    # Each holds only the item in front of them.
    assert ReviewClaim.objects.filter(user=rita).count() == 1
    assert ReviewClaim.objects.filter(user=sam).count() == 1


def test_an_item_held_by_another_shows_who_and_until_when(reviewer: User) -> None:
    (result,) = _results(1, ("success",))
    _queue()
    sam = make_user("sam")
    until = timezone.now() + timedelta(minutes=5)
    ReviewClaim.objects.create(
        attack_result=result, user=sam, claimed_at=timezone.now(), expires_at=until
    )
    html = (
        _client(reviewer)
        .get(reverse("scoring:conversation_detail", args=[result.conversation_id]) + "?queue=wins")
        .content.decode()
    )
    assert f"claimed by sam until {timezone.localtime(until):%H:%M}" in html
    assert ReviewClaim.objects.get().user == sam
    # Nothing is free for the reviewer: "next" says so rather than handing out sam's item.
    assert _step(_client(reviewer), "wins") is None


def test_an_expired_claim_is_taken_over(reviewer: User) -> None:
    (result,) = _results(1, ("success",))
    queue = _queue()
    sam = make_user("sam")
    ReviewClaim.objects.create(
        attack_result=result,
        user=sam,
        claimed_at=timezone.now() - timedelta(minutes=30),
        expires_at=timezone.now() - timedelta(minutes=20),
    )
    assert _step(_client(reviewer), "wins") == result.conversation_id
    claim = ReviewClaim.objects.get()
    assert (claim.user, claim.queue) == (reviewer, queue)
    assert claim.expires_at > timezone.now() + timedelta(minutes=9)


def test_claims_follow_the_setting(reviewer: User, settings: Any) -> None:
    settings.REVIEW_CLAIM_MINUTES = 2
    (result,) = _results(1, ("success",))
    walk = QueueWalk(_queue(), user_scope(reviewer), reviewer)
    assert walk.claim(result.pk).mine
    assert ReviewClaim.objects.get().expires_at == walk.now + timedelta(minutes=2)
    # A second claimant is refused while it holds, whatever the order of the attempts.
    sam = make_user("sam")
    other = QueueWalk(walk.queue, user_scope(sam), sam)
    hold = other.claim(result.pk)
    assert (hold.mine, hold.holder) == (False, "rita")
    assert ReviewClaim.objects.get().user == reviewer


def test_readers_walk_a_queue_without_holding_items(reader: User) -> None:
    _results(2, ("success",))
    _queue()
    assert _step(_client(reader), "wins") is not None
    assert not ReviewClaim.objects.exists()


# --- skips ------------------------------------------------------------------------------------


def test_skip_moves_the_item_to_the_end_and_moves_on(reviewer: User) -> None:
    results = _results(4, ("success",))
    queue = _queue()
    client = _client(reviewer)
    first = _step(client, "wins")
    assert first == results[-1].conversation_id
    response = client.post(
        reverse("scoring:queue_skip", args=["wins", results[-1].pk]), {"reason": "need a linguist"}
    )
    assert _conversation_of(response["Location"]) == results[-2].conversation_id
    skip = ReviewSkip.objects.get()
    assert (skip.reason, skip.user, skip.queue) == ("need a linguist", reviewer, queue)
    assert not ReviewClaim.objects.filter(attack_result=results[-1]).exists()
    walk = QueueWalk(queue, user_scope(reviewer), reviewer)
    order = [r.pk for r in walk.items()]
    assert order == [results[2].pk, results[1].pk, results[0].pk, results[3].pk]
    assert walk.progress(walk.key_of(results[3])).position == 4


def test_skip_needs_the_reviewer_role(reader: User) -> None:
    (result,) = _results(1, ("success",))
    _queue()
    response = _client(reader).post(reverse("scoring:queue_skip", args=["wins", result.pk]))
    assert response.status_code == 403
    assert not ReviewSkip.objects.exists()


# --- the header -------------------------------------------------------------------------------


def test_header_counts_place_what_is_left_and_the_viewers_day(reviewer: User) -> None:
    results = _results(5, ("success",))
    queue = _queue("all-wins", review="")
    sam = make_user("sam")
    # Two reviewed by the viewer today (one of them twice), one yesterday; one held by sam.
    for result in (results[0], results[1], results[1]):
        record_verdict(
            attack_result=result,
            reviewer=reviewer,
            scope=user_scope(reviewer),
            value=True,
            score_type="true_false",
            rationale="r",
        )
    make_score(
        attack_result=results[2],
        source="human",
        reviewer=reviewer,
        timestamp=timezone.now() - timedelta(days=2),
    )
    ReviewClaim.objects.create(
        attack_result=results[3],
        user=sam,
        claimed_at=timezone.now(),
        expires_at=timezone.now() + timedelta(minutes=5),
    )
    html = (
        _client(reviewer)
        .get(
            reverse("scoring:conversation_detail", args=[results[3].conversation_id])
            + "?queue=all-wins"
        )
        .content.decode()
    )
    # Newest first: results[3] is 2nd of 5; left: results[4] (3 reviewed, 3 held by sam).
    assert 'id="queue-progress">2 of 5, 1 left, you: 2 today<' in html
    walk = QueueWalk(queue, user_scope(reviewer), reviewer)
    progress = walk.progress(walk.key_of(results[0]))
    assert (progress.position, progress.total, progress.held_by_others) == (5, 5, 1)


def test_counts_stop_at_their_bound_and_say_so(
    reviewer: User, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(queues, "COUNT_BOUND", 3)
    results = _results(6, ("success",))
    _queue()
    client = _client(reviewer)

    def header(result: AttackResult) -> str:
        page = reverse("scoring:conversation_detail", args=[result.conversation_id])
        return client.get(page + "?queue=wins").content.decode()

    # Newest first: results[4] is 2nd, results[3] 3rd; results[2] is past the bound.
    assert 'id="queue-progress">2 of 3+, 3+ left, you: 0 today<' in header(results[4])
    assert 'id="queue-progress">3 of 3+, 3+ left, you: 0 today<' in header(results[3])
    html = header(results[0])
    assert 'id="queue-progress">beyond the first 3, 3+ left, you: 0 today<' in html
    assert 'id="queue-next"' in html  # the count stopped: there may be more
    assert 'id="queue-previous"' in html
    html = client.get(reverse("scoring:queue_detail", args=["wins"])).content.decode()
    assert "<strong>3+</strong> items · <strong>3+</strong> left" in html
    html = client.get(reverse("scoring:review_queue")).content.decode()
    assert "<strong data-awaiting>3+</strong>" in html
    # Exact below the bound.
    walk = QueueWalk(ReviewQueue.objects.get(slug="wins"), user_scope(reviewer), reviewer)
    monkeypatch.setattr(queues, "COUNT_BOUND", 6)
    progress = walk.progress(walk.key_of(results[0]))
    assert (progress.place, progress.left_shown, progress.has_next) == ("6 of 6", "6", False)


def test_pages_and_steps_follow_the_queue_order_across_skips(reviewer: User) -> None:
    results = _results(7, ("success",))
    queue = _queue()
    now = timezone.now()
    # Skipped: results[5] first, then results[1] and results[3] at one moment.
    for result, at in ((results[5], now), (results[1], now + timedelta(seconds=1))):
        ReviewSkip.objects.create(queue=queue, attack_result=result, user=reviewer, skipped_at=at)
    ReviewSkip.objects.create(
        queue=queue, attack_result=results[3], user=reviewer, skipped_at=now + timedelta(seconds=1)
    )
    # An older skip of results[5] does not count: its latest one does.
    ReviewSkip.objects.create(
        queue=queue, attack_result=results[5], user=reviewer, skipped_at=now - timedelta(days=1)
    )
    walk = QueueWalk(queue, user_scope(reviewer), reviewer)
    expected = [results[i].pk for i in (6, 4, 2, 0, 5, 3, 1)]
    assert [r.pk for r in walk.items()] == expected
    for size in (1, 2, 3, 4, 7, 8):
        paged: list[Any] = []
        while chunk := walk.page(len(paged), size):
            paged += [r.pk for r in chunk]
        assert paged == expected, size
    by_pk = {r.pk: r for r in results}
    for earlier, later in itertools.pairwise(expected):
        following = walk.hand_out(walk.key_of(by_pk[earlier]))
        assert following is not None
        assert following.pk == later
        preceding = walk.hand_out(walk.key_of(by_pk[later]), forward=False)
        assert preceding is not None
        assert preceding.pk == earlier
    assert walk.hand_out(walk.key_of(by_pk[expected[-1]])) is None
    assert walk.hand_out(walk.key_of(by_pk[expected[0]]), forward=False) is None
    for place, pk in enumerate(expected, start=1):
        assert walk.progress(walk.key_of(by_pk[pk])).position == place


def test_queue_index_counts_each_queue(reviewer_client: Client) -> None:
    _results(6)
    _queue()
    _queue("losses", filters={"outcome": ["failure"]}, review="")
    response = reviewer_client.get(reverse("scoring:review_queue"))
    awaiting = {row["queue"].slug: row["awaiting"] for row in response.context["queues"]}
    assert awaiting == {"unreviewed": 6, "disagree": 0, "reviewed": 0, "wins": 3, "losses": 3}


# --- the verdict form -------------------------------------------------------------------------


def test_a_rejected_verdict_keeps_everything_typed(reviewer_client: Client) -> None:
    (result,) = _results(1, ("success",))
    _queue(categories=["refused", "partial", "complied"], ask_scale=True, ask_notes=True)
    page = reverse("scoring:conversation_detail", args=[result.conversation_id]) + "?queue=wins"
    html = reviewer_client.get(page).content.decode()
    assert 'id="verdict-category-3"' in html
    assert "<kbd>3</kbd>" in html
    response = reviewer_client.post(
        reverse("scoring:verdict", args=[result.pk]),
        {
            "category": "partial",
            "scale": "1.5",
            "notes": "keep <these> notes",
            "rationale": "It gives <b>half</b> the steps.",
            "queue": "wins",
            "submission": _token(),
        },
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "Verdict not recorded" in html
    assert "Choose true or false." in html
    assert ">It gives &lt;b&gt;half&lt;/b&gt; the steps.</textarea>" in html
    assert ">keep &lt;these&gt; notes</textarea>" in html
    assert 'value="1.5"' in html
    assert 'value="partial" id="verdict-category-2" checked' in html
    assert 'id="queue-progress">1 of 1' in html
    assert not Score.objects.filter(source="human").exists()


def test_a_verdict_the_service_refuses_keeps_the_rationale(
    reviewer_client: Client, reviewer: User
) -> None:
    (result,) = _results(1, ("success",))
    token = _token()
    record_verdict(
        attack_result=result,
        reviewer=reviewer,
        scope=user_scope(reviewer),
        value=True,
        score_type="true_false",
        rationale="first",
        submission=uuid.UUID(token),
    )
    response = reviewer_client.post(
        reverse("scoring:verdict", args=[result.pk]),
        {"verdict": "false", "rationale": "second thoughts", "submission": token},
    )
    assert response.status_code == 400
    html = response.content.decode()
    assert "already submitted" in html
    assert ">second thoughts</textarea>" in html
    assert 'value="false" id="verdict-false" checked' in html


def test_the_form_asks_what_the_queue_asks() -> None:
    asked = VerdictFields(true_false=False, scale=True, categories=("refused", "complied"))
    form = VerdictForm(
        {"scale": "0.4", "category": "complied", "rationale": " r ", "submission": _token()},
        asked=asked,
    )
    assert form.is_valid(), form.errors
    assert form.answers() == VerdictAnswers(
        rationale="r", scale=0.4, category="complied", fields=asked
    )
    assert not VerdictForm(
        {"scale": "0.4", "category": "other", "rationale": "r", "submission": _token()},
        asked=asked,
    ).is_valid()
    default = VerdictForm(
        {"verdict": "float", "value": "0.3", "rationale": "r", "submission": _token()}
    )
    assert default.is_valid()
    assert default.answers() == VerdictAnswers(
        rationale="r", scale=0.3, fields=VerdictFields(true_false=False, scale=True)
    )


def test_queue_for_hides_archived_queues(reviewer: User) -> None:
    _queue("old", archived=True)
    from django.http import Http404

    with pytest.raises(Http404):
        queue_for(user_scope(reviewer), "old")


# --- query counts -----------------------------------------------------------------------------


def _busy_queue(n: int, reviewer: User) -> list[AttackResult]:
    """n success results in the "wins" queue, a third held by sam and a third skipped."""
    results = _results(n, ("success",))
    queue = _queue(categories=["refused", "complied"], instructions="Read *all* of it.")
    sam = make_user("sam")
    now = timezone.now()
    for i, result in enumerate(results[:-1]):
        if i % 3 == 0:
            ReviewClaim.objects.create(
                attack_result=result,
                user=sam,
                queue=queue,
                claimed_at=now,
                expires_at=now + timedelta(minutes=5),
            )
        elif i % 3 == 1:
            ReviewSkip.objects.create(
                queue=queue, attack_result=result, user=sam, skipped_at=now, reason="later"
            )
    return results


@pytest.mark.parametrize("n", [3, 30])
def test_queue_page_query_count_is_constant(
    reviewer: User, django_assert_num_queries: Any, n: int
) -> None:
    _busy_queue(n, reviewer)
    client = _client(reviewer)
    # session, user, memberships; the queue; its counts (bounded, one query); the viewer's
    # verdicts today; one page of items (the never-skipped ones, then the skipped ones);
    # their latest human verdicts.
    with django_assert_num_queries(9):
        response = client.get(reverse("scoring:queue_detail", args=["wins"]))
    assert len(response.context["rows"]) == n
    assert response.context["progress"].total == n
    # The queues page: session, user, memberships; the queues; every queue's count.
    with django_assert_num_queries(5):
        response = client.get(reverse("scoring:review_queue"))
    assert {row["queue"].slug: row["awaiting"] for row in response.context["queues"]}["wins"] == n


@pytest.mark.parametrize("n", [3, 30])
def test_conversation_in_queue_mode_query_count_is_constant(
    reviewer: User, django_assert_num_queries: Any, n: int
) -> None:
    results = _busy_queue(n, reviewer)
    client = _client(reviewer)
    page = reverse("scoring:conversation_detail", args=[results[-1].conversation_id])
    # The conversation page's 13 (tests/scoring/test_conversation_page.py), then: the
    # queue; the item's place; its claim (savepoint, UPDATE, savepoint, INSERT, release,
    # the viewer's other claims released, release); the queue's counts; the viewer's
    # verdicts today.
    with django_assert_num_queries(24):
        response = client.get(page + "?queue=wins")
    assert response.context["progress"].position == 1
    assert response.context["hold"].mine


@pytest.mark.parametrize("n", [3, 30])
def test_next_and_previous_query_counts_are_constant(
    reviewer: User, django_assert_num_queries: Any, n: int
) -> None:
    """Steps inside the never-skipped items, from them into the skipped ones and back: the
    same queries at 3 and 30 items (every third skipped, every third held by sam)."""
    results = _results(n, ("success",))
    queue = _queue()
    sam = make_user("sam")
    now = timezone.now()
    for i, result in enumerate(results):
        if i % 3 == 0:
            ReviewSkip.objects.create(queue=queue, attack_result=result, user=sam, skipped_at=now)
        elif i % 3 == 1:
            ReviewClaim.objects.create(
                attack_result=result,
                user=sam,
                queue=queue,
                claimed_at=now,
                expires_at=now + timedelta(minutes=5),
            )
    client = _client(reviewer)
    newest, oldest_free, newest_skipped = results[-1], results[2], results[n - 3]

    def step(direction: str, after: AttackResult | None) -> str:
        url = reverse("scoring:queue_step", args=["wins", direction])
        response = client.get(url + (f"?from={after.pk}" if after else ""))
        assert response.status_code == 302
        return str(response["Location"])

    # session, user, memberships; the queue; the first free item; its claim (savepoint,
    # UPDATE, savepoint, INSERT, release, the viewer's other claims released, release).
    with django_assert_num_queries(12):
        assert newest.conversation_id in step("next", None)
    # The same four; the `from` result and its skip; the never-skipped items after it (none
    # free), then the skipped ones; the claim (seven, as above).
    with django_assert_num_queries(15):
        assert newest_skipped.conversation_id in step("next", oldest_free)
    with django_assert_num_queries(15):
        assert oldest_free.conversation_id in step("previous", newest_skipped)
    # Nothing before the first item: back to the queue.
    with django_assert_num_queries(7):
        assert step("previous", newest) == reverse("scoring:queue_detail", args=["wins"])
