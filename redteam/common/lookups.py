"""Portable JSON predicates for list filters, one SQL spelling per database.

PostgreSQL gets jsonb containment (``@>``), which GIN indexes serve; SQLite gets an exact,
unindexed equivalent (``json_each``, ``json_extract``), which is fine at SQLite's scale.
Values are compared in their stored (escaped) form, redteam.core.storedtext.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import BooleanField, Expression, F
from django.db.models.sql.compiler import SQLCompiler

from redteam.common.fields import stored_json_text
from redteam.core.storedtext import encode_text


class _JSONPredicate(Expression):
    """A boolean SQL predicate on one JSON column, usable directly in filter() and Q()."""

    conditional = True
    output_field = BooleanField()

    def __init__(self, field: str, *args: Any) -> None:
        super().__init__()
        self.lhs: Any = F(field)
        self.args = args

    def get_source_expressions(self) -> list[Any]:
        """The JSON column."""
        return [self.lhs]

    def set_source_expressions(self, exprs: Sequence[Any]) -> None:
        """Replace the JSON column (after resolution)."""
        (self.lhs,) = exprs

    def resolve_expression(
        self,
        query: Any = None,
        allow_joins: bool = True,
        reuse: Any = None,
        summarize: bool = False,
        for_save: bool = False,
    ) -> _JSONPredicate:
        """Resolve the column reference against the query."""
        clone = self.copy()
        clone.lhs = self.lhs.resolve_expression(query, allow_joins, reuse, summarize, for_save)
        return clone


class JSONHasElement(_JSONPredicate):
    """True when a JSON list column contains the given string element."""

    def as_sql(
        self, compiler: SQLCompiler, connection: BaseDatabaseWrapper
    ) -> tuple[str, tuple[Any, ...]]:
        """SQLite (and generic): an EXISTS over json_each."""
        lhs, params = compiler.compile(self.lhs)
        return (
            f"EXISTS (SELECT 1 FROM json_each({lhs}) AS je WHERE je.value = %s)",
            (*params, encode_text(self.args[0])),
        )

    def as_postgresql(
        self, compiler: SQLCompiler, connection: BaseDatabaseWrapper
    ) -> tuple[str, tuple[Any, ...]]:
        """PostgreSQL: jsonb containment, served by a GIN index."""
        lhs, params = compiler.compile(self.lhs)
        return f"{lhs} @> %s::jsonb", (*params, stored_json_text([self.args[0]]))


class JSONHasKeyValue(_JSONPredicate):
    """True when a JSON object column maps the key to the given string value."""

    def as_sql(
        self, compiler: SQLCompiler, connection: BaseDatabaseWrapper
    ) -> tuple[str, tuple[Any, ...]]:
        """SQLite (and generic): json_extract on a quoted path, so dots in keys are literal."""
        lhs, params = compiler.compile(self.lhs)
        path = "$." + json.dumps(encode_text(self.args[0]))
        return (
            f"(json_type({lhs}, %s) = 'text' AND json_extract({lhs}, %s) = %s)",
            (*params, path, *params, path, encode_text(self.args[1])),
        )

    def as_postgresql(
        self, compiler: SQLCompiler, connection: BaseDatabaseWrapper
    ) -> tuple[str, tuple[Any, ...]]:
        """PostgreSQL: jsonb containment, served by a GIN index."""
        lhs, params = compiler.compile(self.lhs)
        return f"{lhs} @> %s::jsonb", (*params, stored_json_text({self.args[0]: self.args[1]}))
