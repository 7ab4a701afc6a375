"""Site shell views: home and health."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.db import connection
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.views.defaults import page_not_found


def health(request: HttpRequest) -> JsonResponse:
    """Liveness plus a database round trip; unauthenticated, reveals nothing."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return JsonResponse({"status": "ok"})


@login_required
def home(request: HttpRequest) -> HttpResponse:
    """Landing page."""
    return render(request, "home.html")


def not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """404 for unmatched paths: JSON under /api/ (as DRF answers), the HTML page elsewhere."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": "Not found."}, status=404)
    return page_not_found(request, exception)
