"""Invisible characters made visible: the one definition every page uses. Framework-free.

Bidi overrides, Unicode tags, zero-width and other format characters render as nothing (or
reorder what is around them), so a reviewer or curator would never see them. Nothing here
produces HTML: functions return plain strings or ``(kind, text)`` segments that templates
render with autoescaping, so no stored string is ever marked safe.

Segment kinds: ``"t"`` plain text, ``"x"`` a visible stand-in for an invisible character
(``⟨U+E0041⟩``, or ``⟨U+200B \N{MULTIPLICATION SIGN}1,000⟩`` for a run of one character).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Callable

Segment = tuple[str, str]

# Stand-ins shown one by one per value; further invisible characters are only counted.
MAX_STAND_INS = 500
# Longest short text (label, class name, filter option) shown inline before an ellipsis.
MAX_INLINE_CHARS = 200

_TAGS = range(0xE0000, 0xE0080)
_VARIATION_SELECTORS = (range(0xFE00, 0xFE10), range(0xE0100, 0xE01F0))
# Characters that render as nothing (or reorder text) although they are not format controls.
_BLANK_LOOKALIKES = frozenset({0x115F, 0x1160, 0x3164, 0xFFA0, 0x2800, 0x180E})
_KEEP = frozenset({"\n", "\t", "\r"})


def is_invisible(ch: str) -> bool:
    """True for characters a reviewer could not see: tags, zero-width, bidi, controls."""
    return _patterns_for(ch)[1].fullmatch(ch) is not None


def _invisible_uncached(ch: str) -> bool:
    """The rule itself (is_invisible reads it through the compiled class)."""
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


# Planes 4-13 are unassigned and 15-16 private use in every Unicode version: invisible whole.
_WHOLE_INVISIBLE_PLANES = ((0x40000, 0xDFFFF), (0xF0000, 0x10FFFF))


@functools.cache
def _invisible_ranges() -> tuple[tuple[int, int], ...]:
    """Every invisible character as code point ranges (built once per process, from the same
    rule as is_invisible, scanning the planes that hold assigned characters)."""
    ranges: list[tuple[int, int]] = []
    start: int | None = None
    prev = -1
    for cp in [*range(0x40000), *range(0xE0000, 0xF0000)]:
        if _invisible_uncached(chr(cp)):
            if start is None:
                start = cp
            elif cp != prev + 1:
                ranges.append((start, prev))
                start = cp
            prev = cp
    if start is not None:
        ranges.append((start, prev))
    return tuple(sorted([*ranges, *_WHOLE_INVISIBLE_PLANES]))


def _char_class(ranges: list[tuple[int, int]]) -> str:
    parts = [
        re.escape(chr(a)) if a == b else f"{re.escape(chr(a))}-{re.escape(chr(b))}"
        for a, b in ranges
    ]
    return "[" + "".join(parts) + "]"


@functools.cache
def _invisible_patterns(astral: bool) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """(one invisible character and its repeats, any run of invisible characters).

    Python's regex engine turns a class of BMP characters into a bitmap but tries astral
    ranges one by one: text without astral characters gets the BMP-only class, and for the
    rest, tags and whole invisible planes (what hostile padding uses) are tried first.
    """
    ranges = list(_invisible_ranges())
    if astral:
        ranges.sort(key=lambda r: (r[0] < 0x40000, r[0]))
    else:
        ranges = [r for r in ranges if r[0] < 0x10000]
    cls = _char_class(ranges)
    return re.compile(f"({cls})\\1*"), re.compile(f"{cls}+")


def _patterns_for(text: str) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """The invisible-character patterns suited to this text (see _invisible_patterns)."""
    return _invisible_patterns(bool(text) and max(text) >= "\U00010000")


def escape_label(ch: str, count: int = 1) -> str:
    """The visible stand-in for an invisible character, e.g. ``⟨U+200B⟩`` or, for a run of
    them, ``⟨U+200B \N{MULTIPLICATION SIGN}1,000⟩``."""
    if count == 1:
        return f"⟨U+{ord(ch):04X}⟩"
    return f"⟨U+{ord(ch):04X} \N{MULTIPLICATION SIGN}{count:,}⟩"


def visible_segments(text: str) -> list[Segment]:
    """Split text into plain runs and visible stand-ins for invisible characters.

    A run of one invisible character repeated becomes one stand-in with its count
    (``⟨U+200B \N{MULTIPLICATION SIGN}100000⟩``), and past ``MAX_STAND_INS`` stand-ins per
    value the rest of the invisible characters are only counted, so hostile padding cannot
    multiply a page's size.
    Matching is done by compiled regexes, so the cost is linear at C speed.
    """
    segments: list[Segment] = []
    position = 0
    stand_ins = 0
    run_re, any_re = _patterns_for(text)
    for match in run_re.finditer(text):
        if stand_ins >= MAX_STAND_INS:
            break
        if match.start() > position:
            segments.append(("t", text[position : match.start()]))
        segments.append(("x", escape_label(match.group(1), match.end() - match.start())))
        stand_ins += 1
        position = match.end()
    rest = text[position:]
    if stand_ins >= MAX_STAND_INS and rest:
        dropped = sum(len(run) for run in any_re.findall(rest))
        plain = any_re.sub("", rest) if dropped else rest
        if plain:
            segments.append(("t", plain))
        if dropped:
            segments.append(("x", f"⟨{dropped:,} more invisible characters not shown one by one⟩"))
    elif rest:
        segments.append(("t", rest))
    return segments


def visible_text(text: str, limit: int = MAX_INLINE_CHARS) -> str:
    """One line of reviewed text (a label, class name, option) with invisible characters as
    ``⟨U+…⟩`` stand-ins (runs collapsed), cut to ``limit`` characters with an ellipsis."""
    cut = text[:limit]
    if cut.isascii() and cut.isprintable():
        shown = cut
    else:
        shown = "".join(chunk for _, chunk in visible_segments(cut))
    return shown + "…" if len(text) > limit else shown


def count_invisible(text: str) -> int:
    """How many characters of `text` a reader could not see."""
    if text.isascii() and text.isprintable():
        return 0
    return sum(len(run) for run in _patterns_for(text)[1].findall(text))


def replace_invisible(text: str, replace: Callable[[str], str]) -> str:
    """`text` with every run of invisible characters replaced by ``replace(run)``."""
    return _patterns_for(text)[1].sub(lambda m: replace(m.group()), text)
