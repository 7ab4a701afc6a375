"""The one sha256 spelling: what the URL converter, filters and ingest accept as a digest."""

from __future__ import annotations

import hashlib
import re

import pytest

from redteam.common.idpath import Sha256Converter
from redteam.core.digests import is_sha256
from redteam.core.outcomes import FieldError

DIGEST = hashlib.sha256(b"x").hexdigest()


def test_a_real_digest_is_one() -> None:
    assert is_sha256(DIGEST)
    assert re.fullmatch(Sha256Converter.regex, DIGEST)


@pytest.mark.parametrize(
    "value",
    [
        DIGEST + "\n",
        DIGEST.upper(),
        DIGEST[:-1],
        DIGEST + "0",
        " " + DIGEST,
        "",
        None,
        1,
        b"0" * 64,
    ],
)
def test_anything_else_is_not(value: object) -> None:
    assert not is_sha256(value)
    if isinstance(value, str):
        assert not re.fullmatch(Sha256Converter.regex, value)


@pytest.mark.parametrize("key", ["hash", "eval_hash"])
def test_ingest_refuses_a_digest_with_a_trailing_newline(key: str) -> None:
    from memory.parsing import parse_identifier

    dump = {"class_name": "T", "class_module": "m", "hash": DIGEST, key: DIGEST + "\n"}
    errors: list[FieldError] = []
    assert parse_identifier(dump, "target", legacy=True, errors=errors) is None
    assert errors
    assert "64 lowercase hex" in errors[0].message
