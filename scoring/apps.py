"""App config for scoring."""

from __future__ import annotations

from django.apps import AppConfig


class ScoringConfig(AppConfig):
    """Scoring app config."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "scoring"

    def ready(self) -> None:
        """Connect the verdict deletion audit."""
        from scoring import signals  # noqa: F401
