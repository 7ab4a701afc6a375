"""The template filters of every page: stored (hostile) values shown safely and boundedly.

``visible`` and ``segments`` show invisible characters (redteam.core.visible); ``first_items``
and ``more_count`` keep per-row lists (labels, harm categories, converters) to their first few
items and a count. Output stays escaped: nothing here marks a string safe.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template

from redteam.core.visible import MAX_INLINE_CHARS, Segment, visible_segments, visible_text

register = template.Library()

# Items of a per-row list (labels, harm categories, converters) shown before a count.
MAX_ITEMS_SHOWN = 8


@register.filter(name="visible")
def visible(value: Any, limit: int = MAX_INLINE_CHARS) -> str:
    """The value as plain text, invisible characters as ⟨U+…⟩, cut at `limit` (never safe)."""
    return visible_text("" if value is None else str(value), limit=int(limit))


@register.filter(name="segments")
def segments(value: Any) -> list[Segment]:
    """The value as (kind, text) segments for templates that style the stand-ins."""
    return visible_segments("" if value is None else str(value))


@register.filter
def first_items(value: Any, limit: int = MAX_ITEMS_SHOWN) -> list[Any]:
    """The first ``limit`` items of a list, or of a mapping's (key, value) pairs."""
    if isinstance(value, Mapping):
        out: list[Any] = []
        for pair in value.items():
            if len(out) >= int(limit):
                break
            out.append(pair)
        return out
    if isinstance(value, list | tuple):
        return list(value[: int(limit)])
    return []


@register.filter
def more_count(value: Any, limit: int = MAX_ITEMS_SHOWN) -> int:
    """How many items of a list or mapping ``first_items`` left out."""
    if isinstance(value, Mapping | list | tuple):
        return max(0, len(value) - int(limit))
    return 0
