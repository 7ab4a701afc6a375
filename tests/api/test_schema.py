"""The OpenAPI schema and its docs page."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from tests.access import grant

pytestmark = pytest.mark.django_db


def test_schema_documents_every_endpoint_and_the_bearer_key(api: APIClient) -> None:
    response = api.get("/api/schema/", {"format": "json"})
    assert response.status_code == 200
    schema = json.loads(response.content)
    paths = set(schema["paths"])
    for path in (
        "/api/v1/ingest/",
        "/api/v1/media/",
        "/api/v1/media/{sha256}/",
        "/api/v1/message-pieces/",
        "/api/v1/conversations/",
        "/api/v1/conversations/{conversation_id}/",
        "/api/v1/scores/",
        "/api/v1/attack-results/",
        "/api/v1/seeds/",
        "/api/v1/identifiers/",
        "/api/v1/identifiers/{hash}/",
    ):
        assert path in paths, path
    ingest = schema["paths"]["/api/v1/ingest/"]["post"]
    assert {"200", "207", "400", "413"} <= set(ingest["responses"])
    assert "REDTEAM_MAX_ITEMS" in ingest["description"]
    assert schema["components"]["securitySchemes"]["ApiKeyAuth"]["scheme"] == "bearer"
    pieces = schema["paths"]["/api/v1/message-pieces/"]["get"]
    names = {p["name"] for p in pieces["parameters"]}
    assert {"cursor", "page_size", "label", "role", "data_type", "shape", "after"} <= names


def test_docs_page_is_served_from_local_files(user: User) -> None:
    grant(user, "op1", "read-only")
    client = Client()
    client.force_login(user)
    response = client.get("/api/docs/")
    assert response.status_code == 200
    html = response.content.decode()
    assert "swagger-ui" in html
    assert "/static/drf_spectacular_sidecar/" in html
    assert "cdn" not in html.lower()
    assert "https://" not in html
    script = client.get("/api/docs/?script=")
    assert script.status_code == 200
    assert b"/api/schema/" in script.content
