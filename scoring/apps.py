"""App config for scoring."""

from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class ScoringConfig(AppConfig):
    """Scoring app config."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "scoring"

    def ready(self) -> None:
        """Create the reviewer and read-only roles after migrate (scoring migrates last)."""
        from redteam.roles import ensure_roles_after_migrate
        from scoring import signals  # noqa: F401  (connects the verdict deletion audit)

        post_migrate.connect(
            ensure_roles_after_migrate, sender=self, dispatch_uid="redteam.ensure_roles"
        )
