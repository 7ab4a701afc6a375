"""The audit trail: who did what, when (verdicts, seed changes, API keys).

`record_audit` is the one way to write an AuditEvent. The actor defaults to the user of the
current request (simple_history's HistoryRequestMiddleware already keeps it in a
request-local), so model signals can name who acted; commands and scripts say who they are
with `acting_as`.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from simple_history.models import HistoricalRecords

from redteam.common.models import AuditEvent

# Set by `acting_as` outside a request (management commands, shell, scripts).
_acting: ContextVar[tuple[Any, str] | None] = ContextVar("redteam_audit_actor", default=None)
_CURRENT = object()
SYSTEM_ACTOR = "system"


@contextmanager
def acting_as(actor: Any = None, name: str = "") -> Iterator[None]:
    """Attribute audit events in this block to `actor` (a user) or to `name` (e.g. manage.py)."""
    label = name or (actor.get_username() if actor is not None else SYSTEM_ACTOR)
    token = _acting.set((actor, label))
    try:
        yield
    finally:
        _acting.reset(token)


def current_actor() -> tuple[Any, str]:
    """(user or None, display name) of whoever is acting now."""
    override = _acting.get()
    if override is not None:
        return override
    request = getattr(HistoricalRecords.context, "request", None)
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return user, user.get_username()
    return None, SYSTEM_ACTOR


def record_audit(
    *,
    actor: Any = _CURRENT,
    action: str,
    object_type: str,
    object_id: object,
    detail: Mapping[str, Any] | None = None,
    using: str | None = None,
) -> AuditEvent:
    """Write one audit event; `actor` defaults to the current request's user (see module).

    `using` names the database alias (signals pass the one the audited row was written to).
    """
    if actor is _CURRENT:
        user, name = current_actor()
    elif actor is None or not getattr(actor, "is_authenticated", False):
        user, name = None, SYSTEM_ACTOR
    else:
        user, name = actor, actor.get_username()
    return AuditEvent.objects.db_manager(using).create(
        actor=user,
        actor_name=name[:150],
        action=action,
        object_type=object_type,
        object_id=str(object_id)[:255],
        detail=dict(detail or {}),
    )
