"""Reads by original_prompt_id find the originals and their copies alike.

Only copies (a piece whose original_prompt_id is not its own id, as PyRIT's duplicated
conversations make) are indexed on the column; the originals are found by primary key
(memory.models.original_prompt_in). Each read here would lose the copies, or the originals,
if either half of that condition went missing.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from rest_framework.test import APIClient

from memory import services
from memory.models import MessagePiece, Score, original_prompt_in
from memory.store_scores import store_scores
from redteam.common.access import Writer
from redteam.common.models import Operation
from tests.memory import factories as f

pytestmark = pytest.mark.django_db


def _store(items: list[dict[str, Any]], operation: str = "alpha") -> None:
    outcomes = services.store_message_pieces(items, writer=Writer.trusted(default=operation))
    assert {o.status for o in outcomes} == {"stored"}, outcomes


@pytest.fixture
def family() -> dict[str, str]:
    """An original, two copies of it, a copy of a copy, a copy whose original was never
    sent, and an unrelated piece; names to ids."""
    original = f.piece(conversation_id="original")
    first_copy = f.piece(conversation_id="copy-1", original_prompt_id=original["id"])
    second_copy = f.piece(conversation_id="copy-2", original_prompt_id=original["id"])
    copy_of_copy = f.piece(conversation_id="copy-3", original_prompt_id=first_copy["id"])
    absent = str(uuid.uuid4())
    orphan = f.piece(conversation_id="orphan", original_prompt_id=absent)
    unrelated = f.piece(conversation_id="unrelated")
    _store([original, first_copy, second_copy, copy_of_copy, orphan, unrelated])
    return {
        "original": original["id"],
        "first_copy": first_copy["id"],
        "second_copy": second_copy["id"],
        "copy_of_copy": copy_of_copy["id"],
        "absent": absent,
        "orphan": orphan["id"],
        "unrelated": unrelated["id"],
    }


def _ids(*names: str, family: dict[str, str]) -> set[str]:
    return {family[n] for n in names}


@pytest.mark.parametrize(
    ("asked", "found"),
    [
        (("original",), ("original", "first_copy", "second_copy")),
        (("first_copy",), ("copy_of_copy",)),
        (("absent",), ("orphan",)),
        (("unrelated",), ("unrelated",)),
        (("second_copy",), ()),
        (("original", "absent"), ("original", "first_copy", "second_copy", "orphan")),
    ],
)
def test_original_prompt_in_matches_the_plain_column_test(
    family: dict[str, str], asked: tuple[str, ...], found: tuple[str, ...]
) -> None:
    ids = [uuid.UUID(family[n]) for n in asked]
    got = {
        str(pk)
        for pk in MessagePiece.objects.filter(original_prompt_in(ids)).values_list("pk", flat=True)
    }
    plain = {
        str(pk)
        for pk in MessagePiece.objects.filter(original_prompt_id__in=ids).values_list(
            "pk", flat=True
        )
    }
    assert got == plain == _ids(*found, family=family)


def test_the_pieces_api_filter_finds_originals_and_copies(
    family: dict[str, str], api: APIClient
) -> None:
    query: dict[str, str | list[str]] = {
        "original_prompt_id": [family["original"], family["absent"]],
        "page_size": "100",
    }
    response = api.get("/api/v1/message-pieces/", query)
    assert response.status_code == 200, response.content
    got = {row["id"] for row in response.json()["results"]}
    assert got == _ids("original", "first_copy", "second_copy", "orphan", family=family)


def test_a_score_of_a_copied_piece_joins_the_copy_operation(family: dict[str, str]) -> None:
    """The scored piece exists only as a copy (in bravo): the score goes there, not to the
    sender's default operation."""
    copy = f.piece(conversation_id="bravo-copy", original_prompt_id=str(uuid.uuid4()))
    _store([copy], operation="bravo")
    scored = [
        f.score(message_piece_id=copy["original_prompt_id"]),
        f.score(message_piece_id=family["original"]),
    ]
    outcomes = store_scores(scored, writer=Writer.trusted(default="charlie"))
    assert {o.status for o in outcomes} == {"stored"}, outcomes
    placed = dict(
        Score.objects.filter(pk__in=[s["id"] for s in scored]).values_list(
            "message_piece_id", "operation__name"
        )
    )
    assert placed == {
        uuid.UUID(copy["original_prompt_id"]): "bravo",
        uuid.UUID(family["original"]): "alpha",
    }
    assert set(Operation.objects.values_list("name", flat=True)) >= {"alpha", "bravo"}
