"""API keys: Bearer auth, scopes, revocation, expiry, sessions, and no anonymous access."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils import timezone
from rest_framework.test import APIClient

from redteam.common.access import key_scope
from redteam.common.api_auth import usable_key
from redteam.common.models import ApiKey, AuditEvent, Operation
from tests.access import grant
from tests.api.conftest import KeyFactory, bearer_client

pytestmark = pytest.mark.django_db

INGEST = "/api/v1/ingest/"
READ = "/api/schema/"  # a GET behind the read scope that needs no other app's code
CONVERSATIONS = "/api/v1/conversations/"  # a read scoped to the key's operations


def _fill(segment: str) -> str:
    """A route segment with its converters or regex groups replaced by harmless values."""
    segment = segment.lstrip("^").rstrip("$").replace("\\Z", "")

    def value(name: str) -> str:
        if "sha256" in name or "hash" in name:
            return "b" * 64
        return "00000000-0000-4000-8000-000000000000"

    segment = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: value(m.group(1)), segment)
    segment = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: value(m.group(1)), segment)
    return segment.replace("\\.", ".")


def _api_routes() -> list[str]:
    """Every URL under /api/, with path converters filled by harmless values."""
    routes: list[str] = []

    def walk(patterns: list[Any], prefix: str) -> None:
        for p in patterns:
            route = prefix + _fill(str(p.pattern))
            if isinstance(p, URLResolver):
                walk(p.url_patterns, route)
            elif isinstance(p, URLPattern):
                routes.append(route)

    walk(get_resolver().url_patterns, "")
    return ["/" + r for r in routes if r.startswith("api/")]


def test_every_api_route_refuses_anonymous_get_and_post() -> None:
    routes = _api_routes()
    assert INGEST in routes
    assert "/api/schema/" in routes
    assert "/api/docs/" in routes
    assert "/api/v1/message-pieces/" in routes
    assert len(routes) >= 17
    client = APIClient()
    for route in routes:
        for method in ("get", "post"):
            response = getattr(client, method)(route)
            assert response.status_code in (401, 403, 405), (method, route, response.status_code)
            assert response.status_code != 200


def test_missing_key_is_answered_with_401_and_a_bearer_challenge() -> None:
    response = APIClient().post(INGEST, {}, format="json")
    assert response.status_code == 401
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_ingest_and_read_with_a_valid_key(make_key: KeyFactory) -> None:
    client = bearer_client(make_key("ingest", "read"))
    assert client.post(INGEST, {}, format="json").status_code == 200
    assert client.get(READ).status_code == 200


@pytest.mark.parametrize(
    "header",
    [
        "Bearer nonsense",
        "Bearer abc.def",
        "Bearer ",
        "Bearer a.b c",
        "Bearer \u00e9t\u00e9.x",
        "Bearer ab\x00c.def",
        "Bearer ab\tc.def",
    ],
)
def test_wrong_or_malformed_key_is_401(make_key: KeyFactory, header: str) -> None:
    make_key("ingest")
    client = APIClient()
    response = client.post(INGEST, {}, format="json", HTTP_AUTHORIZATION=header)
    assert response.status_code == 401


def test_right_prefix_with_wrong_secret_is_401(make_key: KeyFactory) -> None:
    key = make_key("ingest")
    prefix = key.partition(".")[0]
    response = bearer_client(f"{prefix}.{'x' * 32}").post(INGEST, {}, format="json")
    assert response.status_code == 401


def test_revoked_key_is_401(make_key: KeyFactory) -> None:
    key = make_key("ingest", "read")
    ApiKey.objects.filter(prefix=key.partition(".")[0]).update(revoked=True)
    client = bearer_client(key)
    assert client.post(INGEST, {}, format="json").status_code == 401
    assert client.get(READ).status_code == 401


def test_expired_key_is_401(make_key: KeyFactory) -> None:
    key = make_key("ingest", expiry_date=timezone.now() - timedelta(seconds=1))
    assert bearer_client(key).post(INGEST, {}, format="json").status_code == 401


def test_key_of_inactive_user_is_401(make_key: KeyFactory, user: User) -> None:
    key = make_key("ingest")
    user.is_active = False
    user.save()
    assert bearer_client(key).post(INGEST, {}, format="json").status_code == 401


def test_read_only_key_cannot_ingest(make_key: KeyFactory) -> None:
    client = bearer_client(make_key("read"))
    response = client.post(INGEST, {}, format="json")
    assert response.status_code == 403
    assert "ingest" in response.json()["detail"]
    assert client.get(READ).status_code == 200


def test_ingest_only_key_cannot_read(make_key: KeyFactory) -> None:
    client = bearer_client(make_key("ingest"))
    response = client.get(READ)
    assert response.status_code == 403
    assert b"scope" in response.content
    assert b"read" in response.content
    assert client.post(INGEST, {}, format="json").status_code == 200


def test_key_without_scopes_can_do_nothing(user: User) -> None:
    _, key = ApiKey.objects.create_key(name="none", user=user, scopes=[])
    client = bearer_client(key)
    assert client.post(INGEST, {}, format="json").status_code == 403
    assert client.get(READ).status_code == 403


def test_api_key_acts_as_its_own_user(make_key: KeyFactory, other_user: User) -> None:
    key = make_key("ingest", owner=other_user)
    api_key = ApiKey.objects.get(prefix=key.partition(".")[0])
    assert api_key.user == other_user
    assert bearer_client(key).post(INGEST, {}, format="json").status_code == 200
    api_key.refresh_from_db()
    assert api_key.last_used_at is not None


def test_session_user_reads_but_cannot_ingest_unless_staff(user: User) -> None:
    client = Client()
    client.force_login(user)
    # No review role: nothing to read (tests/security/test_access_matrix.py has every URL).
    assert client.get(READ).status_code == 403
    grant(user, "op1", "read-only")
    client.force_login(User.objects.get(pk=user.pk))
    assert client.get(READ).status_code == 200
    assert client.post(INGEST, "{}", content_type="application/json").status_code == 403
    user.is_staff = True
    user.save()
    assert client.post(INGEST, "{}", content_type="application/json").status_code == 200


def test_staff_session_ingest_requires_csrf(user: User) -> None:
    user.is_staff = True
    user.save()
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.post(INGEST, "{}", content_type="application/json").status_code == 403


def test_bearer_requests_do_not_need_csrf(make_key: KeyFactory) -> None:
    client = APIClient(enforce_csrf_checks=True)
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {make_key('ingest')}")
    assert client.post(INGEST, {}, format="json").status_code == 200


def test_authentication_costs_one_query(
    make_key: KeyFactory, django_assert_num_queries: Any
) -> None:
    client = bearer_client(make_key("read"))
    client.get(READ)  # first use stamps last_used_at
    # 1: the key row joined with its user. The schema view itself runs no query.
    with django_assert_num_queries(1):
        assert client.get(READ).status_code == 200


def test_the_scope_read_with_the_key_is_the_scope_queried_alone(user: User) -> None:
    """Authentication reads the key's memberships in its own statement (key_memberships_sql);
    key_scope must then give exactly what it computes when it queries them itself: roles,
    archived operations, and nothing from operations outside the key or the user's grants."""
    live, shelved, other, not_granted = (
        Operation.objects.create(name=n) for n in ("live", "shelved", "other", "notgranted")
    )
    shelved.archived = True
    shelved.save()
    grant(user, live, "lead")
    grant(user, shelved, "reviewer")
    grant(user, other, "reviewer")  # the user's, not the key's
    row, key = ApiKey.objects.create_key(name="t", user=user, scopes=["read"])
    row.operations.set([live, shelved, not_granted])  # the key's, not granted to the user
    found = usable_key(key.partition(".")[0], "198.51.100.7", timezone.now())
    assert found is not None
    brought = key_scope(found[0])
    queried = key_scope(ApiKey.objects.select_related("user").get(pk=row.pk))
    assert brought == queried
    assert brought.roles == {live.pk: "lead", shelved.pk: "reviewer"}
    assert brought.archived == frozenset({shelved.pk})
    # A key of no operation brings an empty scope, not a missing one.
    _, bare_key = ApiKey.objects.create_key(name="b", user=user, scopes=["read"])
    found = usable_key(bare_key.partition(".")[0], "198.51.100.7", timezone.now())
    assert found is not None
    assert key_scope(found[0]).roles == {}


def test_a_superusers_key_brings_its_operations_with_its_authentication(
    user: User, django_assert_num_queries: Any
) -> None:
    """A superuser's key reads every operation it names as lead, memberships or not: the
    authenticating statement brings those rows too, so its requests run no scope query."""
    user.is_superuser = True
    user.save()
    live, shelved, unnamed = (Operation.objects.create(name=n) for n in ("live", "shelved", "x"))
    shelved.archived = True
    shelved.save()
    grant(user, unnamed, "reviewer")  # a membership outside the key adds nothing
    row, key = ApiKey.objects.create_key(name="t", user=user, scopes=["read"])
    row.operations.set([live, shelved])
    found = usable_key(key.partition(".")[0], "198.51.100.7", timezone.now())
    assert found is not None
    with django_assert_num_queries(0):
        brought = key_scope(found[0])
    assert brought == key_scope(ApiKey.objects.select_related("user").get(pk=row.pk))
    assert brought.roles == {live.pk: "lead", shelved.pk: "lead"}
    assert brought.archived == frozenset({shelved.pk})
    _, bare_key = ApiKey.objects.create_key(name="b", user=user, scopes=["read"])
    found = usable_key(bare_key.partition(".")[0], "198.51.100.7", timezone.now())
    assert found is not None
    with django_assert_num_queries(0):
        assert key_scope(found[0]).roles == {}


def test_a_superusers_key_costs_a_read_no_more_queries_than_a_members(
    user: User, other_user: User
) -> None:
    operation = Operation.objects.create(name="shared")
    grant(user, operation, "reviewer")
    other_user.is_superuser = True
    other_user.save()
    counts = []
    for owner in (user, other_user):
        row, key = ApiKey.objects.create_key(name="t", user=owner, scopes=["read"])
        row.operations.set([operation])
        client = bearer_client(key)
        client.get(CONVERSATIONS)  # first use stamps last_used_at
        with CaptureQueriesContext(connection) as queries:
            assert client.get(CONVERSATIONS).status_code == 200
        counts.append(len(queries))
    assert counts[0] == counts[1]


def test_create_api_key_prints_a_working_key_once(user: User, capsys: Any) -> None:
    grant(user, "op1", "reviewer")
    call_command(
        "create_api_key", "--user", user.username, "--scopes", "ingest,read", "--operations", "op1"
    )
    out, err = capsys.readouterr()
    key = out.strip()
    assert "." in key
    assert "shown once" in err
    api_key = ApiKey.objects.get()
    assert api_key.user == user
    assert sorted(api_key.scopes) == ["ingest", "read"]
    assert key not in api_key.hashed_key
    assert api_key.hashed_key.startswith("sha512$$")
    assert AuditEvent.objects.filter(action="api_key.create", object_id=api_key.prefix).exists()
    assert bearer_client(key).post(INGEST, {}, format="json").status_code == 200


def test_create_api_key_with_read_scope_only(user: User, capsys: Any) -> None:
    grant(user, "op1", "reviewer")
    call_command(
        "create_api_key", "--user", user.username, "--scopes", "read", "--operations", "op1"
    )
    key = capsys.readouterr().out.strip()
    assert bearer_client(key).post(INGEST, {}, format="json").status_code == 403


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--user", "nobody", "--scopes", "read"], "No user"),
        (["--user", "attacker", "--scopes", "admin"], "Unknown"),
        (["--user", "attacker", "--scopes", ","], "Unknown"),
    ],
)
@pytest.mark.usefixtures("user")
def test_create_api_key_rejects_bad_arguments(args: list[str], message: str) -> None:
    with pytest.raises(CommandError, match=message):
        call_command("create_api_key", *args)
    assert not ApiKey.objects.exists()


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/conversations/%C3%ABJ~M20Z2/",  # not a segment the storedid converter writes
        "/api/v1/conversations/~!!/",
        "/api/v1/no-such-endpoint/",
    ],
)
def test_api_paths_no_route_matches_answer_json_404(make_key: KeyFactory, path: str) -> None:
    response = bearer_client(make_key("read")).get(path)
    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "Not found."}


def test_page_paths_no_route_matches_keep_the_html_404(make_key: KeyFactory) -> None:
    response = bearer_client(make_key("read")).get("/no-such-page/")
    assert response.status_code == 404
    assert response["Content-Type"].startswith("text/html")
