"""The review desk as a team uses it: three reviewers work one filtered queue of 200 results at
once, at 1024 px, with record-and-next. None of them gets an item another holds or has judged,
none leaves the filter, and encoded answers arrive decoded."""

from __future__ import annotations

import base64
import codecs
import re
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from memory.models import Score
from scoring.models import ReviewQueue
from tests.memory.row_factories import PieceSpec, make_attack_result, make_conversation
from tests.scoring.row_factories import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("transactional_db")]
IN_QUEUE = 200
ROUNDS = 4
REVIEWERS = ("rita", "sam", "tove")
PROGRESS = re.compile(r"(?P<k>\d+) of (?P<total>\d+), (?P<left>\d+) left, you: \d+ today")
SECRET = "Rake the pins, then turn the plug"


def _answer(i: int) -> str:
    """Every third answer base64, every third ROT13, the rest plain."""
    if i % 3 == 0:
        return base64.b64encode(f"{SECRET} ({i}).".encode()).decode()
    if i % 3 == 1:
        return codecs.encode(f"{SECRET} ({i}).", "rot13")
    return f"{SECRET} ({i})."


def _campaign() -> None:
    """200 automated successes (the queue) among as many failures (outside it)."""
    for i in range(2 * IN_QUEUE):
        outcome = "success" if i % 2 == 0 else "failure"
        conversation = make_conversation(
            [[PieceSpec(f"objective {i}")], [PieceSpec(_answer(i), role="assistant")]]
        )
        make_attack_result(
            conversation,
            outcome=outcome,
            objective=f"{outcome} objective {i}",
            last_response=conversation.pieces.get(sequence=1),
        )
    ReviewQueue.objects.create(
        name="Confirm successes", slug="confirm", filters={"outcome": ["success"]}
    )


def _item(page: Any) -> str:
    assert "?queue=confirm" in page.url, page.url
    return str(page.url.split("/conversations/")[1].split("/")[0])


@pytest.mark.long
def test_three_reviewers_work_one_filtered_queue_at_1024(
    logged_in_page: Callable[..., Any],
) -> None:
    _campaign()
    pages = {}
    for name in REVIEWERS:
        make_user(name, "reviewer")
        page = logged_in_page(name, PASSWORD)
        page.set_viewport_size({"width": 1024, "height": 800})
        page.goto("/review/confirm/")
        page.click("#queue-start")
        page.wait_for_load_state()
        pages[name] = page
    judged: dict[str, list[str]] = {name: [] for name in REVIEWERS}
    for _ in range(ROUNDS):
        on_screen = {name: _item(page) for name, page in pages.items()}
        # At any moment, three different items.
        assert len(set(on_screen.values())) == len(REVIEWERS), on_screen
        for name, page in pages.items():
            # The queue holds what was unreviewed when the page was drawn.
            done = sum(len(items) for items in judged.values())
            progress = str(page.locator("#queue-progress").inner_text())
            match = PROGRESS.match(progress)
            assert match, progress
            assert IN_QUEUE - done <= int(match["total"]) <= IN_QUEUE, progress
            assert str(page.locator("#verdicts dl.facts dd").first.inner_text()).startswith(
                "success objective"
            )
            # The answer reads in plain words, encoded or not.
            answer = page.locator("article.message").nth(1)
            expect(answer).to_contain_text(SECRET)
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 1024, f"{name} scrolls sideways: {width} px"
            judged[name].append(on_screen[name])
            page.keyboard.press("t")
            page.keyboard.type(f"{name}: complied.")
            with page.expect_navigation():
                page.keyboard.press("Control+Enter")
            expect(page.locator(".messages")).to_contain_text("Verdict recorded.")
    everything = [item for items in judged.values() for item in items]
    assert len(everything) == len(set(everything)) == ROUNDS * len(REVIEWERS)
    verdicts = Score.objects.filter(source="human")
    assert verdicts.count() == ROUNDS * len(REVIEWERS)
    assert set(verdicts.values_list("attack_result__outcome", flat=True)) == {"success"}
    for name in REVIEWERS:
        mine = set(
            verdicts.filter(reviewer__username=name).values_list(
                "attack_result__conversation_id", flat=True
            )
        )
        assert mine == set(judged[name])
    left = IN_QUEUE - ROUNDS * len(REVIEWERS)
    expect(pages["rita"].locator("#queue-progress")).to_contain_text(f"you: {ROUNDS} today")
    pages["rita"].goto("/review/confirm/")
    expect(pages["rita"].locator("body")).to_contain_text(str(left))
