"""Media bytes for seeds: stored content-addressed as redteam MediaBlobs, checked by sniffing.

Storage goes through `redteam.media.store_media_bytes` (shared with the memory app) when the
project provides it; until then a local equivalent stores under a name derived from the sha256
only. The type of uploaded bytes is sniffed from their first bytes, never taken from the
client or the file name.
"""

from __future__ import annotations

import hashlib
from typing import Any

from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from redteam.models import MediaBlob

# (magic prefix, offset, content type); enough for the formats PyRIT's seed loader accepts.
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
    (b"OggS", 0, "audio/ogg"),
    (b"\x1a\x45\xdf\xa3", 0, "video/webm"),
    (b"ftyp", 4, "video/mp4"),
)


def sniff_content_type(data: bytes) -> str:
    """The content type the bytes themselves announce (application/octet-stream if unknown)."""
    if data[:4] == b"RIFF" and data[8:12] == b"WAVE":
        return "audio/wav"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "image/webp"
    if data[:4] == b"RIFF" and data[8:12] == b"AVI ":
        return "video/x-msvideo"
    for magic, offset, content_type in _SIGNATURES:
        if data[offset : offset + len(magic)] == magic:
            if content_type == "video/mp4" and data[8:11] == b"M4A":
                return "audio/mp4"
            return content_type
    return "application/octet-stream"


_EXPECTED_PREFIX = {"image_path": "image/", "audio_path": "audio/", "video_path": "video/"}


def check_media_matches(data_type: str, data: bytes) -> str:
    """Refuse bytes that are not what the seed's data_type says; returns the sniffed type."""
    sniffed = sniff_content_type(data)
    if data_type == "binary_path":
        return sniffed
    expected = _EXPECTED_PREFIX.get(data_type)
    if expected is None:
        raise ValueError(f"A {data_type} seed holds text, not a file.")
    if not sniffed.startswith(expected):
        raise ValueError(
            f"The file is {sniffed}, which does not fit a {data_type} seed (expected {expected}*)."
        )
    return sniffed


def store_media(data: bytes, *, filename: str, user: Any = None) -> MediaBlob:
    """Store the bytes once (content-addressed) and return their MediaBlob."""
    try:
        from redteam.media import store_media_bytes  # type: ignore[import-not-found]
    except ImportError:
        return _store_locally(data, filename=filename, user=user)
    blob: MediaBlob = store_media_bytes(data, filename=filename, user=user)
    return blob


def _store_locally(data: bytes, *, filename: str, user: Any) -> MediaBlob:
    digest = hashlib.sha256(data).hexdigest()
    existing = MediaBlob.objects.filter(sha256=digest).first()
    if existing is not None:
        return existing
    name = f"blobs/{digest[:2]}/{digest[2:4]}/{digest}"
    if not default_storage.exists(name):
        default_storage.save(name, ContentFile(data))
    return MediaBlob.objects.create(
        sha256=digest,
        size=len(data),
        content_type=sniff_content_type(data),
        storage_name=name,
        original_filename=filename[:1024],
        uploaded_by=user if getattr(user, "is_authenticated", False) else None,
    )
