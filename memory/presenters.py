"""Display models for pieces and messages: what a template needs, computed once in Python.

Templates only loop over these and autoescape; nothing here builds HTML.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from memory.models import IdentifierDump, MessagePiece, PieceConverter, Score
from memory.sensitive import Sensitivity
from redteam.common.media import is_inline_media
from redteam.common.models import MediaBlob
from redteam.core.reassembly import group_by_sequence
from redteam.core.textview import (
    MAX_DISPLAY_CHARS,
    MAX_METADATA_CHARS,
    DisplayText,
    TextDiff,
    display_text,
    pretty_json,
    visible_json,
    word_diff,
)
from redteam.core.trees import TreeNode, parse_dump

# Characters of stored text one conversation page shows in all (each value is also cut at
# textview.MAX_DISPLAY_CHARS): a thousand 100k-character pieces would otherwise add up to a
# 100 MB page. Past it, values show their length and the export note only.
MAX_PAGE_TEXT_CHARS = 1_000_000

# Browsers render these from our origin; anything else is offered as a download.
_MEDIA_FAMILIES = {"image_path": "image/", "audio_path": "audio/", "video_path": "video/"}
_JSON_TYPES = frozenset({"function_call", "tool_call", "function_call_output"})
_DIFFABLE = frozenset({"text", "reasoning", "error", "url"})


@dataclass
class ValueView:
    """One value of a piece (original or converted), ready for its template branch."""

    data_type: str
    kind: str  # text, json, reasoning, error, url, image, audio, video, binary
    text: DisplayText
    media: MediaBlob | None = None
    # True when the uploaded bytes may be shown by an <img>/<audio>/<video> element.
    media_playable: bool = False


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


@dataclass
class TextBudget:
    """Characters of stored text a page may still show; each value takes what it shows."""

    remaining: int = MAX_PAGE_TEXT_CHARS

    def text(self, value: str) -> DisplayText:
        """The value prepared for display within what is left of the budget."""
        shown = display_text(value, limit=max(0, min(MAX_DISPLAY_CHARS, self.remaining)))
        self.remaining -= shown.shown
        return shown


def value_view(
    data_type: str, value: str, media: MediaBlob | None, budget: TextBudget | None = None
) -> ValueView:
    """Decide how one value is rendered, by data type and the sniffed type of its bytes."""
    display = (budget or TextBudget()).text
    if data_type in _MEDIA_FAMILIES or data_type == "binary_path":
        kind = data_type.removesuffix("_path")
        family = _MEDIA_FAMILIES.get(data_type)
        content_type = (media.content_type or "").lower() if media else ""
        playable = bool(
            media and family and content_type.startswith(family) and is_inline_media(content_type)
        )
        # The value is a path on the attacker's machine: shown as text, never opened.
        return ValueView(data_type, kind, display(value), media, playable)
    if data_type in _JSON_TYPES:
        # Pretty-printing a value longer than a page shows would parse megabytes to show a prefix.
        pretty = pretty_json(value) if len(value) <= MAX_DISPLAY_CHARS else None
        return ValueView(data_type, "json", display(pretty if pretty is not None else value))
    kind = data_type if data_type in ("reasoning", "error", "url") else "text"
    return ValueView(data_type, kind, display(value))


def piece_view(piece: MessagePiece, budget: TextBudget | None = None) -> PieceView:
    """Build the display model of one piece (uses only select_related/prefetched rows)."""
    budget = budget or TextBudget()
    converted = value_view(
        piece.converted_value_data_type, piece.converted_value, piece.converted_media, budget
    )
    differs = (
        piece.original_value != piece.converted_value
        or piece.original_value_data_type != piece.converted_value_data_type
    )
    original = diff = None
    if differs:
        original = value_view(
            piece.original_value_data_type, piece.original_value, piece.original_media, budget
        )
        # The diff shows what the values show: none once the page's text budget is spent.
        if budget.remaining > 0 and original.kind in _DIFFABLE and converted.kind in _DIFFABLE:
            diff = word_diff(piece.original_value, piece.converted_value)
    return PieceView(
        piece=piece,
        value=converted,
        original=original,
        diff=diff,
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
