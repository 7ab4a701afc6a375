"""Database helpers shared by the apps' bulk writers (no app imports: every app may use it)."""

from __future__ import annotations

import sqlite3

from django.db import connections


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
