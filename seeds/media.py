"""Media bytes for seeds: stored content-addressed (redteam.common.media), checked by type.

The type of uploaded bytes is sniffed from their first bytes, never taken from the client or
the file name, and must fit the seed's data_type (an image for image_path, and so on).
"""

from __future__ import annotations

from redteam.common.media import sniff_content_type, store_media_bytes
from redteam.common.models import MediaBlob
from redteam.common.typing import User

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


def store_media(data: bytes, *, filename: str, user: User | None = None) -> MediaBlob:
    """Store the bytes once (content-addressed) and return their MediaBlob."""
    return store_media_bytes(data, filename=filename, user=user)
