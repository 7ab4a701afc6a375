"""Which database a request reads from (redteam/common/replicas.py), without a replica: the
router's answers are checked directly. tests/reliability/test_replica_reads.py runs the same
rules against a real PostgreSQL standby."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
from django.db import transaction
from django.test import RequestFactory
from django.urls import resolve

from memory.models import AttackResult, MessagePiece
from redteam.common.models import ApiKey, OperationMembership
from redteam.common.replicas import (
    PIN_COOKIE,
    ReplicaReadsMiddleware,
    ReplicaRouter,
    current_replica,
)
from scoring.models import ReviewClaim, ReviewQueue, ReviewSkip

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _choose(request: Any, path: str | None = None) -> tuple[str | None, Any]:
    """Run the middleware around a view that records the replica it was given."""
    seen: dict[str, str | None] = {}

    def view(_: Any) -> Any:
        seen["replica"] = current_replica()
        from django.http import HttpResponse

        return HttpResponse("ok")

    middleware = ReplicaReadsMiddleware(view)
    match = resolve(path or request.path)
    middleware.process_view(request, match.func, (), {})
    response = view(request)
    # __call__ clears the choice and pins after writes: run it around a no-op view too.
    response = ReplicaReadsMiddleware(lambda _: response)(request)
    assert current_replica() is None
    return seen["replica"], response


@pytest.fixture
def with_replicas(settings: Any) -> list[str]:
    aliases = ["replica1", "replica2"]
    settings.DATABASE_REPLICAS = aliases
    return aliases


def test_a_review_page_get_reads_from_a_replica(with_replicas: list[str]) -> None:
    chosen, _ = _choose(RequestFactory().get("/attack-results/"))
    assert chosen in with_replicas


def test_writes_admin_pinned_clients_and_primary_views_read_the_primary(
    with_replicas: list[str],
) -> None:
    factory = RequestFactory()
    assert _choose(factory.post("/attack-results/"))[0] is None
    assert _choose(factory.get("/admin/"))[0] is None
    pinned = factory.get("/attack-results/")
    pinned.COOKIES[PIN_COOKIE] = str(int(time.time()) + 30)
    assert _choose(pinned)[0] is None
    expired = factory.get("/attack-results/")
    expired.COOKIES[PIN_COOKIE] = str(int(time.time()) - 1)
    assert _choose(expired)[0] in with_replicas
    forged = factory.get("/attack-results/")
    forged.COOKIES[PIN_COOKIE] = "not a time"
    assert _choose(forged)[0] in with_replicas
    # Handing out a queue's next item reads what it is about to claim: the primary.
    step = factory.get("/review/unreviewed/next/")
    assert _choose(step)[0] is None


def test_a_write_pins_the_client_to_the_primary(with_replicas: list[str], settings: Any) -> None:
    settings.DATABASE_REPLICA_PIN_SECONDS = 15
    _, response = _choose(RequestFactory().post("/attack-results/"))
    cookie = response.cookies[PIN_COOKIE]
    assert cookie["max-age"] == 15
    assert cookie["httponly"]
    assert int(cookie.value) > time.time()
    _, response = _choose(RequestFactory().get("/attack-results/"))
    assert PIN_COOKIE not in response.cookies


def test_without_replicas_nothing_is_routed_or_pinned() -> None:
    chosen, response = _choose(RequestFactory().get("/attack-results/"))
    assert chosen is None
    _, response = _choose(RequestFactory().post("/attack-results/"))
    assert PIN_COOKIE not in response.cookies


@pytest.mark.django_db(transaction=True)
def test_the_router_keeps_access_rows_claims_and_transactions_on_the_primary(
    with_replicas: list[str],
) -> None:
    from redteam.common import replicas

    router = ReplicaRouter()
    token = replicas._replica.set("replica2")
    try:
        replicated: list[type[Any]] = [AttackResult, MessagePiece, ReviewQueue]
        primary: list[type[Any]] = [
            User,
            Session,
            OperationMembership,
            ApiKey,
            ReviewClaim,
            ReviewSkip,
        ]
        for model in replicated:
            assert router.db_for_read(model) == "replica2", model
        for model in primary:
            assert router.db_for_read(model) is None, model
        with transaction.atomic():
            assert router.db_for_read(AttackResult) is None
    finally:
        replicas._replica.reset(token)
    assert router.db_for_read(AttackResult) is None
    # Writes never go to a replica, even for a row read from one.
    read_from_replica = AttackResult()
    read_from_replica._state.db = "replica1"
    assert router.db_for_write(AttackResult, instance=read_from_replica) == "default"
    assert router.db_for_write(AttackResult) is None
    assert router.allow_migrate("replica1", "memory") is False
    assert router.allow_migrate("default", "memory") is None


def test_replica_urls_become_mirrored_aliases() -> None:
    env = {
        **os.environ,
        "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/main",
        "DATABASE_REPLICA_URLS": "postgres://u@10.0.0.2:5432/main,postgres://u@10.0.0.3:6432/main",
        "DATABASE_REPLICA_PIN_SECONDS": "7",
        "DJANGO_SETTINGS_MODULE": "redteam.settings",
    }
    code = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.DATABASE_REPLICAS, s.DATABASES['replica2']['HOST'], "
        "s.DATABASES['replica2']['PORT'], s.DATABASES['replica1']['TEST']['MIRROR'], "
        "s.DATABASE_REPLICA_PIN_SECONDS)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=REPO_ROOT, capture_output=True, text=True
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["['replica1',", "'replica2']", "10.0.0.3", "6432", "default", "7"]
