"""The one guard on ingested JSON: parsing a body, and the limits each item must keep.

Everything ingested is hostile, and every edge (the ingest API, `import_pyrit_memory`) calls
these two functions, so a value refused by one is refused by the other:

* ``parse_json`` reads a body as Python's json does, which is how PyRIT writes its memory:
  ``NaN``, ``Infinity`` and ``-Infinity`` are accepted, and a float literal beyond the double
  range (``1e400``) reads as infinity. Only a body that is not UTF-8 JSON is refused whole.
* ``item_problem`` names the first value of ONE item that cannot be stored: nesting deep
  enough to exhaust recursion in whatever walks it next, a string (or key) longer than the
  configured limit, or an unpaired UTF-16 surrogate (not Unicode; PyRIT's own memory cannot
  store one either). The caller rejects that item alone; the rest of its batch goes on.

NUL characters and non-finite floats are not problems: redteam/core/storedtext.py stores them.
No Django import.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

# PyRIT's own shapes nest about a dozen levels (identifier trees with children); 64 leaves
# room for metadata while staying far below Python's recursion limit.
DEFAULT_MAX_DEPTH = 64


@dataclass(frozen=True)
class JsonProblem:
    """Why one item cannot be stored; `path` is where inside it (e.g. prompt_metadata.k)."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path or 'The item'} {self.message}"


def parse_json(data: bytes) -> Any:
    """A JSON body as Python reads it (NaN/Infinity accepted); UnicodeDecodeError or
    ValueError (RecursionError for absurd nesting) when it is not UTF-8 JSON."""
    return json.loads(data.decode("utf-8"))


# Longest key quoted in a path: the path goes back in the answer, the key may be huge.
_MAX_PATH_KEY = 100


def _child_path(path: str, key: object) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    # A key may itself be the problem: quote it so the answer stays valid, bounded UTF-8.
    text = quoted(str(key), _MAX_PATH_KEY)
    return f"{path}.{text}" if path else text


def _string_problem(value: str, max_chars: int) -> str | None:
    """The problem with one string, or None."""
    if len(value) > max_chars:
        return (
            f"is a string of {len(value)} characters; the limit is {max_chars} "
            "(REDTEAM_MAX_STRING_CHARS)"
        )
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "contains an unpaired UTF-16 surrogate, which is not valid Unicode"
    return None


def quoted(value: str, limit: int = 255) -> str:
    """A bounded, always-encodable form of an item's string (its id in an error answer)."""
    return value[:limit].encode("utf-8", "backslashreplace").decode("utf-8")


# A walk entry: (container, parent entry, key in parent, depth). Paths are built only when
# something is wrong, by following the parents, so a large valid item costs little.
_Entry = tuple[Any, Any, object, int]


def _path(entry: _Entry | None) -> str:
    keys: list[object] = []
    while entry is not None and entry[1] is not None:
        keys.append(entry[2])
        entry = entry[1]
    path = ""
    for key in reversed(keys):
        path = _child_path(path, key)
    return path


def item_problem(
    item: Any, *, max_chars: int, max_depth: int = DEFAULT_MAX_DEPTH
) -> JsonProblem | None:
    """The first value of `item` (a parsed JSON value) nested deeper than max_depth, or a
    string or key longer than max_chars or holding a lone surrogate; None when it is fine."""
    if isinstance(item, str):
        message = _string_problem(item, max_chars)
        return JsonProblem("", message) if message else None
    if not isinstance(item, dict | list):
        return None
    stack: list[_Entry] = [(item, None, None, 1)]
    while stack:
        entry = stack.pop()
        container, _, _, depth = entry
        if depth > max_depth:
            return JsonProblem(_path(entry), f"is nested more than {max_depth} levels deep")
        is_dict = type(container) is dict
        pairs: Any = container.items() if is_dict else enumerate(container)
        key: Any
        for key, value in pairs:
            kind = type(value)
            # Inline tests: a function call per string would double the cost of a clean item.
            if is_dict and (len(key) > max_chars or not key.isascii()):
                message = _string_problem(key, max_chars)
                if message:
                    return JsonProblem(_child_path(_path(entry), key), "(a key) " + message)
            if kind is str and (len(value) > max_chars or not value.isascii()):
                message = _string_problem(value, max_chars)
                if message:
                    return JsonProblem(_child_path(_path(entry), key), message)
            if kind is dict or kind is list:
                stack.append((value, entry, key, depth + 1))
    return None
