"""Reviewer roles: the `reviewer` and `read-only` group names and the access checks.

Both groups may read every review page; only reviewers may record human verdicts
(`memory.record_verdict`). The groups are created by `redteam.site.roles.ensure_roles`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any, TypeGuard

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.http.response import HttpResponseBase

from redteam.common.typing import User

if TYPE_CHECKING:
    from django.contrib.auth.models import User as AccountUser

REVIEWER_GROUP = "reviewer"
READ_ONLY_GROUP = "read-only"
VIEW_PERMISSION = "memory.view_conversation"
VERDICT_PERMISSION = "memory.record_verdict"


def viewer_required(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """Login required (redirect), then the view permission (403 when missing)."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not request.user.has_perm(VIEW_PERMISSION):
            raise PermissionDenied("Your account has no review role.")
        return view(request, *args, **kwargs)

    return login_required(wrapped)


def can_record_verdicts(user: User) -> TypeGuard[AccountUser]:
    """True when the user may record human verdicts (so it is a signed-in account)."""
    return bool(user.is_authenticated and user.has_perm(VERDICT_PERMISSION))
