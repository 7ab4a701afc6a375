"""Pieces shared by every read endpoint: cursor pagination, the `?shape=` parameter and the
list/retrieve viewset that exports rows in PyRIT's shapes.

A redteam core module (no app imports) so seeds, memory and scoring API views can all use it.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from typing import Any, Literal
from urllib import parse

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import mixins, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import Cursor, CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response

from redteam.common.access import Scope, scope_for
from redteam.common.cursors import INVALID_CURSOR, MAX_CURSOR_CHARS, BadCursor, clean_cursor_value

Shape = Literal["1.x", "0.13"]
SHAPES: tuple[str, ...] = ("1.x", "0.13")
STORED = "stored"

SHAPE_PARAMETER = OpenApiParameter(
    "shape",
    OpenApiTypes.STR,
    enum=[STORED, *SHAPES],
    description=(
        "PyRIT shape of each row: `1.x` (model_dump(mode='json')), `0.13` (to_dict()), or "
        "`stored` (default: the shape the row was ingested in, so it comes back as sent)."
    ),
)


class KeysetPagination(CursorPagination):
    """Cursor pagination on a stable, indexed ordering; no COUNT over the table.

    A cursor this server did not issue is a 400 naming the `cursor` parameter (DRF's own
    answer is a 404, and a position of the wrong type reached the database as a 500).
    """

    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000
    ordering: Any = ("-timestamp", "-id")
    invalid_cursor_message = INVALID_CURSOR
    position_field: Any = None

    def paginate_queryset(
        self, queryset: Any, request: Request, view: Any = None
    ) -> list[Any] | None:
        """Remember the model field the position is compared with, then paginate."""
        ordering = self.get_ordering(request, queryset, view)
        self.position_field = queryset.model._meta.get_field(ordering[0].lstrip("-"))
        return super().paginate_queryset(queryset, request, view)

    def decode_cursor(self, request: Request) -> Cursor | None:
        """The cursor with its position converted to the ordering field's type, or a 400."""
        raw = request.query_params.get(self.cursor_query_param)
        if not raw:
            return None
        try:
            return self._strict_cursor(raw)
        except BadCursor:
            raise ValidationError({self.cursor_query_param: [INVALID_CURSOR]}) from None

    def _strict_cursor(self, raw: str) -> Cursor:
        """Parse exactly what encode_cursor writes (DRF's own parser forgives garbage)."""
        if len(raw) > MAX_CURSOR_CHARS:
            raise BadCursor(INVALID_CURSOR)
        try:
            text = base64.b64decode(raw.encode("ascii"), validate=True).decode("ascii")
            pairs = parse.parse_qsl(text, keep_blank_values=True, strict_parsing=True)
        except (ValueError, binascii.Error):
            raise BadCursor(INVALID_CURSOR) from None
        tokens = dict(pairs)
        if len(tokens) != len(pairs) or not set(tokens) <= {"o", "r", "p"}:
            raise BadCursor(INVALID_CURSOR)
        offset = tokens.get("o", "0")
        if not offset.isdigit() or int(offset) > self.offset_cutoff:
            raise BadCursor(INVALID_CURSOR)
        if tokens.get("r", "0") not in ("0", "1"):
            raise BadCursor(INVALID_CURSOR)
        position = tokens.get("p")
        if position is not None:
            # Back to text, as DRF compares positions with str() of rows' values.
            position = str(clean_cursor_value(self.position_field, position))
        # DRF's stubs type the position as an int; DRF itself keeps the text.
        reverse = tokens.get("r") == "1"
        return Cursor(offset=int(offset), reverse=reverse, position=position)  # type: ignore[arg-type]


def cursor_pagination(*ordering: str) -> type[KeysetPagination]:
    """A KeysetPagination subclass ordered by `ordering` (first field indexed, near-unique)."""
    return type("KeysetPagination", (KeysetPagination,), {"ordering": ordering})


def requested_shape(request: Request, *, allowed: tuple[str, ...] = SHAPES) -> str:
    """The `?shape=` parameter: one of `allowed`, or "stored" (the default)."""
    value = str(request.query_params.get("shape", STORED) or STORED).strip()
    if value != STORED and value not in allowed:
        raise ValidationError({"shape": f"Use one of: {', '.join((STORED, *allowed))}."})
    return value


def row_shape(requested: str, stored_shape: str | None) -> Shape:
    """The shape to export one row in: the requested one, or the row's own."""
    if requested == STORED:
        return "0.13" if stored_shape == "0.13" else "1.x"
    return "0.13" if requested == "0.13" else "1.x"


UUID_LOOKUP = "[0-9a-fA-F-]{36}"


def view_scope(view: Any) -> Scope:
    """The scope a read endpoint answers for: its request's (`scope_for`), or no operation
    while drf-spectacular generates the OpenAPI schema (its fake views read no rows, and
    computing a scope per endpoint would cost the schema view queries)."""
    if getattr(view, "swagger_fake_view", False):
        return Scope.nothing()
    return scope_for(view.request)


class ShapedReadViewSet(
    mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet[Any]
):
    """List and retrieve rows exported in a PyRIT shape.

    Subclasses name their queryset, filters and pagination and implement `export_rows`, which
    turns a whole page into dicts in a constant number of queries; a detail is a page of one.
    """

    lookup_value_regex = UUID_LOOKUP

    def requested_shape(self, request: Request) -> str:
        """The `?shape=` this endpoint accepts (stored, 1.x or 0.13 unless overridden)."""
        return requested_shape(request)

    def export_rows(self, rows: Sequence[Any], shape: str) -> list[dict[str, Any]]:
        """The PyRIT dicts for `rows`, in order."""
        raise NotImplementedError

    def list(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """One page, exported."""
        shape = self.requested_shape(request)
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset()))
        assert page is not None
        return self.get_paginated_response(self.export_rows(page, shape))

    def retrieve(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        """One row, exported."""
        shape = self.requested_shape(request)
        return Response(self.export_rows([self.get_object()], shape)[0])
