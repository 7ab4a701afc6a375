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
from django.test.utils import CaptureQueriesContext, isolate_apps

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


def _conversations(n: int) -> list[Conversation]:
    """Conversations whose values exercise every kind of column a recordset carries."""
    hostile = "tab\t 'q' \"dq\" \\ {a,b} NULL \x00 \ufdd0 é 😀"
    return [
        Conversation(
            conversation_id=f"{hostile} {i}",
            labels={"op": hostile, "n": i, "nan": float("nan"), "big": 2**70},
            harm_categories=[hostile, None],
            first_timestamp=datetime(2026, 1, 2, 3, 4, 5, 678901, tzinfo=UTC),
            last_timestamp=None,
            message_count=i,
            has_error=bool(i % 2),
            preview=hostile[: 10 + i],
            revision=2**62 + i,
        )
        for i in range(n)
    ]


def _stored(ids: list[str]) -> list[tuple[Any, ...]]:
    fields = ["pk", "labels", "harm_categories", "first_timestamp", "last_timestamp"]
    fields += ["message_count", "has_error", "preview", "revision", "updated_at"]
    rows = Conversation.objects.filter(pk__in=ids).order_by("pk").values_list(*fields)
    # NaN is not equal to itself: compare its text.
    return [tuple(repr(v) if isinstance(v, dict) else v for v in row) for row in rows]


def test_several_rows_insert_from_one_recordset_parameter() -> None:
    from memory.bulk import insert_together

    rows = _conversations(3)
    sql, params = _insert_sql(Conversation, rows, DEFAULT_DB_ALIAS, ignore=True)
    assert "jsonb_to_recordset" in sql
    assert len(params) == 1
    insert_together([(Conversation, rows, True)])
    twins = _conversations(3)
    for twin in twins:
        twin.conversation_id = "twin " + twin.conversation_id
    Conversation.objects.bulk_create(twins)
    ours = _stored([r.pk for r in rows])
    django = _stored([r.pk for r in twins])
    assert len(ours) == 3
    for mine, theirs in zip(ours, django, strict=True):
        assert mine[0] == "twin " + theirs[0] or theirs[0] == "twin " + mine[0]
        assert mine[1:-1] == theirs[1:-1]
    stored = Conversation.objects.get(pk=rows[2].pk)
    assert stored.conversation_id == rows[2].conversation_id
    assert stored.labels["big"] == 2**70
    assert stored.labels["nan"] != stored.labels["nan"]


def test_bulk_update_from_one_recordset_matches_one_update_per_row() -> None:
    from memory.bulk import bulk_update

    rows = _conversations(4)
    Conversation.objects.bulk_create(rows)
    changed = _conversations(4)
    for new in changed:
        new.preview = "changed " + new.preview
        new.labels = {"again": new.preview, "inf": float("inf")}
        new.last_timestamp = datetime(2027, 1, 1, tzinfo=UTC)
    fields = ["preview", "labels", "last_timestamp", "message_count", "revision"]
    with CaptureQueriesContext(connection) as queries:
        bulk_update(Conversation, changed, fields)
    assert len(queries) == 1
    assert "jsonb_to_recordset" in queries[0]["sql"]
    after_recordset = _stored([r.pk for r in rows])
    for one in changed:
        bulk_update(Conversation, [one], fields)  # the one-row statement
    assert _stored([r.pk for r in rows]) == after_recordset
    assert Conversation.objects.get(pk=rows[1].pk).labels == {
        "again": changed[1].preview,
        "inf": float("inf"),
    }


def test_bulk_update_of_one_key_twice_keeps_the_last() -> None:
    from memory.bulk import bulk_update

    [row] = _conversations(1)
    Conversation.objects.bulk_create([row])
    first, second = _conversations(1) + _conversations(1)
    first.preview, second.preview = "first", "second"
    bulk_update(Conversation, [first, second], ["preview"])
    assert Conversation.objects.get(pk=row.pk).preview == "second"


@pytest.mark.parametrize(
    "values",
    [
        ["plain", "", " spaced ", "NULL", None, 'q"uote', "back\\slash", "{brace,comma}", "é😀"],
        [0, -3, 2**40],
        [uuid.UUID(int=1), uuid.UUID(int=2**128 - 1)],
    ],
)
def test_array_literal_is_read_back_element_for_element(values: list[Any]) -> None:
    from redteam.common.dbutil import array_literal

    kind = {str: "text", int: "bigint", uuid.UUID: "uuid"}[type(values[0])]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT %s::{kind}[]", [array_literal(values)])
        assert cursor.fetchone()[0] == values


def _every_column(conversation: Conversation) -> dict[str, Any]:
    values = {f.attname: getattr(conversation, f.attname) for f in Conversation._meta.fields}
    values.pop("updated_at")  # the clock of each statement
    return values


def test_insert_keys_or_lock_shares_prepared_defaults_and_reads_stored_rows() -> None:
    from memory.bulk import _same_defaults, insert_keys_or_lock, insert_or_lock

    [stored] = _conversations(1)
    Conversation.objects.bulk_create([stored])
    hostile = "stub \x00 \ufdd0 'q' {a,b} é"
    keys = sorted([f"{hostile} 1", stored.pk, f"{hostile} 2"])
    assert _same_defaults(Conversation)
    with CaptureQueriesContext(connection) as queries:
        rows = insert_keys_or_lock(Conversation, keys)
    assert len(queries) == 1
    assert "jsonb_to_recordset" in queries[0]["sql"]
    assert [r.pk for r in rows] == keys  # the order given, which is the lock order
    by_key = {r.pk: r for r in rows}
    # The stored row comes back as it was, not overwritten by defaults.
    assert by_key[stored.pk].labels["op"] == stored.labels["op"]
    assert by_key[stored.pk].message_count == stored.message_count
    # New keys get what one model instance per key gives them.
    twins = insert_or_lock(Conversation, [Conversation(conversation_id=f"twin {k}") for k in keys])
    twin = {t.pk: t for t in twins}[f"twin {hostile} 1"]
    for key in (f"{hostile} 1", f"{hostile} 2"):
        fresh = Conversation.objects.get(pk=key)
        assert _every_column(fresh) == {**_every_column(twin), "conversation_id": key}
        assert _every_column(by_key[key]) == _every_column(fresh)


@isolate_apps("memory")
def test_same_defaults_refuses_a_default_computed_per_row() -> None:
    from memory.bulk import _same_defaults

    class Shared(models.Model):
        key = models.CharField(primary_key=True, max_length=10)
        tags = models.JSONField(default=list)
        count = models.IntegerField(default=0)
        stamped = models.DateTimeField(auto_now_add=True)

        class Meta:
            app_label = "memory"

        def __str__(self) -> str:
            return self.key

    class PerRow(models.Model):
        key = models.CharField(primary_key=True, max_length=10)
        token = models.UUIDField(default=uuid.uuid4)

        class Meta:
            app_label = "memory"

        def __str__(self) -> str:
            return self.key

    assert _same_defaults(Conversation)
    assert _same_defaults(Shared)
    assert not _same_defaults(PerRow)
