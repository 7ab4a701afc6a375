"""The one reversible representation of values the databases cannot hold as they are.

PyRIT's SQLite memory stores any Python string and any float: NUL characters in values,
metadata and rationales, NaN and +/-Infinity in JSON columns. PostgreSQL's text and jsonb
types refuse NUL (and jsonb refuses NaN/Infinity); SQLite's JSON check refuses NaN. Every
such value is stored in an escaped form and given back exactly when read:

* in text, U+FDD0 (a Unicode noncharacter, reserved for internal use) is the escape:
  U+FDD0 itself is written twice, NUL is written U+FDD0 U+FDD1. A string holding neither is
  stored unchanged, so existing rows, indexes and lookups are untouched by this scheme;
* in JSON, every string and every key is escaped as above, and a non-finite float becomes the
  string U+FDD0 followed by ``NaN``, ``Infinity`` or ``-Infinity``, which the text escape can
  never produce (it only ever puts U+FDD0 or U+FDD1 after U+FDD0).

Both noncharacters separate words in PostgreSQL's full-text parser, so the words either side
of a NUL stay searchable. No Django import: the model fields in redteam/common/fields.py and the
bulk COPY path call these functions, and nothing else encodes or decodes.
"""

from __future__ import annotations

import math
from typing import Any, Final

ESCAPE: Final = "\ufdd0"
NUL_MARK: Final = "\ufdd1"
_ESCAPED_ESCAPE: Final = ESCAPE + ESCAPE
_ESCAPED_NUL: Final = ESCAPE + NUL_MARK

_FLOAT_TO_TEXT: Final = {"NaN": ESCAPE + "NaN", "inf": ESCAPE + "Infinity"}
_TEXT_TO_FLOAT: Final = {
    ESCAPE + "NaN": math.nan,
    ESCAPE + "Infinity": math.inf,
    ESCAPE + "-Infinity": -math.inf,
}


def encode_text(value: str) -> str:
    """The stored form of a string: NUL and the escape character escaped."""
    if ESCAPE in value:
        value = value.replace(ESCAPE, _ESCAPED_ESCAPE)
    if "\x00" in value:
        value = value.replace("\x00", _ESCAPED_NUL)
    return value


def decode_text(value: str) -> str:
    """The original string of a stored one (encode_text undone)."""
    if ESCAPE not in value:
        return value
    # Splitting on the doubled escape first keeps the pairs aligned: every escape in stored
    # text starts a two-character pair, and the leftmost match is always a pair's start.
    return ESCAPE.join(part.replace(_ESCAPED_NUL, "\x00") for part in value.split(_ESCAPED_ESCAPE))


def decode_text_head(value: str) -> str:
    """The start of the original string, from the start of a stored one cut after any
    character: an escape pair the cut split is left out whole.

    Every escape character of stored text starts a pair, so a run of them at the end is
    whole pairs and, when odd, the first half of one more.
    """
    if (len(value) - len(value.rstrip(ESCAPE))) % 2:
        value = value[:-1]
    return decode_text(value)


def _float_text(value: float) -> str:
    if math.isnan(value):
        return _FLOAT_TO_TEXT["NaN"]
    return _FLOAT_TO_TEXT["inf"] if value > 0 else ESCAPE + "-Infinity"


def encode_json(value: Any) -> Any:
    """The stored form of a JSON value: strings and keys escaped, non-finite floats as text.

    Returns the value itself (not a copy) when nothing in it needs escaping, which is what
    almost every value is; the containers are rebuilt only along the way to a change.
    """
    kind = type(value)
    if kind is str:
        return encode_text(value)
    if kind is float:
        return value if math.isfinite(value) else _float_text(value)
    if kind is dict:
        changed = False
        out: dict[Any, Any] = {}
        for key, item in value.items():
            new_key = encode_text(key) if type(key) is str else key
            new_item = encode_json(item)
            changed = changed or new_key is not key or new_item is not item
            out[new_key] = new_item
        return out if changed else value
    if kind is list or kind is tuple:
        items = [encode_json(item) for item in value]
        if any(new is not old for new, old in zip(items, value, strict=True)):
            return items
        return value
    return value


def decode_json(value: Any) -> Any:
    """The original JSON value of a stored one (encode_json undone)."""
    kind = type(value)
    if kind is str:
        if value.startswith(ESCAPE):
            special = _TEXT_TO_FLOAT.get(value)
            if special is not None:
                return special
        return decode_text(value)
    if kind is dict:
        return {(decode_text(k) if type(k) is str else k): decode_json(v) for k, v in value.items()}
    if kind is list:
        return [decode_json(item) for item in value]
    return value
