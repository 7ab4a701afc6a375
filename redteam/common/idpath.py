"""Stored ids in URL paths: any string a client sent, as one safe path segment and back.

PyRIT's conversation ids are uuid4 strings, but PyRIT never validates them, so a stored id may
hold ``/``, ``.``, ``..``, ``?``, ``#``, ``%``, spaces or a newline. An id made only of
``[A-Za-z0-9_-]`` followed by ``[A-Za-z0-9._-]`` (every uuid) is used as it is; any other id is
written ``~`` + unpadded base64url of its UTF-8 bytes, which a browser can neither normalise
(``..``) nor split (``/``, ``?``, ``#``). The one converter serves every page and API route
that takes an id, so ``{% url %}`` and ``reverse`` never fail on a stored row.

The ``sha256`` converter takes a digest (64 lowercase hex characters, redteam.core.digests):
identifier hashes, media, objectives. Anything else never reaches a view; it is a 404.
"""

from __future__ import annotations

import base64
import binascii

from django.urls import register_converter

# The client spells ids in paths; the server reads them back with the same rule.
from redteam.client import ENCODED_PATH_ID_PREFIX as ENCODED_PREFIX
from redteam.client import PLAIN_PATH_ID_RE as _PLAIN_RE
from redteam.client import path_id as encode_id
from redteam.core.digests import SHA256_PATTERN


def decode_id(segment: str) -> str:
    """The stored id a path segment names; ValueError when it is not one encode_id writes."""
    if not segment.startswith(ENCODED_PREFIX):
        if not _PLAIN_RE.fullmatch(segment):
            raise ValueError("not a plain id")
        return segment
    body = segment[len(ENCODED_PREFIX) :]
    try:
        raw = base64.urlsafe_b64decode(body + "=" * (-len(body) % 4))
        value = raw.decode("utf-8", "surrogatepass")
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise ValueError("not an encoded id") from exc
    if encode_id(value) != segment:
        # One spelling per id: a plain id sent encoded (or non-canonical base64) is refused.
        raise ValueError("not the canonical spelling")
    return value


class StoredIdConverter:
    """Django path converter for stored ids (see the module docstring)."""

    regex = r"[A-Za-z0-9_-][A-Za-z0-9._-]*|~[A-Za-z0-9_-]*"

    def to_python(self, value: str) -> str:
        """The stored id (a ValueError makes Django answer 404)."""
        return decode_id(value)

    def to_url(self, value: object) -> str:
        """The id's path segment."""
        return encode_id(str(value))


register_converter(StoredIdConverter, "storedid")


class Sha256Converter:
    """Django path converter for sha256 digests (see the module docstring)."""

    regex = SHA256_PATTERN

    def to_python(self, value: str) -> str:
        """The digest, as matched."""
        return value

    def to_url(self, value: object) -> str:
        """The digest's path segment (reverse refuses anything that is not a digest)."""
        return str(value)


register_converter(Sha256Converter, "sha256")
