"""Database helpers shared by the apps' bulk writers (no app imports: every app may use it)."""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from django.conf import settings
from django.db import connections, models

M = TypeVar("M", bound=models.Model)


def lift_sqlite_variable_limit(alias: str) -> None:
    """Tell Django the real SQLite bound-variable limit instead of the 999 it assumes.

    Django splits bulk inserts into statements of at most ``max_query_params`` parameters; its
    SQLite backend assumes the historical 999, while the library actually loaded (3.32+) allows
    32766. The real limit is read once per connection (Django 6 does the same).
    """
    connection = connections[alias]
    if connection.vendor != "sqlite":
        return
    connection.ensure_connection()
    limit = connection.connection.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER)
    if limit > (connection.features.max_query_params or 0):
        connection.features.max_query_params = limit


# Inside prepared_statements(): a statement's second run in a session is prepared, and every
# later run reuses the prepared statement.
PREPARE_THRESHOLD = 1


@contextmanager
def prepared_statements(alias: str) -> Iterator[None]:
    """Run the statements of the block as prepared statements on PostgreSQL (database `alias`),
    when DATABASE_PREPARED_STATEMENTS is on.

    For the statements every API request and every ingested message runs (the key lookup, the
    stored-piece lookup, the inserts and the conversation update): planning them cost
    PostgreSQL several times what executing them did. A prepared statement is planned once
    per session, then its generic plan is reused. These statements look rows up by key, so
    a generic plan is as good as one made for the values.

    Everything else keeps the driver's defaults (values bound client-side, never prepared):
    a review page filters on skewed values (a rare role, a media type) whose partial indexes
    a generic plan cannot use, so its statements are planned for their values every time.
    """
    connection = connections[alias]
    if connection.vendor != "postgresql" or not settings.DATABASE_PREPARED_STATEMENTS:
        yield
        return
    from django.db.backends.postgresql.base import ServerBindingCursor

    connection.ensure_connection()
    driver, features = connection.connection, connection.features.__dict__
    saved = driver.cursor_factory, driver.prepare_threshold
    saved_binding = features.get("uses_server_side_binding")
    # Prepared statements need values bound by the server, so the block's cursors do that.
    driver.cursor_factory, driver.prepare_threshold = ServerBindingCursor, PREPARE_THRESHOLD
    # And Django is told so (a cached property of the connection's features), so the SQL it
    # logs and tests capture is composed from the values: psycopg keeps no query text for a
    # statement run prepared.
    features["uses_server_side_binding"] = True
    try:
        yield
    finally:
        driver.cursor_factory, driver.prepare_threshold = saved
        if saved_binding is None:
            features.pop("uses_server_side_binding", None)
        else:
            features["uses_server_side_binding"] = saved_binding


def columns_sql(model: type[models.Model], table_alias: str, alias: str) -> str:
    """`table_alias.column, ...` for every concrete field of the model, in field order, as
    database `alias` quotes them (what model_from_row reads back)."""
    return ", ".join(
        f"{table_alias}.{quoted_column(model, f.name, alias)}" for f in model._meta.concrete_fields
    )


def quoted_column(model: type[models.Model], name: str, alias: str) -> str:
    """The column of the model's field `name`, quoted for database `alias`."""
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field)
    assert field.column is not None
    return connections[alias].ops.quote_name(field.column)


def array_literal(values: Sequence[Any]) -> str:
    """PostgreSQL's text form of an array of `values` (strings, numbers, UUIDs; None is
    NULL), for one ``%s::type[]`` parameter: every element is double-quoted with its
    backslashes and quotes escaped, so any text stays one element."""
    items = []
    for value in values:
        if value is None:
            items.append("NULL")
        else:
            text = str(value)
            if "\\" in text or '"' in text:
                text = text.replace("\\", "\\\\").replace('"', '\\"')
            items.append(f'"{text}"')
    return "{" + ",".join(items) + "}"


@functools.cache
def _converters(field: models.Field[Any, Any], alias: str) -> tuple[Any, list[Any]]:
    """The column expression of `field` and the functions the ORM runs over its values read
    from database `alias`; looked up once per process (they depend on the field and the
    database engine only)."""
    connection = connections[alias]
    column = field.get_col(field.model._meta.db_table)
    return column, [
        *connection.ops.get_db_converters(column),
        *column.get_db_converters(connection),
    ]


def from_db(field: models.Field[Any, Any], value: Any, alias: str) -> Any:
    """A value of `field` as a raw statement read it, converted as the ORM would (SQLite's
    datetimes and booleans, JSON, custom fields)."""
    connection = connections[alias]
    column, converters = _converters(field, alias)
    for converter in converters:
        value = converter(value, column, connection)
    return value


@functools.cache
def _conversions(model: type[models.Model], alias: str) -> tuple[tuple[int, Any, list[Any]], ...]:
    """(field position, column, converters) of each concrete field of `model` whose values
    database `alias` returns needing conversion."""
    return tuple(
        (i, *_converters(f, alias))
        for i, f in enumerate(model._meta.concrete_fields)
        if _converters(f, alias)[1]
    )


def model_reader(model: type[M], alias: str) -> Callable[[Sequence[Any]], M]:
    """A function making an instance of `model` from the values of its concrete fields (in
    field order, as columns_sql selects them) as a raw statement read them, converted as the
    ORM would.

    What a RawQuerySet does, without its per-statement setup (column resolution, converter
    lookup, model iteration machinery), which costs an ingest request more than the rows it
    reads.
    """
    connection = connections[alias]
    names = [f.attname for f in model._meta.concrete_fields]
    steps = _conversions(model, alias)

    def read(values: Sequence[Any]) -> M:
        if len(values) != len(names):
            raise ValueError(f"{model.__name__} has {len(names)} fields, got {len(values)}")
        converted = list(values)
        for i, column, converters in steps:
            value = converted[i]
            for converter in converters:
                value = converter(value, column, connection)
            converted[i] = value
        return model.from_db(alias, names, converted)

    return read


def model_from_row(model: type[M], alias: str, values: Sequence[Any]) -> M:
    """An instance of `model` from the values of its concrete fields (in field order) as a
    raw statement read them, converted as the ORM would."""
    return model_reader(model, alias)(values)
