"""Shared parts of the ingestion services: how memory kinds compare, conversation locking.

Conversations are created as empty stubs and the stored ones locked in one statement
(INSERT ... ON CONFLICT DO UPDATE ... RETURNING, memory.bulk.insert_keys_or_lock), or with
INSERT ... ON CONFLICT DO NOTHING then SELECT ... FOR UPDATE when the read needs more
(PostgreSQL; SQLite serialises writers), always in primary-key order, so two batches that
touch the same conversation serialise on its row instead of failing or losing a summary
update, and cannot deadlock.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol, TypeVar

from django.db import connections, models, router

from memory.bulk import bulk_insert, bulk_update, insert_keys_or_lock
from memory.models import Conversation, MessagePiece
from redteam.common.dbutil import array_literal, columns_sql, model_reader, quoted_column
from redteam.core.batch import Replay, stored_conflict
from redteam.core.outcomes import FieldError

KIND_CONVERSATIONS = "conversations"
KIND_PIECES = "message_pieces"
KIND_ATTACK_RESULTS = "attack_results"


# --- shared helpers ------------------------------------------------------------------------


class ParsedRow(Protocol):
    """A parsed memory item: its model field values, its id as sent, its problems."""

    @property
    def row(self) -> dict[str, Any]: ...

    @property
    def raw_id(self) -> str | None: ...

    @property
    def errors(self) -> list[FieldError]: ...


R = TypeVar("R", bound=ParsedRow)


def row_replay(
    kind: str,
    noun: str,
    values: Callable[[R], Mapping[str, Any]],
    fields: Callable[[R], Iterable[str]],
    *,
    key: str = "id",
    repeat: Callable[[R, R], str | None] | None = None,
) -> Replay[R]:
    """How a memory kind tells a replay from a conflict: items are known by `row[key]`
    (reported as sent when it did not parse), compared in canonical form."""

    def label(parsed: R) -> str | None:
        value = parsed.row.get(key) if parsed.row else None
        return str(value) if value is not None else parsed.raw_id

    return Replay(
        kind=kind,
        key=lambda parsed: parsed.row.get(key),
        label=label,
        values=values,
        fields=fields,
        conflict=stored_conflict(noun),
        repeat=repeat,
    )


def prefixed(errors: Iterable[FieldError], prefix: str) -> list[FieldError]:
    return [
        FieldError(f"{prefix}{e.field}" if e.field else prefix.rstrip("."), e.message, e.code)
        for e in errors
    ]


def lock_conversations(
    conversation_ids: Iterable[str], **annotations: Any
) -> dict[str, Conversation]:
    """Create missing conversations as stubs, then lock and read them all (one query on
    PostgreSQL without `annotations`, else two)."""
    ids = sorted(set(conversation_ids))
    # Sorted inserts and a sorted FOR UPDATE give every transaction the same lock order.
    if not annotations:
        # One statement: new stubs inserted, stored rows locked and read.
        return {c.pk: c for c in insert_keys_or_lock(Conversation, ids)}
    stubs = [Conversation(conversation_id=c) for c in ids]
    bulk_insert(Conversation, stubs, ignore_conflicts=True)
    query = Conversation.objects.select_for_update().filter(pk__in=ids).order_by("pk")
    if annotations:
        query = query.annotate(**annotations)
    return {c.pk: c for c in query}


@functools.cache
def _stored_pieces_select(alias: str) -> str:
    """The SELECT list and FROM of stored_pieces_statement (built once per process and
    database): the piece's columns in field order, then its conversation's operation.

    The operation is a subquery run for each row found: a join let the planner hash the whole
    conversation table before finding that no piece matched (a new batch's case).
    """
    return (
        f"SELECT {columns_sql(MessagePiece, 'p', alias)}, (SELECT c.operation_id "
        "FROM memory_conversation c WHERE c.conversation_id = p.conversation_id) "
        "FROM memory_messagepiece p WHERE "
    )


@functools.cache
def _array_condition(alias: str, name: str) -> str:
    """``p.column = ANY(%s::type[])`` for the piece field `name` (PostgreSQL; built once)."""
    field = MessagePiece._meta.get_field(name)
    assert isinstance(field, models.Field)
    column = f"p.{quoted_column(MessagePiece, name, alias)}"
    return f"{column} = ANY(%s::{field.db_type(connections[alias])}[])"


def stored_pieces_statement(
    ids: Iterable[Any], conversation_ids: Iterable[str], sequences: Iterable[int], alias: str
) -> tuple[str, list[Any]]:
    """stored_pieces' statement on database `alias`: the piece's columns in field order, then
    its conversation's operation.

    One statement of two index lookups (the primary key; piece_message_position): an OR of the
    two conditions would make PostgreSQL scan the table. Written as SQL because it runs in
    every ingest request, where compiling the ORM's union of two joined querysets cost more
    than the database spent answering it. memory.indexplans explains this same statement.
    """
    connection = connections[alias]
    pk = MessagePiece._meta.pk
    assert pk is not None
    conversation = MessagePiece._meta.get_field("conversation")
    # Prepared by the fields, as the ORM prepares them (ids NUL-escaped, uuids per database).
    keys = [pk.get_db_prep_value(i, connection) for i in ids]
    conversations = [
        conversation.get_db_prep_value(c, connection) for c in sorted(set(conversation_ids))
    ]
    places = sorted(set(sequences))
    select = _stored_pieces_select(alias)
    parts: list[str] = []
    params: list[Any] = []
    arrays = connection.vendor == "postgresql"

    def one_of(name: str, values: list[Any]) -> str:
        # PostgreSQL: one array parameter, so the statement's text is the same for every
        # batch (the driver parses it once, not once per thousand placeholders, and it is
        # prepared once: redteam.common.dbutil.prepared_statements), sent as the array's
        # text (the driver's array adapter quotes element by element in Python).
        if arrays:
            params.append(array_literal(values))
            return _array_condition(alias, name)
        params.extend(values)
        column = f"p.{quoted_column(MessagePiece, name, alias)}"
        return f"{column} IN ({', '.join(['%s'] * len(values))})"

    if keys:
        parts.append(f"{select}{one_of('id', keys)}")
    if conversations and places:
        parts.append(
            f"{select}{one_of('conversation', conversations)} AND {one_of('sequence', places)}"
        )
    if not parts:
        parts.append(f"{select}1 = 0")
    return " UNION ALL ".join(parts), params


def stored_pieces(
    ids: Iterable[Any], conversation_ids: Iterable[str], sequences: Iterable[int]
) -> list[MessagePiece]:
    """The stored pieces a batch of pieces meets: those with its ids, and those in its
    messages' conversations at its sequences, each with its conversation's operation
    (stored_operation; a piece in both halves comes twice: callers key by id).

    The rows are read through the model's fields (dbutil.model_reader), without a
    RawQuerySet's per-statement setup.
    """
    alias = router.db_for_write(MessagePiece)  # part of the write: never a replica
    sql, params = stored_pieces_statement(ids, conversation_ids, sequences, alias)
    with connections[alias].cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    read = model_reader(MessagePiece, alias)
    pieces: list[MessagePiece] = []
    for *values, operation in rows:
        piece = read(values)
        piece.__dict__["stored_operation"] = operation
        pieces.append(piece)
    return pieces


def stored_operation(piece: MessagePiece) -> int | None:
    """The operation of a piece read by stored_pieces (its conversation's)."""
    value: int | None = piece.__dict__["stored_operation"]
    return value


def drop_empty_stubs(conversations: Mapping[str, Conversation], used: set[str]) -> None:
    """Delete stubs created for conversations whose every piece was rejected (rare path)."""
    empty = [
        cid
        for cid, conv in conversations.items()
        if cid not in used and conv.piece_count == 0 and not conv.declared
    ]
    if empty:
        Conversation.objects.filter(
            pk__in=empty, piece_count=0, declared=False, attack_results__isnull=True
        ).delete()


def revise_rows(
    model: type[models.Model],
    revisions: Iterable[tuple[models.Model, Mapping[str, Any]]],
    keep: Iterable[str],
) -> None:
    """Store newer versions (Writer.revise): each stored object takes the incoming row's
    values (by attname), except the `keep` columns (its id, its place, its operation). One
    UPDATE for all of them."""
    kept = set(keep)
    objs: list[models.Model] = []
    fields: dict[str, None] = {}
    for obj, row in revisions:
        for name, value in row.items():
            if name not in kept:
                setattr(obj, name, value)
                fields[name] = None
        objs.append(obj)
    if objs:
        bulk_update(model, objs, list(fields))
