"""App config for memory."""

from __future__ import annotations

from django.apps import AppConfig


class MemoryConfig(AppConfig):
    """Memory app config."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "memory"
