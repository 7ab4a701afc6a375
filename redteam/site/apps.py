"""The project wiring: the ingestion entry point, the API router, the site shell and the
commands that combine every app (demo data, PyRIT memory import, run export)."""

from __future__ import annotations

from django.apps import AppConfig
from django.db.models.signals import post_migrate


class SiteConfig(AppConfig):
    """Project wiring; no models."""

    name = "redteam.site"
    label = "site"
    verbose_name = "redteam site"

    def ready(self) -> None:
        """Create the reviewer and read-only roles after every migrate."""
        from redteam.site.roles import ensure_roles_after_migrate

        post_migrate.connect(
            ensure_roles_after_migrate, sender=self, dispatch_uid="redteam.ensure_roles"
        )
