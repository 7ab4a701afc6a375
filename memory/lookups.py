"""Full-text search over message pieces for the filters, one SQL spelling per database.

PostgreSQL gets an operator its GIN index serves (``@@``); SQLite gets an exact, unindexed
equivalent (``LIKE``), which is fine at SQLite's scale. The JSON predicates every app's
filters use are redteam.common.lookups'.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.postgres.search import SearchQuery, SearchVectorField
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import Expression, F, Q, QuerySet
from django.db.models.sql.compiler import SQLCompiler

from memory.models import MessagePiece
from redteam.core.storedtext import encode_text

# Characters of each value that enter the full-text document. A tsvector is capped at 1 MB,
# so an unbounded expression would make inserting one huge hostile piece fail; the index in
# migration 0019 uses the identical expression, which is what lets the planner use it.
SEARCH_PREFIX_CHARS = 100_000
SEARCH_CONFIG = "simple"
MAX_SEARCH_CHARS = 200


class PieceSearchDocument(Expression):
    """The full-text document of a piece: its original and converted values (PostgreSQL)."""

    output_field = SearchVectorField()

    def __init__(self) -> None:
        super().__init__()
        self.original: Any = F("original_value")
        self.converted: Any = F("converted_value")

    def get_source_expressions(self) -> list[Any]:
        """Both value columns."""
        return [self.original, self.converted]

    def set_source_expressions(self, exprs: Sequence[Any]) -> None:
        """Replace both value columns (after resolution)."""
        self.original, self.converted = exprs

    def as_sql(  # type: ignore[override]
        self, compiler: SQLCompiler, connection: BaseDatabaseWrapper
    ) -> tuple[str, list[Any]]:
        """The exact expression indexed by migration 0019 (constants inlined, not bound).

        Params are a list: django.contrib.postgres's @@ lookup concatenates them with a list.
        """
        original, p1 = compiler.compile(self.original)
        converted, p2 = compiler.compile(self.converted)
        sql = search_document_sql(original, converted)
        return sql, [*p1, *p2]


def search_document_sql(original: str, converted: str) -> str:
    """SQL for the search document over two column references; shared with the migration.

    A converted value equal to the original (every response, every prompt sent without a
    converter) enters the document once: parsing the text is most of what the index costs
    each ingested piece, and the second copy would only add the same words again.
    """
    n = SEARCH_PREFIX_CHARS
    return (
        f"to_tsvector('{SEARCH_CONFIG}'::regconfig, left(coalesce({original}, ''), {n}) || "
        f"CASE WHEN {converted} IS DISTINCT FROM {original} "
        f"THEN ' ' || left(coalesce({converted}, ''), {n}) ELSE '' END)"
    )


def pieces_matching(q: str, vendor: str) -> QuerySet[MessagePiece]:
    """Pieces whose original or converted value matches the search text."""
    q = q[:MAX_SEARCH_CHARS]
    if vendor == "postgresql":
        query = SearchQuery(q, config=SEARCH_CONFIG, search_type="websearch")
        return MessagePiece.objects.annotate(document=PieceSearchDocument()).filter(document=query)
    # SQLite fallback: a case-insensitive substring scan of the stored (escaped) text, which
    # pattern lookups do not prepare through the field.
    stored = encode_text(q)
    return MessagePiece.objects.filter(
        Q(original_value__icontains=stored) | Q(converted_value__icontains=stored)
    )
