"""App config for seeds."""

from __future__ import annotations

from django.apps import AppConfig


class SeedsConfig(AppConfig):
    """Seeds app config."""

    default_auto_field = "django.db.models.BigAutoField"
    name = "seeds"
