"""redteam.core.storedtext: the one reversible representation of NUL, NaN and Infinity."""

from __future__ import annotations

import itertools
import json
import math
import random
from typing import Any

import pytest

from redteam.core.storedtext import (
    ESCAPE,
    NUL_MARK,
    decode_json,
    decode_text,
    decode_text_head,
    encode_json,
    encode_text,
)

# Every character the scheme treats specially, plus the text of the float stand-ins.
ALPHABET = ["\x00", ESCAPE, NUL_MARK, "a", "N", "aN", "Infinity", "-", " ", "é"]


def _generate_strings() -> list[str]:
    short = ["".join(p) for n in range(4) for p in itertools.product(ALPHABET[:5], repeat=n)]
    rng = random.Random(20261125)
    long = ["".join(rng.choice(ALPHABET) for _ in range(rng.randint(0, 40))) for _ in range(500)]
    return short + long


STRINGS = _generate_strings()


def _strings() -> list[str]:
    return STRINGS


def test_every_string_round_trips_and_stored_text_holds_no_nul() -> None:
    for value in _strings():
        stored = encode_text(value)
        assert "\x00" not in stored
        assert decode_text(stored) == value, repr(value)


def test_encoding_is_injective_so_hashes_and_conflicts_see_the_real_value() -> None:
    values = set(_strings())
    assert len({encode_text(v) for v in values}) == len(values)


def test_ordinary_text_is_stored_unchanged() -> None:
    value = "plain text, é ✓ \U0001f600 and \ufdd1 alone"
    assert encode_text(value) is value
    assert decode_text(value) is value


def _same(a: Any, b: Any) -> bool:
    return json.dumps(a) == json.dumps(b) and type(a) is type(b)


@pytest.mark.parametrize(
    "value",
    [
        {"nan": math.nan, "inf": math.inf, "-inf": -math.inf, "int": 1, "float": 1.0},
        [math.nan, [math.inf, {"k\x00": "v\x00" + ESCAPE}]],
        {"looks like a stand-in": ESCAPE + "NaN", ESCAPE + "Infinity": ESCAPE + "-Infinity"},
        "x\x00",
        math.nan,
        None,
        True,
    ],
)
def test_json_values_round_trip_and_store_as_strict_json(value: Any) -> None:
    stored = encode_json(value)
    json.dumps(stored, allow_nan=False)  # jsonb and SQLite's JSON check take it
    assert "\\u0000" not in json.dumps(stored)
    assert _same(decode_json(json.loads(json.dumps(stored))), value)


def test_generated_json_round_trips() -> None:
    rng = random.Random(7)
    leaves: list[Any] = [*_strings()[:60], math.nan, math.inf, -math.inf, 0, 1.5, None, False]

    def build(depth: int) -> Any:
        if depth == 0 or rng.random() < 0.3:
            return rng.choice(leaves)
        if rng.random() < 0.5:
            return [build(depth - 1) for _ in range(rng.randint(0, 4))]
        return {rng.choice(_strings()[:80]): build(depth - 1) for _ in range(rng.randint(0, 4))}

    for _ in range(300):
        value = build(5)
        assert _same(decode_json(json.loads(json.dumps(encode_json(value)))), value)


def test_clean_json_is_not_copied() -> None:
    value = {"a": [1, 2.5, "text"], "b": {"c": None}}
    assert encode_json(value) is value


def test_a_stored_value_cut_anywhere_decodes_to_a_start_of_the_value() -> None:
    for value in _strings():
        stored = encode_text(value)
        for cut in range(len(stored) + 1):
            head = decode_text_head(stored[:cut])
            assert value.startswith(head), (value, cut)
            # Only the first half of a pair the cut split is left out.
            assert len(encode_text(head)) in (cut, cut - 1), (value, cut)
