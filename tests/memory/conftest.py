"""Fixtures for the review pages: users in each role and logged-in clients."""

from __future__ import annotations

from tests.fixtures_common import reader, reader_client, reviewer, reviewer_client

__all__ = ["reader", "reader_client", "reviewer", "reviewer_client"]
