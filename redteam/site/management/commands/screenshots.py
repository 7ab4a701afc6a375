"""Pictures of the review desk for the README, taken from the data in the database.

`make screenshots` runs this against a scratch SQLite database holding the demo data (made
fresh each time), so the pictures can be remade after any change to the pages:

    manage.py screenshots --username demo --password ... --out docs/screenshots

It serves the site on a loopback port from this process, signs in through the login form
with Debian's chromium (Playwright, as the browser tests do), and saves one PNG per page.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.staticfiles.handlers import StaticFilesHandler
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.test.testcases import LiveServerThread

from redteam.common.access import Scope
from scoring.models import ReviewQueue
from scoring.queues import QueueWalk

CHROMIUM = os.environ.get("REDTEAM_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
DECODED_OBJECTIVE = "Reply only in base64"
# (file name, viewport width, what it shows)
SHOTS = (
    ("queue.png", 1280, "a named review queue"),
    ("conversation.png", 1280, "a conversation opened from the queue"),
    ("dashboard.png", 1280, "the dashboard"),
    ("conversation-800.png", 800, "the same conversation at 800 px"),
)


class Command(BaseCommand):
    """Save PNG screenshots of the queue, a conversation and the dashboard."""

    help = "Save README screenshots (queue, conversation, dashboard) from the current database."

    def add_arguments(self, parser: CommandParser) -> None:
        """--username, --password, --out, --queue."""
        parser.add_argument("--username", default="demo")
        parser.add_argument("--password", required=True)
        parser.add_argument("--out", default="docs/screenshots")
        parser.add_argument("--queue", default="demo-successes", help="The queue shown.")

    def handle(self, *args: Any, **options: Any) -> None:
        """Serve, sign in, and save each picture."""
        try:
            from playwright.sync_api import sync_playwright
        except ImportError as exc:  # pragma: no cover - a dev dependency
            raise CommandError("Playwright is needed: make install") from exc
        if not os.path.exists(CHROMIUM):
            raise CommandError(f"chromium not found at {CHROMIUM} (apt-get install -y chromium)")
        queue = ReviewQueue.objects.filter(slug=options["queue"]).first()
        if queue is None:
            raise CommandError(f"No review queue {options['queue']!r}: load the demo data first.")
        # The conversation shown: the first of the queue whose answer the page decodes (the
        # demo's base64 answer), else the queue's newest.
        user = get_user_model().objects.filter(username=options["username"]).first()
        if user is None:
            raise CommandError(f"No user {options['username']!r}.")
        in_queue = QueueWalk(queue, Scope.everything_scope(), user).items()
        result = (
            in_queue.filter(objective__startswith=DECODED_OBJECTIVE).first() or in_queue.first()
        )
        if result is None:
            raise CommandError("No attack results: load the demo data first (manage.py load_demo).")
        out = Path(options["out"])
        out.mkdir(parents=True, exist_ok=True)
        server = LiveServerThread("127.0.0.1", StaticFilesHandler, port=0)
        server.daemon = True
        server.start()
        server.is_ready.wait()
        if server.error:
            raise CommandError(f"could not serve: {server.error}")
        base = f"http://127.0.0.1:{server.port}"
        conversation = f"/conversations/{result.conversation_id}/?queue={queue.slug}"
        paths = {
            "queue.png": f"/review/{queue.slug}/",
            "conversation.png": conversation,
            "dashboard.png": "/dashboard/",
            "conversation-800.png": conversation,
        }
        try:
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                for name, width, what in SHOTS:
                    context = browser.new_context(
                        base_url=base, viewport={"width": width, "height": 900}
                    )
                    page = context.new_page()
                    page.goto("/accounts/login/")
                    page.fill("#id_username", options["username"])
                    page.fill("#id_password", options["password"])
                    page.click("form.login-form button[type=submit]")
                    page.wait_for_load_state()
                    page.goto(paths[name])
                    page.wait_for_load_state("networkidle")
                    page.screenshot(path=str(out / name))
                    context.close()
                    self.stdout.write(f"{out / name}: {what}")
                browser.close()
        finally:
            server.terminate()
