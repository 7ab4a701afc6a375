"""redteam.common.media: content-addressed storage, sniffed content types, size cap."""

from __future__ import annotations

import hashlib

import pytest
from django.core.files.storage import default_storage

from redteam.common.media import (
    MediaTooLarge,
    blob_storage_name,
    sniff_content_type,
    store_media_bytes,
)
from redteam.common.models import MediaBlob
from redteam.site.demo import demo_png, demo_wav


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"\x89PNG\r\n\x1a\n....", "image/png"),
        (b"\xff\xd8\xff\xe0....", "image/jpeg"),
        (b"GIF89a....", "image/gif"),
        (b"RIFF\x00\x00\x00\x00WEBPVP8 ", "image/webp"),
        (b"RIFF\x00\x00\x00\x00WAVEfmt ", "audio/wav"),
        (b"ID3\x03\x00....", "audio/mpeg"),
        (b"\xff\xfb\x90\x00", "audio/mpeg"),
        (b"OggS\x00\x02", "audio/ogg"),
        (b"\x00\x00\x00\x18ftypmp42", "video/mp4"),
        (b"\x00\x00\x00\x18ftypM4A ", "audio/mp4"),
        (b"\x1a\x45\xdf\xa3\x01", "video/webm"),
        (b"<html><script>alert(1)</script>", "application/octet-stream"),
        (b"", "application/octet-stream"),
    ],
)
def test_content_type_is_sniffed_from_the_bytes(data: bytes, expected: str) -> None:
    assert sniff_content_type(data) == expected


def test_demo_media_are_what_they_claim() -> None:
    assert sniff_content_type(demo_png()) == "image/png"
    assert sniff_content_type(demo_wav()) == "audio/wav"


@pytest.mark.django_db
def test_store_is_content_addressed_and_idempotent() -> None:
    data = demo_png()
    sha = hashlib.sha256(data).hexdigest()
    blob = store_media_bytes(data, filename="../../etc/passwd.png")
    assert blob.sha256 == sha
    assert blob.storage_name == blob_storage_name(sha) == f"blobs/{sha[:2]}/{sha[2:4]}/{sha}"
    assert blob.original_filename == "../../etc/passwd.png"  # informational only
    assert (blob.size, blob.content_type) == (len(data), "image/png")
    with default_storage.open(blob.storage_name) as handle:
        assert handle.read() == data
    again = store_media_bytes(data, filename="other.png")
    assert again.pk == blob.pk
    assert MediaBlob.objects.count() == 1
    assert again.original_filename == "../../etc/passwd.png"


@pytest.mark.django_db
def test_missing_file_of_a_known_blob_is_rewritten() -> None:
    data = demo_wav()
    blob = store_media_bytes(data, filename="a.wav")
    default_storage.delete(blob.storage_name)
    store_media_bytes(data, filename="a.wav")
    assert default_storage.exists(blob.storage_name)


@pytest.mark.django_db
def test_too_large_is_refused_before_anything_is_written(settings: object) -> None:
    settings.REDTEAM_MAX_MEDIA_BYTES = 10  # type: ignore[attr-defined]
    with pytest.raises(MediaTooLarge):
        store_media_bytes(b"x" * 11, filename="big.bin")
    assert not MediaBlob.objects.exists()


@pytest.mark.django_db
def test_nul_in_the_file_name_is_dropped() -> None:
    blob = store_media_bytes(b"abc", filename="a\x00b.bin")
    assert blob.original_filename == "ab.bin"
    assert blob.content_type == "application/octet-stream"
