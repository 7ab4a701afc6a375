"""Project-wide pytest fixtures."""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(os.environ.get("REDTEAM_FIXTURES", REPO_ROOT.parent / "shared" / "fixtures"))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests marked `long` first, the rest in their order (after pytest-django's own sort).
    pytest-xdist hands tests out in this order, so a long test started last would keep one
    worker busy after the others ran dry."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


@pytest.fixture(scope="session")
def fixtures_dir() -> Path:
    """PyRIT's real output (read-only); see ../shared/fixtures/README.md."""
    assert FIXTURES.is_dir(), f"PyRIT fixtures not found at {FIXTURES} (set REDTEAM_FIXTURES)"
    return FIXTURES


@pytest.fixture(autouse=True)
def _media_root(tmp_path: Path, settings: pytest.FixtureRequest) -> None:
    """Each test writes media under its own temporary folder."""
    settings.MEDIA_ROOT = tmp_path / "media"  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def _axes_off_by_default(settings: pytest.FixtureRequest) -> None:
    """Login rate limiting off, so `client.login()` (which passes no request) works.

    django-axes needs the request to count attempts; tests/security/test_login_rate_limit.py
    turns it back on and drives the real login form.
    """
    settings.AXES_ENABLED = False  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: pytest.FixtureRequest) -> None:
    """PBKDF2's production cost (about a second per user) only slows tests down."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # type: ignore[attr-defined]


@pytest.fixture(autouse=True)
def _no_replica_reads(settings: pytest.FixtureRequest) -> None:
    """Reads stay on the test database unless a test adds a replica (a replica alias in the
    environment would be a second connection that cannot see a test's uncommitted rows)."""
    settings.DATABASE_REPLICAS = []  # type: ignore[attr-defined]


@pytest.fixture
def quiet_request_log() -> Iterator[None]:
    """Tests that expect hundreds of 4xx answers: each would log a warning line."""
    logger = logging.getLogger("django.request")
    level = logger.level
    logger.setLevel(logging.ERROR)
    yield
    logger.setLevel(level)


@pytest.fixture(autouse=True)
def _operation_grants() -> Iterator[None]:
    """Users registered with tests.access.grant_everywhere join operations made in the test."""
    from tests import access

    access.connect()
    yield
    access.reset()
