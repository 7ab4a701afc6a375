"""Piece order inside a message: stored as PyRIT returns it, kept by pages, API and export.

PyRIT keeps the pieces of a message (same conversation_id and sequence) in the order it was
given them: the order of the items in a push, the row order of its memory file on import.
Neither timestamp nor id gives that order back, so it is stored as ``MessagePiece.position``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from memory import services
from memory.export import export_pieces_with_scores
from memory.models import MessagePiece
from memory.querysets import pieces_for_conversation, pieces_for_export
from redteam.common.access import Scope
from redteam.site.pyrit_sqlite import import_pyrit_memory
from tests.api.pyrit_fixtures import LINES, read_jsonl
from tests.fixtures_common import reader, reader_client
from tests.memory import factories as f

# Trusted reads (as a management command's): every operation.
EVERYTHING = Scope.everything_scope()

__all__ = ["reader", "reader_client"]

pytestmark = pytest.mark.django_db

IMAGE = "/home/attacker/roakey_potion.png"


def message(conversation_id: str, first: str) -> list[dict[str, Any]]:
    """A user message of a text piece and an image piece (sharing one timestamp), in that order
    when ``first`` is "text", else image first; then the assistant's reply."""
    text = f.piece(conversation_id=conversation_id, original_value="describe this picture")
    image = f.piece(
        conversation_id=conversation_id,
        original_value=IMAGE,
        original_value_data_type="image_path",
        converted_value=IMAGE,
        converted_value_data_type="image_path",
        original_value_sha256="ab" * 32,
        converted_value_sha256="ab" * 32,
    )
    reply = f.piece(
        conversation_id=conversation_id,
        role="assistant",
        sequence=1,
        original_value="a potion",
        timestamp=f.ts(1),
    )
    # Ids decide nothing: the piece sent second gets the smaller id.
    text["id"], image["id"] = sorted([text["id"], image["id"]], reverse=first == "text")
    text["original_prompt_id"], image["original_prompt_id"] = text["id"], image["id"]
    return [text, image, reply] if first == "text" else [image, text, reply]


def data_types(rows: list[Any]) -> list[str]:
    """The converted data types of pieces or piece dicts, in order."""
    return [
        r["converted_value_data_type"] if isinstance(r, dict) else r.converted_value_data_type
        for r in rows
    ]


@pytest.mark.parametrize("first", ["text", "image"])
def test_message_order_is_the_push_order_on_pages_api_and_export(
    first: str, api: APIClient, reader_client: Client
) -> None:
    payload = message("conv-order", first)
    response = api.post("/api/v1/ingest/", {"message_pieces": payload}, format="json")
    assert response.status_code == 200, response.json()
    sent = data_types(payload)

    assert data_types(list(pieces_for_conversation(EVERYTHING, "conv-order"))) == sent
    assert list(
        MessagePiece.objects.order_by("sequence", "position").values_list("position", flat=True)
    ) == [0, 1, 0]

    body = api.get("/api/v1/conversations/conv-order/").json()
    assert [data_types(m["pieces"]) for m in body["messages"]] == [sent[:2], sent[2:]]
    listed = api.get("/api/v1/message-pieces/?conversation_id=conv-order").json()["results"]
    assert data_types([r for r in listed if r["sequence"] == 0]) == sent[:2]

    for shape in ("1.x", "0.13"):
        assert (
            data_types(
                export_pieces_with_scores(pieces_for_export(EVERYTHING), shape, scope=EVERYTHING)
            )
            == sent
        )

    page = reader_client.get("/conversations/conv-order/").content.decode()
    # The messages themselves, after the outline (which quotes each message's first words).
    page = page[page.index('id="message-0"') :]
    text_at, image_at = page.index("describe this picture"), page.index("roakey_potion.png")
    assert (text_at < image_at) == (first == "text")


def test_resending_a_message_in_another_order_changes_nothing() -> None:
    payload = message("conv-resend", "text")
    services.store_message_pieces(payload)
    before = dict(MessagePiece.objects.values_list("id", "position"))
    outcomes = services.store_message_pieces(list(reversed(payload)))
    assert [o.status for o in outcomes] == ["unchanged"] * 3
    assert dict(MessagePiece.objects.values_list("id", "position")) == before


def test_a_piece_added_to_a_stored_message_goes_last() -> None:
    text, image, _ = message("conv-late", "text")
    services.store_message_pieces([image])
    outcomes = services.store_message_pieces([text, image])
    assert [o.status for o in outcomes] == ["stored", "unchanged"]
    later = f.piece(conversation_id="conv-late", original_value="and one more thing")
    services.store_message_pieces([later])
    order = [p.original_value for p in pieces_for_conversation(EVERYTHING, "conv-late")]
    assert order == [IMAGE, "describe this picture", "and one more thing"]
    assert [p.position for p in pieces_for_conversation(EVERYTHING, "conv-late")] == [0, 1, 2]


@pytest.mark.parametrize("line", LINES)
def test_import_keeps_the_memory_files_row_order_inside_each_message(
    fixtures_dir: Path, line: str
) -> None:
    import_pyrit_memory(fixtures_dir / line / "pyrit_memory.sqlite")
    # pieces.jsonl lists each conversation's pieces as PyRIT's memory returned them.
    expected: dict[tuple[str, int], list[str]] = {}
    for row in read_jsonl(fixtures_dir / line / "pieces.jsonl"):
        expected.setdefault((row["conversation_id"], row["sequence"]), []).append(row["id"])
    stored: dict[tuple[str, int], list[str]] = {}
    for piece in MessagePiece.objects.order_by("conversation_id", "sequence", "position"):
        stored.setdefault((piece.conversation_id, piece.sequence), []).append(str(piece.id))
    assert stored == expected
    multi = [ids for ids in expected.values() if len(ids) > 1]
    assert multi, "the fixture has a text+image message"
    text_first = [
        p for p in pieces_for_export(EVERYTHING).filter(id__in=multi[0]).order_by("position")
    ]
    assert data_types(text_first) == ["text", "image_path"]


def test_export_command_writes_a_text_then_image_message_text_first(
    fixtures_dir: Path, tmp_path: Path
) -> None:
    import_pyrit_memory(fixtures_dir / "pyrit-1.1" / "pyrit_memory.sqlite")
    target = tmp_path / "run.json"
    call_command("export_conversations", "--shape", "1.x", "-o", str(target), stderr=None)
    rows = json.loads(target.read_text())
    expected = read_jsonl(fixtures_dir / "pyrit-1.1" / "pieces.jsonl")
    by_message: dict[tuple[str, int], list[str]] = {}
    for row in rows:
        by_message.setdefault((row["conversation_id"], row["sequence"]), []).append(row["id"])
    for row in expected:
        assert row["id"] in by_message[(row["conversation_id"], row["sequence"])]
    want: dict[tuple[str, int], list[str]] = {}
    for row in expected:
        want.setdefault((row["conversation_id"], row["sequence"]), []).append(row["id"])
    assert by_message == want
