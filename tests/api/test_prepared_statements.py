"""On PostgreSQL, what every API request and every ingested message runs is prepared once per
session (redteam.common.dbutil.prepared_statements); nothing a page or read runs is."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from redteam.common.dbutil import prepared_statements
from tests.api import factories

pytestmark = pytest.mark.django_db


@pytest.fixture
def postgres() -> None:
    if connection.vendor != "postgresql":
        pytest.skip("prepared statements are PostgreSQL's")


def _prepared() -> set[str]:
    """The statements this session has prepared."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        return {row[0] for row in cursor.fetchall()}


def _ingest_single_messages(api: APIClient, requests: int) -> None:
    for _ in range(requests):
        payload = {"message_pieces": factories.conversation_pieces(1)}
        response = api.post("/api/v1/ingest/", payload, format="json")
        assert response.status_code == 200, response.json()
        assert response.json()["stored"] == 1


def _is_key_lookup(statement: str) -> bool:
    return 'k."hashed_key"' in statement


def test_single_message_ingests_reuse_prepared_statements(api: APIClient, postgres: Any) -> None:
    before = _prepared()
    _ingest_single_messages(api, 3)
    new = _prepared() - before
    assert any(_is_key_lookup(s) for s in new), new
    assert any("FROM memory_messagepiece p WHERE" in s for s in new), new  # stored pieces
    assert any(s.startswith('UPDATE "memory_conversation"') for s in new), new
    # Prepared once: more requests of the same shape prepare nothing more.
    settled = _prepared()
    _ingest_single_messages(api, 3)
    assert _prepared() == settled


def test_statements_run_prepared_are_logged_with_their_values(
    api: APIClient, postgres: Any
) -> None:
    _ingest_single_messages(api, 2)
    pieces = factories.conversation_pieces(1)
    with CaptureQueriesContext(connection) as ctx:
        response = api.post("/api/v1/ingest/", {"message_pieces": pieces}, format="json")
    assert response.status_code == 200
    logged = [q["sql"] for q in ctx.captured_queries]
    assert all(isinstance(sql, str) for sql in logged), logged
    assert any(pieces[0]["conversation_id"] in sql for sql in logged), logged


def test_reads_prepare_only_the_key_lookup(api: APIClient, postgres: Any) -> None:
    # A rollback ends the session's prepared statements, so each test starts without any.
    before = _prepared()
    for _ in range(3):
        assert api.get("/api/v1/conversations/").status_code == 200
        assert api.get("/api/v1/message-pieces/", {"role": "system"}).status_code == 200
    new = _prepared() - before
    assert new, "the key lookup, prepared on its second run"
    assert all(_is_key_lookup(s) for s in new), new


def test_turned_off_nothing_is_prepared(api: APIClient, postgres: Any, settings: Any) -> None:
    settings.DATABASE_PREPARED_STATEMENTS = False
    before = _prepared()
    _ingest_single_messages(api, 3)
    assert _prepared() == before


def _fail_inside_nested_blocks(driver: Any) -> None:
    with prepared_statements("default"):
        assert driver.prepare_threshold is not None
        with prepared_statements("default"):  # nested: the outer block's state comes back
            pass
        assert driver.prepare_threshold is not None
        raise RuntimeError


def test_the_block_gives_the_driver_back_as_it_was(postgres: Any) -> None:
    connection.ensure_connection()
    driver = connection.connection
    before = (driver.cursor_factory, driver.prepare_threshold)
    assert before[1] is None  # Django's default: never prepared outside the block
    with pytest.raises(RuntimeError):
        _fail_inside_nested_blocks(driver)
    assert (driver.cursor_factory, driver.prepare_threshold) == before


def test_elsewhere_the_block_changes_nothing() -> None:
    if connection.vendor == "postgresql":
        pytest.skip("on PostgreSQL the block prepares statements: the tests above check it")
    with prepared_statements("default"), connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        assert cursor.fetchone() == (1,)
