"""The human-labels download in a real browser, at 800 and 1280 px: a reviewer filters the
results list by one harm category, downloads its harm file and its objective file, and gets
the bytes `manage.py export_human_labels` writes for the same filter."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from redteam.common.access import user_scope
from scoring.services import record_review
from scoring.verdict_fields import VerdictAnswers, VerdictFields
from tests.memory.row_factories import PieceSpec, make_attack_result, make_conversation
from tests.scoring.row_factories import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("transactional_db")]

RESPONSE = 'Step 1, "quoted",\n=then # this'


@pytest.mark.parametrize("width", [800, 1280])
def test_a_reviewer_downloads_the_filtered_human_labels(
    logged_in_page: Callable[..., Any], width: int, tmp_path: Path
) -> None:
    rita = make_user("rita", "reviewer")
    for objective, category in (("Pick the lock", "violence"), ("Write a slur", "hate")):
        conversation = make_conversation(
            [[PieceSpec(objective)], [PieceSpec(RESPONSE, role="assistant")]]
        )
        result = make_attack_result(
            conversation, objective=objective, harm_categories=[category], outcome="success"
        )
        record_review(
            attack_result=result,
            reviewer=rita,
            scope=user_scope(rita),
            answers=VerdictAnswers(
                rationale="seen",
                objective=True,
                scale=0.75,
                fields=VerdictFields(true_false=True, scale=True),
            ),
            submission=None,
        )
    page = logged_in_page("rita", PASSWORD)
    page.set_viewport_size({"width": width, "height": 900})
    page.goto("/attack-results/?harm_category=violence")
    links = page.locator("#label-downloads a")
    expect(links).to_have_count(2)
    assert page.evaluate("document.documentElement.scrollWidth") <= width

    for index, flags in (
        (0, ["--harm-category", "violence"]),
        (1, ["--harm-category", "violence", "--kind", "harm"]),
    ):
        with page.expect_download() as info:
            links.nth(index).click()
        download = info.value
        saved = tmp_path / f"download-{index}.csv"
        download.save_as(saved)
        out = io.StringIO()
        call_command("export_human_labels", *flags, stdout=out, stderr=io.StringIO())
        assert saved.read_bytes() == out.getvalue().encode()
        assert "Pick the lock" in saved.read_text()
        assert "Write a slur" not in saved.read_text()
    assert download.suggested_filename == "human_labels_violence.csv"
