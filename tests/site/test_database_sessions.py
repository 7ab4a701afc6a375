"""The app's PostgreSQL sessions run without parallel query (DATABASE_PARALLEL_WORKERS)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.db import connection

from tests.conftest import REPO_ROOT


@pytest.mark.django_db
def test_app_sessions_plan_without_parallel_workers() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("a PostgreSQL session setting")
    with connection.cursor() as cursor:
        cursor.execute("SHOW max_parallel_workers_per_gather")
        assert cursor.fetchone() == ("0",)


def _database_settings(**env: str) -> dict[str, object]:
    """DATABASES as redteam.settings builds it from this environment (a fresh process)."""
    code = (
        "import django, json; django.setup(); from django.conf import settings as s; "
        "print(json.dumps({k: v.get('OPTIONS', {}) for k, v in s.DATABASES.items()}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "redteam.settings", **env},
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_the_setting_joins_options_from_the_url_on_primary_and_replicas() -> None:
    options = _database_settings(
        DATABASE_URL="postgres://u@db:5432/main?options=-c%20statement_timeout%3D5000",
        DATABASE_REPLICA_URLS="postgres://u@replica:5432/main",
        DATABASE_PARALLEL_WORKERS="2",
    )
    assert options["default"] == {
        "options": "-c statement_timeout=5000 -c max_parallel_workers_per_gather=2"
    }
    assert options["replica1"] == {"options": "-c max_parallel_workers_per_gather=2"}


def test_empty_leaves_the_server_setting_and_sqlite_is_untouched() -> None:
    options = _database_settings(
        DATABASE_URL="postgres://u@db:5432/main", DATABASE_PARALLEL_WORKERS=""
    )
    assert options["default"] == {}
    sqlite = _database_settings(DATABASE_URL="", DATABASE_PARALLEL_WORKERS="0")
    assert "options" not in sqlite["default"]  # type: ignore[operator]
