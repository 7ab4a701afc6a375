"""Turn hostile text into display segments: invisible characters made visible, word diffs.

Framework-free. Nothing here produces HTML: functions return ``(kind, text)`` segments that
templates render with autoescaping, so no ingested string is ever marked safe.

Segment kinds: ``"t"`` plain text, ``"x"`` a visible stand-in for an invisible character
(``⟨U+E0041⟩``). Diff chunks are ``(op, segments)`` with op ``equal``/``insert``/``delete``.
"""

from __future__ import annotations

import bisect
import difflib
import json
import re
from dataclasses import dataclass, field

# The invisible-character rules live in redteam.core.visible (seeds and admin pages use them too).
from redteam.core.visible import MAX_INLINE_CHARS as MAX_INLINE_CHARS
from redteam.core.visible import MAX_STAND_INS as MAX_STAND_INS
from redteam.core.visible import Segment as Segment
from redteam.core.visible import count_invisible, replace_invisible
from redteam.core.visible import escape_label as escape_label
from redteam.core.visible import is_invisible as is_invisible
from redteam.core.visible import visible_segments as visible_segments
from redteam.core.visible import visible_text as visible_text

# Beyond these sizes the page shows a prefix (and skips the diff) so one hostile 50 MB piece
# cannot make the page slow; the full value stays available through export.
MAX_DISPLAY_CHARS = 100_000
MAX_DIFF_TOKENS = 20_000
# Below this similarity an inline diff is noise (ROT13, base64): show both values instead.
MIN_DIFF_RATIO = 0.35
# Characters of text decoded from Unicode tags shown in a value's hidden-content note.
MAX_TAG_TEXT_CHARS = 2_000
# Longest metadata JSON shown on a page (the full value is in the API and export).
MAX_METADATA_CHARS = 20_000
# Work the word diff may do (token comparisons); beyond it the values are shown side by side.
DIFF_WORK_BUDGET = 400_000
# Gaps without a unique anchor at most this many tokens a side get difflib's finer match.
SMALL_GAP_TOKENS = 40

_TOKEN_RE = re.compile(r"\s+|\w+|[^\w\s]", re.UNICODE)
_TAG_ASCII_RE = re.compile("[\U000e0020-\U000e007e]")
_BIDI_RE = re.compile("[\u202a-\u202e\u2066-\u2069]")


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
    if text.isascii() and text.isprintable():
        return report
    report.count = count_invisible(text)
    if not report.count:
        return report
    report.bidi = _BIDI_RE.search(text) is not None
    # ASCII smuggled in tag characters: a page shows the start (the value is shown too).
    tags = _TAG_ASCII_RE.findall(text)
    report.tag_text = "".join(chr(ord(c) - 0xE0000) for c in tags[:MAX_TAG_TEXT_CHARS])
    if len(tags) > MAX_TAG_TEXT_CHARS:
        report.tag_text += f"… ({len(tags) - MAX_TAG_TEXT_CHARS:,} more)"
    return report


@dataclass
class DisplayText:
    """A value prepared for display: segments, truncation note, hidden-content report."""

    segments: list[Segment]
    truncated: bool
    length: int
    hidden: HiddenReport = field(default_factory=HiddenReport)
    shown: int = 0


def display_text(
    text: str, limit: int = MAX_DISPLAY_CHARS, *, length: int | None = None
) -> DisplayText:
    """Prepare a value for display, capped at ``limit`` characters. ``length`` is the whole
    value's when ``text`` is only its start (read cut from the database)."""
    shown = text[:limit]
    length = len(text) if length is None else length
    return DisplayText(
        segments=visible_segments(shown),
        truncated=length > len(shown),
        length=length,
        hidden=hidden_report(shown),
        shown=len(shown),
    )


def _json_escape(ch: str) -> str:
    cp = ord(ch)
    if cp <= 0xFFFF:
        return f"\\u{cp:04x}"
    cp -= 0x10000  # outside the BMP JSON spells a surrogate pair
    return f"\\u{0xD800 + (cp >> 10):04x}\\u{0xDC00 + (cp & 0x3FF):04x}"


def visible_json(
    value: object, *, indent: int | None = 2, sort_keys: bool = False, limit: int | None = None
) -> str:
    """JSON text for display: Unicode kept, but invisible characters (tags, bidi overrides,
    zero-width) written as \\u escapes, so they can neither hide nor reorder what is shown.
    The result is still valid JSON for the same value, unless ``limit`` cut it: then the
    first ``limit`` characters are escaped and the cut is said at the end."""
    text = json.dumps(value, indent=indent, ensure_ascii=False, sort_keys=sort_keys, default=str)
    more = 0
    if limit is not None and len(text) > limit:
        text, more = text[:limit], len(text) - limit
    if not text.isascii():
        text = replace_invisible(text, lambda run: "".join(map(_json_escape, run)))
    return f"{text}… ({more:,} more characters)" if more else text


def pretty_json(text: str) -> str | None:
    """Indented JSON for function and tool calls; None when the value is not JSON."""
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return visible_json(value)


@dataclass
class TextDiff:
    """An original/converted comparison: inline chunks, or None when a diff would be noise
    (``ratio`` below MIN_DIFF_RATIO) or too costly (``over_budget``): both shown side by side."""

    chunks: list[tuple[str, list[Segment]]] | None
    ratio: float
    over_budget: bool = False


Opcode = tuple[str, int, int, int, int]


class _DiffBudgetExceeded(Exception):
    """The diff would cost more than DIFF_WORK_BUDGET token comparisons."""


class _Work:
    """Counts the token comparisons a diff makes, raising once the budget is spent."""

    def __init__(self, budget: int) -> None:
        self.left = budget

    def spend(self, amount: int) -> None:
        """Charge ``amount`` comparisons; raise when the budget is gone."""
        self.left -= amount
        if self.left < 0:
            raise _DiffBudgetExceeded


def _unique_anchors(
    a: list[str], alo: int, ahi: int, b: list[str], blo: int, bhi: int
) -> list[tuple[int, int]]:
    """Tokens occurring exactly once on each side, longest run kept in order on both (LIS)."""
    count_a: dict[str, int] = {}
    where_a: dict[str, int] = {}
    for i in range(alo, ahi):
        tok = a[i]
        count_a[tok] = count_a.get(tok, 0) + 1
        where_a[tok] = i
    count_b: dict[str, int] = {}
    where_b: dict[str, int] = {}
    for j in range(blo, bhi):
        tok = b[j]
        count_b[tok] = count_b.get(tok, 0) + 1
        where_b[tok] = j
    pairs = sorted(
        (where_a[t], where_b[t]) for t, c in count_a.items() if c == 1 and count_b.get(t) == 1
    )
    # Longest increasing subsequence of b positions (patience sorting), O(k log k).
    tails: list[int] = []
    tail_idx: list[int] = []
    prev: list[int] = [-1] * len(pairs)
    for k, (_, j) in enumerate(pairs):
        pos = bisect.bisect_left(tails, j)
        if pos == len(tails):
            tails.append(j)
            tail_idx.append(k)
        else:
            tails[pos] = j
            tail_idx[pos] = k
        prev[k] = tail_idx[pos - 1] if pos else -1
    out: list[tuple[int, int]] = []
    k = tail_idx[-1] if tail_idx else -1
    while k >= 0:
        out.append(pairs[k])
        k = prev[k]
    out.reverse()
    return out


def _diff_opcodes(a: list[str], b: list[str], work: _Work) -> list[Opcode]:
    """Patience diff: common ends trimmed, tokens unique on both sides anchor the match, and
    only small anchorless gaps go to difflib, so the cost is near-linear and always budgeted
    (difflib alone is super-quadratic on repetitive tokens)."""
    ops: list[Opcode] = []
    # An explicit stack (not recursion): hostile input could nest gaps thousands deep. Items
    # are gaps still to diff or finished opcodes, popped in order.
    stack: list[tuple[bool, Opcode]] = [(True, ("gap", 0, len(a), 0, len(b)))]
    while stack:
        is_gap, item = stack.pop()
        if not is_gap:
            ops.append(item)
            continue
        _, alo, ahi, blo, bhi = item
        start_a, start_b, end_a, end_b = alo, blo, ahi, bhi
        while alo < ahi and blo < bhi and a[alo] == b[blo]:
            alo += 1
            blo += 1
        while ahi > alo and bhi > blo and a[ahi - 1] == b[bhi - 1]:
            ahi -= 1
            bhi -= 1
        work.spend((alo - start_a) + (end_a - ahi) + 1)
        later: list[tuple[bool, Opcode]] = []
        if alo > start_a:
            ops.append(("equal", start_a, alo, start_b, blo))
        if alo == ahi and blo < bhi:
            ops.append(("insert", alo, alo, blo, bhi))
        elif blo == bhi and alo < ahi:
            ops.append(("delete", alo, ahi, blo, blo))
        elif alo < ahi:
            work.spend((ahi - alo) + (bhi - blo))
            anchors = _unique_anchors(a, alo, ahi, b, blo, bhi)
            if anchors:
                i0, j0 = alo, blo
                for i, j in anchors:
                    later.append((True, ("gap", i0, i, j0, j)))
                    later.append((False, ("equal", i, i + 1, j, j + 1)))
                    i0, j0 = i + 1, j + 1
                later.append((True, ("gap", i0, ahi, j0, bhi)))
            elif ahi - alo <= SMALL_GAP_TOKENS and bhi - blo <= SMALL_GAP_TOKENS:
                # difflib on a gap this small costs at most about a millisecond (measured on
                # the worst repetitive pattern); charged as the product of the sides.
                work.spend((ahi - alo) * (bhi - blo))
                matcher = difflib.SequenceMatcher(a=a[alo:ahi], b=b[blo:bhi], autojunk=False)
                for tag, i1, i2, j1, j2 in matcher.get_opcodes():
                    ops.append((tag, alo + i1, alo + i2, blo + j1, blo + j2))
            else:
                ops.append(("replace", alo, ahi, blo, bhi))
        if end_a > ahi:
            later.append((False, ("equal", ahi, end_a, bhi, end_b)))
        stack.extend(reversed(later))
    merged: list[Opcode] = []
    for opcode in ops:
        if opcode[1] == opcode[2] and opcode[3] == opcode[4]:
            continue
        if merged and merged[-1][0] == opcode[0] == "equal":
            last = merged[-1]
            merged[-1] = ("equal", last[1], opcode[2], last[3], opcode[4])
        else:
            merged.append(opcode)
    return merged


def word_diff(original: str, converted: str, budget: int = DIFF_WORK_BUDGET) -> TextDiff:
    """Word-level diff of two values, with invisible characters made visible in every chunk.

    The work is budgeted (see _diff_opcodes): values whose diff would cost more are reported
    ``over_budget`` and shown side by side instead.
    """
    a = _TOKEN_RE.findall(original[:MAX_DISPLAY_CHARS])
    b = _TOKEN_RE.findall(converted[:MAX_DISPLAY_CHARS])
    if len(a) > MAX_DIFF_TOKENS or len(b) > MAX_DIFF_TOKENS:
        return TextDiff(chunks=None, ratio=0.0, over_budget=True)
    try:
        opcodes = _diff_opcodes(a, b, _Work(budget))
    except _DiffBudgetExceeded:
        return TextDiff(chunks=None, ratio=0.0, over_budget=True)
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
