"""URLs of the REST API: /api/v1/... plus the OpenAPI schema and its docs page."""

from __future__ import annotations

from csp.decorators import csp_update
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView
from rest_framework.routers import SimpleRouter

from memory.api import reads
from memory.api.scores import ScoreViewSet
from memory.api.views import ConversationViewSet, IdentifierViewSet
from redteam.common import idpath  # noqa: F401  (the storedid and sha256 converters)
from redteam.site import api
from scoring.api import ScorerMetricsView
from seeds.api.views import SeedViewSet

router = SimpleRouter()
router.register("message-pieces", reads.MessagePieceViewSet, basename="message-piece")
router.register("conversations", ConversationViewSet, basename="conversation")
router.register("scores", ScoreViewSet, basename="score")
router.register("attack-results", reads.AttackResultViewSet, basename="attack-result")
router.register("scenario-results", reads.ScenarioResultViewSet, basename="scenario-result")
router.register("seeds", SeedViewSet, basename="seed")
router.register("identifiers", IdentifierViewSet, basename="identifier")

v1 = [
    path("ingest/", api.IngestView.as_view(), name="ingest"),
    path("media/", api.MediaUploadView.as_view(), name="media-upload"),
    path("media/missing/", api.MediaMissingView.as_view(), name="media-missing"),
    path("media/<sha256:sha256>/", api.MediaDetailView.as_view(), name="media-detail"),
    # The list is the router's; one conversation is its reassembled messages with scores.
    path(
        "conversations/<storedid:conversation_id>/",
        reads.ConversationMessagesView.as_view(),
        name="conversation-messages",
    ),
    path("scorer-metrics/", ScorerMetricsView.as_view(), name="scorer-metrics"),
    *router.urls,
]

urlpatterns = [
    path("v1/", include((v1, "api"), namespace="api")),
    path("schema/", SpectacularAPIView.as_view(), name="api-schema"),
    # Swagger UI from local static files; its own stylesheet sets a few inline styles, which
    # the site-wide CSP forbids, so this page (which shows no ingested data) allows them.
    path(
        "docs/",
        csp_update({"style-src": ["'unsafe-inline'"]})(
            SpectacularSwaggerSplitView.as_view(url_name="api-schema")
        ),
        name="api-docs",
    ),
]
