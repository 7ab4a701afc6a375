"""Review pages of the memory app (server-rendered)."""

from __future__ import annotations

from django.urls import path

import redteam.common.idpath  # noqa: F401  (registers the sha256 converter)
from memory import content_views, live, scenario_views, views

app_name = "memory"

urlpatterns = [
    path("conversations/", views.conversation_list, name="conversation_list"),
    path("live/conversations/", live.live_conversations, name="live_conversations"),
    path("identifiers/", views.identifier_index, name="identifier_index"),
    path("identifiers/diff/", views.identifier_diff, name="identifier_diff"),
    path("identifiers/<sha256:hash>/", views.identifier_detail, name="identifier_detail"),
    path("media/<sha256:sha256>/", views.media, name="media"),
    path("pieces/promote/", views.promote_piece, name="promote_piece"),
    path("scenarios/", scenario_views.scenario_list, name="scenario_list"),
    path("scenarios/<uuid:scenario_id>/", scenario_views.scenario_detail, name="scenario_detail"),
    path("scored-content/", content_views.scored_content_list, name="scored_content_list"),
    path(
        "scored-content/<uuid:content_id>/",
        content_views.scored_content_detail,
        name="scored_content_detail",
    ),
]
