"""Reviewer safety: which of a piece's harm categories an operation asks to show collapsed.

An operation lists its sensitive harm categories (`Operation.sensitive_harm_categories`);
a piece is sensitive when one of them appears among the harm categories it was sent with
(the piece's own, its conversation's summary, its attack result's). Categories match
case-insensitively and regardless of surrounding whitespace: ingested spellings vary between
attack runs ("Sexual", "sexual "), and a spelling difference must not show a reviewer what
the operation asked to hide. Framework-free, so the pages and the reveal endpoint apply the
one rule; both ends are untrusted JSON, so anything but a string is ignored.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any


def category_key(category: str) -> str:
    """The spelling-independent form of a harm category (stripped, case-folded)."""
    return category.strip().casefold()


def _strings(categories: Any) -> Iterator[str]:
    """The non-blank strings of a stored harm category value (a list; a lone string counts)."""
    if isinstance(categories, str):
        categories = [categories]
    if not isinstance(categories, list | tuple):
        return
    for item in categories:
        if isinstance(item, str) and item.strip():
            yield item


def sensitive_categories(configured: Any) -> dict[str, str]:
    """An operation's setting as {key: its spelling}, in the operation's order (first wins)."""
    found: dict[str, str] = {}
    for category in _strings(configured):
        found.setdefault(category_key(category), category.strip())
    return found


def matching_categories(sensitive: Mapping[str, str], *category_lists: Any) -> tuple[str, ...]:
    """The sensitive categories present in any of the lists, spelled and ordered as the
    operation lists them (empty when nothing matches)."""
    if not sensitive:
        return ()
    present = {category_key(c) for categories in category_lists for c in _strings(categories)}
    return tuple(spelling for key, spelling in sensitive.items() if key in present)
