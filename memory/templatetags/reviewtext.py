"""Template filters that keep per-row lists bounded on review pages (first few, then a count).

Invisible characters in short text are the `visible` filter's job (redteam.common.templatetags).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import template

register = template.Library()

# Items of a per-row list (labels, harm categories, converters) shown before a count.
MAX_ITEMS_SHOWN = 8


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
