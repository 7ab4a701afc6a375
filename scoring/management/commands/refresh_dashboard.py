"""`manage.py refresh_dashboard`: recount the dashboard's tallies from scratch (a repair tool).

Every transaction that stores attack results or verdicts keeps the tallies exact
(scoring.tallies.retally), so this is only needed after results or verdicts were changed
outside the application's services (the shell, a restored table), or to check the counts:
`--check` fails when the kept tallies differed from the recount (it repairs them all the
same).
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from scoring.tallies import rebuild_tallies, recounted_totals, tally_totals


class Command(BaseCommand):
    """Recount the per-operation tallies the dashboard reads."""

    help = (
        "Recount the dashboard's attack-outcome tallies of every operation from the results "
        "and verdicts. The tallies are kept exact by every ingest and verdict; this repairs "
        "them after changes made outside the application."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        """--check."""
        parser.add_argument(
            "--check",
            action="store_true",
            help="Fail when the kept tallies differed from the recount (they are repaired).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        """Recount and report."""
        same = tally_totals() == recounted_totals()
        rebuild = rebuild_tallies()
        self.stdout.write(
            f"Counted {rebuild.results} attack results into {rebuild.cells} cells in "
            f"{rebuild.duration_ms} ms; the kept tallies "
            f"{'equalled' if same else 'differed from'} the recount."
        )
        if options["check"] and not same:
            raise CommandError("The kept tallies differed from the recount (now repaired).")
