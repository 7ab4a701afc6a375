"""Pieces shared by every read endpoint: cursor pagination and the `?shape=` parameter.

A redteam core module (no app imports) so seeds, memory and scoring API views can all use it.
"""

from __future__ import annotations

from typing import Any, Literal

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import CursorPagination
from rest_framework.request import Request

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
