"""Template filters that show invisible characters (redteam.core.visible); output stays escaped."""

from __future__ import annotations

from typing import Any

from django import template

from redteam.core.visible import MAX_INLINE_CHARS, Segment, visible_segments, visible_text

register = template.Library()


@register.filter(name="visible")
def visible(value: Any, limit: int = MAX_INLINE_CHARS) -> str:
    """The value as plain text, invisible characters as ⟨U+…⟩, cut at `limit` (never safe)."""
    return visible_text("" if value is None else str(value), limit=int(limit))


@register.filter(name="segments")
def segments(value: Any) -> list[Segment]:
    """The value as (kind, text) segments for templates that style the stand-ins."""
    return visible_segments("" if value is None else str(value))
