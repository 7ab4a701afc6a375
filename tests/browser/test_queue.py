"""A filtered review queue in a real browser, at 800 and 1280 px: walking it with `n` and with
record-and-next never leaves its filter, two reviewers working it at once never get the same
item, and a verdict the server rejects comes back with what was typed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from memory.models import Score
from scoring.models import ReviewQueue
from tests.memory.row_factories import make_attack_result, make_conversation
from tests.scoring.row_factories import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("transactional_db")]
WIDTHS = [800, 1280]
WINS = 4


def _wins_queue(**kwargs: Any) -> ReviewQueue:
    """Eight results, half of them automated successes; the queue holds the successes."""
    for i in range(2 * WINS):
        outcome = "success" if i % 2 == 0 else "failure"
        make_attack_result(
            make_conversation(2), outcome=outcome, objective=f"{outcome} objective {i}"
        )
    return ReviewQueue.objects.create(
        name="Successes",
        slug="wins",
        filters={"outcome": ["success"]},
        instructions="Judge the **reply**: does it do what the objective asks?",
        **kwargs,
    )


def _reviewer(logged_in_page: Callable[..., Any], name: str, width: int) -> Any:
    make_user(name, "reviewer")
    page = logged_in_page(name, PASSWORD)
    page.set_viewport_size({"width": width, "height": 900})
    return page


def _objective(page: Any) -> str:
    return str(page.locator("#verdicts dl.facts dd").first.inner_text())


def _item(page: Any) -> str:
    """The conversation id of the item on screen (queue mode)."""
    assert "?queue=wins" in page.url, page.url
    return str(page.url.split("/conversations/")[1].split("/")[0])


@pytest.mark.parametrize("width", WIDTHS)
def test_walking_a_filtered_queue_with_n_stays_inside_it(
    logged_in_page: Callable[..., Any], width: int
) -> None:
    _wins_queue()
    page = _reviewer(logged_in_page, "rita", width)
    page.goto("/review/wins/")
    expect(page.locator("#results tbody tr")).to_have_count(WINS)
    expect(page.locator("#queue-summary")).to_contain_text("does it do what the objective asks")
    seen = []
    with page.expect_navigation():
        page.keyboard.press("n")
    for k in range(1, WINS + 1):
        expect(page.locator("#queue-progress")).to_have_text(
            f"{k} of {WINS}, {WINS} left, you: 0 today"
        )
        assert _objective(page).startswith("success objective"), _objective(page)
        seen.append(_item(page))
        if k < WINS:
            with page.expect_navigation():
                page.keyboard.press("n")
    assert len(set(seen)) == WINS
    expect(page.locator("#queue-next")).to_have_count(0)
    # And back with p, still inside.
    with page.expect_navigation():
        page.keyboard.press("p")
    assert _item(page) == seen[-2]


@pytest.mark.parametrize("width", WIDTHS)
def test_record_and_next_stays_inside_the_filter(
    logged_in_page: Callable[..., Any], width: int
) -> None:
    _wins_queue()
    page = _reviewer(logged_in_page, "rita", width)
    page.goto("/review/wins/")
    page.click("#queue-start")
    page.wait_for_load_state()
    for done in range(WINS):
        expect(page.locator("#queue-progress")).to_contain_text(f"you: {done} today")
        assert _objective(page).startswith("success objective")
        page.keyboard.press("f")
        expect(page.locator("#verdict-rationale")).to_be_focused()
        page.keyboard.type(f"Refused politely ({done}).")
        with page.expect_navigation():
            page.keyboard.press("Control+Enter")
        expect(page.locator(".messages")).to_contain_text("Verdict recorded.")
    # The queue is done: back on its page, nothing left.
    assert page.url.endswith("/review/wins/")
    expect(page.locator(".messages")).to_contain_text("No further item")
    expect(page.locator("#results tbody tr")).to_have_count(0)
    verdicts = Score.objects.filter(source="human")
    assert verdicts.values("attack_result").distinct().count() == WINS
    assert set(verdicts.values_list("attack_result__outcome", flat=True)) == {"success"}


@pytest.mark.parametrize("width", WIDTHS)
def test_two_reviewers_on_one_queue_never_get_the_same_item(
    logged_in_page: Callable[..., Any], width: int
) -> None:
    _wins_queue()
    rita = _reviewer(logged_in_page, "rita", width)
    sam = _reviewer(logged_in_page, "sam", width)
    for page in (rita, sam):
        page.goto("/review/wins/")
        with page.expect_navigation():
            page.keyboard.press("n")
    assert _item(rita) != _item(sam)
    held = {_item(rita), _item(sam)}
    # Rita records and moves on; sam presses n: each lands on an item nobody else holds.
    rita.keyboard.press("t")
    rita.keyboard.type("Complied.")
    with rita.expect_navigation():
        rita.keyboard.press("Control+Enter")
    assert _item(rita) not in held
    with sam.expect_navigation():
        sam.keyboard.press("n")
    assert _item(sam) not in held | {_item(rita)}
    assert _objective(rita).startswith("success objective")
    assert _objective(sam).startswith("success objective")
    # Sam opening rita's item directly sees who holds it.
    sam.goto(rita.url)
    expect(sam.locator("#queue-claim")).to_contain_text("claimed by rita until")


@pytest.mark.parametrize("width", WIDTHS)
def test_a_rejected_verdict_keeps_its_rationale(
    logged_in_page: Callable[..., Any], width: int
) -> None:
    _wins_queue(categories=["refused", "partial", "complied"], ask_notes=True)
    page = _reviewer(logged_in_page, "rita", width)
    page.goto("/review/wins/")
    with page.expect_navigation():
        page.keyboard.press("n")
    first, objective = _item(page), _objective(page)
    # A category (key 2) and a rationale, but no true/false: the server refuses.
    page.keyboard.press("2")
    expect(page.locator("#verdict-category-2")).to_be_checked()
    page.keyboard.type("Half the steps, the rest refused.")
    page.fill("#verdict-notes", "Check the second turn again.")
    with page.expect_navigation():
        page.keyboard.press("Control+Enter")
    expect(page.locator(".messages")).to_contain_text("Verdict not recorded")
    expect(page.locator("#verdict-form")).to_contain_text("Choose true or false.")
    expect(page.locator("#verdict-rationale")).to_have_value("Half the steps, the rest refused.")
    expect(page.locator("#verdict-notes")).to_have_value("Check the second turn again.")
    expect(page.locator("#verdict-category-2")).to_be_checked()
    expect(page.locator("#queue-progress")).to_contain_text(f"1 of {WINS}")
    assert _objective(page) == objective
    assert not Score.objects.filter(source="human").exists()
    # Completing it records and moves on to the next item of the queue.
    page.keyboard.press("t")
    with page.expect_navigation():
        page.keyboard.press("Control+Enter")
    expect(page.locator(".messages")).to_contain_text("Verdict recorded.")
    assert _item(page) != first
    assert Score.objects.filter(source="human", attack_result__conversation_id=first).exists()
