"""WSGI entry point (gunicorn redteam.wsgi)."""

from __future__ import annotations

import gc
import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "redteam.settings")

# Allocations between two collections of the youngest generation (Python's default: 700). An
# ingest batch allocates hundreds of thousands of short-lived objects that reference counting
# frees; at the default the collector ran every few hundred of them and re-walked everything
# still alive each time. Measured in bench/ingest.py (batch ingest and single messages).
GC_YOUNG_THRESHOLD = 50_000

application = get_wsgi_application()

# Import every view now rather than on the first request, then move what start-up built (it
# lives as long as the process) out of the collector's scans; forked workers also keep
# sharing those pages instead of copying them when the collector touches them.
get_resolver().url_patterns  # noqa: B018
gc.freeze()
gc.set_threshold(GC_YOUNG_THRESHOLD, *gc.get_threshold()[1:])
