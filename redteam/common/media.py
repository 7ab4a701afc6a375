"""Content-addressed media storage: bytes in default_storage, one MediaBlob row per sha256.

The storage name is derived from the sha256 only (``blobs/ab/cd/<sha256>``), never from a
client's file name or path, and the content type is sniffed from the bytes' magic numbers,
never taken from the client. Linking pieces or seeds to a blob is the caller's job
(memory.services.link_media, seeds.services.link_media), so this module depends on no app.
``media_response`` is the one way stored bytes are served, by the pages and the API alike;
the caller hands it the blobs its requester may fetch (memory.querysets.media_visible_to).
"""

from __future__ import annotations

import hashlib

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.http import FileResponse, Http404

from redteam.common.models import MediaBlob
from redteam.common.typing import User

__all__ = [
    "INLINE_CONTENT_TYPES",
    "MediaTooLarge",
    "blob_storage_name",
    "is_inline_media",
    "media_response",
    "sniff_content_type",
    "store_media_bytes",
]

OCTET_STREAM = "application/octet-stream"
# Served inline from our origin: formats browsers render as pixels or sound only. Everything else
# (SVG, HTML, XML, PDF, unknown) is sent as an attachment so it can never run script on our origin.
INLINE_CONTENT_TYPES = frozenset(
    {
        "image/png",
        "image/jpeg",
        "image/gif",
        "image/webp",
        "image/bmp",
        "image/avif",
        "audio/mpeg",
        "audio/wav",
        "audio/x-wav",
        "audio/ogg",
        "audio/webm",
        "audio/flac",
        "audio/mp4",
        "audio/aac",
        "video/mp4",
        "video/webm",
        "video/ogg",
    }
)

# (magic bytes, offset, content type), checked in order after the RIFF/ftyp special cases.
_SIGNATURES: tuple[tuple[bytes, int, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", 0, "image/png"),
    (b"\xff\xd8\xff", 0, "image/jpeg"),
    (b"GIF87a", 0, "image/gif"),
    (b"GIF89a", 0, "image/gif"),
    (b"BM", 0, "image/bmp"),
    (b"II*\x00", 0, "image/tiff"),
    (b"MM\x00*", 0, "image/tiff"),
    (b"fLaC", 0, "audio/flac"),
    (b"ID3", 0, "audio/mpeg"),
    (b"\xff\xfb", 0, "audio/mpeg"),
    (b"\xff\xf3", 0, "audio/mpeg"),
    (b"\xff\xf2", 0, "audio/mpeg"),
    (b"OggS", 0, "audio/ogg"),
    (b"\x1a\x45\xdf\xa3", 0, "video/webm"),
)


class MediaTooLarge(ValueError):
    """The bytes exceed settings.REDTEAM_MAX_MEDIA_BYTES."""


def sniff_content_type(data: bytes) -> str:
    """The content type the bytes announce (png/jpeg/gif/webp/wav/mp3/ogg/mp4/webm/...)."""
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "audio/wav"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[4:8] == b"ftyp":
        # ISO base media: the major brand tells audio-only M4A from video.
        return "audio/mp4" if data[8:11] == b"M4A" else "video/mp4"
    for magic, offset, content_type in _SIGNATURES:
        if data[offset : offset + len(magic)] == magic:
            return content_type
    return OCTET_STREAM


def is_inline_media(content_type: str) -> bool:
    """True when a browser may show bytes of this sniffed type inline (pixels or sound only)."""
    return content_type.lower() in INLINE_CONTENT_TYPES


def media_response(sha256: str, *, blobs: QuerySet[MediaBlob]) -> FileResponse:
    """The stored bytes of `sha256`, served so they can never run on our origin.

    `blobs` are the blobs the requester may fetch (one query finds the blob among them).
    Inline only for the types of INLINE_CONTENT_TYPES; anything else is an attachment typed
    ``application/octet-stream`` whatever was sniffed. Always ``nosniff``, a sandboxing
    Content-Security-Policy and a same-origin Cross-Origin-Resource-Policy. Http404 when no
    blob among `blobs` has this digest (unknown, or not the requester's to see) or its bytes
    are missing from storage.
    """
    blob = blobs.filter(sha256=sha256).first()
    if blob is None or not default_storage.exists(blob.storage_name):
        raise Http404("No stored media with this sha256.")
    try:
        handle = default_storage.open(blob.storage_name, "rb")
    except FileNotFoundError as exc:
        raise Http404("Media bytes are missing from storage.") from exc
    content_type = (blob.content_type or "").lower()
    inline = is_inline_media(content_type)
    response = FileResponse(
        handle,
        content_type=content_type if inline else OCTET_STREAM,
        as_attachment=not inline,
        filename=blob.sha256,
    )
    response["X-Content-Type-Options"] = "nosniff"
    # Even if a browser were tricked into rendering these bytes as a document, it gets no
    # script, no plugins and a unique origin; other sites may not embed them.
    response["Content-Security-Policy"] = "default-src 'none'; sandbox"
    response["Cache-Control"] = "private, max-age=31536000, immutable"
    response["Cross-Origin-Resource-Policy"] = "same-origin"
    return response


def blob_storage_name(sha256: str) -> str:
    """Where the bytes of ``sha256`` live inside the media storage."""
    return f"blobs/{sha256[:2]}/{sha256[2:4]}/{sha256}"


def _write_bytes(name: str, data: bytes) -> None:
    if default_storage.exists(name):
        return
    saved = default_storage.save(name, ContentFile(data))
    if saved != name:
        # A concurrent upload of the same bytes took the name first; keep one copy.
        default_storage.delete(saved)


def store_media_bytes(data: bytes, *, filename: str, user: User | None = None) -> MediaBlob:
    """Store the bytes once (idempotent by sha256) and return their MediaBlob."""
    limit = int(getattr(settings, "REDTEAM_MAX_MEDIA_BYTES", 256 * 1024 * 1024))
    if len(data) > limit:
        raise MediaTooLarge(f"The file is {len(data)} bytes; the limit is {limit} bytes.")
    sha256 = hashlib.sha256(data).hexdigest()
    name = blob_storage_name(sha256)
    existing = MediaBlob.objects.filter(sha256=sha256).first()
    if existing is not None:
        _write_bytes(existing.storage_name, data)  # heals a row whose file went missing
        return existing
    _write_bytes(name, data)
    # The file name is informational only: NUL cannot be stored, and it is never a path here.
    clean_name = filename.replace("\x00", "")[:1024]
    try:
        with transaction.atomic():
            return MediaBlob.objects.create(
                sha256=sha256,
                size=len(data),
                content_type=sniff_content_type(data),
                storage_name=name,
                original_filename=clean_name,
                uploaded_by=user if user is not None and user.is_authenticated else None,
            )
    except IntegrityError:
        return MediaBlob.objects.get(sha256=sha256)
