"""The project wiring: the ingestion entry point, the API router, the site shell and the
commands that combine every app (demo data, PyRIT memory import, run export)."""

from __future__ import annotations

from django.apps import AppConfig


class SiteConfig(AppConfig):
    """Project wiring; no models."""

    name = "redteam.site"
    label = "site"
    verbose_name = "redteam site"
