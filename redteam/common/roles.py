"""Page access: a review page needs a signed-in account with a role in some operation.

Roles are per operation (OperationMembership, see redteam.common.access): `read-only` reads,
`reviewer` also records human verdicts, `adjudicator` also settles disagreements, `lead`
also manages the operation's members. What a page shows is then narrowed by
`scope_for(request)`; this module only turns away accounts that may read nothing at all,
with the site's own page saying which role is missing and who grants it.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import render

from redteam.common.access import scope_for

NO_ROLE = "Your account has no role in any operation."
NO_ROLE_TEMPLATE = "no_role.html"


def no_role_response(request: HttpRequest) -> HttpResponse:
    """The 403 page for a signed-in account without any operation role.

    It names the missing role and who grants it by their role only (a lead of the operation,
    or an administrator), never by name: an account without a role may read nothing, and a
    list of leads, or of the operations they lead, would tell it who works on what.
    """
    return render(request, NO_ROLE_TEMPLATE, {"message": NO_ROLE}, status=403)


def viewer_required(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """Login required (redirect), then a role in at least one operation (the no-role page,
    status 403, when none)."""

    @wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not scope_for(request).any:
            return no_role_response(request)
        return view(request, *args, **kwargs)

    return login_required(wrapped)
