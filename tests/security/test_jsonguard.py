"""redteam.jsonguard: the body-level limits on nesting, string size, NUL and surrogates."""

from __future__ import annotations

import json

import pytest

from redteam.jsonguard import JsonLimitError, check_json_limits


def _check(value: object, max_chars: int = 100, max_depth: int = 8) -> None:
    body = json.dumps(value).encode()
    check_json_limits(json.loads(body), body=body, max_chars=max_chars, max_depth=max_depth)


def test_ordinary_pyrit_shapes_pass() -> None:
    _check({"message_pieces": [{"id": "x", "labels": {"op": "é✓"}, "meta": [[1], {"b": 2}]}]})


def test_nesting_beyond_the_limit_is_refused_with_its_path() -> None:
    _check({"a": [[[[[[[1]]]]]]]})  # 8 levels: the object and 7 lists
    with pytest.raises(JsonLimitError) as caught:
        _check({"a": [[[[[[[[1]]]]]]]]})
    assert caught.value.path == "a[0][0][0][0][0][0][0]"
    assert "nested more than 8 levels" in str(caught.value)
    assert not caught.value.too_large


def test_empty_containers_count_towards_depth() -> None:
    with pytest.raises(JsonLimitError):
        _check({"a": [[[[[[[{}]]]]]]]})


def test_long_string_is_too_large_and_named() -> None:
    with pytest.raises(JsonLimitError) as caught:
        _check({"message_pieces": [{"id": "ok"}, {"original_value": "x" * 101}]})
    assert caught.value.too_large
    assert caught.value.path == "message_pieces[1].original_value"
    assert "101 characters; the limit is 100" in str(caught.value)


def test_long_key_is_refused() -> None:
    with pytest.raises(JsonLimitError) as caught:
        _check({"labels": {"k" * 101: "v"}})
    assert caught.value.too_large
    assert "(a key)" in caught.value.message


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ({"a": ["ok", "nul\u0000here"]}, "a[1]"),
        ({"a": {"nul\u0000key": 1}}, "a.nul\u0000key"),
        ({"a": "lone \ud800 surrogate"}, "a"),
        ({"a": ["\udfff"]}, "a[0]"),
    ],
)
def test_nul_and_lone_surrogates_are_refused(value: object, path: str) -> None:
    with pytest.raises(JsonLimitError) as caught:
        _check(value)
    assert caught.value.path == path
    assert not caught.value.too_large


def test_paired_surrogates_escaped_in_json_are_fine() -> None:
    body = b'{"a": "smile \\ud83d\\ude00", "b": "\\\\u0000 is only text here"}'
    check_json_limits(json.loads(body), body=body, max_chars=100)


def test_scalar_body_is_checked_too() -> None:
    with pytest.raises(JsonLimitError):
        _check("x" * 101)
    _check(3)
