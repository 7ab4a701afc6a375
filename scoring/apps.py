"""App config for scoring."""

from __future__ import annotations

from django.apps import AppConfig


class ScoringConfig(AppConfig):
    """Scoring app config."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "scoring"

    def ready(self) -> None:
        """Connect the tallies to ingestion, and the verdict deletion audit."""
        from django.db.models.signals import post_migrate

        from scoring import signals

        post_migrate.connect(signals.build_missing_tallies, sender=self)
