"""Display models for pieces and messages: what a template needs, computed once in Python.

Templates only loop over these and autoescape; nothing here builds HTML.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from django.utils.safestring import SafeString

from memory.models import IdentifierDump, MessagePiece, PieceConverter, Score
from memory.sensitive import Sensitivity
from redteam.common.markdown import MAX_MARKDOWN_CHARS, render_markdown
from redteam.common.media import is_inline_media
from redteam.common.models import MediaBlob
from redteam.core.decoding import MAX_INPUT_CHARS as MAX_DECODE_INPUT_CHARS
from redteam.core.decoding import MAX_OUTPUT_CHARS as MAX_DECODED_CHARS
from redteam.core.decoding import decodings
from redteam.core.reassembly import group_by_sequence
from redteam.core.textview import (
    MAX_DISPLAY_CHARS,
    MAX_METADATA_CHARS,
    DisplayText,
    TextDiff,
    display_text,
    pretty_json,
    visible_json,
    visible_text,
    word_diff,
)
from redteam.core.trees import TreeNode, parse_dump

# Characters of stored text one conversation page shows in all (each value is also cut at
# textview.MAX_DISPLAY_CHARS): a thousand 100k-character pieces would otherwise add up to a
# 100 MB page. Past it, values show their length and the export note only.
MAX_PAGE_TEXT_CHARS = 1_000_000
# Characters of stored text one page decodes (redteam.core.decoding examines at most
# MAX_DECODE_INPUT_CHARS of each value) and renders as markdown (at most MAX_MARKDOWN_CHARS of
# each): past them values show their text only, so a thousand long pieces stay a fast page.
MAX_PAGE_DECODE_CHARS = 200_000
MAX_PAGE_MARKDOWN_CHARS = 100_000
# A value longer than a screen (characters or lines) starts collapsed with "show all".
LONG_TEXT_CHARS = 1_500
LONG_TEXT_LINES = 25
# Values starting like JSON and at most this long are parsed and shown indented.
MAX_PRETTY_JSON_CHARS = 50_000
# Score badges per line of the conversation outline (templates/memory/_outline.html).
MAX_OUTLINE_SCORES = 4
# Characters of a message's text the outline looks at for its first words.
OUTLINE_PREVIEW_CHARS = 90

# Browsers render these from our origin; anything else is offered as a download.
_MEDIA_FAMILIES = {"image_path": "image/", "audio_path": "audio/", "video_path": "video/"}
_JSON_TYPES = frozenset({"function_call", "tool_call", "function_call_output"})
_DIFFABLE = frozenset({"text", "reasoning", "error", "url"})
_DECODABLE = frozenset({"text", "json", "reasoning", "error", "url"})
# Markdown syntax at a line start (heading, list item, quote, fence, table row) or inline
# (bold, code, link). Linear on hostile text: line-start patterns use [ \t]* so a run of blank
# lines is not rescanned, and each inline span stops at the character that would start the next
# (a line of ten thousand "[" is scanned once, not once per bracket).
_MARKDOWN_RE = re.compile(
    r"(?m)^(?:#{1,6}[ \t]|[ \t]*[-*+][ \t]|[ \t]*\d{1,3}[.)][ \t]|>|```|~~~|\|[^\n]*\|)"
    r"|\*\*[^*\n]+\*\*|__[^_\n]+__|`[^`\n]+`|\[[^\[\]\n]+\]\([^()\[\]\s]+\)"
)


def looks_like_markdown(text: str) -> bool:
    """The text uses markdown syntax (in its first MAX_MARKDOWN_CHARS characters)."""
    return _MARKDOWN_RE.search(text[:MAX_MARKDOWN_CHARS]) is not None


@dataclass
class DecodedView:
    """A clean decoding of a value (redteam.core.decoding), ready for display as text."""

    label: str
    text: DisplayText
    # The decoding was longer than redteam.core.decoding.MAX_OUTPUT_CHARS and was cut.
    cut: bool = False


@dataclass
class ValueView:
    """One value of a piece (original or converted), ready for its template branch."""

    data_type: str
    kind: str  # text, json, reasoning, error, url, image, audio, video, binary
    text: DisplayText
    media: MediaBlob | None = None
    # True when the uploaded bytes may be shown by an <img>/<audio>/<video> element.
    media_playable: bool = False
    # Unique on the page (piece id and side): the ids of the value's toggles.
    key: str = ""
    # Decodings that came out cleanly (base64, ROT13, ...), shown beneath the text.
    decoded: list[DecodedView] = field(default_factory=list)
    # Markdown rendered and sanitized (redteam.common.markdown), shown by default; the raw
    # text stays one toggle away. None: shown as text only.
    markdown: SafeString | None = None
    # Only the first MAX_MARKDOWN_CHARS characters were rendered.
    markdown_cut: bool = False
    # Longer than a screen: starts collapsed with "show all".
    long: bool = False
    lines: int = 0


@dataclass
class PieceView:
    """A piece with its converted value, and its original value and diff when they differ."""

    piece: MessagePiece
    value: ValueView
    original: ValueView | None
    diff: TextDiff | None
    converters: list[PieceConverter]
    scores: list[Any] = field(default_factory=list)
    # Set by memory.sensitive.mark_sensitive_pieces when the operation asks to hide it.
    sensitive: Sensitivity | None = None

    @property
    def metadata_json(self) -> str:
        """prompt_metadata as indented JSON."""
        return visible_json(self.piece.prompt_metadata, limit=MAX_METADATA_CHARS)

    @property
    def differs(self) -> bool:
        """Original and converted values (or types) differ."""
        return self.original is not None


@dataclass
class MessageView:
    """The pieces sharing one sequence."""

    sequence: int
    role: str
    pieces: list[PieceView]

    @property
    def is_error(self) -> bool:
        """PyRIT's Message.is_error()."""
        return any(
            p.piece.response_error != "none" or p.piece.converted_value_data_type == "error"
            for p in self.pieces
        )

    @property
    def timestamp(self) -> Any:
        """The first piece's timestamp."""
        return self.pieces[0].piece.timestamp

    @property
    def outline_text(self) -> str:
        """The start of the message's first text value (for the outline; cut and escaped
        by the template), or its first piece's data type."""
        for pv in self.pieces:
            if pv.value.kind in _DECODABLE:
                text = _piece_values(pv.piece).converted
                return " ".join(text[: OUTLINE_PREVIEW_CHARS * 2].split())
        return f"({self.pieces[0].piece.converted_value_data_type})" if self.pieces else ""

    @property
    def outline_scores(self) -> list[tuple[str, str]]:
        """(label, badge class) of the message's first scores, for the outline."""
        out: list[tuple[str, str]] = []
        for pv in self.pieces:
            for sv in pv.scores:
                out.append(_score_badge(sv.score))
                if len(out) >= MAX_OUTLINE_SCORES:
                    return out
        return out

    @property
    def outline_more_scores(self) -> int:
        """Scores of the message the outline counts without a badge."""
        return max(0, sum(len(pv.scores) for pv in self.pieces) - MAX_OUTLINE_SCORES)


def _score_badge(score: Score) -> tuple[str, str]:
    """A short label and badge class for one score. What "true" means depends on the scorer
    (objective met, refusal found), so values are not coloured as outcomes."""
    if score.status == "undetermined":
        return "undetermined", "undetermined"
    if score.source == "human":
        return f"human {str(score.score_value)[:12]}", "human"
    return str(score.score_value)[:12], ""


@dataclass
class TextBudget:
    """Characters of stored text a page may still show; each value takes what it shows."""

    remaining: int = MAX_PAGE_TEXT_CHARS
    decode_remaining: int = MAX_PAGE_DECODE_CHARS
    markdown_remaining: int = MAX_PAGE_MARKDOWN_CHARS

    def text(
        self, value: str, limit: int = MAX_DISPLAY_CHARS, length: int | None = None
    ) -> DisplayText:
        """The value prepared for display within what is left of the budget (``length``: the
        whole value's, when ``value`` is its start)."""
        shown = display_text(value, limit=max(0, min(limit, self.remaining)), length=length)
        self.remaining -= shown.shown
        return shown

    def decoded(self, value: str) -> list[DecodedView]:
        """The clean decodings of the value, while the page's decoding budget lasts."""
        if self.decode_remaining <= 0 or self.remaining <= 0:
            return []
        examined = value[: min(MAX_DECODE_INPUT_CHARS, self.decode_remaining)]
        self.decode_remaining -= len(examined)
        return [
            DecodedView(d.label, self.text(d.text, limit=MAX_DECODED_CHARS), d.truncated)
            for d in decodings(examined)
        ]

    def markdown(self, value: str) -> SafeString | None:
        """The value rendered as sanitized markdown, while the page's budget lasts."""
        take = min(len(value), MAX_MARKDOWN_CHARS)
        if take > self.markdown_remaining:
            return None
        self.markdown_remaining -= take
        # Invisible characters become visible stand-ins first: rendered text cannot hide or
        # reorder anything either.
        return render_markdown(visible_text(value, limit=MAX_MARKDOWN_CHARS))


def _pretty_if_json(value: str) -> str | None:
    """Indented JSON when the value is a JSON object or array of readable size, else None."""
    if len(value) > MAX_PRETTY_JSON_CHARS or value.lstrip()[:1] not in ("{", "["):
        return None
    return pretty_json(value)


def _reading(view: ValueView, value: str, budget: TextBudget) -> ValueView:
    """Add the reading aids to a text value: decodings, markdown, the long-text collapse."""
    if view.kind not in _DECODABLE:
        return view
    view.decoded = budget.decoded(value)
    view.lines = 1 + sum(chunk.count("\n") for kind, chunk in view.text.segments if kind == "t")
    view.long = view.text.shown > LONG_TEXT_CHARS or view.lines > LONG_TEXT_LINES
    # Markdown is rendered where it changes what a reader sees: text using its syntax (answers
    # mostly). Prose without it reads the same raw, line breaks kept, with no toggle to learn.
    if view.kind == "text" and looks_like_markdown(value):
        view.markdown = budget.markdown(value)
        view.markdown_cut = view.markdown is not None and len(value) > MAX_MARKDOWN_CHARS
    return view


def value_view(
    data_type: str,
    value: str,
    media: MediaBlob | None,
    budget: TextBudget | None = None,
    length: int | None = None,
) -> ValueView:
    """Decide how one value is rendered, by data type and the sniffed type of its bytes, with
    its reading aids (decodings, markdown, collapse) for text. ``length`` is the whole
    value's when ``value`` is only its start (read cut in the database)."""
    budget = budget or TextBudget()
    length = len(value) if length is None else length
    return _reading(_value_view(data_type, value, media, budget, length), value, budget)


@dataclass(frozen=True)
class _PieceValues:
    """A piece's two values as a page reads them: each whole or its start, with its whole
    length, and whether the two are equal."""

    original: str
    original_length: int
    converted: str
    converted_length: int
    equal: bool


def _piece_values(piece: MessagePiece) -> _PieceValues:
    """The heads, lengths and equality memory.querysets.pieces_for_conversation computed in
    the database (the values stay there), or a piece's whole values."""
    read = vars(piece)  # the queryset's annotations, when it made them
    if "converted_head" in read:
        return _PieceValues(
            read["original_head"],
            read["original_length"],
            read["converted_head"],
            read["converted_length"],
            read["values_equal"],
        )
    original, converted = piece.original_value, piece.converted_value
    return _PieceValues(original, len(original), converted, len(converted), original == converted)


def _original_view(
    piece: MessagePiece, values: _PieceValues, converted: ValueView, budget: TextBudget
) -> PieceView:
    """A converted piece: its original value, and the word diff when one reads well. The
    original's reading aids are added only where it is shown whole (no inline diff)."""
    original = _value_view(
        piece.original_value_data_type,
        values.original,
        piece.original_media,
        budget,
        values.original_length,
    )
    original.key = f"{piece.id}-o"
    diff = None
    # The diff shows what the values show: none once the page's text budget is spent.
    if budget.remaining > 0 and original.kind in _DIFFABLE and converted.kind in _DIFFABLE:
        diff = word_diff(values.original, values.converted)
    if diff is None or not diff.chunks:
        _reading(original, values.original, budget)
    return PieceView(
        piece=piece,
        value=converted,
        original=original,
        diff=diff,
        converters=list(piece.converters.all()),
    )


def _value_view(
    data_type: str, value: str, media: MediaBlob | None, budget: TextBudget, length: int
) -> ValueView:
    """The rendering of one value (``length``: the whole value's; ``value`` may be its start
    only, and is then shown as it is, never parsed)."""
    whole = len(value) == length
    if data_type in _MEDIA_FAMILIES or data_type == "binary_path":
        kind = data_type.removesuffix("_path")
        family = _MEDIA_FAMILIES.get(data_type)
        content_type = (media.content_type or "").lower() if media else ""
        playable = bool(
            media and family and content_type.startswith(family) and is_inline_media(content_type)
        )
        # The value is a path on the attacker's machine: shown as text, never opened.
        return ValueView(data_type, kind, budget.text(value, length=length), media, playable)
    if data_type in _JSON_TYPES:
        # Pretty-printing a value longer than a page shows would parse megabytes to show a prefix.
        pretty = pretty_json(value) if whole and length <= MAX_DISPLAY_CHARS else None
        if pretty is not None:
            return ValueView(data_type, "json", budget.text(pretty))
        return ValueView(data_type, "json", budget.text(value, length=length))
    kind = data_type if data_type in ("reasoning", "error", "url") else "text"
    if kind in ("text", "error") and whole:
        # A text or error body that is JSON (an API error, an adversarial model's reply) reads
        # better indented; one that does not parse is shown as it is.
        pretty = _pretty_if_json(value)
        if pretty is not None:
            return ValueView(data_type, "json" if kind == "text" else kind, budget.text(pretty))
    return ValueView(data_type, kind, budget.text(value, length=length))


def piece_view(piece: MessagePiece, budget: TextBudget | None = None) -> PieceView:
    """Build the display model of one piece (uses only select_related/prefetched rows)."""
    budget = budget or TextBudget()
    values = _piece_values(piece)
    converted = value_view(
        piece.converted_value_data_type,
        values.converted,
        piece.converted_media,
        budget,
        values.converted_length,
    )
    converted.key = f"{piece.id}-c"
    if not values.equal or piece.original_value_data_type != piece.converted_value_data_type:
        return _original_view(piece, values, converted, budget)
    return PieceView(
        piece=piece,
        value=converted,
        original=None,
        diff=None,
        converters=list(piece.converters.all()),
    )


def message_views(pieces: list[MessagePiece]) -> list[MessageView]:
    """Group ordered pieces into Messages (PyRIT's rule: shared sequence), sharing one page
    text budget (MAX_PAGE_TEXT_CHARS) in conversation order."""
    budget = TextBudget()
    return [
        MessageView(m.sequence, m.role, [piece_view(p, budget) for p in m.pieces])
        for m in group_by_sequence(pieces)
    ]


@dataclass
class ScoreView:
    """A score beside the piece (or result) it scores, with its scorer tree."""

    score: Score
    tree: TreeNode | None

    @property
    def is_human(self) -> bool:
        """Recorded by a reviewer."""
        return bool(self.score.source == "human")

    @property
    def scorer_name(self) -> str:
        """The scorer's display name when its identifier was loaded with the score (never a
        query of its own), else its class name."""
        score = self.score
        if Score.scorer_identifier.is_cached(score) and score.scorer_identifier is not None:
            return str(score.scorer_identifier.display_name or score.scorer_class)
        return str(score.scorer_class)


def dump_tree(dump: IdentifierDump | None) -> TreeNode | None:
    """The display tree of a stored identifier dump; the row's hash (computed at ingest) wins
    over the dump's, which a client may omit or spell wrongly, so links resolve."""
    return parse_dump(dump.dump_json, dump.identifier_id) if dump is not None else None


class TreesOnce:
    """Display trees for one page, each distinct dump built and shown once.

    A thousand scores by one scorer would otherwise repeat its whole tree a thousand times;
    later uses keep their link to the identifier page instead.
    """

    def __init__(self) -> None:
        self.seen: set[str] = set()

    def __call__(self, dump: IdentifierDump | None) -> TreeNode | None:
        """The dump's tree the first time it is asked for on this page, else None."""
        if dump is None or dump.digest in self.seen:
            return None
        self.seen.add(dump.digest)
        return dump_tree(dump)
