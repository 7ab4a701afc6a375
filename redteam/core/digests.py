"""SHA-256 hex digests: the one spelling of identifier hashes, media, objective and seed hashes.

Framework-free. A digest is exactly 64 lowercase hex characters; ``is_sha256`` matches the
whole string (a ``$`` anchor would also let a trailing newline through).
"""

from __future__ import annotations

import re
from typing import Final

# The pattern itself (URL converters, HTML ``pattern`` attributes), and anchored for the
# database check constraints that store it.
SHA256_PATTERN: Final = "[0-9a-f]{64}"
SHA256_ANCHORED: Final = rf"^{SHA256_PATTERN}$"
SHA256_RE: Final = re.compile(SHA256_PATTERN)


def is_sha256(value: object) -> bool:
    """True when `value` is a string of exactly 64 lowercase hex characters."""
    return isinstance(value, str) and SHA256_RE.fullmatch(value) is not None
