"""Scorer calibration in a real browser, at 800 and 1280 px: a member opens the scorers list,
sorts it, downloads the PyRIT metrics lines, opens a configuration, reads its confusion matrix
chart and follows a disagreement to its conversation; nothing overflows the page's width.

Data: tests/scoring/calibration_world.py (op_cal).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from tests.access import grant
from tests.scoring.calibration_world import E_TF, build_world
from tests.scoring.row_factories import PASSWORD

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("transactional_db")]


def _fits(page: Any, width: int) -> None:
    assert page.evaluate("document.documentElement.scrollWidth") <= width


@pytest.mark.parametrize("width", [800, 1280])
def test_a_member_reads_scorer_calibration(
    logged_in_page: Callable[..., Any], width: int, tmp_path: Path
) -> None:
    build_world()
    member = User.objects.create_user("mia", password=PASSWORD)
    grant(member, "op_cal", "read-only")
    page = logged_in_page("mia", PASSWORD)
    page.set_viewport_size({"width": width, "height": 900})

    page.goto("/")
    with page.expect_navigation():
        page.locator(".site-nav").get_by_role("link", name="Scorers").click()
    rows = page.locator("#true-false tbody tr")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("SubStringScorer")
    expect(rows.first).to_contain_text("0.333")
    expect(page.locator("#float-scale tbody tr")).to_contain_text("SelfAskLikertScorer")
    _fits(page, width)

    with page.expect_navigation():
        page.locator("#true-false .sort-links").get_by_role("link", name="accuracy").click()
    assert "tf_sort=-accuracy" in page.url
    expect(page.locator("#true-false .sort-links a[aria-current]")).to_contain_text("accuracy ↓")

    with page.expect_download() as download:
        page.get_by_role("link", name="Download as PyRIT metrics JSONL").click()
    saved = tmp_path / "metrics.jsonl"
    download.value.save_as(saved)
    lines = [json.loads(line) for line in saved.read_text(encoding="utf-8").splitlines()]
    assert E_TF in {line["eval_hash"] for line in lines}

    with page.expect_navigation():
        page.locator("#true-false tbody tr").first.get_by_role("link").first.click()
    assert page.url.endswith(f"/scorers/{E_TF}/")
    chart = page.locator("svg.confusion")
    expect(chart).to_be_visible()
    expect(chart).to_contain_text("false positive")
    box = chart.bounding_box()
    assert box is not None
    assert box["width"] > 200
    assert box["x"] + box["width"] <= width
    expect(page.locator(".tree details.node").first).to_be_visible()
    disagreements = page.locator("#disagreements-true_false tbody tr")
    expect(disagreements).to_have_count(4)
    _fits(page, width)

    with page.expect_navigation():
        disagreements.first.get_by_role("link").first.click()
    assert "/conversations/conv-" in page.url
