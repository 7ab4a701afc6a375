"""`manage.py refresh_dashboard`: rebuild the dashboard's outcome tallies (run from cron).

Every operation is recounted at one watermark (each viewer's dashboard sums the tallies of
their operations), so there is no per-operation option: a partial rebuild would leave the
other operations' tallies at an older watermark than the one the dashboard adds from.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand

from scoring.tallies import refresh_outcome_tallies


class Command(BaseCommand):
    """Rebuild the per-operation outcome tallies the dashboard reads."""

    help = (
        "Rebuild the dashboard's attack-outcome tallies of every operation. The dashboard "
        "stays exact without it (it adds what arrived since the last rebuild), but stays "
        "fastest when run regularly."
    )

    def handle(self, *args: Any, **options: Any) -> None:
        """Rebuild and report."""
        snapshot = refresh_outcome_tallies()
        self.stdout.write(
            f"Counted {snapshot.results} attack results up to "
            f"{snapshot.watermark:%Y-%m-%d %H:%M:%S} in {snapshot.duration_ms} ms, tallied per "
            "operation."
        )
