"""Bulk writes shared by the ingestion services: constant statements per batch.

New rows of the big tables go in with ``insert_rows``: on PostgreSQL one ``COPY ... FROM
STDIN`` (no per-value Python preparation, no parameter limit), elsewhere one multi-row
INSERT. The services have already established that the ids are new, so COPY's lack of
ON CONFLICT changes nothing: a concurrent insert of the same id fails the batch either way.

Django splits bulk inserts into statements of at most ``max_query_params`` parameters. Its
SQLite backend assumes the historical 999, so a 200-piece batch would become seven INSERTs;
the SQLite library actually loaded (3.32+) allows 32766, which redteam/common/dbutil.py reads once
per connection (Django 6 does the same). PostgreSQL has no such cap with client-side binding.
"""

from __future__ import annotations

import functools
import json
import math
import time
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from django.db import connections, models, router
from django.db.models.constants import OnConflict
from django.db.models.fields import AutoFieldMixin
from django.db.models.sql import InsertQuery
from django.utils import timezone

from memory.models import ComponentIdentifier, IdentifierDump, IdentifierOperation
from memory.parsing import ParsedIdentifier
from redteam.common.dbutil import lift_sqlite_variable_limit, model_reader
from redteam.common.fields import ExactCharField, ExactTextField, stored_json_text
from redteam.core.storedtext import ESCAPE, encode_text

# Rows per INSERT statement; large enough that a typical API batch is one statement.
MAX_ROWS_PER_STATEMENT = 5000
# Up to this many rows, insert_rows sends one INSERT rather than a COPY: a COPY costs two
# round trips (the statement, then the data), which a single message's row does not repay.
SMALL_INSERT_ROWS = 16


def bulk_insert(
    model: type[models.Model], objs: Sequence[models.Model], *, ignore_conflicts: bool = False
) -> None:
    """INSERT the rows in as few statements as the database allows (one for a normal batch)."""
    if not objs:
        return
    alias = router.db_for_write(model)
    lift_sqlite_variable_limit(alias)
    model._default_manager.using(alias).bulk_create(
        objs, batch_size=MAX_ROWS_PER_STATEMENT, ignore_conflicts=ignore_conflicts
    )


def bulk_update(model: type[models.Model], objs: Sequence[models.Model], fields: list[str]) -> None:
    """UPDATE the rows' fields by primary key in one statement (one logged query).

    Django's bulk_update builds a CASE expression per field and row, which costs seconds of
    Python for a few thousand rows. On PostgreSQL the rows travel as one JSON parameter read
    by ``jsonb_to_recordset`` (see _recordset): one statement whose text depends on the
    columns only, with no per-value quoting in the driver. One row (a single message's
    conversation), another database, or a value with no JSON form: a prepared per-row UPDATE
    (executemany for several rows).
    """
    if not objs:
        return
    alias = router.db_for_write(model)
    connection = connections[alias]
    meta = model._meta
    targets = [meta.get_field(name) for name in fields]
    pk = meta.pk
    assert pk is not None
    if len(objs) > 1 and connection.vendor == "postgresql":
        # The last of several objects with one key wins, as with one UPDATE per object.
        latest = {obj.pk: obj for obj in objs}
        columns = [*targets, pk]
        text = _recordset(
            columns,  # type: ignore[arg-type]
            ([getattr(obj, f.attname) for f in columns] for obj in latest.values()),  # type: ignore[union-attr]
            connection,
        )
        if text is not None:
            with connection.cursor() as cursor:
                cursor.execute(_update_sql(model, tuple(fields), alias), (text,))
            return
    quote = connection.ops.quote_name
    assignments = ", ".join(f"{quote(str(f.column))} = %s" for f in targets)  # type: ignore[union-attr]
    sql = f"UPDATE {quote(meta.db_table)} SET {assignments} WHERE {quote(str(pk.column))} = %s"
    rows = [
        [
            f.get_db_prep_save(getattr(obj, f.attname), connection)  # type: ignore[union-attr]
            for f in targets
        ]
        + [pk.get_db_prep_save(obj.pk, connection)]
        for obj in objs
    ]
    with connection.cursor() as cursor:
        if len(rows) == 1:
            # A single message's conversation: a plain execute (executemany sets up a pipeline).
            cursor.execute(sql, rows[0])
        else:
            cursor.executemany(sql, rows)


class _NoJsonForm(TypeError):
    """A prepared value _recordset cannot carry: the statement is compiled by Django."""


def _json_scalar(value: Any) -> Any:
    """A prepared scalar in the JSON form jsonb_to_recordset feeds to the column's input
    function (timestamps as ISO text, non-finite floats as PostgreSQL spells them)."""
    if value is None or isinstance(value, str | int):  # ints may come wrapped (psycopg's Int4)
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, uuid.UUID | Decimal):
        return str(value)
    raise _NoJsonForm(type(value).__name__)


# get_db_prep_value implementations that only add, on PostgreSQL, an adaptation that leaves
# the value equal (integers wrapped in psycopg's Int4/Int8; dates and datetimes as they are).
_PREP_ONLY = (
    models.Field.get_db_prep_value,
    models.IntegerField.get_db_prep_value,
    models.DateTimeField.get_db_prep_value,
)


@functools.cache
def _json_form(field: models.Field[Any, Any]) -> Callable[[Any, Any], Any]:
    """A function (value, connection) giving a value of `field` as the ORM prepares it for
    saving on a PostgreSQL connection, in its _recordset form (JSON columns nest their
    value); looked up once per field, since the layers of get_db_prep_save cost more than
    the rows' own work."""
    if isinstance(field, models.JSONField):
        prep_json = field.get_prep_value
        plain = field.encoder is None

        def json_column(value: Any, _connection: Any) -> Any:
            if value is None:
                return None  # SQL NULL, as Django stores None
            if not plain or hasattr(value, "resolve_expression"):
                raise _NoJsonForm(field.name)
            return prep_json(value)

        return json_column
    cls = type(field)
    if (
        cls.get_db_prep_save is models.Field.get_db_prep_save
        and cls.get_db_prep_value in _PREP_ONLY
    ):
        prep = field.get_prep_value
        return lambda value, _connection: _json_scalar(prep(value))
    return lambda value, connection: _json_scalar(field.get_db_prep_save(value, connection))


def _recordset(
    fields: Sequence[models.Field[Any, Any]], rows: Iterable[Sequence[Any]], connection: Any
) -> str | None:
    """The JSON text of `rows` (values of `fields`, in order) for ``jsonb_to_recordset(%s::jsonb)
    AS v(c0 type, c1 type, ...)`` (_recordset_columns): each row an object keyed c0, c1, ....

    One parameter instead of one per value: psycopg quotes every parameter of a client-side
    bound statement in Python, which cost a 2,000-piece batch more than the database spent on
    its conversation statements. None when a value has no JSON form (bytes, an expression, a
    non-finite float inside a JSON column); the caller then sends Django's statement.
    """
    forms = [(f"c{i}", _json_form(f)) for i, f in enumerate(fields)]
    try:
        objects = [
            {key: form(value, connection) for (key, form), value in zip(forms, row, strict=True)}
            for row in rows
        ]
        return _RECORDSET_JSON(objects)
    except (TypeError, ValueError):  # _NoJsonForm is a TypeError
        return None


# One encoder for every _recordset (json.dumps with options builds a new one per call).
_RECORDSET_JSON = json.JSONEncoder(
    ensure_ascii=False, allow_nan=False, separators=(",", ":")
).encode


def _recordset_columns(fields: Sequence[models.Field[Any, Any]], connection: Any) -> str:
    """``c0 type, c1 type, ...``: the column definitions of a _recordset's rows."""
    return ", ".join(f"c{i} {f.db_type(connection)}" for i, f in enumerate(fields))


@functools.cache
def _update_sql(model: type[models.Model], fields: tuple[str, ...], alias: str) -> str:
    """bulk_update's one statement on PostgreSQL (built once per model, fields and database):
    the rows are a _recordset of the fields' values followed by the primary key."""
    connection = connections[alias]
    quote = connection.ops.quote_name
    meta = model._meta
    pk = meta.pk
    assert pk is not None
    targets = [meta.get_field(name) for name in fields]
    assignments = ", ".join(f"{quote(str(f.column))} = v.c{i}" for i, f in enumerate(targets))  # type: ignore[union-attr]
    columns = _recordset_columns([*targets, pk], connection)  # type: ignore[list-item]
    return (
        f"UPDATE {quote(meta.db_table)} SET {assignments} "
        f"FROM jsonb_to_recordset(%s::jsonb) AS v({columns}) "
        f"WHERE {quote(meta.db_table)}.{quote(str(pk.column))} = v.c{len(targets)}"
    )


@functools.cache
def _insert_fields(model: type[models.Model]) -> tuple[models.Field[Any, Any], ...]:
    """Concrete columns to write: every one but an auto-increment primary key."""
    return tuple(
        f
        for f in model._meta.concrete_fields
        if not (f.primary_key and isinstance(f, AutoFieldMixin))
    )


def _column_specs(
    fields: Sequence[models.Field[Any, Any]], now: Any
) -> list[tuple[str, bool, Any]]:
    """(attname, is_json, value when absent) per column, the absent value pre-serialised."""
    specs: list[tuple[str, bool, Any]] = []
    for field in fields:
        is_json = isinstance(field, models.JSONField)
        if getattr(field, "auto_now_add", False) or getattr(field, "auto_now", False):
            absent: Any = now
        elif field.has_default():
            absent = field.get_default()
        else:
            absent = None
        if is_json and absent is not None:
            # The same text the field would send.
            absent = stored_json_text(absent)
        specs.append((field.attname, is_json, absent))
    return specs


def _is_exact_text(field: models.Field[Any, Any]) -> bool:
    """True for a column holding escaped text: an exact text field or a key pointing at one."""
    if field.is_relation:
        return _is_exact_text(field.target_field)  # type: ignore[attr-defined]
    return isinstance(field, ExactCharField | ExactTextField)


def insert_rows(model: type[models.Model], rows: Sequence[Mapping[str, Any]]) -> None:
    """INSERT new rows given as {attname: value}; defaults and auto_now fill the rest."""
    if not rows:
        return
    alias = router.db_for_write(model)
    connection = connections[alias]
    if connection.vendor != "postgresql":
        bulk_insert(model, [model(**row) for row in rows])
        return
    if len(rows) <= SMALL_INSERT_ROWS:
        insert_together([(model, [model(**row) for row in rows], False)])
        return
    fields = _insert_fields(model)
    quote = connection.ops.quote_name
    columns = ", ".join(quote(str(f.column)) for f in fields)
    sql = f"COPY {quote(model._meta.db_table)} ({columns}) FROM STDIN"
    specs = _column_specs(fields, timezone.now())
    # COPY bypasses the fields' get_prep_value, so the stored form of text and JSON is made
    # here with the same functions (redteam.core.storedtext); nothing else differs.
    dumps = stored_json_text
    # The per-row loop is the hot path of batch ingestion: plain columns are read with one
    # comprehension, then only the JSON columns present in the row are serialised and only
    # the strings holding NUL or the escape character are rewritten.
    pairs = [(attname, absent) for attname, _, absent in specs]
    json_columns = [(i, attname) for i, (attname, is_json, _) in enumerate(specs) if is_json]
    text_columns = [i for i, f in enumerate(fields) if _is_exact_text(f)]
    started = time.monotonic()
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        write_row = copy.write_row
        for row in rows:
            values = [row.get(name, absent) for name, absent in pairs]
            for i, name in json_columns:
                if name in row and values[i] is not None:
                    values[i] = dumps(values[i])
            for i in text_columns:
                value = values[i]
                if type(value) is str and (ESCAPE in value or "\x00" in value):
                    values[i] = encode_text(value)
            write_row(values)
    if connection.queries_logged:
        # COPY bypasses Django's cursor wrapper; log it so query counts and debug output
        # see the statement like any other.
        connection.queries_log.append(
            {"sql": f"{sql} -- {len(rows)} rows", "time": f"{time.monotonic() - started:.3f}"}
        )


def _insert_statement(
    model: type[models.Model], alias: str, rows: str, *, ignore: bool
) -> str | None:
    """``INSERT INTO table (columns) <rows>`` for every insert field of `model` on PostgreSQL
    (ON CONFLICT DO NOTHING when `ignore`), or None when a field computes its own placeholder
    from the value."""
    fields = _insert_fields(model)
    if any(hasattr(f, "get_placeholder") for f in fields):
        return None
    quote = connections[alias].ops.quote_name
    columns = ", ".join(quote(str(f.column)) for f in fields)
    sql = f"INSERT INTO {quote(model._meta.db_table)} ({columns}) {rows}"
    return sql + " ON CONFLICT DO NOTHING" if ignore else sql


@functools.cache
def _one_row_insert(model: type[models.Model], alias: str, *, ignore: bool) -> str | None:
    """The INSERT Django compiles for one row of `model` on PostgreSQL (built once per
    process), or None when a field computes its own placeholder from the value."""
    placeholders = ", ".join(["%s"] * len(_insert_fields(model)))
    return _insert_statement(model, alias, f"VALUES ({placeholders})", ignore=ignore)


@functools.cache
def _recordset_insert(model: type[models.Model], alias: str, *, ignore: bool) -> str | None:
    """The INSERT of several rows of `model` from one _recordset parameter (PostgreSQL; built
    once per process), or None when a field computes its own placeholder from the value."""
    fields = _insert_fields(model)
    values = ", ".join(f"v.c{i}" for i in range(len(fields)))
    columns = _recordset_columns(fields, connections[alias])
    rows = f"SELECT {values} FROM jsonb_to_recordset(%s::jsonb) AS v({columns})"
    return _insert_statement(model, alias, rows, ignore=ignore)


def _saved_values(model: type[models.Model], obj: models.Model) -> list[Any] | None:
    """What Django's insert compiler saves for `obj`: each field's pre_save (defaults, auto_now
    stamps); None when one is an expression, which only the compiler resolves."""
    values = []
    for f in _insert_fields(model):
        value = f.pre_save(obj, True)
        if hasattr(value, "resolve_expression"):
            return None
        values.append(value)
    return values


def _insert_sql(
    model: type[models.Model], objs: Sequence[models.Model], alias: str, *, ignore: bool
) -> tuple[str, tuple[Any, ...]]:
    """The one INSERT statement bulk_create would send for `objs` (ON CONFLICT DO NOTHING
    when `ignore`).

    On PostgreSQL the rows are prepared as Django's insert compiler prepares them (each
    field's pre_save, then get_db_prep_save) into a statement built once: one row (a single
    message's conversation, piece, identifiers) as its own parameters, several rows as one
    _recordset parameter. Compiling a fresh InsertQuery cost such a request more than the
    database spent on the rows.
    """
    connection = connections[alias]
    if connection.vendor == "postgresql":
        rows = [_saved_values(model, obj) for obj in objs]
        if all(row is not None for row in rows):
            fields = _insert_fields(model)
            if len(objs) == 1:
                sql = _one_row_insert(model, alias, ignore=ignore)
                if sql is not None:
                    row = rows[0]
                    assert row is not None
                    values = (
                        f.get_db_prep_save(v, connection) for f, v in zip(fields, row, strict=True)
                    )
                    return sql, tuple(values)
            else:
                sql = _recordset_insert(model, alias, ignore=ignore)
                text = _recordset(fields, rows, connection) if sql is not None else None  # type: ignore[arg-type]
                if sql is not None and text is not None:
                    return sql, (text,)
    query = InsertQuery(model, on_conflict=OnConflict.IGNORE if ignore else None)
    query.insert_values(list(_insert_fields(model)), list(objs), raw=False)
    statements = query.get_compiler(using=alias).as_sql()
    assert len(statements) == 1
    sql, params = statements[0]
    return sql, tuple(params)


# (model, rows, ignore conflicts): one table's part of insert_together.
InsertGroup = tuple[type[models.Model], Sequence[models.Model], bool]


def insert_together(groups: Sequence[InsertGroup]) -> None:
    """INSERT the rows of several tables, in order; a group marked to ignore conflicts is
    INSERT ... ON CONFLICT DO NOTHING (content-addressed rows), the others plain INSERTs (a
    conflict is an error, as with insert_rows).

    On PostgreSQL the inserts are one statement (each but the last a data-modifying WITH
    clause): one round trip instead of one per table. The keys between the tables are checked
    at commit (Django's are DEFERRABLE INITIALLY DEFERRED), so the order within the statement
    does not matter to them. Elsewhere, one bulk insert per table. Auto-increment keys of the
    new rows are not read back (no caller needs them).
    """
    groups = [(model, objs, ignore) for model, objs, ignore in groups if objs]
    if not groups:
        return
    alias = router.db_for_write(groups[0][0])
    connection = connections[alias]
    if connection.vendor != "postgresql":
        for model, objs, ignore in groups:
            bulk_insert(model, objs, ignore_conflicts=ignore)
        return
    for model, objs, _ in groups:
        # bulk_create's own preparation: defaults for fields left unset (e.g. primary keys).
        model._default_manager.using(alias)._prepare_for_bulk_create(objs)  # type: ignore[attr-defined]
    statements = [_insert_sql(model, objs, alias, ignore=ignore) for model, objs, ignore in groups]
    clauses = ", ".join(f"i{n} AS ({sql})" for n, (sql, _) in enumerate(statements[:-1]))
    params = tuple(p for _, ps in statements for p in ps)
    last = statements[-1][0]
    with connection.cursor() as cursor:
        cursor.execute(f"WITH {clauses} {last}" if clauses else last, params)


def insert_or_lock(model: type[models.Model], objs: Sequence[models.Model]) -> list[Any]:
    """INSERT the rows whose primary key is new and lock the stored ones, returning every
    row as stored (PostgreSQL: one statement).

    ``INSERT ... ON CONFLICT (pk) DO UPDATE SET pk = EXCLUDED.pk RETURNING *``: a stored row
    is locked as an UPDATE locks it (no other writer can lock or change it until commit) and
    comes back unchanged; rows are processed in the order given, so callers that sort them
    lock in one global order. Elsewhere (SQLite serialises writers): INSERT OR IGNORE, then
    SELECT.
    """
    if not objs:
        return []
    alias = router.db_for_write(model)
    if connections[alias].vendor != "postgresql":
        bulk_insert(model, objs, ignore_conflicts=True)
        wanted = [obj.pk for obj in objs]
        found = model._default_manager.using(alias).in_bulk(wanted)
        return [found[k] for k in wanted if k in found]
    return _upsert_returning(model, alias, *_insert_sql(model, objs, alias, ignore=True))


def insert_keys_or_lock(model: type[models.Model], keys: Sequence[Any]) -> list[Any]:
    """insert_or_lock for rows given by their primary key alone: a new key gets a row of the
    model's defaults (a conversation stub), a stored one is locked and read, in the order given.

    On PostgreSQL, when no default is computed per row (_same_defaults), the defaults are
    prepared once and every key shares them: a batch's hundreds of stubs cost one model
    instance and one row of field preparation, not one each.
    """
    if not keys:
        return []
    alias = router.db_for_write(model)
    pk = model._meta.pk
    assert pk is not None
    # One key (a single message's conversation) keeps the one-row statement.
    if len(keys) > 1 and connections[alias].vendor == "postgresql" and _same_defaults(model):
        statement = _shared_defaults_insert(model, alias, keys)
        if statement is not None:
            return _upsert_returning(model, alias, *statement)
    return insert_or_lock(model, [model(**{pk.attname: k}) for k in keys])


def _shared_defaults_insert(
    model: type[models.Model], alias: str, keys: Sequence[Any]
) -> tuple[str, tuple[str]] | None:
    """The INSERT ... ON CONFLICT DO NOTHING of one default row per key, from one _recordset
    parameter whose rows share the defaults prepared once (PostgreSQL); None when a default
    is an expression or has no JSON form."""
    connection = connections[alias]
    pk = model._meta.pk
    assert pk is not None
    sql = _recordset_insert(model, alias, ignore=True)
    template = model(**{pk.attname: keys[0]})
    model._default_manager.using(alias)._prepare_for_bulk_create([template])  # type: ignore[attr-defined]
    values = _saved_values(model, template)
    if sql is None or values is None:
        return None
    fields = _insert_fields(model)
    forms = [(f"c{i}", _json_form(f)) for i, f in enumerate(fields)]
    try:
        shared = {name: form(v, connection) for (name, form), v in zip(forms, values, strict=True)}
        name, form = forms[fields.index(pk)]
        return sql, (_RECORDSET_JSON([{**shared, name: form(k, connection)} for k in keys]),)
    except (TypeError, ValueError):  # _NoJsonForm is a TypeError
        return None


@functools.cache
def _same_defaults(model: type[models.Model]) -> bool:
    """True when every new row of `model` takes the same values apart from its primary key:
    no default is computed per row (a uuid4, a counter); constants, new empty containers and
    the clock (auto_now, stamped once per statement) are the same for each."""
    for field in _insert_fields(model):
        if field.primary_key or not field.has_default():
            continue
        if callable(field.default) and field.default not in (dict, list):
            return False
    return True


def _upsert_returning(
    model: type[models.Model], alias: str, sql: str, params: Sequence[Any]
) -> list[Any]:
    """Run an INSERT ... ON CONFLICT DO NOTHING of `model` as insert_or_lock's upsert, which
    locks the stored rows and returns every row as stored (read through the model's fields)."""
    connection = connections[alias]
    meta = model._meta
    pk = meta.pk
    assert pk is not None
    quote = connection.ops.quote_name
    key = quote(str(pk.column))
    columns = ", ".join(quote(str(f.column)) for f in meta.concrete_fields)
    conflict = " ON CONFLICT DO NOTHING"
    assert sql.endswith(conflict)
    sql = (
        f"{sql[: -len(conflict)]} ON CONFLICT ({key}) DO UPDATE SET {key} = EXCLUDED.{key} "
        f"RETURNING {columns}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    read = model_reader(model, alias)
    return [read(row) for row in rows]


def identifier_use_rows(uses: Iterable[tuple[ParsedIdentifier, int | None]]) -> list[InsertGroup]:
    """The rows that record identifier uses (see store_identifier_uses), as insert_together
    groups: every node of every tree, one dump per distinct dump text, and the (node,
    operation) pairs saying where each was used, all ignoring rows already stored."""
    nodes: dict[str, dict[str, Any]] = {}
    dumps: dict[str, ParsedIdentifier] = {}
    used_in: set[tuple[str, int]] = set()
    for use, operation_id in uses:
        dumps.setdefault(use.digest, use)
        for node in use.nodes:
            nodes.setdefault(node["hash"], node)
            if operation_id is not None:
                used_in.add((node["hash"], operation_id))
    return [
        (ComponentIdentifier, [ComponentIdentifier(**node) for node in nodes.values()], True),
        (
            IdentifierDump,
            [
                IdentifierDump(digest=use.digest, identifier_id=use.hash, dump_json=use.dump_json)
                for use in dumps.values()
            ],
            True,
        ),
        (
            IdentifierOperation,
            [IdentifierOperation(identifier_id=h, operation_id=op) for h, op in sorted(used_in)],
            True,
        ),
    ]


def store_identifier_uses(uses: Iterable[tuple[ParsedIdentifier, int | None]]) -> None:
    """Upsert every node of every identifier tree, one dump per distinct dump text, and the
    (node, operation) pairs saying where each was used (each use comes with its row's
    operation; None for rows outside any operation).

    One INSERT ... ON CONFLICT DO NOTHING statement on PostgreSQL (three elsewhere), whatever
    the number of uses: rows are content-addressed, so an existing row is by definition the
    same identifier.
    """
    insert_together(identifier_use_rows(uses))
