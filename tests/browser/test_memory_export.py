"""The "Export as PyRIT memory" button in a real browser, at 800 and 1280 px: the conversation
list and the attack-results list download a zip holding a PyRIT memory file of exactly the
rows their filters show, and the button line fits the width."""

from __future__ import annotations

import sqlite3
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.memory.row_factories import make_attack_result, make_conversation
from tests.scoring.row_factories import PASSWORD, make_user

pytestmark = [pytest.mark.browser, pytest.mark.usefixtures("transactional_db")]


def conversations_in(archive: Path, folder: Path) -> set[str]:
    """The conversation ids of the pieces in a downloaded memory file."""
    with zipfile.ZipFile(archive) as zf:
        zf.extractall(folder)
    conn = sqlite3.connect(folder / "pyrit_memory.db")
    try:
        return {r[0] for r in conn.execute('SELECT conversation_id FROM "PromptMemoryEntries"')}
    finally:
        conn.close()


@pytest.mark.parametrize("width", [800, 1280])
def test_the_list_pages_download_their_filtered_slice_as_pyrit_memory(
    logged_in_page: Callable[..., Any], tmp_path: Path, width: int
) -> None:
    won = make_conversation(2)
    make_attack_result(won, outcome="success", objective="Pick the lock")
    lost = make_conversation(2)
    make_attack_result(lost, outcome="failure", objective="Refused one")
    make_user("rob", "read-only")
    page = logged_in_page("rob", PASSWORD)
    page.set_viewport_size({"width": width, "height": 900})

    for path, button in (
        ("/conversations/?outcome=success", "#export-memory"),
        ("/attack-results/?outcome=success", "#export-memory"),
        ("/attack-results/?outcome=success", "#export-memory-013"),
    ):
        page.goto(path)
        expect(page.locator(button)).to_be_visible()
        assert page.evaluate("document.documentElement.scrollWidth") <= width
        with page.expect_download() as info:
            page.click(button)
        download = info.value
        assert download.suggested_filename.startswith("pyrit-memory-")
        saved = tmp_path / f"{width}-{len(list(tmp_path.iterdir()))}.zip"
        download.save_as(saved)
        assert conversations_in(saved, tmp_path / saved.stem) == {won.conversation_id}
