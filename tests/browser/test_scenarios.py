"""Scenario runs and scored loose content in a real browser, at 800 and 1280 px: what a
reviewer sees on the lists and detail pages, the way from a scenario to its conversations, and
hostile scenario text staying inert."""

from __future__ import annotations

import re
import uuid
from collections.abc import Callable
from io import StringIO
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from playwright.sync_api import expect

from redteam.common.access import Writer
from redteam.site.demo import build_demo_data
from redteam.site.ingest import store_items
from tests.access import grant
from tests.browser.test_review import MARKERS, Guard

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("transactional_db")]

WIDTHS = (800, 1280)
PASSWORD = "demo-password"


@pytest.fixture
def demo_page(logged_in_page: Callable[..., Any]) -> Callable[[int], Any]:
    """`demo_page(width)`: the demo data loaded, a page logged in as the demo reviewer."""
    call_command("load_demo", "--password", PASSWORD, stdout=StringIO())

    def open_at(width: int) -> Any:
        page = logged_in_page("demo", PASSWORD)
        page.set_viewport_size({"width": width, "height": 900})
        return page

    return open_at


@pytest.mark.parametrize("width", WIDTHS)
def test_scenario_list_and_page_show_runs_attacks_and_rates(
    demo_page: Callable[[int], Any], width: int
) -> None:
    page = demo_page(width)
    page.get_by_role("navigation").get_by_role("link", name="Scenarios").click()
    row = page.locator("#scenarios tr[data-row]")
    expect(row).to_have_count(1)
    expect(row).to_contain_text("DemoScenario")
    expect(row).to_contain_text("COMPLETED")
    expect(row).to_contain_text("33%")  # 2 successes of 6 results, truncated as PyRIT does

    row.locator("a.row-link").click()
    expect(page.locator("h1")).to_contain_text("DemoScenario")
    attacks = page.locator("article.atomic-attack")
    expect(attacks).to_have_count(2)
    expect(attacks.nth(0).locator("h3")).to_contain_text("prompt_sending")
    expect(attacks.nth(0)).to_contain_text("5 results · success rate 20%")
    expect(attacks.nth(1).locator("h3")).to_contain_text("red_teaming")
    expect(attacks.nth(1)).to_contain_text("1 result · success rate 100%")
    expect(page.get_by_role("heading", name="Scenario identifier")).to_be_visible()

    # Each attempt leads to its conversation, where the review happens.
    attacks.nth(1).locator("td.preview a").first.click()
    expect(page).to_have_url(re.compile(r"/conversations/[^/]+/$"))
    expect(page.locator(".message").first).to_be_visible()


@pytest.mark.parametrize("width", WIDTHS)
def test_scored_loose_content_shows_its_text_and_scores(
    demo_page: Callable[[int], Any], width: int
) -> None:
    page = demo_page(width)
    page.get_by_role("link", name="Scored content").click()
    row = page.locator("#scored-content tr[data-row]")
    expect(row).to_have_count(1)
    # The bidi override in the demo text is shown as a stand-in, never applied.
    expect(row).to_contain_text("⟨U+202E⟩")

    row.locator("a.row-link").click()
    expect(page.locator(".text").first).to_contain_text("A draft reply scored before it was ever")
    scores = page.locator(".scores")
    expect(scores).to_contain_text("SubStringScorer")
    expect(scores).to_contain_text("No 'Sure' in the text.")


def test_hostile_scenario_text_is_shown_as_text_and_never_runs(
    demo_page: Callable[[int], Any], live_server: Any
) -> None:
    scenario = next(iter(build_demo_data().scenario_results))
    hostile = dict(
        scenario,
        id=str(uuid.uuid4()),
        attack_results={},
        scenario_description=" ".join(MARKERS),
        error_type="Error",
        error_message=MARKERS[0],
        labels={"operation": MARKERS[1], "operator": MARKERS[2]},
    )
    [outcome] = store_items("scenario_results", [hostile], writer=Writer.trusted())
    assert outcome.status == "stored", outcome.errors
    # The run named a new operation (its hostile label); the demo user is made its lead.
    grant(User.objects.get(username="demo"), MARKERS[1], "lead")

    guard = Guard(live_server.url)
    page = guard.watch(demo_page(1280))
    page.goto("/scenarios/")
    expect(page.locator("#scenarios tr[data-row]")).to_have_count(2)
    expect(page.locator("#scenarios")).to_contain_text(MARKERS[1])
    page.goto(f"/scenarios/{hostile['id']}/")
    expect(page.locator("main")).to_contain_text(MARKERS[0])
    expect(page.locator("main")).to_contain_text("<svg/onload=window.__xss=1>")
    guard.assert_inert(page)
