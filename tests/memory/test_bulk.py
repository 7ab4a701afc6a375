"""memory.bulk's one-row INSERT is the statement Django's insert compiler makes for the row
(PostgreSQL: the only database memory.bulk sends its own INSERTs to)."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from django.db import DEFAULT_DB_ALIAS, connection, models
from django.db.models.constants import OnConflict
from django.db.models.sql import InsertQuery

from memory.bulk import _insert_fields, _insert_sql
from memory.models import (
    ComponentIdentifier,
    Conversation,
    IdentifierDump,
    MessagePiece,
    PieceConverter,
)

pytestmark = [
    pytest.mark.django_db,
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="SQLite takes Django's bulk_create path"
    ),
]


def _compiled(model: type[models.Model], obj: models.Model, ignore: bool) -> tuple[str, Any]:
    query = InsertQuery(model, on_conflict=OnConflict.IGNORE if ignore else None)
    query.insert_values(list(_insert_fields(model)), [obj], raw=False)
    [(sql, params)] = query.get_compiler(using=DEFAULT_DB_ALIAS).as_sql()
    return sql, tuple(params)


def _rows() -> list[models.Model]:
    conversation_id = str(uuid.uuid4())
    piece_id = uuid.uuid4()
    return [
        Conversation(conversation_id=conversation_id, labels={"op": "a\x00'b"}),
        MessagePiece(
            id=piece_id,
            conversation_id=conversation_id,
            sequence=0,
            role="user",
            timestamp=datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC),
            original_value_data_type="text",
            converted_value_data_type="text",
            original_value="tab\there 'quoted' \\ and NUL \x00",
            converted_value="x",
            prompt_metadata={"turn": 1, "nested": ["<script>"]},
            original_prompt_id=piece_id,
        ),
        ComponentIdentifier(hash="a" * 64, class_name="X", class_module="m", params={"k": 1}),
        IdentifierDump(digest="a" * 64, identifier_id="a" * 64, dump_json="{}"),
        PieceConverter(piece_id=piece_id, position=0, identifier_id="a" * 64, dump_id="a" * 64),
    ]


def _comparable(params: Any) -> list[Any]:
    """Parameters as values: JSON adapters by what they wrap, and the clock that pre_save
    stamps on auto_now fields (each statement reads its own) by its type."""
    out: list[Any] = []
    for value in params:
        if isinstance(value, datetime) and value > datetime.now(UTC) - timedelta(minutes=1):
            out.append(datetime)
        else:
            out.append(getattr(value, "obj", value))
    return out


@pytest.mark.parametrize("ignore", [False, True])
def test_one_row_insert_matches_djangos_compiler(ignore: bool) -> None:
    for row in _rows():
        fast_sql, fast_params = _insert_sql(type(row), [row], DEFAULT_DB_ALIAS, ignore=ignore)
        sql, params = _compiled(type(row), row, ignore)
        assert fast_sql == sql
        assert _comparable(fast_params) == _comparable(params)


def test_one_row_insert_stores_what_bulk_create_stores() -> None:
    from memory.bulk import insert_together

    rows = _rows()
    insert_together([(type(r), [r], False) for r in rows])
    piece = MessagePiece.objects.get(pk=rows[1].pk)
    assert piece.original_value == "tab\there 'quoted' \\ and NUL \x00"
    assert piece.prompt_metadata == {"turn": 1, "nested": ["<script>"]}
    assert Conversation.objects.get(pk=rows[0].pk).labels == {"op": "a\x00'b"}
