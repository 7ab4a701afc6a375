"""API keys hold against guessing and malformed grants: scopes validated, attempts rate-limited
per client address, unknown and known prefixes checked with the same work."""

from __future__ import annotations

import importlib
from datetime import timedelta
from typing import Any
from unittest import mock

import pytest
from django.contrib.admin.sites import site
from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.utils import timezone
from rest_framework_api_key.crypto import KeyGenerator

from redteam.common.models import ApiKey, ApiKeyFailureWindow, AuditEvent, granted_scopes
from tests.access import grant
from tests.api.conftest import KeyFactory

pytestmark = pytest.mark.django_db

READ = "/api/v1/scores/"
LIMIT = 4


@pytest.mark.parametrize(
    "scopes",
    [
        {"read": False, "ingest": False},
        {"read": True},
        "readonly",
        "read",
        ["readonly"],
        ["read", "admin"],
        ["read", "read"],
        [["read"]],
        [None],
        None,
        7,
    ],
)
def test_malformed_scopes_grant_nothing_and_cannot_be_created(user: User, scopes: Any) -> None:
    assert granted_scopes(scopes) == frozenset()
    key = ApiKey(name="k", user=user, scopes=scopes)
    assert not key.has_scope("read")
    assert not key.has_scope("ingest")
    with pytest.raises(ValidationError):
        key.full_clean(exclude=["id", "prefix", "hashed_key"])
    with pytest.raises(ValidationError):
        ApiKey.objects.create_key(name="k", user=user, scopes=scopes)
    assert not ApiKey.objects.exists()


def test_stored_malformed_scopes_are_refused_by_the_api(user: User) -> None:
    api_key, secret = ApiKey.objects.create_key(name="k", user=user, scopes=["read"])
    ApiKey.objects.filter(pk=api_key.pk).update(scopes={"read": False, "ingest": False})
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert client.get(READ).status_code == 403
    assert client.post("/api/v1/ingest/", "{}", content_type="application/json").status_code == 403


def test_well_formed_scopes_are_stored_in_one_order(user: User) -> None:
    key = ApiKey(name="k", user=user, scopes=["read", "ingest"])
    key.full_clean(exclude=["id", "prefix", "hashed_key"])
    assert key.scopes == ["ingest", "read"]
    assert key.has_scope("read")
    assert key.has_scope("ingest")


def test_admin_form_refuses_malformed_scopes(user: User) -> None:
    staff = User.objects.create_superuser("boss", "boss@example.org", "pw")
    client = Client()
    client.force_login(staff)
    url = "/admin/redteam/apikey/add/"
    form = {"name": "k", "user": str(user.pk), "scopes": '{"read": false}'}
    response = client.post(url, form)
    assert response.status_code == 200
    assert b"Scopes are a JSON list drawn from" in response.content
    assert not ApiKey.objects.exists()
    operation = grant(user, "op1", "read-only").operation
    valid = {**form, "scopes": '["read"]', "operations": [operation.pk]}
    assert client.post(url, valid).status_code == 302
    assert ApiKey.objects.get().scopes == ["read"]
    assert ApiKey in site._registry


def test_migration_normalises_or_revokes_stored_scopes(user: User) -> None:
    rows = {
        "listed": ["read", "ingest", "read"],
        "comma": "ingest, read",
        "sorted": ["ingest"],
        "dict": {"read": False, "ingest": False},
        "unknown": ["readonly"],
        "number": 5,
    }
    keys = {}
    for name, scopes in rows.items():
        api_key, _ = ApiKey.objects.create_key(name=name, user=user, scopes=["read"])
        ApiKey.objects.filter(pk=api_key.pk).update(scopes=scopes)
        keys[name] = api_key.pk
    migration = importlib.import_module(
        "redteam.common.migrations.0002_api_key_scopes_validated_and_failure_windows"
    )
    apps = MigrationExecutor(connection).loader.project_state().apps
    migration.normalise_scopes(apps, connection.schema_editor())
    stored = {k.name: (k.scopes, k.revoked) for k in ApiKey.objects.all()}
    assert stored == {
        "listed": (["ingest", "read"], False),
        "comma": (["ingest", "read"], False),
        "sorted": (["ingest"], False),
        "dict": ([], True),
        "unknown": ([], True),
        "number": ([], True),
    }
    revoked = AuditEvent.objects.filter(action="api_key.revoke", object_type="api_key")
    assert revoked.count() == 3
    event = revoked.get(detail__name="dict")
    assert event.detail["previous_scopes"] == {"read": False, "ingest": False}
    assert AuditEvent.objects.filter(action="api_key.scopes_normalised").count() == 2


@pytest.fixture
def limited(settings: Any) -> int:
    """A small failure limit, so tests need few requests."""
    settings.REDTEAM_API_KEY_FAILURE_LIMIT = LIMIT
    settings.REDTEAM_API_KEY_FAILURE_WINDOW = 600
    return LIMIT


def _get(key: str, ip: str, forwarded_for: str | None = None) -> Any:
    """GET a read endpoint with `key` from client address `ip` (through a proxy if given)."""
    client = Client(HTTP_AUTHORIZATION=f"Bearer {key}", REMOTE_ADDR=ip)
    if forwarded_for is not None:
        client.defaults["HTTP_X_FORWARDED_FOR"] = forwarded_for
    return client.get(READ)


@pytest.mark.parametrize(
    "wrong", ["nosuchprefix.secret", "{prefix}.wrongsecret", "no-dot-at-all", "{prefix}."]
)
def test_wrong_keys_from_one_address_get_429_with_retry_after(
    limited: int, make_key: KeyFactory, wrong: str
) -> None:
    right = make_key("read")
    wrong = wrong.format(prefix=right.partition(".")[0])
    for _ in range(limited):
        assert _get(wrong, "203.0.113.7").status_code == 401
    refused = _get(wrong, "203.0.113.7")
    assert refused.status_code == 429
    assert 590 <= int(refused["Retry-After"]) <= 600
    # Locked out even with the right key: guessing stops, it does not just slow down.
    assert _get(right, "203.0.113.7").status_code == 429
    # Other addresses are unaffected, with a wrong key (401) or the right one (200).
    assert _get(wrong, "198.51.100.20").status_code == 401
    assert _get(right, "198.51.100.21").status_code == 200


def test_lockout_ends_with_its_window(limited: int, make_key: KeyFactory) -> None:
    right = make_key("read")
    for _ in range(limited + 1):
        _get("bad.key", "203.0.113.7")
    assert _get(right, "203.0.113.7").status_code == 429
    ApiKeyFailureWindow.objects.update(window_started_at=timezone.now() - timedelta(seconds=601))
    assert _get(right, "203.0.113.7").status_code == 200
    # A failure after the window starts a new count rather than extending the old one.
    assert _get("bad.key", "203.0.113.7").status_code == 401
    assert ApiKeyFailureWindow.objects.get().failures == 1


def test_lockout_follows_the_trusted_proxy_setting(
    limited: int, make_key: KeyFactory, settings: Any
) -> None:
    settings.REDTEAM_TRUSTED_PROXY_COUNT = 1
    right = make_key("read")
    for _ in range(limited + 1):
        _get("bad.key", "10.0.0.1", "1.1.1.1, 203.0.113.7")
    # Same client behind the proxy, with a forged leftmost entry: still locked out.
    assert _get(right, "10.0.0.1", "9.9.9.9, 203.0.113.7").status_code == 429
    # Another client through the same proxy is not.
    assert _get(right, "10.0.0.1", "203.0.113.8").status_code == 200


def test_limit_zero_turns_the_lockout_off(settings: Any, make_key: KeyFactory) -> None:
    settings.REDTEAM_API_KEY_FAILURE_LIMIT = 0
    for _ in range(30):
        assert _get("bad.key", "203.0.113.7").status_code == 401
    assert _get(make_key("read"), "203.0.113.7").status_code == 200
    assert not ApiKeyFailureWindow.objects.exists()


@pytest.mark.parametrize("which", ["unknown prefix", "known prefix, wrong secret", "right key"])
def test_every_key_costs_one_lookup_and_one_hash_check(make_key: KeyFactory, which: str) -> None:
    right = make_key("read")
    prefix = right.partition(".")[0]
    key = {
        "unknown prefix": "zzzzzzzz." + right.partition(".")[2],
        "known prefix, wrong secret": prefix + ".x" + right.partition(".")[2][1:],
        "right key": right,
    }[which]
    with mock.patch.object(
        KeyGenerator, "verify", autospec=True, side_effect=KeyGenerator.verify
    ) as spy:
        _get(key, "203.0.113.7")
    assert spy.call_count == 1
    # The same hasher and format either way: the unknown prefix is checked against a real hash.
    assert spy.call_args.args[2].startswith("sha512$$")


@pytest.mark.usefixtures("limited")
def test_a_correct_key_costs_one_query_whatever_the_limit(
    make_key: KeyFactory, django_assert_num_queries: Any
) -> None:
    right = make_key("read")
    _get(right, "203.0.113.7")  # stamps last_used_at
    client = Client(HTTP_AUTHORIZATION=f"Bearer {right}", REMOTE_ADDR="203.0.113.7")
    # The key row, its user and the address's lockout in one query; the schema runs none.
    with django_assert_num_queries(1):
        assert client.get("/api/schema/").status_code == 200
