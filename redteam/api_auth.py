"""API authentication: per-user API keys sent as `Authorization: Bearer <key>`, with scopes.

Policy (documented in the README and the OpenAPI description):
- An API key acts as its user and may do exactly what its scopes say: `ingest` (POST batches
  and media) and/or `read` (every GET endpoint). Revoked, expired or unknown keys get 401.
- A browser (session) user may read with a review role (reviewer or read-only), as on the
  review pages. A session user may ingest only if they are staff; DRF's
  SessionAuthentication enforces CSRF for them, so a hostile page cannot post on their behalf.
- Nothing is reachable anonymously.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from rest_framework import authentication, exceptions, permissions
from rest_framework.request import Request

from redteam.models import ApiKey, ApiKeyScope
from redteam.roles import VIEW_PERMISSION

# `last_used_at` is bookkeeping; writing it on every request would add an UPDATE to each
# single-message ingest, so it is refreshed at most this often.
LAST_USED_RESOLUTION = timedelta(minutes=5)
BEARER = "bearer"


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """Authenticate `Authorization: Bearer <prefix>.<secret>` against hashed ApiKey rows."""

    def authenticate(self, request: Request) -> tuple[Any, ApiKey] | None:
        """Return (user, api_key), None when no Bearer header is sent, or raise 401."""
        header = authentication.get_authorization_header(request)
        if not header:
            return None
        scheme, _, raw = header.partition(b" ")
        if scheme.lower() != BEARER.encode():
            return None
        try:
            key = raw.decode("ascii").strip()
        except UnicodeDecodeError:
            raise exceptions.AuthenticationFailed("Malformed API key.") from None
        if not key or " " in key or "." not in key:
            raise exceptions.AuthenticationFailed("Malformed API key.")
        return self._authenticate_key(key)

    def _authenticate_key(self, key: str) -> tuple[Any, ApiKey]:
        prefix = key.partition(".")[0]
        # One query: the key row (looked up by its unique prefix) and its user. This is what
        # ApiKey.objects.get_from_key does, plus select_related so the user costs nothing.
        api_key = (
            ApiKey.objects.get_usable_keys().select_related("user").filter(prefix=prefix).first()
        )
        # is_valid compares the sha512 of the whole key in constant time.
        if api_key is None or not api_key.is_valid(key):
            raise exceptions.AuthenticationFailed("Invalid API key.")
        if api_key.has_expired:
            raise exceptions.AuthenticationFailed("API key has expired.")
        if not api_key.user.is_active:
            raise exceptions.AuthenticationFailed("The API key's user is inactive.")
        now = timezone.now()
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
    # Session (browser) users read with a review role (the same permission the review pages
    # need), so an account without one sees no memory through the API either.
    if scope == ApiKeyScope.READ:
        return bool(user.has_perm(VIEW_PERMISSION))
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


def HasScope(scope: str) -> type[ScopePermission]:  # noqa: N802 - reads like a class in views
    """Permission class requiring `scope`, e.g. `permission_classes = [HasScope("ingest")]`."""
    known = {ApiKeyScope.READ: HasReadScope, ApiKeyScope.INGEST: HasIngestScope}
    if scope not in known:
        raise ValueError(f"unknown API scope {scope!r}")
    return known[ApiKeyScope(scope)]


class ApiKeyAuthenticationScheme(OpenApiAuthenticationExtension):
    """Describes the Bearer API key in the OpenAPI schema."""

    target_class = "redteam.api_auth.ApiKeyAuthentication"
    name = "ApiKeyAuth"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        """An HTTP bearer scheme; the token is a key from `manage.py create_api_key`."""
        return {
            "type": "http",
            "scheme": "bearer",
            "description": (
                "API key from `manage.py create_api_key --user NAME --scopes ingest,read`, "
                "sent as `Authorization: Bearer <key>`. Scopes: `ingest`, `read`."
            ),
        }
