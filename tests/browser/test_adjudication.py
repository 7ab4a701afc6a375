"""Blind double review in a real browser, at 800 and 1280 px: the second reviewer's page does
not show the first verdict; after they disagree an adjudicator decides from the adjudication
queue, and the result's page then shows the final verdict deciding."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from playwright.sync_api import expect

from memory.models import ReviewStatus
from redteam.common.access import user_scope
from redteam.common.models import Operation
from scoring.models import ReviewRequirement
from scoring.services import record_verdict
from tests.memory.row_factories import make_attack_result, make_conversation
from tests.scoring.row_factories import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("transactional_db")]

OP = "op_blind"


@pytest.mark.parametrize("width", [800, 1280])
def test_a_disputed_result_is_adjudicated_in_the_browser(
    logged_in_page: Callable[..., Any], width: int
) -> None:
    conversation = make_conversation(2, labels={"operation": OP})
    result = make_attack_result(
        conversation, outcome="failure", objective="Pick the lock", labels={"operation": OP}
    )
    ReviewRequirement.objects.create(
        operation=Operation.objects.get(name=OP),
        label_key="operation",
        label_value=OP,
        required_verdicts=2,
    )
    alice = make_user("alice", "reviewer")
    make_user("bob", "reviewer")
    make_user("judy", "adjudicator")
    record_verdict(
        attack_result=result,
        reviewer=alice,
        scope=user_scope(alice),
        value=True,
        score_type="true_false",
        rationale="ALICE-SEALED-REASON",
    )

    bob = logged_in_page("bob", PASSWORD)
    bob.set_viewport_size({"width": width, "height": 900})
    bob.goto(f"/conversations/{conversation.pk}/")
    expect(bob.locator("[data-review-status=pending]")).to_be_visible()
    assert "ALICE-SEALED-REASON" not in bob.content()
    bob.keyboard.press("f")
    bob.keyboard.type("No usable steps.")
    with bob.expect_navigation():
        bob.keyboard.press("Control+Enter")
    expect(bob.locator("#human-verdicts")).to_contain_text("ALICE-SEALED-REASON")
    expect(bob.locator("[data-review-status=disputed]")).to_be_visible()
    assert bob.evaluate("document.documentElement.scrollWidth") <= width

    judy = logged_in_page("judy", PASSWORD)
    judy.set_viewport_size({"width": width, "height": 900})
    judy.goto("/review/adjudication/")
    rows = judy.locator("#adjudication tbody tr")
    expect(rows).to_have_count(1)
    expect(rows).to_contain_text("Pick the lock")
    assert judy.evaluate("document.documentElement.scrollWidth") <= width
    with judy.expect_navigation():
        rows.get_by_role("link", name="Decide").click()
    expect(judy.locator("#adjudication-verdicts")).to_contain_text("ALICE-SEALED-REASON")
    expect(judy.locator("#adjudication-verdicts")).to_contain_text("No usable steps.")
    assert judy.evaluate("document.documentElement.scrollWidth") <= width
    judy.check("#verdict-true")
    judy.fill("#verdict-rationale", "The steps are usable.")
    with judy.expect_navigation():
        judy.click("#verdict-submit")
    expect(judy.locator(".messages")).to_contain_text("Final verdict recorded.")
    expect(judy.locator("#adjudication tbody tr")).to_have_count(0)

    result.refresh_from_db()
    assert result.review_status == ReviewStatus.ADJUDICATED
    judy.goto(f"/attack-results/{result.pk}/")
    expect(judy.locator("[data-review-status=adjudicated]")).to_be_visible()
    expect(judy.locator(".score .badge.final")).to_be_visible()
    judy.goto("/review/reviewers/")
    expect(judy.locator("#reviewer-stats")).to_contain_text("alice")
    expect(judy.locator("#reviewer-pairs")).to_contain_text("too few shared items")
    assert judy.evaluate("document.documentElement.scrollWidth") <= width
