"""Fixtures for the review pages: users in each role and logged-in clients.

The users are members of every operation of the test (tests.access.grant_everywhere), and
`unassigned` (where in-process ingestion puts unlabelled rows) exists from the start, so a
page answers them even before the test stores its first row.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User

from redteam.common.models import Operation
from redteam.core.operations import UNASSIGNED
from tests.fixtures_common import reader_client, reviewer_client
from tests.scoring.row_factories import make_user

__all__ = ["reader", "reader_client", "reviewer", "reviewer_client"]


@pytest.fixture
def reviewer(db: Any) -> User:
    """A reviewer in every operation of the test."""
    Operation.objects.get_or_create(name=UNASSIGNED)
    return make_user("rita", "reviewer")


@pytest.fixture
def reader(db: Any) -> User:
    """A read-only member of every operation of the test."""
    Operation.objects.get_or_create(name=UNASSIGNED)
    return make_user("rob", "read-only")
