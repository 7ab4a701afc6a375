"""Root URL configuration: admin, login, health; apps add their pages and API here."""

from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from redteam.site import export_views, views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", auth_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("health/", views.health, name="health"),
    path("api/", include("redteam.site.api_urls")),
    path("seeds/", include("seeds.urls")),
    # The list pages' "Export as PyRIT memory" downloads (their filters in the query string).
    path(
        "conversations/export/pyrit-memory/",
        export_views.conversations_memory,
        name="export_memory_conversations",
    ),
    path(
        "attack-results/export/pyrit-memory/",
        export_views.attack_results_memory,
        name="export_memory_attack_results",
    ),
    path("", include("memory.urls")),
    path("", include("scoring.urls")),
    path("", views.home, name="home"),
]

# A path no route matches (e.g. an id segment the storedid converter refuses) is still an API
# answer under /api/: JSON, like every other API error, so clients parse one format.
handler404 = "redteam.site.views.not_found"
# Refusals (too low a role) are the site's own page too; JSON under /api/.
handler403 = "redteam.site.views.forbidden"
