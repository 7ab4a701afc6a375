"""The app's PostgreSQL sessions run without JIT and parallel query, and their prepared
statements on generic plans (DATABASE_SESSION_SETTINGS)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.db import connection

from tests.conftest import REPO_ROOT


@pytest.mark.django_db
def test_app_sessions_plan_without_jit_or_parallel_workers_and_generic_prepared() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("PostgreSQL session settings")
    with connection.cursor() as cursor:
        cursor.execute("SHOW max_parallel_workers_per_gather")
        assert cursor.fetchone() == ("0",)
        cursor.execute("SHOW jit")
        assert cursor.fetchone() == ("off",)
        cursor.execute("SHOW plan_cache_mode")
        assert cursor.fetchone() == ("force_generic_plan",)


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
        DATABASE_SESSION_SETTINGS="jit=off,work_mem=8MB",
    )
    assert options["default"] == {"options": "-c statement_timeout=5000 -c jit=off -c work_mem=8MB"}
    assert options["replica1"] == {"options": "-c jit=off -c work_mem=8MB"}
    defaults = _database_settings(DATABASE_URL="postgres://u@db:5432/main")
    assert defaults["default"] == {
        "options": "-c jit=off -c max_parallel_workers_per_gather=0 "
        "-c plan_cache_mode=force_generic_plan"
    }


def test_empty_leaves_the_server_setting_and_sqlite_is_untouched() -> None:
    options = _database_settings(
        DATABASE_URL="postgres://u@db:5432/main", DATABASE_SESSION_SETTINGS=""
    )
    assert options["default"] == {}
    sqlite = _database_settings(DATABASE_URL="", DATABASE_SESSION_SETTINGS="jit=off")
    assert "options" not in sqlite["default"]  # type: ignore[operator]
