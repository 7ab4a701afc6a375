"""Filter building blocks every app's FilterSets use: repeatable values, choices, flags, UUIDs.

A repeatable query parameter (``?x=a&x=b``) is cleaned to a list of stripped, non-empty values,
at most MAX_VALUES of at most MAX_VALUE_CHARS characters each, so no request can make a filter
build an unbounded query. A value outside a filter's choices, a malformed UUID or a flag that
is neither true nor false makes the request invalid (400) rather than being ignored. Date
bounds are redteam.common.datebounds'.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from typing import Any

import django_filters as df
from django import forms
from django.core.exceptions import ValidationError
from django.db.models import Q, QuerySet

from redteam.common.lookups import JSONHasElement
from redteam.core.flags import parse_flag

MAX_VALUES = 20
MAX_VALUE_CHARS = 300


# ---------------------------------------------------------------------------------------------
# Form fields
# ---------------------------------------------------------------------------------------------


class MultiValueCharField(forms.Field):
    """A repeatable query parameter (``?x=a&x=b``) cleaned to a list of non-empty strings."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: Any) -> list[str]:
        """Strip values, drop empty ones, cap their number and length."""
        if value in (None, ""):
            return []
        values = [value] if isinstance(value, str) else list(value)
        cleaned = [str(v).strip() for v in values if str(v).strip()]
        if len(cleaned) > MAX_VALUES:
            raise ValidationError(f"At most {MAX_VALUES} values.", code="max_values")
        if any(len(v) > MAX_VALUE_CHARS for v in cleaned):
            raise ValidationError(f"Values are limited to {MAX_VALUE_CHARS} characters.")
        return cleaned


class MultiChoiceField(MultiValueCharField):
    """Repeatable parameter restricted to fixed choices."""

    def __init__(self, *, choices: Sequence[tuple[str, str]], **kwargs: Any) -> None:
        kwargs.pop("null_label", None)
        super().__init__(**kwargs)
        self.allowed = {c for c, _ in choices}

    def to_python(self, value: Any) -> list[str]:
        """Reject values outside the choices, naming them."""
        values = super().to_python(value)
        bad = [v for v in values if v not in self.allowed]
        if bad:
            raise ValidationError(
                "Unknown value(s): %(bad)s. Expected one of: %(ok)s.",
                params={"bad": ", ".join(bad), "ok": ", ".join(sorted(self.allowed))},
                code="invalid_choice",
            )
        return values


class UUIDListField(MultiValueCharField):
    """Repeatable UUID parameter; a malformed one makes the form (and the request) invalid."""

    def to_python(self, value: Any) -> list[uuid.UUID]:  # type: ignore[override]
        """Parse each value as a UUID."""
        try:
            return [uuid.UUID(v) for v in super().to_python(value)]
        except ValueError:
            raise ValidationError("Enter valid UUIDs.", code="invalid_uuid") from None


class StrictBooleanField(forms.Field):
    """A flag spelled as redteam.core.flags reads it; anything else is an error, not "no filter"."""

    def to_python(self, value: Any) -> bool | None:
        """Parse the flag; empty means no filter."""
        try:
            return parse_flag(value)
        except ValueError:
            raise ValidationError("Enter true or false.", code="invalid") from None


# ---------------------------------------------------------------------------------------------
# Filters
# ---------------------------------------------------------------------------------------------


class StrictBooleanFilter(df.Filter):
    """A boolean column, or a method, driven by a StrictBooleanField."""

    field_class = StrictBooleanField

    def filter(self, qs: QuerySet[Any], value: bool | None) -> QuerySet[Any]:
        """No value means no filter."""
        if value is None:
            return qs
        return super().filter(qs, value)


class MultiValueFilter(df.Filter):
    """Base for repeatable filters: skip when no value was given."""

    field_class: type[forms.Field] = MultiValueCharField

    def filter(self, qs: QuerySet[Any], value: Any) -> QuerySet[Any]:
        """Apply ``self.method``-free filtering in subclasses; no values means no filter."""
        if not value:
            return qs
        return self.apply(qs, value)

    def apply(self, qs: QuerySet[Any], value: Any) -> QuerySet[Any]:
        """Filter by the cleaned values."""
        raise NotImplementedError

    @property
    def column(self) -> str:
        """The filtered field (a FilterSet names the field of every filter it declares)."""
        assert self.field_name is not None
        return self.field_name


class InFilter(MultiValueFilter):
    """A plain column equal to any of the given values."""

    def apply(self, qs: QuerySet[Any], value: list[Any]) -> QuerySet[Any]:
        """Column IN values."""
        return qs.filter(**{f"{self.field_name}__in": value})


class UUIDInFilter(InFilter):
    """A UUID column equal to any of the given UUIDs."""

    field_class = UUIDListField


class ChoicesFilter(df.MultipleChoiceFilter):
    """A plain column equal to any of the given choices (documented as a repeatable enum)."""

    field_class = MultiChoiceField

    def __init__(self, *, choices: Sequence[tuple[str, str]], **kwargs: Any) -> None:
        kwargs.setdefault("distinct", False)
        super().__init__(choices=choices, **kwargs)

    def filter(self, qs: QuerySet[Any], value: list[str]) -> QuerySet[Any]:
        """Column IN values; no values means no filter."""
        if not value:
            return qs
        return qs.filter(**{f"{self.field_name}__in": value})


class ElementFilter(MultiValueFilter):
    """A JSON list column containing every value (``match="all"``) or any of the values."""

    def __init__(
        self,
        *,
        match: str = "any",
        choices: Sequence[tuple[str, str]] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.match = match
        if choices is not None:
            self.extra["choices"] = choices
            self.field_class = MultiChoiceField

    def apply(self, qs: QuerySet[Any], value: list[str]) -> QuerySet[Any]:
        """All values for ``all``; any value for ``any``."""
        if self.match == "all":
            for v in value:
                qs = qs.filter(JSONHasElement(self.column, v))
            return qs
        condition = Q()
        for v in value:
            condition |= Q(JSONHasElement(self.column, v))
        return qs.filter(condition)


class AllSubstringsFilter(MultiValueFilter):
    """Every value appears as a substring of the JSON list column (PyRIT's get_seeds rule for
    harm categories, authors and groups, which ``icontains`` reproduces on both databases)."""

    def apply(self, qs: QuerySet[Any], value: list[str]) -> QuerySet[Any]:
        """AND over the values given (``?harm_category=a&harm_category=b``)."""
        for v in value:
            qs = qs.filter(**{f"{self.field_name}__icontains": v})
        return qs
