"""FilterSet for seeds, after PyRIT's get_seeds (PYRIT-MODEL.md section 9).

seeds sits below memory in the dependency order, so this module uses django-filter's own
filters only. PyRIT's list filters (harm categories, authors, groups) match when every given
value appears as a substring of the stored JSON list, which ``icontains`` on the JSON column
reproduces on SQLite and PostgreSQL alike.
"""

from __future__ import annotations

import re
from typing import Any

import django_filters as df
from django import forms
from django.db.models import QuerySet

from redteam.common.datebounds import DateBoundFilter
from redteam.core.enums import PROMPT_DATA_TYPES, SEED_TYPES
from seeds.models import Seed

MAX_VALUES = 20


class _RepeatableField(forms.Field):
    """``?x=a&x=b`` cleaned to a list of stripped, non-empty strings (at most MAX_VALUES)."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: Any) -> list[str]:
        """Strip, drop empties, cap the count and length."""
        if value in (None, ""):
            return []
        values = [value] if isinstance(value, str) else list(value)
        cleaned = [str(v).strip() for v in values if str(v).strip()]
        if len(cleaned) > MAX_VALUES or any(len(v) > 300 for v in cleaned):
            raise forms.ValidationError(f"At most {MAX_VALUES} values of 300 characters.")
        return cleaned


class _AllSubstringsFilter(df.Filter):
    """Repeatable parameter: every value must appear in the JSON list column (substring)."""

    field_class = _RepeatableField

    def filter(self, qs: QuerySet[Any], value: list[str]) -> QuerySet[Any]:
        """AND over the values given (``?harm_category=a&harm_category=b``)."""
        for v in value or []:
            qs = qs.filter(**{f"{self.field_name}__icontains": v})
        return qs


def like_to_regex(pattern: str) -> str:
    """Translate a SQL LIKE pattern (% and _) to an anchored regular expression."""
    parts = []
    for ch in pattern:
        parts.append(".*" if ch == "%" else "." if ch == "_" else re.escape(ch))
    return "^" + "".join(parts) + "$"


class SeedFilterSet(df.FilterSet):
    """Filters for seed lists: dataset, type, data type, harm category, text, provenance."""

    dataset_name = df.CharFilter(field_name="dataset_name", max_length=255)
    dataset_name_pattern = df.CharFilter(
        method="filter_dataset_pattern", max_length=255, label="Dataset name (SQL LIKE)"
    )
    seed_type = df.MultipleChoiceFilter(
        field_name="seed_type", choices=[(t, t) for t in SEED_TYPES]
    )
    data_type = df.MultipleChoiceFilter(
        field_name="data_type", choices=[(t, t) for t in PROMPT_DATA_TYPES]
    )
    value = df.CharFilter(field_name="value", lookup_expr="icontains", max_length=300)
    value_sha256 = df.CharFilter(field_name="value_sha256", max_length=64)
    harm_category = _AllSubstringsFilter(field_name="harm_categories")
    author = _AllSubstringsFilter(field_name="authors")
    group = _AllSubstringsFilter(field_name="groups")
    added_by = df.CharFilter(field_name="added_by", max_length=255)
    source = df.CharFilter(field_name="source", max_length=2000)
    prompt_group_id = df.UUIDFilter(field_name="group__prompt_group_id")
    after = DateBoundFilter(field_name="date_added", bound="gte")
    before = DateBoundFilter(field_name="date_added", bound="lte")

    class Meta:
        model = Seed
        fields: list[str] = []

    def filter_dataset_pattern(self, qs: QuerySet[Seed], name: str, value: str) -> QuerySet[Seed]:
        """PyRIT's dataset_name_pattern: SQL LIKE with % and _ (exact name takes precedence)."""
        if not value or self.form.cleaned_data.get("dataset_name"):
            return qs
        return qs.filter(dataset_name__regex=like_to_regex(value))
