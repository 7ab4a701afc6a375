"""Site shell views: home, health, and the site's own 403 and 404 pages."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.defaults import page_not_found

from redteam.common.access import scope_for
from redteam.common.roles import NO_ROLE, no_role_response
from redteam.site.home import home_context

# DRF's own wording, so an API client reads one message whichever layer refused it.
API_FORBIDDEN = "You do not have permission to perform this action."
# The refusals the code raises are written for the person refused (e.g. "Recording verdicts
# needs the reviewer role in this operation."); longer text is not one of them.
MAX_REASON_CHARS = 300


def health(request: HttpRequest) -> JsonResponse:
    """Liveness plus a database round trip; unauthenticated, reveals nothing."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return JsonResponse({"status": "ok"})


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Where a day starts: the viewer's queues with what awaits review, their claimed and
    skipped items, the runs that arrived lately. Without a role: the no-role page."""
    scope = scope_for(request)
    if not scope.any:
        return no_role_response(request)
    user_id = request.user.pk
    assert user_id is not None  # signed in (login_required)
    return render(request, "home.html", home_context(user_id, scope))


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """404 for unmatched paths: JSON under /api/ (as DRF answers), the HTML page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return page_not_found(request, exception)


def forbidden(request: HttpRequest, exception: Exception | None = None) -> HttpResponse:
    """403 (PermissionDenied): JSON under /api/, else the site's page with the reason given.

    A signed-in account without any role gets the no-role page, whichever view refused it.
    """
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": API_FORBIDDEN}, status=403)
    reason = str(exception or "")
    if reason == NO_ROLE and request.user.is_authenticated:
        return no_role_response(request)
    shown = reason if 0 < len(reason) <= MAX_REASON_CHARS else ""
    return render(request, "403.html", {"reason": shown}, status=403)
