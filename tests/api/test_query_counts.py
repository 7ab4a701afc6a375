"""Ingest and list endpoints cost a constant number of queries, whatever the batch or page."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from tests.api import factories

pytestmark = pytest.mark.django_db


def _ingest_queries(api: APIClient, payload: dict[str, Any]) -> list[str]:
    with CaptureQueriesContext(connection) as ctx:
        response = api.post("/api/v1/ingest/", payload, format="json")
    assert response.status_code == 200, response.json()
    return [q["sql"] for q in ctx.captured_queries]


def test_ingest_query_count_is_the_same_for_2_and_200_pieces(api: APIClient) -> None:
    api.get("/api/schema/")  # stamps last_used_at once, so no request below updates it
    small = _ingest_queries(api, {"message_pieces": factories.conversation_pieces(2)})
    large = _ingest_queries(api, {"message_pieces": factories.conversation_pieces(200)})
    assert len(small) == len(large), "\n".join(large)
