"""redteam.core.reassembly: PyRIT ordering, grouping and Message validation (no database)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest

from redteam.core.reassembly import (
    CONVERSATION_ID_MISMATCH,
    INCONSISTENT_ROLES,
    INCONSISTENT_SEQUENCES,
    NULL_CONVERTED_VALUE,
    group_by_sequence,
    message_errors,
    reassemble_conversation,
    sort_message_pieces,
)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


@dataclass
class Piece:
    id: str
    conversation_id: str
    sequence: int
    timestamp: datetime
    role: str = "user"
    converted_value: str | None = "x"


def at(seconds: int) -> datetime:
    return T0 + timedelta(seconds=seconds)


def test_conversations_ordered_by_earliest_timestamp_then_id() -> None:
    pieces = [
        Piece("1", "b", 0, at(5)),
        Piece("2", "a", 0, at(9)),
        Piece("3", "c", 0, at(5)),
        Piece("4", "a", 1, at(1)),  # a's earliest piece is at 1, so "a" comes first
    ]
    assert [p.id for p in sort_message_pieces(pieces)] == ["2", "4", "1", "3"]


def test_sort_is_by_sequence_not_timestamp_inside_a_conversation() -> None:
    pieces = [Piece("late-seq0", "a", 0, at(9)), Piece("early-seq1", "a", 1, at(1))]
    assert [p.id for p in sort_message_pieces(pieces)] == ["late-seq0", "early-seq1"]


def test_sort_is_stable_for_pieces_sharing_a_sequence() -> None:
    pieces = [Piece("z", "a", 0, at(0)), Piece("y", "a", 0, at(0)), Piece("x", "a", 0, at(0))]
    assert [p.id for p in sort_message_pieces(pieces)] == ["z", "y", "x"]


def test_a_stored_position_orders_pieces_sharing_a_sequence_whatever_the_input_order() -> None:
    @dataclass
    class Stored(Piece):
        position: int = 0

    pieces = [
        Stored("image", "a", 0, at(0), position=1),
        Stored("reply", "a", 1, at(1), position=0),
        Stored("text", "a", 0, at(0), position=0),
    ]
    assert [p.id for p in sort_message_pieces(pieces)] == ["text", "image", "reply"]
    dicts = [{"id": "b", "position": 1}, {"id": "a", "position": 0}]
    rows = [{**d, "conversation_id": "c", "sequence": 0, "timestamp": at(0)} for d in dicts]
    assert next(m.pieces for m in reassemble_conversation(rows))[0]["id"] == "a"


def test_works_on_plain_dicts() -> None:
    pieces = [
        {"id": "2", "conversation_id": "a", "sequence": 1, "timestamp": at(2), "role": "assistant"},
        {"id": "1", "conversation_id": "a", "sequence": 0, "timestamp": at(1), "role": "user"},
    ]
    messages = reassemble_conversation(pieces)
    assert [(m.sequence, m.role, [p["id"] for p in m.pieces]) for m in messages] == [
        (0, "user", ["1"]),
        (1, "assistant", ["2"]),
    ]


def test_group_by_sequence_makes_one_message_per_sequence_ascending() -> None:
    pieces = [
        Piece("a2", "c", 2, at(3), role="assistant"),
        Piece("t", "c", 0, at(1)),
        Piece("img", "c", 0, at(1)),
    ]
    messages = group_by_sequence(pieces)
    assert [m.sequence for m in messages] == [0, 2]
    assert [p.id for p in messages[0].pieces] == ["t", "img"]
    assert messages[1].role == "assistant"


def test_group_by_sequence_refuses_mixed_conversations() -> None:
    with pytest.raises(ValueError, match="same conversation"):
        group_by_sequence([Piece("1", "a", 0, at(0)), Piece("2", "b", 0, at(0))])


def test_reassemble_handles_several_conversations() -> None:
    pieces = [Piece("b0", "b", 0, at(0)), Piece("a0", "a", 0, at(1)), Piece("b1", "b", 1, at(2))]
    messages = reassemble_conversation(pieces)
    assert [(m.conversation_id, m.sequence) for m in messages] == [("b", 0), ("b", 1), ("a", 0)]


def test_message_is_error_when_any_piece_errored() -> None:
    ok = {
        "conversation_id": "a",
        "sequence": 0,
        "timestamp": at(0),
        "id": "1",
        "role": "user",
        "response_error": "none",
        "converted_value_data_type": "text",
    }
    bad = dict(ok, id="2", converted_value_data_type="error")
    assert not reassemble_conversation([ok])[0].is_error()
    assert reassemble_conversation([ok, bad])[0].is_error()


@pytest.mark.parametrize(
    ("pieces", "expected"),
    [
        ([Piece("1", "a", 0, at(0)), Piece("2", "b", 0, at(0))], CONVERSATION_ID_MISMATCH),
        ([Piece("1", "a", 0, at(0)), Piece("2", "a", 1, at(0))], INCONSISTENT_SEQUENCES),
        (
            [Piece("1", "a", 0, at(0)), Piece("2", "a", 0, at(0), role="assistant")],
            INCONSISTENT_ROLES,
        ),
        ([Piece("1", "a", 0, at(0), converted_value=None)], NULL_CONVERTED_VALUE),
    ],
)
def test_message_errors_name_the_broken_rule_in_pyrits_words(
    pieces: list[Piece], expected: str
) -> None:
    assert expected in message_errors(pieces)


def test_pyrit_error_texts_are_verbatim() -> None:
    assert INCONSISTENT_ROLES == "Inconsistent roles within the same message entry."
    assert INCONSISTENT_SEQUENCES == "Inconsistent sequences within the same message entry."
    assert CONVERSATION_ID_MISMATCH == "Conversation ID mismatch."


def test_valid_multi_piece_message_has_no_errors() -> None:
    pieces = [Piece("1", "a", 3, at(0)), Piece("2", "a", 3, at(0))]
    assert message_errors(pieces) == []


def test_empty_message_is_an_error() -> None:
    assert message_errors([]) == ["Message must have at least one message piece."]


def test_reassembly_module_imports_no_django() -> None:
    import ast
    from pathlib import Path

    import redteam.core.reassembly as module

    tree = ast.parse(Path(module.__file__).read_text())
    imported = {
        alias.name.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in (
            node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")]
        )
    }
    assert "django" not in imported
