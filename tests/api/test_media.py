"""Media upload and download: content addressing, linking, safe serving, limits."""

from __future__ import annotations

import hashlib
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.core.files.storage import default_storage
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from memory.models import MessagePiece
from redteam.common.models import MediaBlob
from tests.api import factories
from tests.api.conftest import KeyFactory, bearer_client

pytestmark = pytest.mark.django_db
UPLOAD = "/api/v1/media/"
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
SVG = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
HTML = b"<!doctype html><html><body><script>alert(document.cookie)</script></body></html>"


@pytest.fixture
def png(fixtures_dir: Path) -> bytes:
    return (fixtures_dir / "pyrit-1.1" / "media" / "fixture_checkerboard.png").read_bytes()


def upload(api: APIClient, data: bytes, name: str = "x.bin", **fields: Any) -> Any:
    return api.post(UPLOAD, {"file": SimpleUploadedFile(name, data), **fields}, format="multipart")


def refer(api: APIClient, data: bytes) -> str:
    """Store an image piece whose sha256 names these bytes, in the key's default operation:
    media is served to whoever sees a piece that refers to it. Returns the digest."""
    digest = hashlib.sha256(data).hexdigest()
    row = factories.piece(
        str(uuid.uuid4()),
        0,
        "user",
        "/home/attacker/run/image.png",
        original_value_data_type="image_path",
        converted_value_data_type="image_path",
        original_value_sha256=digest,
        converted_value_sha256=digest,
    )
    assert api.post("/api/v1/ingest/", {"message_pieces": [row]}, format="json").status_code == 200
    return digest


def test_upload_stores_bytes_once_by_sha256(api: APIClient, png: bytes) -> None:
    digest = refer(api, png)
    first = upload(api, png, "cat.png", sha256=digest)
    assert first.status_code == 201
    assert first.json() == {
        "sha256": digest,
        "size": len(png),
        "content_type": "image/png",
        "created": True,
    }
    again = upload(api, png, "other-name.png")
    assert again.status_code == 200
    assert again.json()["created"] is False
    assert MediaBlob.objects.count() == 1


def test_upload_links_pieces_that_refer_to_the_bytes(api: APIClient, png: bytes) -> None:
    digest = hashlib.sha256(png).hexdigest()
    piece = factories.piece(
        str(uuid.uuid4()),
        0,
        "user",
        "/home/attacker/run/image.png",
        original_value_data_type="image_path",
        converted_value_data_type="image_path",
        original_value_sha256=digest,
        converted_value_sha256=digest,
    )
    assert (
        api.post("/api/v1/ingest/", {"message_pieces": [piece]}, format="json").status_code == 200
    )
    assert upload(api, png).status_code == 201
    stored = MessagePiece.objects.get(id=piece["id"])
    assert stored.original_media_id == digest
    assert stored.converted_media_id == digest
    assert stored.original_value == "/home/attacker/run/image.png"  # kept verbatim


def test_claimed_sha256_must_match_the_bytes(api: APIClient, png: bytes) -> None:
    response = upload(api, png, sha256="0" * 64)
    assert response.status_code == 400
    assert "does not match" in response.json()["detail"]
    assert not MediaBlob.objects.exists()


def test_upload_without_file_is_400(api: APIClient) -> None:
    assert api.post(UPLOAD, {"sha256": "0" * 64}, format="multipart").status_code == 400


def test_upload_over_the_limit_is_413(api: APIClient, settings: Any) -> None:
    settings.REDTEAM_MAX_MEDIA_BYTES = 10
    response = upload(api, PNG_MAGIC + b"x" * 100)
    assert response.status_code == 413
    assert not MediaBlob.objects.exists()


def test_image_is_served_inline_with_its_type_and_nosniff(api: APIClient, png: bytes) -> None:
    refer(api, png)
    digest = upload(api, png).json()["sha256"]
    response = api.get(f"{UPLOAD}{digest}/")
    assert response.status_code == 200
    assert response["Content-Type"] == "image/png"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert "attachment" not in response.get("Content-Disposition", "")
    assert "sandbox" in response["Content-Security-Policy"]
    assert b"".join(response.streaming_content) == png  # type: ignore[attr-defined]


@pytest.mark.parametrize("data", [SVG, HTML, b"MZ\x90\x00 arbitrary binary"])
def test_active_or_unknown_content_is_only_ever_an_attachment(api: APIClient, data: bytes) -> None:
    refer(api, data)
    digest = upload(api, data, "evil.svg").json()["sha256"]
    blob = MediaBlob.objects.get(sha256=digest)
    assert blob.content_type not in ("image/svg+xml", "text/html")  # sniffed, not trusted
    response = api.get(f"{UPLOAD}{digest}/")
    assert response.status_code == 200
    assert response["Content-Disposition"].startswith("attachment")
    assert response["X-Content-Type-Options"] == "nosniff"
    assert not response["Content-Type"].startswith(("image/svg", "text/html"))


@pytest.mark.parametrize(
    ("data", "inline"), [(None, True), (SVG, False), (HTML, False), (b"MZ\x90\x00 bin", False)]
)
def test_page_and_api_serve_media_with_the_same_safe_headers(
    api: APIClient, reviewer_client: Client, png: bytes, data: bytes | None, inline: bool
) -> None:
    refer(api, data or png)
    digest = upload(api, data or png, "evil.svg").json()["sha256"]
    served = [
        api.get(f"{UPLOAD}{digest}/"),
        reviewer_client.get(reverse("memory:media", args=[digest])),
    ]
    for response in served:
        assert response.status_code == 200
        assert response["X-Content-Type-Options"] == "nosniff"
        assert response["Content-Security-Policy"] == "default-src 'none'; sandbox"
        assert response["Cross-Origin-Resource-Policy"] == "same-origin"
        assert response["Cache-Control"] == "private, max-age=31536000, immutable"
        if inline:
            assert response["Content-Type"] == "image/png"
            assert response["Content-Disposition"].startswith("inline")
        else:
            assert response["Content-Type"] == "application/octet-stream"
            assert response["Content-Disposition"].startswith("attachment")
    assert served[0]["Content-Disposition"] == served[1]["Content-Disposition"]


def test_media_whose_bytes_left_storage_is_404_on_page_and_api(
    api: APIClient, reviewer_client: Client, png: bytes
) -> None:
    digest = upload(api, png).json()["sha256"]
    default_storage.delete(MediaBlob.objects.get(sha256=digest).storage_name)
    assert api.get(f"{UPLOAD}{digest}/").status_code == 404
    assert reviewer_client.get(reverse("memory:media", args=[digest])).status_code == 404


@pytest.mark.parametrize(
    "bad",
    ["../../etc/passwd", "A" * 64, "abc", "%2e%2e%2fsecret", "0" * 63 + "g", "0" * 64 + "%0A"],
)
def test_malformed_digests_are_404_never_a_path(
    api: APIClient, reviewer_client: Client, bad: str
) -> None:
    assert api.get(f"{UPLOAD}{bad}/").status_code == 404
    assert reviewer_client.get(f"/media/{bad}/").status_code == 404


def test_unknown_digest_is_404(api: APIClient) -> None:
    assert api.get(f"{UPLOAD}{'a' * 64}/").status_code == 404


def test_missing_reports_hashes_not_stored(api: APIClient, png: bytes) -> None:
    refer(api, png)
    digest = upload(api, png).json()["sha256"]
    other = "b" * 64
    response = api.post("/api/v1/media/missing/", {"sha256": [digest, other]}, format="json")
    assert response.status_code == 200
    assert response.json() == {"missing": [other]}
    assert (
        api.post("/api/v1/media/missing/", {"sha256": ["../x"]}, format="json").status_code == 400
    )


def test_media_needs_the_right_scopes(make_key: KeyFactory, png: bytes) -> None:
    reader = bearer_client(make_key("read"))
    writer = bearer_client(make_key("ingest"))
    assert upload(reader, png).status_code == 403
    refer(writer, png)
    digest = upload(writer, png).json()["sha256"]
    assert writer.get(f"{UPLOAD}{digest}/").status_code == 403
    assert reader.get(f"{UPLOAD}{digest}/").status_code == 200
    assert APIClient().get(f"{UPLOAD}{digest}/").status_code == 401


def _unhashed_image(api: APIClient, path: str = "/home/attacker/run/history.png") -> str:
    """Store a prepended image piece PyRIT left without sha256s; return its id."""
    row = factories.piece(
        str(uuid.uuid4()),
        0,
        "user",
        path,
        original_value_data_type="image_path",
        converted_value_data_type="image_path",
        original_value_sha256=None,
        converted_value_sha256=None,
    )
    assert api.post("/api/v1/ingest/", {"message_pieces": [row]}, format="json").status_code == 200
    return str(row["id"])


def test_upload_links_named_pieces_without_sha256_on_the_named_side(
    api: APIClient, png: bytes
) -> None:
    piece_id = _unhashed_image(api)
    answer = upload(api, png, "history.png", converted_piece_id=[piece_id])
    assert answer.status_code == 201
    piece = MessagePiece.objects.get(id=piece_id)
    assert piece.converted_media_id == hashlib.sha256(png).hexdigest()
    assert piece.original_media_id is None  # only the side named
    assert piece.converted_value_sha256 is None  # PyRIT's row is kept as it was


def test_named_links_never_replace_a_link_or_a_sha256(api: APIClient, png: bytes) -> None:
    piece_id = _unhashed_image(api)
    upload(api, png, "history.png", original_piece_id=[piece_id])
    other = PNG_MAGIC + b"another image"
    upload(api, other, "other.png", original_piece_id=[piece_id])
    piece = MessagePiece.objects.get(id=piece_id)
    assert piece.original_media_id == hashlib.sha256(png).hexdigest()
    # A piece with a sha256 is linked by content only, whatever id is named.
    digest = hashlib.sha256(png).hexdigest()
    hashed = factories.piece(
        str(uuid.uuid4()),
        0,
        "user",
        "/x.png",
        original_value_data_type="image_path",
        converted_value_data_type="image_path",
        original_value_sha256=digest,
        converted_value_sha256=digest,
    )
    api.post("/api/v1/ingest/", {"message_pieces": [hashed]}, format="json")
    upload(api, other, "other.png", converted_piece_id=[hashed["id"]])
    assert MessagePiece.objects.get(id=hashed["id"]).converted_media_id == digest


def test_named_piece_ids_must_be_uuids(api: APIClient, png: bytes) -> None:
    answer = upload(api, png, "x.png", original_piece_id=["../../etc/passwd"])
    assert answer.status_code == 400
    assert "UUID" in answer.json()["detail"]
    assert MediaBlob.objects.count() == 0
