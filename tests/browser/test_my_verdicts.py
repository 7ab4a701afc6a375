"""My recent verdicts and "save as queue" in a real browser, at 800 and 1280 px: a reviewer
finds the verdict just recorded, undoes it and sees it kept as withdrawn; a filtered results
list becomes a queue holding that filter."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from scoring.models import ReviewQueue
from tests.memory.row_factories import make_attack_result, make_conversation
from tests.scoring.row_factories import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("transactional_db")]


@pytest.mark.parametrize("width", [800, 1280])
def test_a_reviewer_undoes_a_verdict_and_saves_a_filter_as_a_queue(
    logged_in_page: Callable[..., Any], width: int
) -> None:
    conversation = make_conversation(2)
    make_attack_result(conversation, outcome="success", objective="Pick the lock")
    make_attack_result(make_conversation(2), outcome="failure", objective="Refused one")
    make_user("rita", "reviewer")
    page = logged_in_page("rita", PASSWORD)
    page.set_viewport_size({"width": width, "height": 900})

    page.goto(f"/conversations/{conversation.pk}/")
    page.keyboard.press("t")
    page.keyboard.type("It gave the steps.")
    with page.expect_navigation():
        page.keyboard.press("Control+Enter")
    expect(page.locator(".messages")).to_contain_text("Verdict recorded.")

    page.goto("/review/mine/")
    row = page.locator("#my-verdicts tbody tr")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("Pick the lock")
    expect(row).to_contain_text("It gave the steps.")
    with page.expect_navigation():
        row.get_by_role("button", name="Undo").click()
    expect(page.locator("#my-verdicts tbody tr")).to_contain_text("withdrawn")
    expect(page.locator("#my-verdicts")).not_to_contain_text("Undo")
    assert page.evaluate("document.documentElement.scrollWidth") <= width

    page.goto("/attack-results/?outcome=success")
    with page.expect_navigation():
        page.click("#save-as-queue")
    page.fill("#queue-form input[name=name]", "Rita's successes")
    with page.expect_navigation():
        page.click("#queue-form button[type=submit]")
    queue = ReviewQueue.objects.get(name="Rita's successes")
    assert queue.filters == {"outcome": ["success"]}
    assert page.url.endswith(f"/review/{queue.slug}/")
    expect(page.locator("#results tbody tr")).to_have_count(1)
    expect(page.locator("#results")).to_contain_text("Pick the lock")
