"""Reviewer safety in a real browser: a sensitive image is blurred and its text hidden until the
reviewer clicks Reveal, which uncovers the piece in place (no reload) and leaves an audit row;
at a narrow and a wide window, under the site's strict CSP."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from memory.sensitive import REVEAL_ACTION
from redteam.common.models import AuditEvent, Operation
from tests.memory.row_factories import PieceSpec, make_attack_result, make_conversation, make_media
from tests.scoring.row_factories import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("transactional_db")]

SECRET_TEXT = "A graphic reply the operation asked to keep covered"


@pytest.mark.parametrize("width", [800, 1280])
def test_reveal_uncovers_a_blurred_image_and_hidden_text_in_place(
    logged_in_page: Callable[..., Any], live_server: Any, width: int
) -> None:
    operation = Operation.objects.create(name="op-safe", sensitive_harm_categories=["Sexual"])
    conv = make_conversation(
        [
            [
                PieceSpec("What is shown here?"),
                PieceSpec("/home/op/run/a.png", data_type="image_path", media=make_media()),
            ],
            [PieceSpec(SECRET_TEXT, role="assistant")],
        ],
        labels={"operation": operation.name},
    )
    make_attack_result(conv, labels={"operation": operation.name}, harm_categories=["sexual"])
    image_piece = conv.pieces.get(sequence=0, position=1)
    reply = conv.pieces.get(sequence=1)
    reviewer = make_user("rita", "reviewer")
    page = logged_in_page("rita", PASSWORD)
    page.set_viewport_size({"width": width, "height": 900})
    csp_reports: list[str] = []
    page.on(
        "console",
        lambda message: (
            csp_reports.append(message.text) if "Content Security Policy" in message.text else None
        ),
    )
    page.goto(f"/conversations/{conv.pk}/")

    image_block = page.locator(f"#sensitive-{image_piece.id}")
    reply_block = page.locator(f"#sensitive-{reply.id}")
    image = image_block.locator(".media img")
    text = reply_block.locator(".text")
    expect(image).to_be_visible()
    assert "blur(" in image.evaluate("img => getComputedStyle(img).filter")
    expect(text).to_be_hidden()
    expect(reply_block.locator(".sensitive-label")).to_have_text("Sensitive: Sexual")
    # The image's path and the media link are covered too.
    expect(image_block.locator(".path")).to_be_hidden()

    # A marker that a reload would wipe out.
    page.evaluate("window.__before_reveal = true")
    reply_block.get_by_role("button", name="Reveal").click()
    expect(text).to_be_visible()
    expect(text).to_contain_text(SECRET_TEXT)
    expect(reply_block).to_contain_text("revealed; recorded in the audit trail")
    expect(reply_block.locator(".sensitive-body")).to_be_focused()
    assert page.evaluate("window.__before_reveal === true")
    # Revealing one piece leaves the others covered.
    assert "blur(" in image.evaluate("img => getComputedStyle(img).filter")

    image_block.get_by_role("button", name="Reveal").click()
    expect(image_block.get_by_role("button", name="Reveal")).to_have_count(0)
    assert image.evaluate("img => getComputedStyle(img).filter") == "none"
    # Loaded (lazily, so waited for): the reveal uncovers the real image.
    page.wait_for_function(
        "img => img.complete && img.naturalWidth > 0", arg=image.element_handle()
    )
    assert page.evaluate("window.__before_reveal === true")

    events = AuditEvent.objects.filter(action=REVEAL_ACTION, actor=reviewer).order_by("at", "id")
    assert [e.object_id for e in events] == [str(reply.id), str(image_piece.id)]
    assert all(e.detail["categories"] == ["Sexual"] for e in events)
    assert csp_reports == []


def test_reveal_works_from_the_keyboard(
    logged_in_page: Callable[..., Any], live_server: Any
) -> None:
    operation = Operation.objects.create(name="op-safe", sensitive_harm_categories=["hate"])
    conv = make_conversation(
        [[PieceSpec("hello")], [PieceSpec(SECRET_TEXT, role="assistant")]],
        labels={"operation": operation.name},
    )
    make_attack_result(conv, labels={"operation": operation.name}, harm_categories=["Hate"])
    reply = conv.pieces.get(sequence=1)
    make_user("rita", "reviewer")
    page = logged_in_page("rita", PASSWORD)
    page.goto(f"/conversations/{conv.pk}/")
    block = page.locator(f"#sensitive-{reply.id}")
    block.get_by_role("button", name="Reveal").focus()
    page.keyboard.press("Enter")
    expect(block.locator(".text")).to_be_visible()
    expect(block.locator(".sensitive-body")).to_be_focused()
    assert AuditEvent.objects.filter(action=REVEAL_ACTION, object_id=str(reply.id)).count() == 1
