"""Fixtures shared by the memory and scoring review-page tests: users in each role, clients."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from tests.scoring.row_factories import make_user


@pytest.fixture
def reviewer(db: Any) -> User:
    """A user in the reviewer group."""
    return make_user("rita", "reviewer")


@pytest.fixture
def reader(db: Any) -> User:
    """A user in the read-only group."""
    return make_user("rob", "read-only")


@pytest.fixture
def reviewer_client(reviewer: User) -> Client:
    """A browser session logged in as the reviewer."""
    client = Client()
    client.force_login(reviewer)
    return client


@pytest.fixture
def reader_client(reader: User) -> Client:
    """A browser session logged in as the read-only user."""
    client = Client()
    client.force_login(reader)
    return client
