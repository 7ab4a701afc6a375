"""Ways in, seen in a browser at 800 and 1280 px: the no-role page, the home page, the seeds
page and the admin's dataset page, none scrolling sideways, whatever the data."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.utils import timezone
from playwright.sync_api import expect

from scoring.models import ReviewClaim, ReviewQueue
from tests.access import grant
from tests.memory.row_factories import make_attack_result, make_conversation
from tests.seeds.factories import make_dataset, make_group

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("transactional_db")]

WIDTHS = [800, 1280]
PASSWORD = "pw-ways-123"
UNBROKEN = "A" * 400
LONG_NAME = "operation-" + "x" * 120


def _sideways(page: Any) -> int:
    """How far the page scrolls sideways (0 when it fits)."""
    over = int(
        page.evaluate("document.documentElement.scrollWidth - document.documentElement.clientWidth")
    )
    if over:
        print(page.evaluate(WIDE_ELEMENTS))
    return over


# The elements that reach past the window's right edge (shown when a test fails).
WIDE_ELEMENTS = """
[...document.querySelectorAll('body *')]
  .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
  .slice(0, 40)
  .map(e => e.tagName + '.' + e.className + ' ' + Math.round(e.getBoundingClientRect().right))
"""


def _builtin_queues() -> None:
    """The built-in queues (a migration makes them; a transactional test flushes them)."""
    for slug, name in (
        ("unreviewed", "Unreviewed"),
        ("disagree", "Disagreements"),
        ("reviewed", "Reviewed"),
    ):
        ReviewQueue.objects.update_or_create(
            slug=slug, defaults={"name": name, "review": slug, "filters": {}, "builtin": True}
        )


def _open(logged_in_page: Callable[..., Any], username: str, width: int) -> Any:
    page = logged_in_page(username, PASSWORD)
    page.set_viewport_size({"width": width, "height": 900})
    return page


@pytest.mark.parametrize("width", WIDTHS)
def test_a_user_without_a_role_sees_which_role_is_missing_and_who_grants_it(
    logged_in_page: Callable[..., Any], width: int
) -> None:
    make_conversation(1, labels={"operation": "alpha"})
    User.objects.create_user("nora", password=PASSWORD)
    page = _open(logged_in_page, "nora", width)
    response = page.goto("/")
    assert response is not None
    assert response.status == 403
    panel = page.locator("#no-role")
    expect(panel).to_contain_text("no role in any operation")
    expect(panel).to_contain_text("reviewer to record verdicts")
    expect(panel).to_contain_text("A lead of the operation you work on, or an administrator")
    expect(page.locator(".site-nav a")).to_have_count(0)
    assert _sideways(page) == 0
    # The review pages answer with the same page.
    page.goto("/attack-results/")
    expect(page.locator("#no-role")).to_be_visible()


@pytest.mark.parametrize("width", WIDTHS)
def test_the_home_page_shows_a_reviewers_day(
    logged_in_page: Callable[..., Any], width: int
) -> None:
    _builtin_queues()
    user = User.objects.create_user("rita", password=PASSWORD)
    results = []
    for i in range(3):
        conv = make_conversation(2, labels={"operation": LONG_NAME})
        results.append(make_attack_result(conv, objective=f"{UNBROKEN} {i}", outcome="success"))
    make_conversation(1, labels={"operation": "bravo"})
    grant(user, LONG_NAME, "reviewer")
    ReviewQueue.objects.create(
        name="Successes " + "y" * 100, slug="successes", filters={"outcome": ["success"]}
    )
    now = timezone.now()
    ReviewClaim.objects.create(
        attack_result=results[0],
        user=user,
        queue=ReviewQueue.objects.get(slug="unreviewed"),
        claimed_at=now,
        expires_at=now + timedelta(minutes=10),
    )
    page = _open(logged_in_page, "rita", width)
    page.goto("/")
    queues = page.locator("#queues .queue-row")
    expect(queues).to_have_count(4)
    expect(queues.first).to_contain_text("Disagreements")
    expect(page.locator("#queues")).to_contain_text("3 awaiting review")
    expect(page.locator("#claims li")).to_have_count(1)
    runs = page.locator("#recent-runs tbody tr")
    expect(runs).to_have_count(1)
    expect(runs.first).to_contain_text("3")
    expect(page.locator("#recent-runs")).not_to_contain_text("bravo")
    assert _sideways(page) == 0
    # The held item opens its conversation in its queue.
    page.locator("#claims a").first.click()
    page.wait_for_load_state()
    assert page.url.endswith(f"/conversations/{results[0].conversation_id}/?queue=unreviewed")


@pytest.mark.parametrize("width", WIDTHS)
def test_the_seeds_page_is_one_table_that_fits(
    logged_in_page: Callable[..., Any], width: int
) -> None:
    user = User.objects.create_user("rob", password=PASSWORD)
    grant(user, "unassigned", "read-only")
    dataset = make_dataset("hostile " + "z" * 200)
    make_group(
        dataset,
        {"value": UNBROKEN, "harm_categories": ["h" * 90]},
        {"value": "second", "sequence": 1, "role": "assistant"},
        alias="a" * 80,
    )
    make_group(dataset, {"value": "standalone"})
    page = _open(logged_in_page, "rob", width)
    page.goto(f"/seeds/datasets/{dataset.pk}/")
    expect(page.locator("table.seeds-table")).to_have_count(1)
    expect(page.locator("table.seeds-table tbody.seed-group")).to_have_count(2)
    expect(page.locator("table.seeds-table .group-name")).to_have_count(2)
    assert _sideways(page) == 0


def test_the_admin_dataset_page_fits_1280_and_shows_json_pretty(
    logged_in_page: Callable[..., Any],
) -> None:
    curator = User.objects.create_user("cura", password=PASSWORD, is_staff=True)
    curator.user_permissions.set(Permission.objects.filter(content_type__app_label="seeds"))
    dataset = make_dataset("hostile", harm_categories=["violence", "h" * 90], authors=["ann"])
    make_group(
        dataset,
        {"value": UNBROKEN, "harm_categories": ["h" * 90, "hate"]},
        {"value": "second", "sequence": 1, "role": "assistant"},
    )
    page = _open(logged_in_page, "cura", 1280)
    page.goto(f"/admin/seeds/seeddataset/{dataset.pk}/change/")
    box = page.locator("textarea[name=harm_categories]")
    assert box.input_value() == '[\n  "violence",\n  "' + "h" * 90 + '"\n]'
    assert _sideways(page) == 0
    box.fill("[not json")
    page.click("input[name=_continue]")
    page.wait_for_load_state()
    expect(page.locator(".errorlist")).to_contain_text("Enter a valid JSON")
    assert page.locator("textarea[name=harm_categories]").input_value() == "[not json"


@pytest.mark.parametrize("width", WIDTHS)
def test_promote_shows_the_value_before_saving_it(
    logged_in_page: Callable[..., Any], width: int
) -> None:
    from seeds.models import Seed
    from tests.memory.row_factories import PieceSpec

    curator = User.objects.create_user("cora", password=PASSWORD)
    grant(curator, "alpha", "reviewer")
    curator.user_permissions.set(
        Permission.objects.filter(codename__in=["add_seed", "add_seeddataset"])
    )
    conv = make_conversation(
        [[PieceSpec("ask")], [PieceSpec(UNBROKEN + "\u200b tail", role="assistant")]],
        labels={"operation": "alpha"},
    )
    make_attack_result(conv)
    page = _open(logged_in_page, "cora", width)
    page.goto(f"/conversations/{conv.pk}/")
    promote = page.locator("details.promote").nth(1)
    promote.locator("summary").click()
    promote.locator("input[name=dataset_name]").fill("finds")
    promote.locator("button[type=submit]").click()
    page.wait_for_load_state()
    expect(page.locator("#promote-value")).to_contain_text("⟨U+200B⟩ tail")
    expect(page.locator("#promote-dataset")).to_contain_text("new: created when you confirm")
    assert Seed.objects.count() == 0
    assert _sideways(page) == 0
    page.click("#promote-confirm")
    page.wait_for_load_state()
    assert f"/conversations/{conv.pk}/" in page.url
    assert Seed.objects.get().value == UNBROKEN + "\u200b tail"
