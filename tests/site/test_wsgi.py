"""The WSGI module gunicorn loads prepares the process for ingest-sized garbage."""

from __future__ import annotations

import gc
import importlib
from collections.abc import Iterator

import pytest


@pytest.fixture
def restored_collector() -> Iterator[None]:
    threshold = gc.get_threshold()
    yield
    gc.set_threshold(*threshold)
    gc.unfreeze()


def test_wsgi_loads_every_view_and_tunes_the_collector(restored_collector: None) -> None:
    gc.set_threshold(700, 10, 10)
    gc.unfreeze()
    wsgi = importlib.reload(importlib.import_module("redteam.wsgi"))
    assert gc.get_threshold() == (wsgi.GC_YOUNG_THRESHOLD, 10, 10)
    # What start-up built is frozen out of the collector's scans.
    assert gc.get_freeze_count() > 10_000
    assert callable(wsgi.application)
