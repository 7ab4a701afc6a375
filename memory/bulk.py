"""Bulk writes shared by the ingestion services: constant statements per batch.

Django splits bulk inserts into statements of at most ``max_query_params`` parameters. Its
SQLite backend assumes the historical 999, so a 200-piece batch would become seven INSERTs;
the SQLite library actually loaded (3.32+) allows 32766, which is read here once per
connection (Django 6 does the same). PostgreSQL has no such cap with client-side binding.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connections, models, router

from memory.models import ComponentIdentifier, IdentifierDump
from memory.parsing import ParsedIdentifier

# Rows per INSERT statement; large enough that a typical API batch is one statement.
MAX_ROWS_PER_STATEMENT = 5000


def _lift_sqlite_variable_limit(alias: str) -> None:
    """Tell Django the real SQLite bound-variable limit instead of the 999 it assumes."""
    connection = connections[alias]
    if connection.vendor != "sqlite":
        return
    connection.ensure_connection()
    raw = connection.connection
    getlimit = getattr(raw, "getlimit", None)
    if getlimit is None:  # Python < 3.11
        return
    limit = int(getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER))
    if limit > (connection.features.max_query_params or 0):
        connection.features.max_query_params = limit


def bulk_insert(
    model: type[models.Model], objs: Sequence[models.Model], *, ignore_conflicts: bool = False
) -> None:
    """INSERT the rows in as few statements as the database allows (one for a normal batch)."""
    if not objs:
        return
    alias = router.db_for_write(model)
    _lift_sqlite_variable_limit(alias)
    model._default_manager.using(alias).bulk_create(
        objs, batch_size=MAX_ROWS_PER_STATEMENT, ignore_conflicts=ignore_conflicts
    )


def bulk_update(model: type[models.Model], objs: Sequence[models.Model], fields: list[str]) -> None:
    """UPDATE the rows' fields in one statement (CASE per field)."""
    if not objs:
        return
    alias = router.db_for_write(model)
    _lift_sqlite_variable_limit(alias)
    model._default_manager.using(alias).bulk_update(objs, fields, batch_size=MAX_ROWS_PER_STATEMENT)


def store_identifier_uses(uses: Iterable[ParsedIdentifier]) -> None:
    """Upsert every node of every identifier tree, then one dump per distinct dump text.

    Two INSERT ... ON CONFLICT DO NOTHING statements at most, whatever the number of uses:
    rows are content-addressed, so an existing row is by definition the same identifier.
    """
    nodes: dict[str, dict[str, Any]] = {}
    dumps: dict[str, ParsedIdentifier] = {}
    for use in uses:
        dumps.setdefault(use.digest, use)
        for node in use.nodes:
            nodes.setdefault(node["hash"], node)
    bulk_insert(
        ComponentIdentifier,
        [ComponentIdentifier(**node) for node in nodes.values()],
        ignore_conflicts=True,
    )
    bulk_insert(
        IdentifierDump,
        [
            IdentifierDump(digest=use.digest, identifier_id=use.hash, dump_json=use.dump_json)
            for use in dumps.values()
        ],
        ignore_conflicts=True,
    )
