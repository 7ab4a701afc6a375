"""Fixtures for the REST API tests: users, API keys with scopes, authenticated clients."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from redteam.common.models import ApiKey
from tests.access import bind_everywhere
from tests.fixtures_common import reviewer, reviewer_client

__all__ = ["reviewer", "reviewer_client"]

KeyFactory = Callable[..., str]


@pytest.fixture
def user(db: Any) -> User:
    """An ordinary (non-staff) user who owns API keys."""
    return User.objects.create_user("attacker", password="pw-attacker-1")


@pytest.fixture
def other_user(db: Any) -> User:
    """A second user, for checks that one user's key is not another's."""
    return User.objects.create_user("reviewer", password="pw-reviewer-1")


@pytest.fixture
def make_key(user: User) -> KeyFactory:
    """Create an API key (default: both scopes) and return the secret."""

    def make(*scopes: str, owner: User | None = None, **fields: Any) -> str:
        row, key = ApiKey.objects.create_key(
            name="test", user=owner or user, scopes=list(scopes or ("ingest", "read")), **fields
        )
        bind_everywhere(row)
        return key

    return make


def bearer_client(key: str) -> APIClient:
    """An APIClient sending `Authorization: Bearer <key>`."""
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


@pytest.fixture
def api(make_key: KeyFactory) -> APIClient:
    """A client with an ingest+read key."""
    return bearer_client(make_key("ingest", "read"))
