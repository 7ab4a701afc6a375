"""redteam.core.jsonguard: parsing as Python does; per-item limits on nesting, size, surrogates."""

from __future__ import annotations

import json
import math

import pytest

from redteam.core.jsonguard import JsonProblem, item_problem, parse_json


def _problem(value: object, max_chars: int = 100, max_depth: int = 8) -> JsonProblem | None:
    return item_problem(json.loads(json.dumps(value)), max_chars=max_chars, max_depth=max_depth)


def test_ordinary_pyrit_shapes_pass() -> None:
    assert _problem({"id": "x", "labels": {"op": "é✓"}, "meta": [[1], {"b": 2}]}) is None


def test_nul_and_non_finite_floats_are_not_problems() -> None:
    item = {"v": "a\x00b", "k\x00": [math.nan, math.inf, -math.inf]}
    assert item_problem(item, max_chars=100) is None


def test_nesting_beyond_the_limit_is_refused_with_its_path() -> None:
    assert _problem({"a": [[[[[[[1]]]]]]]}) is None  # 8 levels: the object and 7 lists
    problem = _problem({"a": [[[[[[[[1]]]]]]]]})
    assert problem is not None
    assert problem.path == "a[0][0][0][0][0][0][0]"
    assert "nested more than 8 levels" in str(problem)


def test_empty_containers_count_towards_depth() -> None:
    assert _problem({"a": [[[[[[[{}]]]]]]]}) is not None


def test_long_string_is_named_by_its_path_in_the_item() -> None:
    problem = _problem({"id": "ok", "original_value": "x" * 101})
    assert problem is not None
    assert problem.path == "original_value"
    assert "101 characters; the limit is 100" in str(problem)


def test_long_key_is_refused_and_quoted_briefly() -> None:
    problem = _problem({"labels": {"k" * 1000: "v"}}, max_chars=500)
    assert problem is not None
    assert "(a key)" in problem.message
    assert len(problem.path) < 120


@pytest.mark.parametrize(
    ("value", "path"),
    [
        ({"a": "lone \ud800 surrogate"}, "a"),
        ({"a": ["ok", "\udfff"]}, "a[1]"),
        ({"a": {"key\ud800": 1}}, "a.key\\ud800"),
    ],
)
def test_lone_surrogates_are_refused_with_an_encodable_path(value: object, path: str) -> None:
    problem = _problem(value)
    assert problem is not None
    assert problem.path == path
    str(problem).encode("utf-8")  # the answer naming it must itself be valid UTF-8


def test_paired_surrogates_escaped_in_json_are_fine() -> None:
    body = b'{"a": "smile \\ud83d\\ude00", "b": "\\\\u0000 is only text here"}'
    assert item_problem(parse_json(body), max_chars=100) is None


def test_scalar_item_is_checked_too() -> None:
    assert _problem("x" * 101) is not None
    assert _problem(3) is None


def test_parse_json_reads_non_finite_tokens_and_overflow_as_python_does() -> None:
    value = parse_json(b'{"a": NaN, "b": Infinity, "c": -Infinity, "d": 1e400, "e": 1, "f": 1.0}')
    assert math.isnan(value["a"])
    assert value["b"] == math.inf
    assert value["c"] == -math.inf
    assert value["d"] == math.inf
    assert type(value["e"]) is int
    assert type(value["f"]) is float


@pytest.mark.parametrize("body", [b"\xff{}", b'{"a": ', b"[" * 100_000])
def test_parse_json_refuses_what_is_not_utf8_json(body: bytes) -> None:
    with pytest.raises((ValueError, RecursionError)):
        parse_json(body)
