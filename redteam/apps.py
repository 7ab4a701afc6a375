"""The project's own app: API keys, media blobs, audit events, the site shell."""

from __future__ import annotations

from django.apps import AppConfig


class RedteamConfig(AppConfig):
    """Core app config."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "redteam"
    verbose_name = "redteam"

    def ready(self) -> None:
        """Connect the audit signals (API key creation, revocation, deletion)."""
        from redteam import signals  # noqa: F401
