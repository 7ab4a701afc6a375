"""Building blocks of the read API's OpenAPI output schemas (drf-spectacular).

The read endpoints answer with PyRIT's own dicts, so their schemas are documentation, not
serialization: these serializers are never fed data. What they add to drf-spectacular:

* ``ClosedSerializer``: a dict whose keys are all listed; its component says
  ``additionalProperties: false``, so a key the schema does not document fails validation
  (the schemathesis fuzz test checks every answer against the schema).
* ``ShapeUnion``: a dict in exactly one of several closed shapes, documented as a ``oneOf``
  of their components (PyRIT's 1.x and 0.13 key sets differ, so one dict matches one shape).
* ``EnumField``: one of PyRIT's enumerations, as a named component (``ChatMessageRole``, ...).
* ``RawField``: a value whose schema is given as OpenAPI data (patterns, unions, free-form
  objects with typed reserved keys).

Shared Django building blocks (no app imports): memory/api/schema.py and seeds/api/schema.py
use them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

from django.core.exceptions import ImproperlyConfigured
from drf_spectacular.extensions import (
    OpenApiSerializerExtension,
    OpenApiSerializerFieldExtension,
)
from drf_spectacular.plumbing import ResolvedComponent, get_doc
from rest_framework import serializers

from redteam.core import digests

if TYPE_CHECKING:
    from drf_spectacular.openapi import AutoSchema
    from drf_spectacular.utils import Direction

__all__ = [
    "OPTIONAL_SHA256_PATTERN",
    "SHA256_PATTERN",
    "TIMESTAMP_013_PATTERN",
    "TIMESTAMP_1X_PATTERN",
    "ClosedSerializer",
    "EnumField",
    "RawField",
    "ShapeUnion",
    "closed",
    "component_ref",
    "timestamp_field",
]

# pydantic's JSON datetime (1.x): UTC with "Z", microseconds only when non-zero.
TIMESTAMP_1X_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{6})?Z$"
# Python's isoformat() of a UTC datetime (0.13 to_dict, 1.1 ScoreEntry): "+00:00".
TIMESTAMP_013_PATTERN = r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{6})?\+00:00$"
# A digest (redteam.core.digests), anchored: OpenAPI patterns are searched, not matched. A
# hash that may be empty (an eval hash PyRIT left blank) is the optional one.
SHA256_PATTERN = digests.SHA256_ANCHORED
OPTIONAL_SHA256_PATTERN = rf"^({digests.SHA256_PATTERN})?$"


def component_ref(name: str) -> dict[str, str]:
    """The ``$ref`` of the schema component ``name`` (for a component that refers to itself)."""
    return {"$ref": f"#/components/{ResolvedComponent.SCHEMA}/{name}"}


class ClosedSerializer(serializers.Serializer):  # type: ignore[type-arg]
    """A PyRIT dict whose keys are all documented: its schema allows no other key."""


class ShapeUnion(serializers.Serializer):  # type: ignore[type-arg]
    """A dict in exactly one of ``shapes`` (closed serializers with distinct key sets)."""

    shapes: ClassVar[tuple[type[serializers.Serializer], ...]] = ()  # type: ignore[type-arg]


def closed(
    name: str, doc: str, keys: Sequence[str], fields: Mapping[str, Any]
) -> type[ClosedSerializer]:
    """A closed serializer named ``name`` with ``fields[key]`` for each key, in key order.

    Raises ImproperlyConfigured when a key has no field: every key export writes is typed.
    """
    missing = [key for key in keys if key not in fields]
    if missing:
        raise ImproperlyConfigured(f"{name}: no schema field for {', '.join(missing)}")
    attrs: dict[str, Any] = {"__doc__": doc}
    attrs.update({key: fields[key] for key in keys})
    serializer = cast(type[ClosedSerializer], type(name, (ClosedSerializer,), attrs))
    # DRF orders declared fields by creation; the schema lists them in PyRIT's key order.
    serializer._declared_fields = {key: serializer._declared_fields[key] for key in keys}
    return serializer


class EnumField(serializers.ChoiceField):
    """A string from one of PyRIT's enumerations, documented as the component ``component``."""

    def __init__(self, component: str, values: Sequence[str], **kwargs: Any) -> None:
        self.component = component
        super().__init__(choices=list(values), **kwargs)


class RawField(serializers.Field):  # type: ignore[type-arg]
    """A value documented by ``schema`` (OpenAPI 3.0 data); help_text and allow_null apply."""

    def __init__(self, schema: dict[str, Any], **kwargs: Any) -> None:
        self.schema = schema
        super().__init__(**kwargs)


def timestamp_field(shape: str, **kwargs: Any) -> RawField:
    """A timestamp as PyRIT writes it in ``shape``: 1.x ends in "Z", 0.13 in "+00:00"."""
    pattern = TIMESTAMP_1X_PATTERN if shape == "1.x" else TIMESTAMP_013_PATTERN
    return RawField({"type": "string", "format": "date-time", "pattern": pattern}, **kwargs)


# --- drf-spectacular extensions (registered when this module is imported) ---------------------


class ClosedSerializerSchema(OpenApiSerializerExtension):
    """A ClosedSerializer's usual component plus ``additionalProperties: false``."""

    target_class = ClosedSerializer
    match_subclasses = True

    def map_serializer(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        """Every field as drf-spectacular maps it; no other key."""
        schema: dict[str, Any] = auto_schema._map_serializer(
            self.target, direction, bypass_extensions=True
        )
        schema["additionalProperties"] = False
        return schema


class ShapeUnionSchema(OpenApiSerializerExtension):
    """A ShapeUnion as the ``oneOf`` of its shapes' components."""

    target_class = ShapeUnion
    match_subclasses = True

    def map_serializer(self, auto_schema: AutoSchema, direction: Direction) -> dict[str, Any]:
        """oneOf the shapes (each a component of its own), with the union's docstring."""
        shapes = type(self.target).shapes
        assert shapes, f"{type(self.target).__name__} names no shapes"
        return {
            "oneOf": [auto_schema.resolve_serializer(s, direction).ref for s in shapes],
            "description": get_doc(type(self.target)),
        }


class EnumFieldSchema(OpenApiSerializerFieldExtension):
    """An EnumField as a reference to its enumeration's component."""

    target_class = EnumField

    def get_name(self) -> str | None:
        """The enumeration's component name."""
        name: str = self.target.component
        return name

    def map_serializer_field(self, auto_schema: AutoSchema, direction: Direction) -> Any:
        """The enumeration's values (drf-spectacular adds help_text and nullability)."""
        return {"type": "string", "enum": list(self.target.choices)}


class RawFieldSchema(OpenApiSerializerFieldExtension):
    """A RawField as its own schema."""

    target_class = RawField

    def map_serializer_field(self, auto_schema: AutoSchema, direction: Direction) -> Any:
        """A copy of the field's schema (drf-spectacular adds help_text and nullability)."""
        return copy.deepcopy(self.target.schema)
