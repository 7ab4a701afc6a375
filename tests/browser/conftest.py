"""Browser tests: Debian's chromium driven by Playwright against pytest-django's live_server.

Playwright's sync API runs an event loop in the test thread, which makes Django's async-safety
check refuse ORM calls from test code; the tests are synchronous, so the check is turned off
here (and only here). Tests use `live_server`, hence a transactional database.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from typing import Any

import pytest

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = os.environ.get("REDTEAM_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One chromium for the whole session (skipped when chromium or Playwright is missing)."""
    playwright_api = pytest.importorskip("playwright.sync_api")
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"chromium not found at {CHROMIUM}")
    with playwright_api.sync_playwright() as playwright:
        instance = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield instance
        finally:
            instance.close()


@pytest.fixture
def logged_in_page(browser: Any, live_server: Any) -> Iterator[Callable[..., Any]]:
    """`logged_in_page(username, password)` -> a new page, logged in through the login form.

    Each call opens its own browser context (its own cookies), closed after the test.
    """
    contexts: list[Any] = []

    def login(username: str, password: str) -> Any:
        context = browser.new_context(base_url=live_server.url, accept_downloads=True)
        context.set_default_timeout(15_000)
        contexts.append(context)
        page = context.new_page()
        page.goto("/accounts/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", password)
        page.click("form.login-form button[type=submit]")
        page.wait_for_load_state()
        assert "/accounts/login/" not in page.url, f"login failed for {username}"
        return page

    yield login
    for context in contexts:
        context.close()
