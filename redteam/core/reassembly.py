"""Conversation reassembly and Message validation, as PyRIT does it. Framework-free.

Works on any objects or mappings that expose ``conversation_id``, ``sequence``, ``timestamp``
and ``id`` (plus ``role`` and ``converted_value`` for validation, and optionally the stored
``position`` inside a message): model rows, parsed ingest items, or plain dicts.
PYRIT-MODEL.md section 3 is the reference.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

__all__ = [
    "CONVERSATION_ID_MISMATCH",
    "INCONSISTENT_ROLES",
    "INCONSISTENT_SEQUENCES",
    "NULL_CONVERTED_VALUE",
    "Message",
    "group_by_sequence",
    "message_errors",
    "reassemble_conversation",
    "sort_message_pieces",
]

P = TypeVar("P")

# PyRIT's own error texts (Message.validate), so users see the words PyRIT would print.
CONVERSATION_ID_MISMATCH = "Conversation ID mismatch."
INCONSISTENT_SEQUENCES = "Inconsistent sequences within the same message entry."
INCONSISTENT_ROLES = "Inconsistent roles within the same message entry."
NULL_CONVERTED_VALUE = "Converted prompt text is None."
EMPTY_MESSAGE = "Message must have at least one message piece."


def _get(piece: Any, name: str) -> Any:
    """Read ``name`` from a mapping or an object alike."""
    if isinstance(piece, Mapping):
        return piece.get(name)
    return getattr(piece, name)


def _position(piece: Any) -> int:
    """The stored place inside the message; 0 for items that carry none (input order wins)."""
    value = piece.get("position") if isinstance(piece, Mapping) else getattr(piece, "position", 0)
    return value if isinstance(value, int) else 0


def _conversation_key(piece: Any) -> str:
    # Model rows expose the FK column as conversation_id; dicts and parsed items too.
    return str(_get(piece, "conversation_id"))


@dataclass
class Message(Generic[P]):
    """The pieces sharing one (conversation_id, sequence), in their stored order."""

    sequence: int
    role: str
    pieces: list[P] = field(default_factory=list)

    @property
    def conversation_id(self) -> str:
        """The conversation of piece 0 (all pieces share it)."""
        return _conversation_key(self.pieces[0])

    def is_error(self) -> bool:
        """PyRIT's ``Message.is_error()``: any piece errored or carries an error value."""
        return any(
            _get(p, "response_error") not in (None, "none")
            or _get(p, "converted_value_data_type") == "error"
            for p in self.pieces
        )


def sort_message_pieces(pieces: Iterable[P]) -> list[P]:
    """PyRIT's order: conversations by earliest timestamp then id; inside, by sequence (stable)."""
    items = list(pieces)
    earliest: dict[str, Any] = {}
    for piece in items:
        key = _conversation_key(piece)
        ts = _get(piece, "timestamp")
        if key not in earliest or (
            ts is not None and (earliest[key] is None or ts < earliest[key])
        ):
            earliest[key] = ts
    # Pieces sharing a sequence keep PyRIT's order: their stored position, else (the sort is
    # stable) their input order, as in PyRIT. A conversation without any timestamp sorts
    # after the timed ones (PyRIT always has one).
    return sorted(
        items,
        key=lambda p: (
            earliest[_conversation_key(p)] is None,
            earliest[_conversation_key(p)] or 0,
            _conversation_key(p),
            _get(p, "sequence"),
            _position(p),
        ),
    )


def message_errors(pieces: Sequence[Any]) -> list[str]:
    """Every rule of PyRIT's ``Message.validate()`` the pieces break, as PyRIT's texts."""
    if not pieces:
        return [EMPTY_MESSAGE]
    errors: list[str] = []
    first = pieces[0]
    if any(_conversation_key(p) != _conversation_key(first) for p in pieces):
        errors.append(CONVERSATION_ID_MISMATCH)
    if any(_get(p, "sequence") != _get(first, "sequence") for p in pieces):
        errors.append(INCONSISTENT_SEQUENCES)
    # PyRIT checks the converted value before the role; keep its order for the first error.
    if any(_get(p, "converted_value") is None for p in pieces):
        errors.append(NULL_CONVERTED_VALUE)
    if any(_get(p, "role") != _get(first, "role") for p in pieces):
        errors.append(INCONSISTENT_ROLES)
    return errors


def group_by_sequence(pieces: Iterable[P]) -> list[Message[P]]:
    """Group ONE conversation's pieces into Messages by sequence, ascending (PyRIT's rule)."""
    by_sequence: dict[int, list[P]] = {}
    conversation: str | None = None
    for piece in pieces:
        key = _conversation_key(piece)
        if conversation is None:
            conversation = key
        elif key != conversation:
            raise ValueError(
                "All message pieces must be from the same conversation. "
                f"Expected conversation_id='{conversation}', but found '{key}'. "
                "If grouping pieces from multiple conversations, group by conversation_id first."
            )
        by_sequence.setdefault(_get(piece, "sequence"), []).append(piece)
    return [
        Message(sequence=seq, role=str(_get(group[0], "role")), pieces=group)
        for seq, group in sorted(by_sequence.items(), key=lambda kv: kv[0])
    ]


def reassemble_conversation(pieces: Iterable[P]) -> list[Message[P]]:
    """Sort pieces PyRIT's way and group them into Messages (one conversation or several)."""
    ordered = sort_message_pieces(pieces)
    messages: list[Message[P]] = []
    start = 0
    # sort_message_pieces keeps each conversation contiguous, so group each run separately.
    for i in range(1, len(ordered) + 1):
        if i == len(ordered) or _conversation_key(ordered[i]) != _conversation_key(ordered[start]):
            messages.extend(group_by_sequence(ordered[start:i]))
            start = i
    return messages
