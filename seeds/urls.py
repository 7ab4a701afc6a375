"""Seed pages of the review UI: read-only browsing and template preview."""

from __future__ import annotations

from django.urls import path

from seeds import views

app_name = "seeds"

urlpatterns = [
    path("", views.dataset_list, name="dataset_list"),
    path("datasets/<int:pk>/", views.dataset_detail, name="dataset_detail"),
    path("seed/<uuid:pk>/preview/", views.seed_preview, name="seed_preview"),
]
