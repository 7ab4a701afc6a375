"""Invisible characters made visible: the one definition every page uses. Framework-free.

Bidi overrides, Unicode tags, zero-width and other format characters render as nothing (or
reorder what is around them), so a reviewer or curator would never see them. Nothing here
produces HTML: functions return plain strings or ``(kind, text)`` segments that templates
render with autoescaping, so no stored string is ever marked safe.
"""

from __future__ import annotations

import unicodedata

Segment = tuple[str, str]

_TAGS = range(0xE0000, 0xE0080)
_VARIATION_SELECTORS = (range(0xFE00, 0xFE10), range(0xE0100, 0xE01F0))
# Characters that render as nothing (or reorder text) although they are not format controls.
_BLANK_LOOKALIKES = frozenset({0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x180E})
_KEEP = frozenset({"\n", "\t", "\r"})


def is_invisible(ch: str) -> bool:
    """True for characters a reviewer could not see: tags, zero-width, bidi, controls."""
    if ch in _KEEP:
        return False
    cp = ord(ch)
    if cp in _TAGS or cp in _BLANK_LOOKALIKES:
        return True
    if any(cp in r for r in _VARIATION_SELECTORS):
        return True
    # Cf: format (zero-width, bidi embeddings/overrides/isolates, BOM, soft hyphen);
    # Cc: controls other than tab and line breaks;
    # Cs/Co/Cn: surrogates, private use, unassigned.
    return unicodedata.category(ch) in {"Cf", "Cc", "Cs", "Co", "Cn"}


def escape_label(ch: str) -> str:
    """The visible stand-in for an invisible character, e.g. ``⟨U+200B⟩``."""
    return f"⟨U+{ord(ch):04X}⟩"


def visible_segments(text: str) -> list[Segment]:
    """Split text into plain runs and visible stand-ins for invisible characters."""
    segments: list[Segment] = []
    run: list[str] = []
    for ch in text:
        if is_invisible(ch):
            if run:
                segments.append(("t", "".join(run)))
                run = []
            segments.append(("x", escape_label(ch)))
        else:
            run.append(ch)
    if run:
        segments.append(("t", "".join(run)))
    return segments


def visible_text(text: str) -> str:
    """The text with every invisible character replaced by its stand-in (for one-line labels)."""
    return "".join(escape_label(ch) if is_invisible(ch) else ch for ch in text)


def count_invisible(text: str) -> int:
    """How many characters of `text` a reader could not see."""
    return sum(1 for ch in text if is_invisible(ch))
