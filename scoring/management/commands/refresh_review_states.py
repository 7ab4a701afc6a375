"""`manage.py refresh_review_states [--operation NAME ...]`: re-evaluate blind double review.

A requirement change in the admin does this at once; the command is for results whose labels
or harm categories changed after they were reviewed (a re-ingest), which no verdict write
re-evaluates until the next verdict on them.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from redteam.common.access import command_scope
from scoring.blind import refresh_review_states


class Command(BaseCommand):
    """Recompute the review status of the reviewed results (scoring.blind)."""

    help = (
        "Re-evaluate which reviewed attack results need several independent verdicts and "
        "where their review stands (every operation, or the named ones)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        """--operation, repeatable."""
        parser.add_argument("--operation", action="append", default=[], help="operation name")

    def handle(self, *args: Any, **options: Any) -> None:
        """Refresh and report the changes."""
        try:
            scope = command_scope(options["operation"])
        except LookupError as exc:
            raise CommandError(str(exc)) from exc
        changes = refresh_review_states(None if scope.everything else scope.operation_ids)
        moved = sum(1 for c in changes if c.before != c.after)
        self.stdout.write(
            f"{len(changes)} attack results re-evaluated with a change, {moved} of them to "
            "another review status."
        )
