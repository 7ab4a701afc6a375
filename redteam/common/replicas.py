"""Reads on PostgreSQL streaming replicas, writes and fresh reads on the primary.

`DATABASE_REPLICA_URLS` (settings) adds one database alias per replica (`replica1`, ...) and
lists them in `settings.DATABASE_REPLICAS`. With none listed everything here is inert.

What goes where:

- A request reads from a replica (one, chosen at random, for the whole request) when it is a
  GET or HEAD, its view is not marked `primary_reads`, it is not under the admin, and the
  client is not pinned to the primary. Review pages and the read API are such requests.
- Every write, and every read of a request that is not so marked (ingest, verdict posts and
  anything else that changes data), goes to the primary. A read inside a transaction also
  goes to the primary: whatever a request reads while writing is current.
- Read-your-writes: a response to a request that may have written (any other method) pins the
  client to the primary for `DATABASE_REPLICA_PIN_SECONDS` with a cookie, so the page a form
  redirects to (the verdict form's next item, a saved queue) shows what was just stored even
  if the replicas lag behind. The cookie only ever chooses the primary; forging it costs the
  replicas some load and grants nothing.
- Who may see what (users, sessions, memberships, API keys, audit, login attempts) and review
  claims and skips (who holds which item right now) are always read from the primary: a
  revoked membership or a claim taken a moment ago must count at once.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, Final, TypeVar

from django.conf import settings
from django.db import connections
from django.http import HttpRequest, HttpResponse

PIN_COOKIE: Final = "rt_primary_until"
# Apps whose rows decide access or hold live coordination state: never read from a replica.
PRIMARY_APPS: Final = frozenset({"auth", "sessions", "contenttypes", "admin", "axes", "redteam"})
PRIMARY_MODELS: Final = frozenset({("scoring", "reviewclaim"), ("scoring", "reviewskip")})
SAFE_METHODS: Final = frozenset({"GET", "HEAD"})

_replica: ContextVar[str | None] = ContextVar("redteam_replica", default=None)

View = TypeVar("View", bound=Callable[..., HttpResponse])


def replicas() -> list[str]:
    """The configured replica aliases."""
    return list(getattr(settings, "DATABASE_REPLICAS", []))


def current_replica() -> str | None:
    """The replica this request reads from, or None when it reads from the primary."""
    return _replica.get()


def primary_reads(view: View) -> View:
    """Mark a GET view whose answer must be current (it reads what it is about to change)."""
    view.primary_reads = True  # type: ignore[attr-defined]
    return view


class ReplicaRouter:
    """Send a marked request's reads to its replica; everything else to the primary."""

    def db_for_read(self, model: type[Any], **hints: Any) -> str | None:
        """The request's replica, unless the model is primary-only or a transaction is open."""
        alias = _replica.get()
        if alias is None:
            return None
        meta = model._meta
        if meta.app_label in PRIMARY_APPS or (meta.app_label, meta.model_name) in PRIMARY_MODELS:
            return None
        if connections["default"].in_atomic_block:
            return None
        return alias

    def db_for_write(self, _model: type[Any], **hints: Any) -> str | None:
        """The primary for a row read from a replica; otherwise Django's own choice (the
        database of the row the hint names, else the default one)."""
        instance = hints.get("instance")
        if instance is not None and instance._state.db in replicas():
            return "default"
        return None

    def allow_relation(self, obj1: Any, obj2: Any, **hints: Any) -> bool | None:
        """Rows read from a replica are the primary's rows."""
        if {obj1._state.db, obj2._state.db} <= {"default", *replicas()}:
            return True
        return None

    def allow_migrate(self, db: str, _app_label: str, **hints: Any) -> bool | None:
        """Replicas follow the primary's schema through replication, never by migrating."""
        if db in replicas():
            return False
        return None


def _pinned(request: HttpRequest) -> bool:
    try:
        return float(request.COOKIES.get(PIN_COOKIE, "0")) > time.time()
    except ValueError:
        return False


class ReplicaReadsMiddleware:
    """Choose the database a request reads from (see the module docstring)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            response = self.get_response(request)
        finally:
            _replica.set(None)
        seconds = int(getattr(settings, "DATABASE_REPLICA_PIN_SECONDS", 10))
        if request.method not in SAFE_METHODS and replicas() and seconds > 0:
            response.set_cookie(
                PIN_COOKIE,
                str(int(time.time()) + seconds),
                max_age=seconds,
                secure=request.is_secure(),
                httponly=True,
                samesite="Lax",
            )
        return response

    def process_view(
        self,
        request: HttpRequest,
        view_func: Callable[..., Any],
        _view_args: Any,
        _view_kwargs: Any,
    ) -> None:
        """Set the request's replica once its view is known."""
        aliases = replicas()
        if (
            aliases
            and request.method in SAFE_METHODS
            and not getattr(view_func, "primary_reads", False)
            and not request.path.startswith("/admin/")
            and not _pinned(request)
        ):
            _replica.set(random.choice(aliases))
