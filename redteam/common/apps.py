"""The shared Django app: API keys, media blobs, audit events and the building blocks every app
uses. Its label stays ``redteam``, the label its tables and migrations were created under."""

from __future__ import annotations

from django.apps import AppConfig


class CommonConfig(AppConfig):
    """Shared building blocks (app label ``redteam``)."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "redteam.common"
    label = "redteam"
    verbose_name = "redteam"

    def ready(self) -> None:
        """Connect the audit signals (API keys, operations, memberships)."""
        from redteam.common import signals  # noqa: F401
