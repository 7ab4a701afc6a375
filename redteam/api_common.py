"""Pieces shared by every read endpoint: cursor pagination, the `?shape=` parameter and the
list/retrieve viewset that exports rows in PyRIT's shapes.

A redteam core module (no app imports) so seeds, memory and scoring API views can all use it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework import mixins, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request
from rest_framework.response import Response

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
    """Cursor pagination on a stable, indexed ordering; no COUNT over the table."""

    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000
    ordering: Any = ("-timestamp", "-id")


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


class ShapedReadViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
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
