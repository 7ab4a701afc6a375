"""Turn hostile text into display segments: invisible characters made visible, word diffs.

Framework-free. Nothing here produces HTML: functions return ``(kind, text)`` segments that
templates render with autoescaping, so no ingested string is ever marked safe.

Segment kinds: ``"t"`` plain text, ``"x"`` a visible stand-in for an invisible character
(``⟨U+E0041⟩``). Diff chunks are ``(op, segments)`` with op ``equal``/``insert``/``delete``.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field

# The invisible-character rules live in redteam.visible (seeds and admin pages use them too).
from redteam.visible import Segment as Segment
from redteam.visible import escape_label as escape_label
from redteam.visible import is_invisible as is_invisible
from redteam.visible import visible_segments as visible_segments

# Beyond these sizes the page shows a prefix (and skips the diff) so one hostile 50 MB piece
# cannot make the page slow; the full value stays available through export.
MAX_DISPLAY_CHARS = 100_000
MAX_DIFF_TOKENS = 4_000
# Below this similarity an inline diff is noise (ROT13, base64): show both values instead.
MIN_DIFF_RATIO = 0.35

_TOKEN_RE = re.compile(r"\s+|\w+|[^\w\s]", re.UNICODE)


@dataclass
class HiddenReport:
    """What a reviewer should know about invisible content in a value."""

    count: int = 0
    # ASCII smuggled in Unicode tag characters (U+E0020..E007E map to ASCII 0x20..0x7E).
    tag_text: str = ""
    bidi: bool = False


def hidden_report(text: str) -> HiddenReport:
    """Count invisible characters and decode any text hidden in Unicode tags."""
    report = HiddenReport()
    tag_chars: list[str] = []
    for ch in text:
        if not is_invisible(ch):
            continue
        report.count += 1
        cp = ord(ch)
        if 0xE0020 <= cp <= 0xE007E:
            tag_chars.append(chr(cp - 0xE0000))
        elif 0x202A <= cp <= 0x202E or 0x2066 <= cp <= 0x2069:
            report.bidi = True
    report.tag_text = "".join(tag_chars)
    return report


@dataclass
class DisplayText:
    """A value prepared for display: segments, truncation note, hidden-content report."""

    segments: list[Segment]
    truncated: bool
    length: int
    hidden: HiddenReport = field(default_factory=HiddenReport)
    shown: int = 0


def display_text(text: str, limit: int = MAX_DISPLAY_CHARS) -> DisplayText:
    """Prepare a value for display, capped at ``limit`` characters."""
    shown = text[:limit]
    return DisplayText(
        segments=visible_segments(shown),
        truncated=len(text) > limit,
        length=len(text),
        hidden=hidden_report(shown),
        shown=len(shown),
    )


def _json_escape(ch: str) -> str:
    cp = ord(ch)
    if cp <= 0xFFFF:
        return f"\\u{cp:04x}"
    cp -= 0x10000  # outside the BMP JSON spells a surrogate pair
    return f"\\u{0xD800 + (cp >> 10):04x}\\u{0xDC00 + (cp & 0x3FF):04x}"


def visible_json(value: object, *, indent: int | None = 2, sort_keys: bool = False) -> str:
    """JSON text for display: Unicode kept, but invisible characters (tags, bidi overrides,
    zero-width) written as \\u escapes, so they can neither hide nor reorder what is shown.
    The result is still valid JSON for the same value."""
    text = json.dumps(value, indent=indent, ensure_ascii=False, sort_keys=sort_keys, default=str)
    if text.isascii():
        return text
    return "".join(_json_escape(ch) if is_invisible(ch) else ch for ch in text)


def pretty_json(text: str) -> str | None:
    """Indented JSON for function and tool calls; None when the value is not JSON."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return visible_json(value)


@dataclass
class TextDiff:
    """An original/converted comparison: inline chunks, or None when a diff would be noise."""

    chunks: list[tuple[str, list[Segment]]] | None
    ratio: float


def word_diff(original: str, converted: str) -> TextDiff:
    """Word-level diff of two values, with invisible characters made visible in every chunk."""
    a = _TOKEN_RE.findall(original[:MAX_DISPLAY_CHARS])
    b = _TOKEN_RE.findall(converted[:MAX_DISPLAY_CHARS])
    if len(a) > MAX_DIFF_TOKENS or len(b) > MAX_DIFF_TOKENS:
        return TextDiff(chunks=None, ratio=0.0)
    matcher = difflib.SequenceMatcher(a=a, b=b, autojunk=False)
    opcodes = matcher.get_opcodes()
    # Similarity by characters of non-space words: shared spaces between unrelated words
    # (ROT13, translations) would otherwise make a full rewrite look half equal.
    kept = sum(
        len("".join(a[i1:i2]).replace(" ", "")) for op, i1, i2, _, _ in opcodes if op == "equal"
    )
    total = len("".join(a).replace(" ", "")) + len("".join(b).replace(" ", ""))
    ratio = 2 * kept / total if total else 1.0
    if ratio < MIN_DIFF_RATIO:
        return TextDiff(chunks=None, ratio=ratio)
    chunks: list[tuple[str, list[Segment]]] = []
    for op, i1, i2, j1, j2 in opcodes:
        if op == "equal":
            chunks.append(("equal", visible_segments("".join(a[i1:i2]))))
            continue
        if op in ("delete", "replace"):
            chunks.append(("delete", visible_segments("".join(a[i1:i2]))))
        if op in ("insert", "replace"):
            chunks.append(("insert", visible_segments("".join(b[j1:j2]))))
    return TextDiff(chunks=chunks, ratio=ratio)
