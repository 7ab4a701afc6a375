"""Bulk writes with history for the seeds app: a constant number of statements per batch.

Django's SQLite backend assumes the historical limit of 999 bound variables and splits bulk
inserts accordingly (a 200-seed batch would be eight INSERTs); the SQLite library loaded here
allows far more, so redteam/common/dbutil.py reads the real limit once per connection (shared with
memory/bulk.py).
Historical rows are written with simple_history's bulk helpers, so imports stay auditable.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

from django.db import models, router
from simple_history.utils import bulk_create_with_history, bulk_update_with_history

from redteam.common.dbutil import lift_sqlite_variable_limit
from redteam.common.typing import User

M = TypeVar("M", bound=models.Model)

# Rows per statement: a normal batch is one INSERT (and one for its history).
MAX_ROWS_PER_STATEMENT = 5000


def create_with_history(
    model: type[M], objs: Sequence[M], *, user: User | None = None, reason: str | None = None
) -> list[M]:
    """INSERT rows and their '+' history rows: two statements for a normal batch."""
    if not objs:
        return []
    lift_sqlite_variable_limit(router.db_for_write(model))
    return list(
        bulk_create_with_history(
            list(objs),
            model,
            batch_size=MAX_ROWS_PER_STATEMENT,
            default_user=_user_or_none(user),
            default_change_reason=reason,
        )
    )


def update_with_history(
    model: type[M],
    objs: Sequence[M],
    fields: list[str],
    *,
    user: User | None = None,
    reason: str | None = None,
) -> None:
    """UPDATE rows' fields and write '~' history rows: two statements for a normal batch."""
    if not objs:
        return
    lift_sqlite_variable_limit(router.db_for_write(model))
    bulk_update_with_history(
        list(objs),
        model,
        fields,
        batch_size=MAX_ROWS_PER_STATEMENT,
        default_user=_user_or_none(user),
        default_change_reason=reason,
    )


def update_quietly(model: type[M], objs: Sequence[M], fields: list[str]) -> None:
    """UPDATE derived columns (positions, content hashes) without history: they are not edits."""
    if not objs:
        return
    lift_sqlite_variable_limit(router.db_for_write(model))
    model._default_manager.bulk_update(list(objs), fields, batch_size=MAX_ROWS_PER_STATEMENT)


def _user_or_none(user: User | None) -> User | None:
    """History rows point at real users only (AnonymousUser and None mean "not known")."""
    return user if user is not None and user.is_authenticated else None
