"""Names people know, in a browser: hostile long model names show as text on every list, and
the identifier index and dashboard (its trend by target too) fit 800 and 1280 px without
sideways scroll."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from tests.memory.row_factories import (
    core_atomic_attack,
    core_target,
    make_attack_result,
    make_conversation,
)
from tests.scoring.row_factories import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("transactional_db")]
HOSTILE = "gpt-" + "x" * 400 + "<b>bold</b>"


@pytest.mark.parametrize("width", [800, 1280])
def test_pages_with_names_fit_the_width(
    logged_in_page: Callable[[str, str], Any], width: int
) -> None:
    target = core_target(model_name=HOSTILE, endpoint="https://" + "e" * 300 + ".invalid")
    conversation = make_conversation(2, target=target)
    make_attack_result(conversation, outcome="success", atomic=core_atomic_attack(target=target))
    make_user("wendy", "reviewer")
    page = logged_in_page("wendy", PASSWORD)
    page.set_viewport_size({"width": width, "height": 900})
    for path in ("/identifiers/", "/attack-results/", "/dashboard/", "/conversations/"):
        page.goto(path)
        assert "OpenAIChatTarget · gpt-xxx" in page.inner_text("main"), path
        assert page.locator("main b").count() == 0, path  # the markup stays text
    # The pages built here (the list pages' reflow is the table layout's own work, the
    # header the site frame's): nothing in their main content reaches past the viewport.
    for path in ("/identifiers/", "/dashboard/", "/dashboard/?trend_by=target&period=day"):
        page.goto(path)
        wide = page.evaluate(
            """[...document.querySelectorAll('main *')]
                .filter(e => e.getBoundingClientRect().right > document.documentElement.clientWidth)
                .map(e => e.tagName + '.' + e.className)"""
        )
        assert wide == [], f"{path} at {width} px: {wide} reach past the viewport"
