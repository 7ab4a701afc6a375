"""Reads on a real PostgreSQL streaming replica (redteam/common/replicas.py).

`.ci/replica` starts a hot standby of the local server on 127.0.0.1:5433 and `.ci/run` names it
in REDTEAM_TEST_REPLICA_URL. The test database pytest-django creates on the primary reaches the
standby through replication, so the tests commit their rows (transactional tests), wait for the
standby to replay them, and pause replay (`pg_wal_replay_pause()`) to make the standby visibly
stale: what a request shows then tells which server answered it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import pytest
from django.contrib.auth.models import User
from django.db import connections
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from memory.models import AttackResult, Score
from redteam.common.models import OperationMembership
from redteam.common.replicas import PIN_COOKIE
from tests.access import grant
from tests.memory.row_factories import make_attack_result, make_conversation
from tests.scoring.row_factories import PASSWORD

REPLICA_URL = os.environ.get("REDTEAM_TEST_REPLICA_URL", "")
ALIAS = "replica_under_test"
OPERATION = "op-replica"

# The alias exists before pytest-django sets the test databases up: as a test mirror of the
# primary it is never created, migrated or flushed; the fixture points it at the standby.
ENABLED = bool(REPLICA_URL) and connections["default"].vendor == "postgresql"
if ENABLED and ALIAS not in connections.settings:
    default = connections.settings["default"]
    connections.settings[ALIAS] = {**default, "TEST": {**default["TEST"], "MIRROR": "default"}}

pytestmark = [
    pytest.mark.reliability,
    pytest.mark.django_db(transaction=True, databases=["default", ALIAS] if ENABLED else None),
    pytest.mark.skipif(
        not ENABLED,
        reason="no replica: .ci/run starts one (.ci/replica) and sets REDTEAM_TEST_REPLICA_URL"
        " for its PostgreSQL run",
    ),
]


def _primary_lsn() -> str:
    with connections["default"].cursor() as cursor:
        cursor.execute("select pg_current_wal_lsn()::text")
        return str(cursor.fetchone()[0])


def _replica_sql(sql: str) -> Any:
    with connections[ALIAS].cursor() as cursor:
        cursor.execute(sql)
        return cursor.fetchone()[0] if cursor.description else None


def caught_up(timeout: float = 30.0) -> None:
    """Wait until the standby has replayed everything the primary committed so far."""
    target = _primary_lsn()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with connections[ALIAS].cursor() as cursor:
            cursor.execute("select pg_last_wal_replay_lsn() >= %s::pg_lsn", [target])
            if cursor.fetchone()[0]:
                return
        time.sleep(0.05)
    raise AssertionError(f"the standby did not replay up to {target} in {timeout} s")


@pytest.fixture
def replica(settings: Any) -> Iterator[str]:
    """The standby as a database alias reading the primary's test database; replay resumed
    at the end whatever the test did."""
    parts = urlsplit(REPLICA_URL)
    connection = connections[ALIAS]
    connection.close()
    connection.settings_dict = {
        **connections["default"].settings_dict,
        "HOST": parts.hostname or "127.0.0.1",
        "PORT": parts.port or 5432,
        "CONN_MAX_AGE": 0,
        # Still a mirror: the test case never flushes it (the standby is read-only).
        "TEST": {**connections["default"].settings_dict["TEST"], "MIRROR": "default"},
    }
    settings.DATABASE_REPLICAS = [ALIAS]
    settings.DATABASE_REPLICA_PIN_SECONDS = 60
    try:
        assert _replica_sql("select pg_is_in_recovery()") is True, "not a standby"
        caught_up()
        yield ALIAS
    finally:
        _replica_sql("select pg_wal_replay_resume()")
        connection.close()


def _reviewer(name: str) -> tuple[User, Client]:
    user = User.objects.create_user(name, password=PASSWORD)
    grant(user, OPERATION, "reviewer")
    client = Client()
    client.force_login(user)
    return user, client


def _result(conversation_id: str, objective: str) -> AttackResult:
    conversation = make_conversation(
        2, conversation_id=conversation_id, labels={"operation": OPERATION}
    )
    return make_attack_result(conversation, objective=objective)


def test_review_pages_and_read_api_read_from_the_replica_and_writes_go_to_the_primary(
    replica: str,
) -> None:
    _, client = _reviewer("ruth")
    result = _result("conv-on-both", "Objective the standby has")
    caught_up()
    urls = [
        reverse("memory:conversation_list"),
        reverse("scoring:attack_result_list"),
        reverse("scoring:attack_result_detail", args=[result.pk]),
    ]
    for url in urls:
        with CaptureQueriesContext(connections[replica]) as on_replica:
            response = client.get(url)
        assert response.status_code == 200, url
        assert any("memory_" in q["sql"] for q in on_replica.captured_queries), url
        # Who the caller is and what they may see: always the primary.
        assert not any('FROM "auth_user"' in q["sql"] for q in on_replica.captured_queries), url
        assert not any(
            'FROM "redteam_operationmembership"' in q["sql"] for q in on_replica.captured_queries
        )

    with CaptureQueriesContext(connections[replica]) as on_replica:
        response = client.post(
            reverse("scoring:verdict", args=[result.pk]),
            {"verdict": "true", "rationale": "It worked.", "submission": "b" * 32},
        )
    assert response.status_code == 302
    assert on_replica.captured_queries == []
    assert Score.objects.filter(source="human", attack_result=result).count() == 1


def test_a_stale_replica_serves_others_while_the_writer_reads_its_own_write(replica: str) -> None:
    _, writer = _reviewer("wanda")
    _, other = _reviewer("otto")
    result = _result("conv-verdict", "Objective judged while the standby waits")
    caught_up()
    _replica_sql("select pg_wal_replay_pause()")

    page = reverse("scoring:attack_result_detail", args=[result.pk])
    posted = writer.post(
        reverse("scoring:verdict", args=[result.pk]),
        {"verdict": "true", "rationale": "MARKER-VERDICT-RATIONALE", "submission": "c" * 32},
    )
    assert posted.status_code == 302
    assert PIN_COOKIE in posted.cookies
    # The writer follows the redirect and sees its verdict: pinned to the primary.
    assert "MARKER-VERDICT-RATIONALE" in writer.get(page).content.decode()
    # Anyone else reads the paused standby, which has not replayed the verdict yet.
    assert "MARKER-VERDICT-RATIONALE" not in other.get(page).content.decode()

    _replica_sql("select pg_wal_replay_resume()")
    caught_up()
    assert "MARKER-VERDICT-RATIONALE" in other.get(page).content.decode()


def test_a_revoked_membership_counts_at_once_however_far_the_replica_lags(replica: str) -> None:
    user, client = _reviewer("rita")
    result = _result("conv-revoked", "Objective of a revoked reviewer")
    page = reverse("scoring:attack_result_detail", args=[result.pk])
    caught_up()
    assert client.get(page).status_code == 200
    _replica_sql("select pg_wal_replay_pause()")
    OperationMembership.objects.filter(user=user).delete()
    assert client.get(page).status_code in (403, 404)


def test_an_expired_pin_reads_the_replica_again(replica: str, settings: Any) -> None:
    settings.DATABASE_REPLICA_PIN_SECONDS = 0
    _, client = _reviewer("pia")
    result = _result("conv-unpinned", "Objective read after the pin ran out")
    caught_up()
    _replica_sql("select pg_wal_replay_pause()")
    client.post(
        reverse("scoring:verdict", args=[result.pk]),
        {"verdict": "false", "rationale": "MARKER-UNPINNED", "submission": "d" * 32},
    )
    page = reverse("scoring:attack_result_detail", args=[result.pk])
    assert "MARKER-UNPINNED" not in client.get(page).content.decode()
