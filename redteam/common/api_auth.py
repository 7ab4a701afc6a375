"""API authentication: per-user API keys sent as `Authorization: Bearer <key>`, with scopes.

Policy (documented in the README and the OpenAPI description):
- An API key acts as its user and may do exactly what its scopes say: `ingest` (POST batches
  and media) and/or `read` (every GET endpoint). Revoked, expired or unknown keys get 401.
- Reads and writes are confined to operations (redteam.common.access): a key to its
  operations (as far as its user is still a member), a browser user to their memberships.
- A browser (session) user may read with a role in some operation, as on the review pages.
  A session user may ingest only if they are staff; DRF's SessionAuthentication enforces CSRF
  for them, so a hostile page cannot post on their behalf.
- Nothing is reachable anonymously.
- Key guessing is rate-limited per client address (REDTEAM_API_KEY_FAILURE_LIMIT failures per
  REDTEAM_API_KEY_FAILURE_WINDOW seconds, then 429 with Retry-After), and an unknown prefix
  costs the same hash check as a known one, so response times do not reveal real prefixes.
"""

from __future__ import annotations

import functools
import math
import secrets
from datetime import datetime, timedelta
from typing import Any, NoReturn

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import connections, models, router, transaction
from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions
from rest_framework.request import Request

from redteam.common.access import attach_key_memberships, key_memberships_sql, scope_for
from redteam.common.dbutil import (
    columns_sql,
    from_db,
    model_from_row,
    prepared_statements,
    quoted_column,
)
from redteam.common.models import ApiKey, ApiKeyFailureWindow, ApiKeyScope
from redteam.common.security import client_ip

# `last_used_at` is bookkeeping; writing it on every request would add an UPDATE to each
# single-message ingest, so it is refreshed at most this often.
LAST_USED_RESOLUTION = timedelta(minutes=5)
BEARER = "bearer"
# A key nobody holds, hashed like real ones: an unknown prefix is checked against it, so both
# paths do one lookup and one hash comparison (the library's hasher compares in constant time).
_DUMMY_HASHED_KEY = ApiKey.objects.key_generator.hash(
    f"{secrets.token_urlsafe(6)}.{secrets.token_urlsafe(24)}"
)


def _window() -> timedelta:
    return timedelta(seconds=settings.REDTEAM_API_KEY_FAILURE_WINDOW)


def _limit() -> int:
    return int(settings.REDTEAM_API_KEY_FAILURE_LIMIT)


def _throttled(locked_since: datetime, now: datetime) -> exceptions.Throttled:
    """429 with Retry-After: the seconds until the address's failure window ends."""
    wait = max(1, math.ceil((locked_since + _window() - now).total_seconds()))
    return exceptions.Throttled(
        wait=wait, detail="Too many failed API key attempts from this address."
    )


def record_key_failure(address: str, now: datetime) -> ApiKeyFailureWindow:
    """Count one failed attempt from `address` in its current window (a new window if over)."""
    # Locked row, counted in the database: concurrent failures from one address on several
    # workers all count, and a window is restarted by exactly one of them.
    with transaction.atomic():
        row, _ = ApiKeyFailureWindow.objects.select_for_update().get_or_create(
            address=address, defaults={"window_started_at": now, "failures": 0}
        )
        if row.window_started_at <= now - _window():
            row.window_started_at, row.failures = now, 0
        row.failures += 1
        row.save(update_fields=["window_started_at", "failures"])
    return row


@functools.cache
def _usable_key_sql(alias: str) -> str:
    """usable_key's statement for database `alias` (built once per process and database)."""
    quote = connections[alias].ops.quote_name
    user_model = get_user_model()
    user_pk = user_model._meta.pk
    assert user_pk is not None

    def col(model: type[models.Model], name: str) -> str:
        return quoted_column(model, name, alias)

    memberships = key_memberships_sql(
        alias,
        key=f"k.{col(ApiKey, 'id')}",
        user=f"k.{col(ApiKey, 'user')}",
        superuser=f"u.{col(user_model, 'is_superuser')}",
    )
    return (
        f"SELECT {columns_sql(ApiKey, 'k', alias)}, {columns_sql(user_model, 'u', alias)}, "
        f"{memberships}, "
        f"(SELECT w.{col(ApiKeyFailureWindow, 'window_started_at')} "
        f"FROM {quote(ApiKeyFailureWindow._meta.db_table)} w "
        f"WHERE w.{col(ApiKeyFailureWindow, 'address')} = %s "
        f"AND w.{col(ApiKeyFailureWindow, 'failures')} >= %s "
        f"AND w.{col(ApiKeyFailureWindow, 'window_started_at')} > %s) "
        f"FROM {quote(ApiKey._meta.db_table)} k JOIN {quote(user_model._meta.db_table)} u "
        f"ON u.{col(user_model, user_pk.name)} = k.{col(ApiKey, 'user')} "
        f"WHERE k.{col(ApiKey, 'prefix')} = %s AND k.{col(ApiKey, 'revoked')} = %s"
    )


def usable_key(prefix: str, address: str, now: datetime) -> tuple[ApiKey, datetime | None] | None:
    """The unrevoked key with this prefix with its user (and the memberships key_scope will
    need), and when the failure window of `address` started if the address is locked out at
    `now`: one statement.

    Written in SQL because every API request runs it: compiling the same query through the
    ORM (the key, its user, a lockout subquery) cost the request more than the database spent
    answering it; and prepared, since planning it cost PostgreSQL eight times what running it
    did. The values are prepared and the rows converted by the models' own fields.
    """
    alias = router.db_for_read(ApiKey)
    connection = connections[alias]
    user_model = get_user_model()
    window = ApiKeyFailureWindow._meta
    sql = _usable_key_sql(alias)
    params = [
        window.get_field("address").get_db_prep_value(address, connection),
        max(_limit(), 1),
        window.get_field("window_started_at").get_db_prep_value(now - _window(), connection),
        prefix,
        ApiKey._meta.get_field("revoked").get_db_prep_value(False, connection),
    ]
    with prepared_statements(alias), connection.cursor() as cursor:
        cursor.execute(sql, params)
        row = cursor.fetchone()
    if row is None:
        return None
    split = len(ApiKey._meta.concrete_fields)
    user_end = split + len(user_model._meta.concrete_fields)
    api_key = model_from_row(ApiKey, alias, row[:split])
    api_key.user = model_from_row(user_model, alias, row[split:user_end])
    attach_key_memberships(api_key, row[user_end])
    started = window.get_field("window_started_at")
    assert isinstance(started, models.Field)
    return api_key, from_db(started, row[user_end + 1], alias)


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """Authenticate `Authorization: Bearer <prefix>.<secret>` against hashed ApiKey rows."""

    def authenticate(self, request: Request) -> tuple[Any, ApiKey] | None:
        """Return (user, api_key), None when no Bearer header is sent, or raise 401 / 429."""
        header = authentication.get_authorization_header(request)
        if not header:
            return None
        scheme, _, raw = header.partition(b" ")
        if scheme.lower() != BEARER.encode():
            return None
        address, now = client_ip(request), timezone.now()
        try:
            key = raw.decode("ascii").strip()
        except UnicodeDecodeError:
            key = ""
        # Keys are printable ASCII; a control character (NUL, which PostgreSQL text cannot
        # hold, a tab) is as malformed as a space.
        if not key or not key.isprintable() or " " in key or "." not in key:
            self._fail(address, now, "Malformed API key.")
        return self._authenticate_key(key, address, now)

    def _fail(self, address: str, now: datetime, message: str) -> NoReturn:
        """Count the failure; 429 once the address is over the limit, else 401."""
        if _limit() > 0:
            row = record_key_failure(address, now)
            if row.failures > _limit():
                raise _throttled(row.window_started_at, now)
        raise exceptions.AuthenticationFailed(message)

    def _authenticate_key(self, key: str, address: str, now: datetime) -> tuple[Any, ApiKey]:
        prefix = key.partition(".")[0]
        found = usable_key(prefix, address, now)
        api_key, locked_since = found if found is not None else (None, None)
        # Exactly one hash comparison whether or not the prefix exists (constant time inside).
        if api_key is None:
            ApiKey.objects.key_generator.verify(key, _DUMMY_HASHED_KEY)
            self._fail(address, now, "Invalid API key.")
        valid = api_key.is_valid(key)
        if _limit() > 0 and locked_since is not None:
            raise _throttled(locked_since, now)
        if not valid:
            self._fail(address, now, "Invalid API key.")
        if api_key.has_expired:
            raise exceptions.AuthenticationFailed("API key has expired.")
        if not api_key.user.is_active:
            raise exceptions.AuthenticationFailed("The API key's user is inactive.")
        if api_key.last_used_at is None or now - api_key.last_used_at > LAST_USED_RESOLUTION:
            ApiKey.objects.filter(pk=api_key.pk).update(last_used_at=now)
            api_key.last_used_at = now
        return api_key.user, api_key

    def authenticate_header(self, request: Request) -> str:
        """Makes DRF answer 401 (not 403) with a challenge when credentials are missing."""
        return 'Bearer realm="redteam"'


def request_has_scope(request: Request, scope: str) -> bool:
    """True when the request's credentials allow `scope` (see the module policy)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return False
    auth = getattr(request, "auth", None)
    if isinstance(auth, ApiKey):
        return auth.has_scope(scope)
    # Session (browser) users read with a role in some operation (as on the review pages),
    # so an account without one sees no memory through the API either.
    if scope == ApiKeyScope.READ:
        return scope_for(request).any
    return bool(scope == ApiKeyScope.INGEST and user.is_staff)


class ScopePermission(permissions.BasePermission):
    """Base for permissions that require one API-key scope."""

    scope: str = ""
    message = "This request needs the '{scope}' scope."

    def has_permission(self, request: Request, view: Any) -> bool:
        """Allow when the credentials carry `scope`; say which scope is missing otherwise."""
        allowed = request_has_scope(request, self.scope)
        if not allowed:
            self.message = ScopePermission.message.format(scope=self.scope)
        return allowed


class HasReadScope(ScopePermission):
    """Reads: an API key with `read`, or any logged-in browser user."""

    scope = ApiKeyScope.READ


class HasIngestScope(ScopePermission):
    """Writes: an API key with `ingest`, or a staff browser user (CSRF-checked)."""

    scope = ApiKeyScope.INGEST


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    """Describes the Bearer API key in the OpenAPI schema."""

    target_class = "redteam.common.api_auth.ApiKeyAuthentication"
    name = "ApiKeyAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        """An HTTP bearer scheme; the token is a key from `manage.py create_api_key`."""
        return {
            "type": "http",
            "scheme": "bearer",
            "description": (
                "API key from `manage.py create_api_key --user NAME --scopes ingest,read "
                "--operations OP1,OP2`, sent as `Authorization: Bearer <key>`. Scopes: "
                "`ingest`, `read`; the key reads and writes only its operations."
            ),
        }
