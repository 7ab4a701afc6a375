"""Limits on the shape of a parsed JSON body, checked before any of it reaches a service.

Everything ingested is hostile. json.loads alone accepts input that breaks things later:
nesting deep enough to exhaust Python's recursion in whatever walks it next (serializers,
JSONField, templates), strings PostgreSQL cannot store (NUL) or Python cannot encode (unpaired
surrogates), and single strings so large they only serve to exhaust memory downstream. One
iterative pass finds the first such value and names its path. No Django import.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

# PyRIT's own shapes nest about a dozen levels (identifier trees with children); 64 leaves
# room for metadata while staying far below Python's recursion limit.
DEFAULT_MAX_DEPTH = 64
# In valid JSON text, NUL and surrogates can only arrive as \u escapes (raw control characters
# are rejected by json.loads, raw surrogates by UTF-8 decoding), so the per-string character
# checks run only when the body holds such an escape (a C-level scan of the bytes).
_SUSPECT_ESCAPE = re.compile(rb"\\u(?:0000|[dD][89a-fA-F])")


@dataclass(frozen=True)
class JsonLimitError(ValueError):
    """A value breaks a limit; `path` is where (e.g. message_pieces[3].original_value)."""

    path: str
    message: str
    too_large: bool = False  # a size limit (413) rather than a malformed value (400)

    def __str__(self) -> str:
        return f"{self.path or 'The body'} {self.message}"


def _child_path(path: str, key: object) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


def _string_problem(value: str, max_chars: int, check_chars: bool) -> JsonLimitError | None:
    """The problem with one string, or None (path filled in by the caller)."""
    if len(value) > max_chars:
        return JsonLimitError(
            "",
            f"is a string of {len(value)} characters; the limit is {max_chars} "
            "(REDTEAM_MAX_STRING_CHARS)",
            too_large=True,
        )
    if not check_chars:
        return None
    if "\x00" in value:
        return JsonLimitError("", "contains a NUL character (\\u0000), which cannot be stored")
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return JsonLimitError(
                "", "contains an unpaired UTF-16 surrogate, which is not valid Unicode"
            )
    return None


# A walk entry: (container, parent entry, key in parent, depth). Paths are built only when
# something is wrong, by following the parents, so a large valid batch costs little.
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


def check_json_limits(
    value: Any, *, body: bytes, max_chars: int, max_depth: int = DEFAULT_MAX_DEPTH
) -> None:
    """Raise JsonLimitError for the first value (parsed from `body`) nested deeper than
    max_depth, or string or key longer than max_chars or holding NUL or a lone surrogate."""
    check_chars = _SUSPECT_ESCAPE.search(body) is not None
    # A string of n characters takes at least n bytes of JSON text.
    check_len = len(body) > max_chars
    check_strings = check_chars or check_len
    if isinstance(value, str):
        problem = _string_problem(value, max_chars, check_chars)
        if problem:
            raise problem
        return
    if not isinstance(value, dict | list):
        return
    stack: list[_Entry] = [(value, None, None, 1)]
    while stack:
        entry = stack.pop()
        container, _, _, depth = entry
        if depth > max_depth:
            raise JsonLimitError(_path(entry), f"is nested more than {max_depth} levels deep")
        is_dict = type(container) is dict
        pairs: Any = container.items() if is_dict else enumerate(container)
        key: Any
        for key, item in pairs:
            kind = type(item)
            if check_strings:
                # Inline length test: a function call per string would double the cost.
                if is_dict and ((check_len and len(key) > max_chars) or check_chars):
                    problem = _string_problem(key, max_chars, check_chars)
                    if problem:
                        raise JsonLimitError(
                            _child_path(_path(entry), key),
                            "(a key) " + problem.message,
                            problem.too_large,
                        )
                if kind is str and ((check_len and len(item) > max_chars) or check_chars):
                    problem = _string_problem(item, max_chars, check_chars)
                    if problem:
                        raise JsonLimitError(
                            _child_path(_path(entry), key), problem.message, problem.too_large
                        )
            if kind is dict or kind is list:
                stack.append((item, entry, key, depth + 1))
