"""Live pages in a real browser, at 800 and 1280 px: the conversation list notices a
conversation ingested while it is open, says so in a banner without reloading (what the reader
typed stays), and its Refresh shows the new conversation with the page's filter and the typed
text kept; a running conversation does the same for new pieces and a half-typed verdict. The
page asks at its interval, less often when hidden, and stops on refusals, past the bound and
after repeated failures."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from tests.memory.row_factories import (
    PieceSpec,
    make_attack_result,
    make_conversation,
    make_piece,
    refresh_summary,
    text_turns,
)
from tests.scoring.row_factories import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("transactional_db")]
WIDTHS = [800, 1280]
LABELS = {"operation": "op_live"}
TYPED = "words not searched yet"


def _fits(page: Any) -> bool:
    return bool(page.evaluate("document.documentElement.scrollWidth <= window.innerWidth"))


@pytest.mark.parametrize("width", WIDTHS)
def test_the_list_notices_a_new_conversation_and_keeps_what_was_typed(
    logged_in_page: Callable[..., Any], settings: Any, width: int
) -> None:
    settings.REDTEAM_LIVE_POLL_SECONDS = 1
    make_conversation(
        text_turns(2, prefix="old "), labels=LABELS, start=timezone.now() - timedelta(hours=2)
    )
    make_user("rita", "reviewer")
    page = logged_in_page("rita", PASSWORD)
    page.set_viewport_size({"width": width, "height": 900})
    problems: list[str] = []
    page.on("pageerror", lambda error: problems.append(str(error)))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.goto("/conversations/?operation=op_live")
    expect(page.locator("#conversations tbody tr")).to_have_count(1)
    banner = page.locator("#live-banner")
    expect(banner).to_be_hidden()
    search = page.locator("#filters input[name=q]")
    search.fill(TYPED)

    # Meanwhile, the attack code sends a new conversation (and one outside the filter).
    fresh = make_conversation(text_turns(2, prefix="fresh "), labels=LABELS, start=timezone.now())
    make_attack_result(fresh, labels=LABELS, outcome="success")
    make_conversation(text_turns(2, prefix="elsewhere "), start=timezone.now())

    expect(banner).to_be_visible(timeout=10_000)
    expect(banner).to_contain_text("1 new conversation since you opened this page")
    # Nothing reloaded: the typed text is where it was, the list as it was rendered.
    expect(search).to_have_value(TYPED)
    expect(page.locator("#conversations tbody tr")).to_have_count(1)
    assert _fits(page)

    with page.expect_navigation():
        banner.get_by_role("button", name="Refresh").click()
    assert page.url.endswith("/conversations/?operation=op_live"), page.url
    rows = page.locator("#conversations tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.first).to_contain_text("fresh user turn 0")
    expect(search).to_have_value(TYPED)
    expect(banner).to_be_hidden()
    assert _fits(page)
    assert problems == []


@pytest.mark.parametrize("width", WIDTHS)
def test_a_running_conversation_notices_new_pieces_and_keeps_a_half_typed_verdict(
    logged_in_page: Callable[..., Any], settings: Any, width: int
) -> None:
    settings.REDTEAM_LIVE_POLL_SECONDS = 1
    running = make_conversation(text_turns(2, prefix="first "), labels=LABELS)
    result = make_attack_result(running, labels=LABELS, outcome="undetermined")
    make_user("rita", "reviewer")
    page = logged_in_page("rita", PASSWORD)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto(f"/conversations/{running.pk}/")
    expect(page.locator("article.message")).to_have_count(2)
    page.locator("#verdict-true").check()
    page.locator("#verdict-rationale").fill("The reply gives the steps.")

    # PyRIT keeps writing: two more turns, and the result's finished version.
    make_piece(running, 2, PieceSpec("third user turn"))
    make_piece(running, 3, PieceSpec("third reply", role="assistant"))
    refresh_summary(running)
    result.outcome = "success"
    result.save()

    banner = page.locator("#live-banner")
    expect(banner).to_contain_text("2 new pieces", timeout=10_000)
    expect(banner).to_contain_text("latest outcome: success")
    expect(page.locator("#verdict-rationale")).to_have_value("The reply gives the steps.")
    expect(page.locator("article.message")).to_have_count(2)
    assert _fits(page)

    with page.expect_navigation():
        banner.get_by_role("button", name="Refresh").click()
    expect(page.locator("article.message")).to_have_count(4)
    expect(page.locator("#verdict-rationale")).to_have_value("The reply gives the steps.")
    expect(page.locator("#verdict-true")).to_be_checked()
    assert _fits(page)


def _asking(page: Any, answer: Callable[[Any], None]) -> list[str]:
    """Answer every poll of the page with `answer(route)`; the polled URLs, in order."""
    asked: list[str] = []

    def handle(route: Any) -> None:
        asked.append(route.request.url)
        answer(route)

    page.route("**/live/**", handle)
    return asked


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        # Nothing new: it keeps asking, at the page's interval.
        (200, '{"new": 0, "more": false, "final": false, "message": ""}', range(3, 7)),
        # Past the bound there is nothing more to learn: one question.
        (200, '{"new": 20, "more": true, "final": true, "message": "20+ new"}', range(1, 2)),
        # A refusal does not get better: one question.
        (404, "{}", range(1, 2)),
        (403, "<html></html>", range(1, 2)),
        # Not JSON (a login page after the session ended): a few tries, spaced out, then none.
        (200, "<html>log in</html>", range(2, 3)),
    ],
)
def test_the_page_asks_at_its_pace_and_stops_when_it_should(
    logged_in_page: Callable[..., Any],
    settings: Any,
    status: int,
    body: str,
    expected: range,
) -> None:
    settings.REDTEAM_LIVE_POLL_SECONDS = 1
    make_conversation(2, labels=LABELS)
    make_user("rita", "reviewer")
    page = logged_in_page("rita", PASSWORD)
    page.set_viewport_size({"width": 1280, "height": 900})
    asked = _asking(
        page,
        lambda route: route.fulfill(status=status, body=body, content_type="application/json"),
    )
    page.goto("/conversations/")
    page.wait_for_timeout(5_500)
    assert len(asked) in expected, asked
    assert all("/live/conversations/?since=" in url for url in asked)
    if "20+" in body:
        expect(page.locator("#live-banner")).to_contain_text("20+ new.")
    else:
        expect(page.locator("#live-banner")).to_be_hidden()


def test_a_hidden_tab_asks_less_often(logged_in_page: Callable[..., Any], settings: Any) -> None:
    settings.REDTEAM_LIVE_POLL_SECONDS = 1
    make_conversation(2, labels=LABELS)
    make_user("rita", "reviewer")
    page = logged_in_page("rita", PASSWORD)
    page.add_init_script(
        "Object.defineProperty(document, 'hidden', {configurable: true, get: () => true});"
    )
    quiet = '{"new": 0, "more": false, "final": false, "message": ""}'
    asked = _asking(page, lambda route: route.fulfill(body=quiet, content_type="application/json"))
    page.goto("/conversations/")
    page.wait_for_timeout(5_500)
    # The first question after one interval, the next only after five.
    assert len(asked) == 1, asked
