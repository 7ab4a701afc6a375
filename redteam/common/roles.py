"""Page access: a review page needs a signed-in account with a role in some operation.

Roles are per operation (OperationMembership, see redteam.common.access): `read-only` reads,
`reviewer` also records human verdicts, `adjudicator` also settles disagreements, `lead`
also manages the operation's members. What a page shows is then narrowed by
`scope_for(request)`; this module only turns away accounts that may read nothing at all.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest
from django.http.response import HttpResponseBase

from redteam.common.access import scope_for

NO_ROLE = "Your account has no role in any operation."


def viewer_required(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """Login required (redirect), then a role in at least one operation (403 when none)."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not scope_for(request).any:
            raise PermissionDenied(NO_ROLE)
        return view(request, *args, **kwargs)

    return login_required(wrapped)
